"""A judge's name is unique within its project (and among the catalogue's judges)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("llm_judges", "0007_split_shared_judges")]

    operations = [
        migrations.AddConstraint(
            model_name="judge",
            constraint=models.UniqueConstraint(
                condition=models.Q(("project__isnull", False)),
                fields=("project", "name"),
                name="judge_name_per_project",
            ),
        ),
        migrations.AddConstraint(
            model_name="judge",
            constraint=models.UniqueConstraint(
                condition=models.Q(("project__isnull", True)),
                fields=("name",),
                name="judge_catalogue_name",
            ),
        ),
    ]
