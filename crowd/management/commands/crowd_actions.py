"""Approve, reject, request returns and pay bonuses on Prolific or MTurk from a project's
quality-control results (``crowd.actions``), from the command line.

    python manage.py crowd_actions PROJECT --platform prolific --approve-passed [--dry-run]
    python manage.py crowd_actions PROJECT --platform prolific --reject-failed \\
        --reason FAILED_CHECK --message "…at least 100 characters…"
    python manage.py crowd_actions PROJECT --platform prolific --return-stopped --message "…"
    python manage.py crowd_actions PROJECT --platform mturk --bonus-passed [--amount 0.50]
    python manage.py crowd_actions PROJECT --ledger
    python manage.py crowd_actions PROJECT --reconcile ACTION_ID --as sent|failed

``--dry-run`` prints what would be sent to whom and sends nothing. Otherwise the actions are
recorded in the ledger and sent from this process; an action already sent to a session is never
sent again. Keys come from the server's environment (CONCORD_PROLIFIC_TOKEN,
CONCORD_MTURK_ACCESS_KEY_ID / CONCORD_MTURK_SECRET_ACCESS_KEY).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from core.errors import Refusal
from crowd import actions, selectors
from projects.models import Project

KINDS = {
    "approve_passed": "approve",
    "reject_failed": "reject",
    "return_stopped": "return",
    "bonus_passed": "bonus",
}


class Command(BaseCommand):
    help = "Approve, reject, request returns or pay bonuses on Prolific / MTurk from QC results."

    def add_arguments(self, parser) -> None:
        parser.add_argument("project", help="The project's slug.")
        parser.add_argument("--platform", choices=["prolific", "mturk"])
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--approve-passed", action="store_true")
        which.add_argument("--reject-failed", action="store_true")
        which.add_argument("--return-stopped", action="store_true")
        which.add_argument("--bonus-passed", action="store_true")
        which.add_argument("--ledger", action="store_true", help="List the recorded actions.")
        which.add_argument("--reconcile", type=int, metavar="ACTION_ID")
        parser.add_argument("--as", dest="outcome", choices=["sent", "failed"])
        parser.add_argument("--reason", default="", help="Prolific's rejection category.")
        parser.add_argument("--message", default="", help="What the worker reads.")
        parser.add_argument("--amount", default=None, help="Bonus per worker (default: settings).")
        parser.add_argument("--dry-run", action="store_true", help="Show; send nothing.")

    def handle(self, *args, **options) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"No project {options['project']!r}.")
        try:
            if options["ledger"]:
                self._ledger(project)
            elif options["reconcile"] is not None:
                if not options["outcome"]:
                    raise CommandError("--reconcile needs --as sent or --as failed.")
                action = actions.action_reconcile(
                    project=project, action_id=options["reconcile"], state=options["outcome"]
                )
                self.stdout.write(f"Action {action.pk} recorded as {action.state}.")
            else:
                self._act(project, options)
        except Refusal as exc:
            raise CommandError(f"{exc.field + ': ' if exc.field else ''}{exc.message}") from None

    def _act(self, project: Project, options: dict) -> None:
        if not options["platform"]:
            raise CommandError("--platform prolific or --platform mturk is needed.")
        kind = next(k for flag, k in KINDS.items() if options[flag])
        choice = actions.action_choice(
            project=project,
            platform=options["platform"],
            kind=kind,
            amount=options["amount"],
            reason_code=options["reason"],
            message=options["message"],
        )
        if options["dry_run"]:
            plan = actions.action_plan(project=project, choice=choice)
            self.stdout.write(f"Dry run: {kind} on {choice.platform}; nothing is sent.")
            self._plan(plan)
            return
        # The command sends from this process; the page queues a Celery task instead.
        plan = actions.actions_record(project=project, choice=choice, sender=actions.actions_send)
        self._plan(plan)
        counts: dict[str, int] = {}
        ids = [r.action_id for r in plan.to_send]
        for action in selectors.platform_actions(project=project):
            if action.pk in ids:
                counts[action.state] = counts.get(action.state, 0) + 1
        self.stdout.write(
            "Done: " + (", ".join(f"{s}: {n}" for s, n in sorted(counts.items())) or "nothing sent")
        )

    def _plan(self, plan: actions.ActionPlan) -> None:
        for row in plan.rows:
            amount = f" {row.amount} {plan.currency}" if row.amount else ""
            self.stdout.write(
                f"  {row.worker_id} {row.session_id}{amount}: {actions.STATUS_WORDS[row.status]}"
            )
            if row.to_send:
                self.stdout.write(f"    {row.request}")
        self.stdout.write(f"{len(plan.to_send)} to send, {len(plan.skipped)} left alone.")

    def _ledger(self, project: Project) -> None:
        for a in selectors.platform_actions(project=project):
            amount = f" {a.amount} {a.currency}" if a.kind == "bonus" else ""
            self.stdout.write(
                f"{a.pk}\t{a.platform}\t{a.kind}\t{a.worker_id}\t{a.session_id}{amount}\t"
                f"{a.state}\t{a.outcome}"
            )
