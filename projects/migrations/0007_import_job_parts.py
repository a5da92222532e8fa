import django.db.models.deletion
from django.db import migrations, models

PART_BYTES = 1024 * 1024


def split_uploads(apps, schema_editor):
    """Move each job's stored upload into parts (jobs still queued, or failed ones kept for
    inspection)."""
    ImportJob = apps.get_model("projects", "ImportJob")
    ImportJobPart = apps.get_model("projects", "ImportJobPart")
    for job_id in ImportJob.objects.exclude(content=b"").values_list("id", flat=True).iterator():
        content = bytes(ImportJob.objects.filter(id=job_id).values_list("content", flat=True)[0])
        ImportJobPart.objects.bulk_create(
            ImportJobPart(job_id=job_id, index=n, data=content[start : start + PART_BYTES])
            for n, start in enumerate(range(0, len(content), PART_BYTES))
        )
        ImportJob.objects.filter(id=job_id).update(size=len(content))


def join_uploads(apps, schema_editor):
    ImportJob = apps.get_model("projects", "ImportJob")
    ImportJobPart = apps.get_model("projects", "ImportJobPart")
    for job_id in ImportJobPart.objects.values_list("job_id", flat=True).distinct():
        parts = ImportJobPart.objects.filter(job_id=job_id).order_by("index")
        content = b"".join(bytes(data) for data in parts.values_list("data", flat=True))
        ImportJob.objects.filter(id=job_id).update(content=content)


class Migration(migrations.Migration):
    dependencies = [
        ("projects", "0006_membership_removal_and_invitations"),
    ]

    operations = [
        migrations.AddField(
            model_name="importjob",
            name="size",
            field=models.PositiveBigIntegerField(default=0, help_text="Bytes uploaded."),
        ),
        migrations.CreateModel(
            name="ImportJobPart",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("index", models.PositiveIntegerField()),
                ("data", models.BinaryField()),
                (
                    "job",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="parts",
                        to="projects.importjob",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("job", "index"), name="import_job_part_once")
                ],
            },
        ),
        migrations.RunPython(split_uploads, join_uploads),
        migrations.RemoveField(model_name="importjob", name="content"),
    ]
