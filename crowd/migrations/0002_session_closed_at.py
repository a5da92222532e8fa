"""Sessions can be closed: an account keeps one open session per project.

Data: where an account already has several sessions in a project (MTurk workers who took several
HITs), the latest stays open and the earlier ones are closed. Nothing is deleted; their batches,
answers and payment rows stay as they were."""

from django.conf import settings
from django.db import migrations, models
from django.utils import timezone


def close_all_but_the_latest(apps, schema_editor):
    CrowdEntry = apps.get_model("crowd", "CrowdEntry")
    seen = set()
    earlier = []
    rows = CrowdEntry.objects.order_by("user_id", "project_id", "-created_at", "-id").values_list(
        "id", "user_id", "project_id"
    )
    for pk, user_id, project_id in rows.iterator():
        if (user_id, project_id) in seen:
            earlier.append(pk)
        seen.add((user_id, project_id))
    for start in range(0, len(earlier), 1000):
        CrowdEntry.objects.filter(pk__in=earlier[start : start + 1000]).update(
            closed_at=timezone.now()
        )


class Migration(migrations.Migration):
    dependencies = [
        ("crowd", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="crowdentry",
            name="closed_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When a newer session of the same account replaced this one (then it "
                "reaches nothing and cannot be entered again).",
                null=True,
            ),
        ),
        migrations.AddIndex(
            model_name="crowdentry",
            index=models.Index(
                fields=["user", "project", "closed_at"], name="crowd_entry_user_open_idx"
            ),
        ),
        migrations.RunPython(close_all_but_the_latest, migrations.RunPython.noop),
    ]
