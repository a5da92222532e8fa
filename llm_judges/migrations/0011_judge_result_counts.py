"""Judge result counts kept by database triggers (issue 31): the pages' data version reads one
row instead of counting a project's judge results. The SQL and what it keeps:
``llm_judges/counter_triggers.py``; the counts of existing results are filled in."""

import django.db.models.deletion
from django.db import migrations, models

from llm_judges import counter_triggers


class Migration(migrations.Migration):
    dependencies = [
        ("llm_judges", "0010_judge_run_settings"),
        ("annotation", "0015_item_active_sampling"),
    ]

    operations = [
        migrations.CreateModel(
            name="JudgeResultCounts",
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
                ("results", models.BigIntegerField(default=0)),
                ("revision", models.BigIntegerField(default=0)),
            ],
            options={"verbose_name_plural": "judge result counts"},
        ),
        migrations.RunPython(counter_triggers.install, counter_triggers.uninstall),
    ]
