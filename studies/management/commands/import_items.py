import os
import sys

from django.core.management.base import BaseCommand, CommandError

from projects.models import Project
from studies.management.text_files import read_text_file
from studies.services.imports import ImportFailed, ImportReport, import_items


class Command(BaseCommand):
    help = "Import items into a project from a JSONL, CSV or task-specific file (all or nothing)."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--project", required=True, help="Project slug")
        parser.add_argument(
            "--format",
            default="detect",
            dest="fmt",
            help="jsonl, csv, a task-specific format, or detect (the default): judged from the "
            "file's beginning",
        )
        parser.add_argument(
            "--update", action="store_true", help="Replace items whose external id exists"
        )
        parser.add_argument(
            "--mapping", help="Mapping file some formats need (e.g. column → system)"
        )

    def handle(self, *args, file, project, fmt, update, mapping=None, **options):
        try:
            target = Project.objects.get(slug=project)
        except Project.DoesNotExist:
            raise CommandError(f"No project with slug {project!r}.") from None

        def progress(report: ImportReport) -> None:
            sys.stderr.write(
                "\r" + progress_line(report, done_bytes=stream.tell(), total_bytes=size)
            )
            sys.stderr.flush()

        reader_options = {}
        if mapping:
            reader_options["mapping"] = read_text_file(mapping, "mapping file")
        try:
            with open(file, "rb") as stream:
                size = os.fstat(stream.fileno()).st_size
                report = import_items(
                    project=target,
                    stream=stream,
                    fmt=fmt,
                    update=update,
                    progress=progress,
                    options=reader_options,
                    source=os.path.basename(file),
                )
        except FileNotFoundError:
            raise CommandError(f"No such file: {file}") from None
        except ImportFailed as exc:
            sys.stderr.write("\n")
            raise CommandError(str(exc)) from None
        sys.stderr.write("\n")
        self.stdout.write(self.style.SUCCESS(report.summary()))


def progress_line(
    report: ImportReport, *, done_bytes: int, total_bytes: int, width: int = 30
) -> str:
    """``[#########.....]  62%   61000 records ·   61000 items`` (share of the file's bytes read)."""
    share = min(done_bytes / total_bytes, 1.0) if total_bytes else 1.0
    filled = round(share * width)
    bar = "#" * filled + "." * (width - filled)
    return f"  [{bar}] {share:>4.0%} {report.records:>8} records · {report.created:>8} items"
