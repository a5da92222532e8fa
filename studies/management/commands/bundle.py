"""``manage.py bundle SLUG OUT``: write a project's replication bundle (``studies.bundles``)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.errors import Refusal
from projects.models import Project
from studies.bundles import bundle_write


class Command(BaseCommand):
    help = "Write a project's replication bundle (study file, items, annotations, judges, report, card)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("out", help="A new (or empty) folder.")
        parser.add_argument(
            "--licence",
            default="other",
            help="The dataset card's licence (a Hugging Face identifier, e.g. cc-by-4.0); "
            "default: other (the card's text explains).",
        )

    def handle(self, *args, slug, out, licence="other", **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project {slug!r}.")
        try:
            written = bundle_write(project=project, out=Path(out), licence=licence)
        except Refusal as exc:
            raise CommandError(exc.message) from None
        for path in written:
            self.stdout.write(f"  wrote {path}")
