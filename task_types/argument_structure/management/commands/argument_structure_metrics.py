"""Compute and store the structure metrics of argument-structure answers that have none yet (or
stale ones): the backfill of answers made before metrics were stored, or a warm-up before a
large export. Exports do the same for what is missing, so running this is never required."""

from django.core.management.base import BaseCommand, CommandError

from projects.models import Project
from studies.services.exports import export_chunks

from ...models import StoredMetrics


class Command(BaseCommand):
    help = (
        "Store the structure metrics (CheckWhy's, with Structure Similarity) of every current "
        "human answer of argument-structure projects that has none or a stale one, in batches, "
        "as an export would."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--project", action="append", default=[], help="Project slug (default: every one)"
        )

    def handle(self, *args, **options):
        projects = Project.objects.filter(task_type="argument_structure").order_by("id")
        if options["project"]:
            projects = projects.filter(slug__in=options["project"])
            unknown = set(options["project"]) - set(projects.values_list("slug", flat=True))
            if unknown:
                raise CommandError(f"No argument-structure project {', '.join(sorted(unknown))}.")
        for project in projects:
            before = StoredMetrics.objects.filter(annotation__item__project=project).count()
            # The export's own walk: it reads the stored metrics batch by batch and stores the
            # missing ones (the text it makes is dropped).
            for _ in export_chunks(project=project, fmt="jsonl"):
                pass
            after = StoredMetrics.objects.filter(annotation__item__project=project).count()
            self.stdout.write(
                f"{project.slug}: {after} answers with stored metrics ({after - before} new)."
            )
