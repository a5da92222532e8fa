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

    def handle(self, *args, slug, out, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project {slug!r}.")
        try:
            written = bundle_write(project=project, out=Path(out))
        except Refusal as exc:
            raise CommandError(exc.message) from None
        for path in written:
            self.stdout.write(f"  wrote {path}")
