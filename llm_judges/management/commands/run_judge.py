"""Run a judge over a project and show its progress.

    python manage.py run_judge --project SLUG --judge NAME [--kind regular] [--group G]
                               [--item ID …] [--detach]

With a broker (REDIS_URL) the batches go to the Celery workers and this command polls the run's
progress until it ends (Ctrl-C cancels the run; ``--detach`` returns at once). Without a broker
Celery is eager: the command processes the batches itself, one after another, printing progress
between them.
"""

from __future__ import annotations

import sys
import time

from django.core.management.base import BaseCommand, CommandError

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

    def handle(self, *args, **options):
        from llm_judges.celery_tasks import judge_batch

        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"No project with slug {options['project']!r}.")
        judge = Judge.objects.filter(name=options["judge"]).first()
        if judge is None:
            names = ", ".join(Judge.objects.values_list("name", flat=True)) or "none"
            raise CommandError(f"No judge named {options['judge']!r} (judges: {names}).")
        filters = {
            "kind": options["kind"],
            "group": options["group"],
            "external_ids": options["item"],
        }
        eager = bool(judge_batch.app.conf.task_always_eager)
        try:
            run = services.judge_run_start(
                judge=judge, project=project, filters=filters, enqueue=not eager
            )
        except services.JudgeError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"Run {run.pk}: {judge.name} on {project.slug}, {run.total} items "
            f"({len(run.pending_item_ids)} to judge){' · in-process (no broker)' if eager else ''}"
        )
        started = time.monotonic()
        if eager:
            for chunk in services.batches(item_ids=run.pending_item_ids, size=run.items_per_task):
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
        if progress["error"]:
            self.stderr.write(progress["error"])
        if progress["status"] == JudgeRun.Status.FAILED:
            raise CommandError(f"Run {run.pk} failed.")

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
