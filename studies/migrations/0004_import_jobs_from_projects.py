"""ImportJob and ImportJobPart, moved here from ``projects`` (its 0014) in Django's state only:
the tables made there keep their names (``db_table``) and every row. Their content types follow
them, so permissions granted on them stay granted."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MODELS = ("importjob", "importjobpart")


def content_types_follow(apps, schema_editor, *, source="projects", target="studies"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MODELS:
        if not ContentType.objects.using(db).filter(app_label=target, model=model).exists():
            ContentType.objects.using(db).filter(app_label=source, model=model).update(
                app_label=target
            )


def content_types_back(apps, schema_editor):
    content_types_follow(apps, schema_editor, source="studies", target="projects")


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("projects", "0014_import_jobs_to_studies"),
        ("studies", "0003_item_browser_figures"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ImportJob",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("filename", models.CharField(max_length=255)),
                        ("fmt", models.CharField(max_length=40)),
                        ("update", models.BooleanField(default=False)),
                        (
                            "options",
                            models.JSONField(
                                blank=True,
                                default=dict,
                                help_text="Reader options, e.g. the mapping file of reprohum.",
                            ),
                        ),
                        (
                            "size",
                            models.PositiveBigIntegerField(default=0, help_text="Bytes uploaded."),
                        ),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("queued", "Queued"),
                                    ("running", "Running"),
                                    ("done", "Done"),
                                    ("failed", "Failed"),
                                    ("cancelled", "Cancelled"),
                                ],
                                default="queued",
                                max_length=10,
                            ),
                        ),
                        (
                            "message",
                            models.TextField(
                                blank=True,
                                help_text="The import's summary, or why nothing was imported.",
                            ),
                        ),
                        ("report", models.JSONField(blank=True, default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "started_at",
                            models.DateTimeField(
                                blank=True,
                                help_text="When a worker took the job (again, after a redelivery).",
                                null=True,
                            ),
                        ),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "project",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="import_jobs",
                                to="projects.project",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "projects_importjob",
                        "ordering": ["-created_at", "-id"],
                    },
                ),
                migrations.CreateModel(
                    name="ImportJobPart",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("index", models.PositiveIntegerField()),
                        ("data", models.BinaryField()),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="parts",
                                to="studies.importjob",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "projects_importjobpart",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("job", "index"), name="import_job_part_once"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_follow, content_types_back),
    ]
