"""``manage.py recount [--project SLUG …]``: rebuild the counters the database keeps.

``Item.is_full``, ``Item.submitted_count``, the project item and answer counters and each
annotator's submitted count are kept by triggers in the same transaction as every write; this
recomputes them from the rows (after a restore that bypassed the triggers, or to check them) and
says what changed. The revision numbers (reports' data version) always move forward by one."""

from django.core.management.base import BaseCommand, CommandError

from annotation import selectors, services
from projects.models import Project


class Command(BaseCommand):
    help = "Rebuild the counters the database keeps (open queue, progress) from the rows."

    def add_arguments(self, parser):
        parser.add_argument(
            "--project", action="append", default=[], help="Project slug (repeatable); all if none."
        )

    def handle(self, *args, **options):
        projects = Project.objects.order_by("pk")
        if options["project"]:
            projects = projects.filter(slug__in=options["project"])
            missing = set(options["project"]) - set(projects.values_list("slug", flat=True))
            if missing:
                raise CommandError(f"No project with slug {', '.join(sorted(missing))}.")
        for project in projects:
            before = selectors.project_counts(project=project)
            services.counts_rebuild(project_ids=[project.pk])
            after = selectors.project_counts(project=project)
            changed = {
                k: (before[k], after[k])
                for k in after
                if before[k] != after[k] and not k.endswith("_revision")
            }
            note = (
                ", ".join(f"{k} {old} → {new}" for k, (old, new) in changed.items())
                if changed
                else "unchanged"
            )
            self.stdout.write(
                f"{project.slug}: {after['items']} items ({after['regular_items']} regular), "
                f"{after['submitted']} submitted answers; {note}"
            )
