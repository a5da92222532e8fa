"""Build UPHILL-style queries from a CSV of claims, or import the responses to them as stance items.

    manage.py build_stance_queries claims.csv --out queries.jsonl [--seed 13] [--levels 0,1,2,3,4]
    manage.py build_stance_queries claims.csv --responses responses.jsonl --project SLUG

The first form writes one query per claim and level (JSONL, or CSV when the name ends in .csv) to
send to the models under study. The second rebuilds the same queries (same claims, seed, levels
and templates) and imports each response, joined with its query by ``id``, as a stance item into
the project (all or nothing, through the normal importer).
"""

import io
import json

from django.core.management.base import BaseCommand, CommandError

from projects.models import Project
from studies.services.imports import ImportFailed, import_items
from task_types.stance.queries import (
    LEVELS,
    QueryBuildError,
    attach_responses,
    build_queries,
    load_templates,
    read_claims,
    read_responses,
    write_records,
)
from task_types.stance.task import Stance


def _levels(text: str) -> list[int]:
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CommandError(
            f"--levels must be numbers from 0 to 4, e.g. 0,1,2,3,4 (got {text!r})."
        ) from None
    bad = [level for level in levels if level not in LEVELS]
    if bad or not levels:
        raise CommandError(f"--levels must be numbers from 0 to 4 (got {text!r}).")
    return levels


class Command(BaseCommand):
    help = "Turn a CSV of claims (claim, veracity[, claim_id]) into presupposition-level queries or stance items."

    def add_arguments(self, parser):
        parser.add_argument(
            "claims", help="CSV with columns claim, veracity and optionally claim_id"
        )
        parser.add_argument("--out", help="Write the queries here (.jsonl or .csv)")
        parser.add_argument(
            "--responses",
            help="JSONL or CSV of responses: id (query id), response[, model, response_id]",
        )
        parser.add_argument(
            "--project", help="Stance project to import the responses into (with --responses)"
        )
        parser.add_argument(
            "--seed", type=int, default=13, help="Seed of the template draw (default 13)"
        )
        parser.add_argument(
            "--levels", default="0,1,2,3,4", help="Comma-separated levels (default all five)"
        )
        parser.add_argument(
            "--templates",
            help="Template file (default: task_types/stance/data/uphill_query_templates.json)",
        )
        parser.add_argument(
            "--keep-case", action="store_true", help="Never lower-case the claim's first letter"
        )

    def handle(
        self, *args, claims, out, responses, project, seed, levels, templates, keep_case, **options
    ):
        if not out and not responses:
            raise CommandError(
                "Give --out to write queries, or --responses and --project to import items."
            )
        if responses and not project:
            raise CommandError("--responses needs --project (the stance project to import into).")
        target = None
        if project:
            target = Project.objects.filter(slug=project).first()
            if target is None:
                raise CommandError(f"No project with slug {project!r}.")
            if target.task_type != Stance.slug:
                raise CommandError(
                    f"Project {project!r} is a {target.task_type} project, not a stance project."
                )
        try:
            with open(claims, encoding="utf-8-sig", newline="") as stream:
                claim_rows = read_claims(stream)
            queries = build_queries(
                claim_rows,
                seed=seed,
                levels=_levels(levels),
                templates=load_templates(templates),
                keep_case=keep_case,
            )
            if out:
                with open(out, "w", encoding="utf-8", newline="") as stream:
                    write_records(queries, stream, fmt="csv" if out.endswith(".csv") else "jsonl")
                self.stdout.write(
                    self.style.SUCCESS(
                        f"{len(queries)} queries for {len(claim_rows)} claims written to {out}"
                    )
                )
            if responses:
                with open(responses, encoding="utf-8-sig", newline="") as stream:
                    payloads = attach_responses(queries, read_responses(stream, responses))
        except FileNotFoundError as exc:
            raise CommandError(f"No such file: {exc.filename}") from None
        except QueryBuildError as exc:
            raise CommandError(f"Nothing done. {exc}") from None
        if responses:
            body = "".join(json.dumps(p) + "\n" for p in payloads)
            try:
                report = import_items(project=target, stream=io.StringIO(body), fmt="jsonl")
            except ImportFailed as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(self.style.SUCCESS(f"{target.slug}: {report.summary()}"))
