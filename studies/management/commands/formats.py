"""``manage.py formats [--out docs/formats.md]``: the import formats document."""

from pathlib import Path

from django.core.management.base import BaseCommand

from studies.formats_doc import formats_markdown


class Command(BaseCommand):
    help = "Write docs/formats.md: every import format of every task type, with its example."

    def add_arguments(self, parser):
        parser.add_argument("--out", help="File to write; default stdout.")

    def handle(self, *args, out=None, **options):
        text = formats_markdown()
        if out:
            Path(out).write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {out}")
        else:
            self.stdout.write(text, ending="")
