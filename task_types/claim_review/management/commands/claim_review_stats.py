"""Print a claim-review project's statistics as JSON (FaStfact's ``annotation_stats.json`` shape)."""

import json
from collections.abc import Iterator

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Annotation
from metrics.claim_review import claim_review_stats
from projects.models import Project

from ...rows import claim_rows


def claim_review_samples(project) -> Iterator[dict]:
    """One sample per current annotation version of the project: the item's model and prompt
    source and the annotation's per-claim rows (one query, streamed)."""
    annotations = (
        Annotation.objects.filter(item__project=project, is_current=True)
        .select_related("item")
        .order_by("item__position", "item_id", "id")
    )
    for annotation in annotations.iterator(chunk_size=2000):
        item = annotation.item
        yield {
            "model": item.payload.get("model", ""),
            "prompt_source": item.payload.get("prompt_source", ""),
            "claims": claim_rows(item, annotation.answer),
        }


class Command(BaseCommand):
    help = (
        "Print claim-review statistics as JSON: annotator labels, agreement with the pipeline and "
        "claim operations, overall and by model and prompt source."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project slug")

    def handle(self, *args, project, **options):
        try:
            target = Project.objects.get(slug=project)
        except Project.DoesNotExist:
            raise CommandError(f"No project with slug {project!r}.") from None
        if target.task_type != "claim_review":
            raise CommandError(
                f"Project {project!r} is a {target.task_type} project, not claim_review."
            )
        stats = claim_review_stats(claim_review_samples(target))
        stats["metadata"]["project"] = target.slug
        self.stdout.write(json.dumps(stats, indent=2, ensure_ascii=False))
