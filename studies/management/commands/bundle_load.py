"""``manage.py bundle_load DIR``: load a replication bundle into this instance."""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from core.errors import Refusal
from studies.bundles import bundle_load


class Command(BaseCommand):
    help = "Load a replication bundle (written by `manage.py bundle`) as a new project."

    def add_arguments(self, parser):
        parser.add_argument("directory")
        parser.add_argument(
            "--researcher",
            help="Username to make the loaded project's researcher (else only superusers see it).",
        )

    def handle(self, *args, directory, **options):
        user = None
        if options.get("researcher"):
            user = get_user_model().objects.filter(username=options["researcher"]).first()
            if user is None:
                raise CommandError(f"No account {options['researcher']!r}.")
        try:
            project = bundle_load(directory=Path(directory), user=user)
        except Refusal as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Loaded {project.slug}: {project.items.count()} items "
                f"(dashboard: /p/{project.slug}/agreement/)"
            )
        )
