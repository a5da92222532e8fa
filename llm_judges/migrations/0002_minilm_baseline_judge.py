"""An embedding judge that needs no endpoint and no download: the offline baseline the demo (and
any project) can run at once. Removing it later is fine; it is created only if the name is free."""

from django.db import migrations

NAME = "minilm-similarity"


def create(apps, schema_editor):
    Judge = apps.get_model("llm_judges", "Judge")
    Judge.objects.get_or_create(
        name=NAME,
        defaults={
            "kind": "embedding",
            "model": "all-MiniLM-L6-v2",
            "parameters": {"items_per_task": 200, "threshold": 0.6, "batch_size": 64},
            "prompt_version": "v1",
            "description": "Offline baseline: sentences whose all-MiniLM-L6-v2 cosine similarity "
            "with the evidence reaches 0.6.",
        },
    )


def remove(apps, schema_editor):
    Judge = apps.get_model("llm_judges", "Judge")
    Judge.objects.filter(name=NAME, runs__isnull=True, results__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("llm_judges", "0001_initial")]

    operations = [migrations.RunPython(create, remove)]
