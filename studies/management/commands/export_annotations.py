import sys

from django.core.management.base import BaseCommand, CommandError

from projects.models import Project
from studies.services.exports import CODERS, FORMATS, export_download


class Command(BaseCommand):
    help = (
        "Export a project's annotations as JSONL or CSV (streamed, constant memory): the humans' "
        "(default), the external coders' (--coders external), the judges' (--coders judges), or "
        "all of them in one file (--coders all)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--format", dest="fmt", choices=FORMATS, default="jsonl")
        parser.add_argument(
            "--coders",
            choices=CODERS,
            default="humans",
            help="Whose answers: humans (default), external (annotations imported from "
            "elsewhere), judges, or all (one row per human annotation, external answer and judge "
            "result, with coder_kind, coder, coder_source and the judge columns).",
        )
        parser.add_argument("--out", help="Output file (default: standard output)")

    def handle(self, *args, project, fmt, out, coders="humans", **options):
        try:
            target = Project.objects.get(slug=project)
        except Project.DoesNotExist:
            raise CommandError(f"No project with slug {project!r}.") from None
        # The bytes a download gets, its end line included (python -m studies.export_check).
        if out:
            with open(out, "wb") as stream:
                for chunk in export_download(
                    project=target, fmt=fmt, coders=coders, via="command line"
                ):
                    stream.write(chunk)
            return
        sys.stdout.flush()
        for chunk in export_download(project=target, fmt=fmt, coders=coders, via="command line"):
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
