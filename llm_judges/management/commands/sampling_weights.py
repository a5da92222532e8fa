"""Weigh a project's items for active sampling from its judges' results so far.

    python manage.py sampling_weights --project SLUG [--floor 0.5]

Run it after the judges and before the first human is dealt an item, with the project's crowd
setting ``assignment_strategy`` "active" (:mod:`llm_judges.services.sampling`).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from core.errors import Refusal
from llm_judges import services
from metrics.active_sampling import DEFAULT_FLOOR
from projects.models import Project


class Command(BaseCommand):
    help = "Set each regular item's active-sampling weight and priority from judge uncertainty."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", required=True, help="Project slug.")
        parser.add_argument(
            "--floor",
            type=float,
            default=DEFAULT_FLOOR,
            help="The uniform share of every weight, in (0, 1] (1: uniform sampling).",
        )

    def handle(self, *args, **options) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"No project with slug {options['project']!r}.")
        try:
            report = services.sampling_weights_compute(
                project_id=project.pk, floor=options["floor"]
            )
        except Refusal as refused:
            raise CommandError(str(refused)) from refused
        self.stdout.write(
            f"{project.slug}: {report.items} items weighted, {report.with_uncertainty} with an "
            f"uncertainty from the judges (floor {report.floor})."
        )
