import sys

from django.core.management.base import BaseCommand, CommandError

from projects.models import Project
from studies.services.exports import FORMATS, export_stream


class Command(BaseCommand):
    help = "Export a project's annotations as JSONL or CSV (streamed, constant memory)."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--format", dest="fmt", choices=FORMATS, default="jsonl")
        parser.add_argument("--out", help="Output file (default: standard output)")

    def handle(self, *args, project, fmt, out, **options):
        try:
            target = Project.objects.get(slug=project)
        except Project.DoesNotExist:
            raise CommandError(f"No project with slug {project!r}.") from None
        stream = open(out, "w", encoding="utf-8", newline="") if out else sys.stdout
        try:
            for chunk in export_stream(project=target, fmt=fmt):
                stream.write(chunk)
        finally:
            if out:
                stream.close()
