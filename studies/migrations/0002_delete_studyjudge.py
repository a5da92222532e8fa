"""Judges belong to projects now (llm_judges 0007 moved each link onto the project's own judge)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("studies", "0001_initial"),
        ("llm_judges", "0007_split_shared_judges"),
    ]

    operations = [migrations.DeleteModel(name="StudyJudge")]
