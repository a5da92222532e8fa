"""Clear the stored uploads of failed import jobs older than the retention period."""

from django.core.management.base import BaseCommand

from studies.services.import_jobs import failed_import_content_purge


class Command(BaseCommand):
    help = (
        "Clear the uploads kept by failed import jobs older than "
        "CONCORD_FAILED_IMPORT_RETENTION_DAYS (the jobs and their errors stay)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=None, help="Override the retention period.")

    def handle(self, *args, days=None, **options):
        cleared = failed_import_content_purge(older_than_days=days)
        self.stdout.write(f"Cleared the uploads of {cleared} failed import job(s).")
