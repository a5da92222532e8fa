"""``manage.py study apply FILE [--dry-run]``, ``study export SLUG [--out FILE]``,
``study schema``: study files (see ``studies.study_files``)."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.errors import Refusal
from projects.models import Project
from studies.study_files import (
    read_study_file,
    study_apply,
    study_file_text,
    study_json_schema,
)


class Command(BaseCommand):
    help = "Create or update a project from a study file, write one back, or print the schema."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        apply = sub.add_parser("apply", help="Create or update the project a study file describes.")
        apply.add_argument("file")
        apply.add_argument("--dry-run", action="store_true", help="Show the changes only.")
        export = sub.add_parser("export", help="Write a project's study file.")
        export.add_argument("slug")
        export.add_argument("--out", help="File to write (.yaml/.yml or .json); default stdout.")
        sub.add_parser("schema", help="Print the JSON Schema of study files.")

    def handle(self, *args, action, **options):
        try:
            getattr(self, f"_{action}")(**options)
        except Refusal as exc:
            raise CommandError(exc.message) from None

    def _apply(self, *, file, dry_run=False, **_):
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file.")
        result = study_apply(data=read_study_file(path), dry_run=dry_run)
        verb = (
            "would create"
            if dry_run and result["created"]
            else ("would change" if dry_run else ("created" if result["created"] else "updated"))
        )
        slug = json.loads(json.dumps(read_study_file(path).get("slug")))
        if not result["changes"]:
            self.stdout.write(f"{slug}: no changes.")
            return
        self.stdout.write(f"{slug}: {verb}")
        for change in result["changes"]:
            self.stdout.write(f"  {change}")

    def _export(self, *, slug, out=None, **_):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project {slug!r}.")
        fmt = "yaml" if out and Path(out).suffix.lower() in (".yaml", ".yml") else "json"
        text = study_file_text(project=project, fmt=fmt)
        if out:
            Path(out).write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {out}")
        else:
            self.stdout.write(text, ending="")

    def _schema(self, **_):
        self.stdout.write(json.dumps(study_json_schema(), indent=2, ensure_ascii=False))
