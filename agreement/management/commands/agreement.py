"""``manage.py agreement --project SLUG [--json]``: the dashboard's figures on the command line."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from agreement.reports import AnnotatorFilter, ReportOptions, build_report
from agreement.reports.gather import gather
from agreement.reports.inputs import ReportParameter
from agreement.reports.sections import parameters_for
from agreement.reports.tables import render_cell
from projects.models import Project


class Command(BaseCommand):
    help = (
        "Print a project's agreement report (the figures of the researcher dashboard), as text "
        "tables or as JSON. Computed directly, without Celery or the cache."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument(
            "--include",
            action="append",
            metavar="PSEUDONYM",
            help="count exactly these annotators (repeatable)",
        )
        parser.add_argument(
            "--exclude",
            action="append",
            default=[],
            metavar="PSEUDONYM",
            help="leave these annotators out (repeatable)",
        )
        parser.add_argument(
            "--keep-disqualified",
            action="store_true",
            help="count annotators whose qualification is 'disqualified'",
        )
        parser.add_argument(
            "--judge",
            action="append",
            default=[],
            metavar="KEY",
            help="add this judge's answers as a coder (repeatable)",
        )
        parser.add_argument(
            "--param",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="a report parameter of the task type (e.g. transparency_threshold=0.5)",
        )
        parser.add_argument(
            "--settings-version",
            type=int,
            default=0,
            metavar="N",
            help="only the answers made under this settings version (default: all)",
        )
        parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates")
        parser.add_argument(
            "--table",
            action="append",
            default=[],
            metavar="NAME",
            help="print only these tables (repeatable; default: all)",
        )

    def handle(self, *args, **options):
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"No project with slug {options['project']!r}.")
        try:
            report_options = ReportOptions(
                n_boot=options["n_boot"],
                settings_version=options["settings_version"],
                parameters=_parameters(options["param"], parameters_for(project.task_type)),
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        annotator_filter = AnnotatorFilter(
            include=tuple(options["include"]) if options["include"] is not None else None,
            exclude=tuple(options["exclude"]),
            exclude_disqualified=not options["keep_disqualified"],
            judges=tuple(options["judge"]),
        )
        report_input = gather(
            project=project, annotator_filter=annotator_filter, options=report_options
        )
        report = build_report(report_input, annotator_filter)
        if options["table"]:
            unknown = [t for t in options["table"] if t not in report["tables"]]
            if unknown:
                raise CommandError(
                    f"No table {unknown[0]!r}; this report has: {', '.join(report['tables'])}."
                )
            report["tables"] = {k: v for k, v in report["tables"].items() if k in options["table"]}
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False))
            return
        self._print_text(project, report)

    def _print_text(self, project: Project, report: dict) -> None:
        out = self.stdout
        out.write(f"{project.name} ({project.slug}) · {project.task_type}")
        coders = ", ".join(c["label"] for c in report["coders"]) or "none"
        out.write(
            f"{report['answered_items']} of {report['items']} items answered · "
            f"{report['answers']} answers · coders: {coders}"
        )
        for excluded in report["excluded"]:
            out.write(f"not counted: {excluded['label']} ({excluded['reason']})")
        section = report.get("section") or {}
        for item in section.get("summary", []):
            out.write(f"{item['label']}: {item['value']}")
        for name, tbl in report["tables"].items():
            out.write("")
            out.write(f"== {tbl['title']} [{name}]")
            out.write(_text_table(tbl))
        for note in section.get("notes", []):
            out.write(f"note: {note}")


def _text_table(tbl: dict) -> str:
    headers = [c["label"] for c in tbl["columns"]]
    rows = [[render_cell(row, c) for c in tbl["columns"]] for row in tbl["rows"]]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    numeric = [c["fmt"] != "text" for c in tbl["columns"]]

    def line(cells):
        return "  ".join(
            cell.rjust(w) if num else cell.ljust(w)
            for cell, w, num in zip(cells, widths, numeric, strict=True)
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _parameters(pairs: list[str], specs: tuple[ReportParameter, ...]) -> tuple:
    by_name = {spec.name: spec for spec in specs}
    values = []
    for pair in pairs:
        name, _, text = pair.partition("=")
        spec = by_name.get(name.strip())
        if spec is None:
            known = ", ".join(by_name) or "none"
            raise ValueError(f"unknown report parameter {name!r} (this task type has: {known})")
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{name} must be a number, got {text!r}") from None
        values.append((spec.name, spec.read(value)))
    return tuple(values)
