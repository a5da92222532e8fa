"""``manage.py judge_report --project SLUG [--json]``: the judge validation page's figures."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from agreement.management.commands.agreement import _text_table
from agreement.selectors import judge_validation
from projects.models import Project


class Command(BaseCommand):
    help = (
        "Print how each judge of a project agrees with the humans (alpha against the merged "
        "humans; for label tasks per-class precision / recall / F1, macro and weighted F1 and "
        "confusion matrices), the figures of the judge validation page, as text or JSON."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--json", action="store_true", help="print the figures as JSON")
        parser.add_argument(
            "--subset",
            default="all",
            help="units to validate on: all, agreed (humans agree perfectly) or certain "
            "(every human certain; task types that record certainty)",
        )
        parser.add_argument(
            "--judge",
            action="append",
            metavar="NAME",
            help="only this judge (repeatable; default: every judge with answers)",
        )
        parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates")

    def handle(self, *args, **options):
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"No project with slug {options['project']!r}.")
        try:
            result = judge_validation(
                project=project,
                subset=options["subset"],
                n_boot=options["n_boot"],
                judges=tuple(options["judge"]) if options["judge"] else None,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False))
            return
        out = self.stdout
        out.write(f"{project.name} ({project.slug}) · {project.task_type} · judge validation")
        out.write(
            f"subset: {result['subset']} · human coders: {result['humans']} · judges: "
            f"{', '.join(result['judges']) or 'none'}"
        )
        for name, count in result["counts"].items():
            out.write(f"{name.replace('_', ' ')}: {count}")
        for name, tbl in result["tables"].items():
            out.write("")
            out.write(f"== {tbl['title']} [{name}]")
            out.write(_text_table(tbl))
        for note in result["notes"]:
            out.write(f"note: {note}")
