"""Run a judge over a project and show its progress.

    python manage.py run_judge --project SLUG --judge NAME [--kind regular] [--group G]
                               [--item ID …] [--detach] [--estimate]
                               [--budget-calls N] [--budget-tokens N] [--both-orders]

``--estimate`` prints the calls and tokens the run would take and starts nothing. A budget stops
the run cleanly when reached (the items left are "not run: budget"). ``--both-orders`` also
judges every item in the task type's other presentation (ranking: outputs reversed), in a run of
its own, for the position-bias report.

With a broker (REDIS_URL) the batches go to the Celery workers and this command polls the run's
progress until it ends (Ctrl-C cancels the run; ``--detach`` returns at once). Without a broker
Celery is eager: the command processes the batches itself, one after another, printing progress
between them.
"""

from __future__ import annotations

import sys
import time

from django.core.management.base import BaseCommand, CommandError

from core.wording import counted
from llm_judges import selectors, services
from llm_judges.models import Judge, JudgeRun
from projects.models import Project

BAR_WIDTH = 30


def progress_line(progress: dict, elapsed: float) -> str:
    total = progress["total"] or 1
    filled = round(BAR_WIDTH * (progress["done"] + progress["failed"]) / total)
    bar = "#" * filled + "." * (BAR_WIDTH - filled)
    return (
        f"[{bar}] {progress['done'] + progress['failed']}/{progress['total']} · "
        f"{progress['answered']} answered, {progress['unparseable']} unparseable, "
        f"{progress['failed']} failed · {elapsed:.0f} s · {progress['status']}"
    )


def estimate_text(estimate: dict) -> str:
    lines = [
        f"Estimate for {estimate['judge']} ({estimate['prompt']}, fingerprint "
        f"{estimate['prompt_fingerprint'][:12]}): {estimate['to_judge']} of {estimate['items']} "
        "items to judge" + (" (both orders)" if len(estimate["presentations"]) > 1 else ""),
        f"  calls: {estimate['calls']}",
        f"  input tokens (estimated): {estimate['prompt_tokens']}",
        f"  output tokens (at most): {estimate['max_completion_tokens']}",
        f"  input tokens (at most): {estimate['prompt_tokens_bound']}",
        f"  tokens in all (at most): {estimate['max_tokens']}",
    ]
    if estimate["unrenderable"]:
        lines.append(
            f"  items that cannot be rendered (fail without a call): {estimate['unrenderable']}"
        )
    lines.append(f"  {estimate['method']}")
    return "\n".join(lines)


class Command(BaseCommand):
    help = "Run a judge over a project's items (pre-fill) and show the progress."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project slug.")
        parser.add_argument("--judge", required=True, help="Judge name.")
        parser.add_argument("--kind", action="append", default=[], help="Item kind (repeatable).")
        parser.add_argument("--group", default="", help="Only items of this group.")
        parser.add_argument("--item", action="append", default=[], help="Item id (repeatable).")
        parser.add_argument("--detach", action="store_true", help="Start the run and return.")
        parser.add_argument("--interval", type=float, default=1.0, help="Seconds between polls.")
        parser.add_argument(
            "--estimate", action="store_true", help="Print the run's estimated cost; run nothing."
        )
        parser.add_argument("--budget-calls", type=int, help="Stop after this many LLM calls.")
        parser.add_argument("--budget-tokens", type=int, help="Stop before this many tokens.")
        parser.add_argument(
            "--both-orders",
            action="store_true",
            help="Also judge each item in reversed order (ranking position bias).",
        )

    def handle(self, *args, **options):
        from llm_judges.celery_tasks import judge_batch

        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"No project with slug {options['project']!r}.")
        judge = Judge.objects.filter(project=project, name=options["judge"]).first()
        if judge is None:
            names = (
                ", ".join(Judge.objects.filter(project=project).values_list("name", flat=True))
                or "none"
            )
            raise CommandError(
                f"{project.slug} has no judge named {options['judge']!r} (its judges: {names})."
            )
        filters = {
            "kind": options["kind"],
            "group": options["group"],
            "external_ids": options["item"],
        }
        if options["estimate"]:
            try:
                estimate = selectors.run_estimate(
                    judge=judge,
                    project=project,
                    filters=filters,
                    both_orders=options["both_orders"],
                )
            except services.JudgeError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(estimate_text(estimate))
            return
        eager = bool(judge_batch.app.conf.task_always_eager)
        options_ = {
            "judge": judge,
            "project": project,
            "filters": filters,
            "enqueue": not eager,
            "budget_calls": options["budget_calls"],
            "budget_tokens": options["budget_tokens"],
        }
        try:
            if options["both_orders"]:
                runs = services.judge_run_start_both_orders_pending(**options_)
            else:
                runs = [services.judge_run_start_pending(**options_)]
        except services.JudgeError as exc:
            raise CommandError(str(exc)) from None
        failed = [
            started_run.run.pk
            for started_run in runs
            if self._follow(project, judge, started_run, eager=eager, options=options)
        ]
        if failed:
            raise CommandError(f"Run {', '.join(map(str, failed))} failed.")

    def _follow(self, project, judge, started_run, *, eager: bool, options: dict) -> bool:
        from llm_judges.celery_tasks import judge_batch

        run, pending = started_run.run, started_run.pending_item_ids
        self.stdout.write(
            f"Run {run.pk}: {judge.name} on {project.slug}, {run.total} items "
            f"({len(pending)} to judge){' · in-process (no broker)' if eager else ''}"
        )
        started = time.monotonic()
        if eager:
            for chunk in services.batches(item_ids=pending, size=run.items_per_task):
                judge_batch.apply(args=(run.pk, chunk))
                self._show(project, run, started)
                if JudgeRun.objects.get(pk=run.pk).status not in JudgeRun.ACTIVE:
                    break
        elif not options["detach"]:
            try:
                while True:
                    progress = self._show(project, run, started)
                    if not progress["active"]:
                        break
                    time.sleep(options["interval"])
            except KeyboardInterrupt:
                services.judge_run_cancel(run=run)
                self.stdout.write("\nCancelled.")
        progress = self._show(project, run, started, final=True)
        usage = progress["usage"]
        if judge.kind == "llm":
            self.stdout.write(
                f"Usage: {counted(usage['calls'], 'call')}, {usage['input_tokens']} input and "
                f"{usage['output_tokens']} output tokens"
                + (
                    f"; {counted(progress['not_run'], 'item')} not run: budget"
                    if progress["not_run"]
                    else ""
                )
            )
        if progress["error"]:
            self.stderr.write(progress["error"])
        return progress["status"] == JudgeRun.Status.FAILED

    def _show(self, project, run, started, final: bool = False) -> dict:
        """Print the progress line: rewritten in place on a terminal; otherwise (logs, pipes)
        a new line only when the counts or the status change."""
        fresh = selectors.run_for_project(project=project, run_id=run.pk)
        progress = selectors.progress_of(run=fresh)
        line = progress_line(progress, time.monotonic() - started)
        if self.stdout.isatty():
            self.stdout.write("\r" + line, ending="\n" if final else "")
            sys.stdout.flush()
        else:
            counts = line.rsplit(" · ", 2)[0] + progress["status"]
            if counts != getattr(self, "_last_counts", None):
                self.stdout.write(line)
            self._last_counts = counts
        return progress
