"""External answer counts kept by database triggers (issue 31): the pages' data version reads
one row instead of counting a project's external coders' answers. The SQL and what it keeps:
``annotation/counter_triggers/external_answers.py``; the counts of existing answers are filled
in."""

import django.db.models.deletion
from django.db import migrations, models

from annotation.counter_triggers import external_answers


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0017_item_reviewable"),
    ]

    operations = [
        migrations.CreateModel(
            name="ExternalAnswerCounts",
            fields=[
                (
                    "project",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="projects.project",
                    ),
                ),
                ("answers", models.BigIntegerField(default=0)),
                ("revision", models.BigIntegerField(default=0)),
            ],
            options={"verbose_name_plural": "external answer counts"},
        ),
        migrations.RunPython(external_answers.install, external_answers.uninstall),
    ]
