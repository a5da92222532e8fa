"""``manage.py import_annotations --project SLUG --format F FILE``: annotations collected
elsewhere, as external coders' answers (``studies.services.external_annotations``)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.errors import Refusal
from projects.models import Project
from studies.management.text_files import read_text_file
from studies.services.external_annotations import annotation_formats, import_annotations


class Command(BaseCommand):
    help = (
        "Import annotations collected elsewhere (another tool, the original study, an MTurk "
        "batch) as external coders' answers; all or nothing, errors name the line and field."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--project", required=True)
        parser.add_argument("--format", required=True, dest="fmt")
        parser.add_argument("--source", default="", help="Where they come from (kept per answer).")
        parser.add_argument(
            "--skip-unknown-items",
            action="store_true",
            help="Leave out (and count) rows naming an item this project does not have.",
        )
        parser.add_argument(
            "--mapping",
            help="Mapping file some formats need (reprohum-ranks: justification column → system).",
        )

    def handle(
        self, *args, file, project, fmt, source, skip_unknown_items=False, mapping=None, **options
    ):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project {project!r}.")
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file.")
        if fmt not in annotation_formats(project=found):
            raise CommandError(
                f"Unknown format {fmt!r}; use one of {', '.join(annotation_formats(project=found))}."
            )
        reader_options = {}
        if mapping:
            reader_options["mapping"] = read_text_file(mapping, "mapping file")
        try:
            with path.open("rb") as stream:
                counts = import_annotations(
                    project=found,
                    stream=stream,
                    fmt=fmt,
                    source=source or path.name,
                    skip_unknown_items=skip_unknown_items,
                    options=reader_options,
                )
        except Refusal as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {counts['annotations']} annotations by {counts['coders']} external "
                f"coders ({counts['new_coders']} new) into {found.slug}."
            )
        )
        if counts["skipped"]:
            self.stdout.write(
                f"Left out {counts['skipped']} rows naming items this project does not have "
                f"(first: {counts['skipped_first']})."
            )
