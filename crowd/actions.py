"""Platform actions from quality-control results: approve, reject, request a return and bonus on
Prolific and MTurk, with a dry run, kept idempotent by a ledger (``PlatformAction``).

Who gets what (from ``selectors.payment_rows``, one row per platform session):
- approve and bonus: sessions whose batch is finished and whose worker passed quality control;
- reject: finished sessions whose worker did not pass (disqualified, or not qualified where the
  project requires it);
- return (Prolific only: MTurk has no such request): unfinished sessions of workers who did not
  pass.

The ledger, one row per (project, platform, session, kind):
1. ``actions_record`` writes a ``pending`` row per session in one transaction before anything is
   sent, and skips a session whose row is ``sent`` (done), ``unknown`` (see below) or, for approve
   and reject, whose other decision is under way or done; a ``failed`` row goes back to
   ``pending`` with the new parameters.
2. ``actions_send`` (a Celery task from the page, in-process from the CLI) claims each pending row
   by a conditional update to ``unknown`` before its request goes out, so two workers never send
   the same row and a worker that dies mid-request leaves ``unknown``, never ``pending``.
3. The answer makes it ``sent``, ``failed`` or leaves it ``unknown`` (timeout, 5xx).

``unknown`` rows are sent again by a later request only where a repeat is harmless: Prolific's
approve and reject transitions (documented as idempotent) and MTurk bonuses (their
``UniqueRequestToken`` is derived from the row, so MTurk pays a token once). A Prolific bonus left
``unknown`` is never sent again: Prolific's bulk-bonus pay call is not idempotent. The
researcher checks on Prolific and records the outcome (``action_reconcile``). An MTurk approve
or reject left ``unknown`` is reconciled the same way.

Bonus amounts are ``Decimal`` with at most two decimals, above 0 and at most
``CONCORD_CROWD_MAX_BONUS``; the ledger keeps them in minor units (pence, cents).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from core.errors import Refusal
from crowd import platforms
from crowd.models import CrowdEntry, PlatformAction
from crowd.selectors import payment_rows
from projects.audit import AuditKind, audit_record
from projects.crowd import crowd_settings
from projects.models import Project

log = logging.getLogger(__name__)

Kind, State, Platform = PlatformAction.Kind, PlatformAction.State, CrowdEntry.Platform
BULK_MAX = 200  # participants in one Prolific bulk bonus payment
MESSAGE_MAX = 1000
PROLIFIC_REJECT_MIN = 100  # Prolific requires a rejection message of at least 100 characters
DEFAULT_BONUS_REASON = "A bonus for passing the quality checks. Thank you!"
DECISIONS = {Kind.APPROVE: Kind.REJECT, Kind.REJECT: Kind.APPROVE}


class ActionRefused(Refusal):
    """A platform action that cannot be done as asked (the field at fault is named)."""


@dataclass(frozen=True)
class ActionChoice:
    platform: str
    kind: str
    amount: Decimal | None = None
    reason_code: str = ""
    message: str = ""


@dataclass
class PlannedAction:
    entry_id: int
    worker_id: str
    session_id: str
    study_id: str
    amount: str
    status: str  # new | retry | queued | sent | unknown | conflict
    request: str
    action_id: int | None = None

    @property
    def to_send(self) -> bool:
        return self.status in ("new", "retry", "queued")


@dataclass
class ActionPlan:
    choice: ActionChoice
    currency: str
    rows: list[PlannedAction] = field(default_factory=list)

    @property
    def to_send(self) -> list[PlannedAction]:
        return [r for r in self.rows if r.to_send]

    @property
    def skipped(self) -> list[PlannedAction]:
        return [r for r in self.rows if not r.to_send]


STATUS_WORDS = {
    "new": "will be sent",
    "retry": "will be sent again (the last try failed or can be repeated safely)",
    "queued": "recorded earlier and not sent yet: will be sent",
    "sent": "already sent: nothing to do",
    "unknown": "sent without a definite answer: check on the platform and reconcile",
    "conflict": "the other decision (approve / reject) is already under way or done",
}


# --- choosing ------------------------------------------------------------------------------------


def _amount(value, *, crowd) -> Decimal:
    if value in (None, ""):
        value = crowd.bonus_per_batch
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise ActionRefused("The bonus must be a number such as 0.50.", field="amount") from None
    if not amount.is_finite() or amount != amount.quantize(Decimal("0.01")):
        raise ActionRefused("The bonus has at most two decimals.", field="amount")
    most = Decimal(settings.CONCORD_CROWD_MAX_BONUS)
    if amount <= 0 or amount > most:
        raise ActionRefused(
            f"The bonus must be above 0 and at most {most:.2f} (CONCORD_CROWD_MAX_BONUS).",
            field="amount",
        )
    return amount.quantize(Decimal("0.01"))


def _message(choice_kind: str, platform: str, message: str) -> str:
    message = (message or "").strip()
    if len(message) > MESSAGE_MAX:
        raise ActionRefused(f"At most {MESSAGE_MAX} characters.", field="message")
    if choice_kind == Kind.REJECT and platform == Platform.PROLIFIC:
        if len(message) < PROLIFIC_REJECT_MIN:
            raise ActionRefused(
                f"Prolific asks for a rejection message of at least {PROLIFIC_REJECT_MIN} "
                f"characters ({len(message)} given).",
                field="message",
            )
    if choice_kind in (Kind.REJECT, Kind.RETURN) and not message:
        raise ActionRefused("Say why: the worker reads it.", field="message")
    if choice_kind == Kind.BONUS and not message:
        message = DEFAULT_BONUS_REASON
    return message


def action_choice(
    *,
    project: Project,
    platform: str,
    kind: str,
    amount=None,
    reason_code: str = "",
    message: str = "",
) -> ActionChoice:
    """A checked action: the platform and kind exist, the reason code is Prolific's, the message
    fits the platform's rules, the bonus amount is bounded."""
    if platform not in Platform.values:
        raise ActionRefused(
            f"Unknown platform; known: {', '.join(Platform.values)}.", field="platform"
        )
    if kind not in Kind.values:
        raise ActionRefused(f"Unknown action; known: {', '.join(Kind.values)}.", field="kind")
    if kind == Kind.RETURN and platform == Platform.MTURK:
        raise ActionRefused("MTurk has no return request; reject instead.", field="kind")
    crowd = crowd_settings(project)
    reason_code = (reason_code or "").strip()
    if kind == Kind.REJECT and platform == Platform.PROLIFIC:
        if reason_code not in platforms.PROLIFIC_REJECTION_CATEGORIES:
            raise ActionRefused(
                "Choose one of Prolific's rejection categories: "
                + ", ".join(platforms.PROLIFIC_REJECTION_CATEGORIES)
                + ".",
                field="reason_code",
            )
    else:
        reason_code = ""
    value = None
    if kind == Kind.BONUS:
        value = _amount(amount, crowd=crowd)
        if platform == Platform.MTURK and crowd.currency != "USD":
            raise ActionRefused(
                "MTurk pays in US dollars: set the project's crowd currency to USD.",
                field="amount",
            )
    return ActionChoice(
        platform=platform,
        kind=kind,
        amount=value,
        reason_code=reason_code,
        message=_message(kind, platform, message),
    )


# --- planning (the dry run) ----------------------------------------------------------------------


def _wanted(kind: str, row: dict) -> bool:
    finished = row["batch_state"] == "finished"
    if kind in (Kind.APPROVE, Kind.BONUS):
        return finished and row["passed_qc"]
    if kind == Kind.REJECT:
        return finished and not row["passed_qc"]
    return not finished and not row["passed_qc"]  # return


def _status(choice: ActionChoice, row: PlatformAction | None, other: PlatformAction | None) -> str:
    if other is not None and other.state != State.FAILED:
        return "conflict"
    if row is None:
        return "new"
    if row.state == State.FAILED:
        return "retry"
    if row.state == State.PENDING:
        return "queued"
    if row.state == State.UNKNOWN:
        return "retry" if repeat_is_safe(choice.platform, choice.kind) else "unknown"
    return "sent"


def repeat_is_safe(platform: str, kind: str) -> bool:
    """Whether a request that may already have been done can be sent again without doing it
    twice: Prolific transitions are idempotent, MTurk bonuses carry their ledger token."""
    if platform == Platform.PROLIFIC:
        return kind in (Kind.APPROVE, Kind.REJECT)
    return kind == Kind.BONUS


def _describe(choice: ActionChoice, session: dict, *, crowd, token: str) -> str:
    amount = f"{choice.amount:.2f}" if choice.amount is not None else ""
    if choice.platform == Platform.PROLIFIC:
        if choice.kind == Kind.BONUS:
            path, payload = platforms.prolific_bonus_setup_request(
                study_id=session["study_id"], lines=[(session["worker_id"], amount)]
            )
            return (
                f"POST {platforms.prolific_url(path)} (one line of the study's bulk bonus: "
                f"{session['worker_id']},{amount}), then POST "
                f"{platforms.prolific_url('bulk-bonus-payments/<id>/pay/')} once"
            )
        path, payload = platforms.prolific_request(
            choice.kind,
            session_id=session["session_id"],
            reason_code=choice.reason_code,
            message=choice.message,
        )
        return f"POST {platforms.prolific_url(path)} {json.dumps(payload)}"
    operation, payload = platforms.mturk_request(
        choice.kind,
        session_id=session["session_id"],
        worker_id=session["worker_id"],
        message=choice.message,
        amount=amount,
        token=token,
    )
    endpoint = platforms.mturk_endpoint(sandbox=crowd.mturk_sandbox)
    return f"{operation} at {endpoint} {json.dumps(payload)}"


def action_plan(*, project: Project, choice: ActionChoice) -> ActionPlan:
    """The dry run: every session the action concerns, what would be sent to whom, and why a
    session would be skipped. Sends nothing, writes nothing."""
    crowd = crowd_settings(project)
    ledger = {
        (a.session_id, a.kind): a
        for a in PlatformAction.objects.filter(project=project, platform=choice.platform)
    }
    entries = dict(
        CrowdEntry.objects.filter(project=project, platform=choice.platform).values_list(
            "session_id", "pk"
        )
    )
    plan = ActionPlan(choice=choice, currency=crowd.currency)
    for session in payment_rows(project=project):
        if session["platform"] != choice.platform or not _wanted(choice.kind, session):
            continue
        row = ledger.get((session["session_id"], choice.kind))
        other = ledger.get((session["session_id"], DECISIONS.get(choice.kind)))
        plan.rows.append(
            PlannedAction(
                entry_id=entries[session["session_id"]],
                worker_id=session["worker_id"],
                session_id=session["session_id"],
                study_id=session["study_id"],
                amount=f"{choice.amount:.2f}" if choice.amount is not None else "",
                status=_status(choice, row, other),
                request=_describe(
                    choice,
                    session,
                    crowd=crowd,
                    token=row.request_id if row else "(from the ledger row)",
                ),
                action_id=row.pk if row else None,
            )
        )
    return plan


# --- recording and sending -----------------------------------------------------------------------


def mturk_token(action: PlatformAction) -> str:
    """The MTurk ``UniqueRequestToken`` of a bonus: fixed by its ledger row (at most 64 chars)."""
    return f"concord-{action.project_id}-{action.pk}"


def actions_record(
    *, project: Project, choice: ActionChoice, user=None, sender: Callable | None = None
) -> ActionPlan:
    """Write the ledger rows of an action (see the module) in one transaction, then send them:
    with ``sender`` (the CLI: ``actions_send``) at once in this process, else by a Celery task
    queued when the transaction commits. Returns the plan, with each row's ledger id."""
    platforms.check_configured(choice.platform)
    try:
        with transaction.atomic():
            plan, ids = _record(project=project, choice=choice, user=user)
            if ids:
                _audit_recorded(project, choice, user, count=len(ids))
            if ids and sender is None:
                transaction.on_commit(lambda: _enqueue(ids))
    except IntegrityError:  # another request recorded the same session's action meanwhile
        raise ActionRefused(
            "These actions were being recorded by another request at the same time; nothing "
            "was recorded by this one. Preview again.",
            code="conflict",
        ) from None
    if ids and sender is not None:
        sender(action_ids=ids)
    return plan


def _audit_recorded(project: Project, choice: ActionChoice, user, *, count: int) -> None:
    amount = f" of {choice.amount}" if choice.amount is not None else ""
    reason = f" ({choice.reason_code})" if choice.reason_code else ""
    audit_record(
        project=project,
        actor=user,
        kind=AuditKind.PLATFORM_ACTIONS,
        summary=f"{choice.platform.title()}: {choice.kind}{amount}{reason} for {count} "
        f"session{'' if count == 1 else 's'}.",
        changes={
            "platform": choice.platform,
            "action": choice.kind,
            "amount": str(choice.amount) if choice.amount is not None else None,
            "reason_code": choice.reason_code,
            "sessions": count,
        },
    )


def _record(*, project: Project, choice: ActionChoice, user) -> tuple[ActionPlan, list[int]]:
    plan = action_plan(project=project, choice=choice)
    minor = int(choice.amount * 100) if choice.amount is not None else 0
    currency = plan.currency if choice.kind == Kind.BONUS else ""
    fields = {
        "amount_minor": minor,
        "currency": currency,
        "reason_code": choice.reason_code,
        "message": choice.message,
    }
    ids = []
    for row in plan.to_send:
        if row.action_id is None:
            action = PlatformAction.objects.create(
                project=project,
                entry_id=row.entry_id,
                platform=choice.platform,
                session_id=row.session_id,
                worker_id=row.worker_id,
                study_id=row.study_id,
                kind=choice.kind,
                created_by=user,
                **fields,
            )
            if choice.kind == Kind.BONUS and choice.platform == Platform.MTURK:
                action.request_id = mturk_token(action)
                action.save(update_fields=["request_id"])
            row.action_id = action.pk
        elif row.status == "retry":
            # A failed row is sent with the new parameters; an unknown one (a safe repeat) with
            # exactly what may already have been done.
            PlatformAction.objects.filter(pk=row.action_id, state=State.FAILED).update(
                state=State.PENDING, outcome="", **fields
            )
            PlatformAction.objects.filter(pk=row.action_id, state=State.UNKNOWN).update(
                state=State.PENDING, outcome="Sent again (a safe repeat)."
            )
        ids.append(row.action_id)
    return plan, ids


def _enqueue(ids: list[int]) -> None:
    from kombu.exceptions import OperationalError

    from crowd.celery_tasks import send_actions

    try:
        send_actions.apply_async((ids,), queue=settings.CONCORD_CROWD_QUEUE or None)
    except OperationalError as exc:  # the rows stay pending; the next request queues them again
        log.warning("crowd actions %s could not be queued: %s", ids, exc)
        raise ActionRefused(
            "The actions are recorded but could not be queued (the task queue is unavailable). "
            "Confirm again once it is back: nothing is sent twice.",
            code="unavailable",
        ) from None


def _claim(action_id: int) -> bool:
    """Take a pending row for sending: it becomes ``unknown`` before the request goes out."""
    return bool(
        PlatformAction.objects.filter(pk=action_id, state=State.PENDING).update(
            state=State.UNKNOWN, attempts=F("attempts") + 1, outcome="Being sent."
        )
    )


def _settle(action_ids: list[int], answer: platforms.Answer, **extra) -> None:
    PlatformAction.objects.filter(pk__in=action_ids).update(
        state=answer.state, status_code=answer.status, outcome=answer.outcome[:300], **extra
    )


def actions_send(*, action_ids: list[int]) -> dict[str, int]:
    """Send the pending rows among ``action_ids`` (rows in another state are left alone);
    returns how many rows ended in each state."""
    ready = _configured_only(action_ids)
    claimed = [pk for pk in sorted(ready) if _claim(pk)]
    actions = list(
        PlatformAction.objects.select_related("project").filter(pk__in=claimed).order_by("pk")
    )
    bonuses: dict[tuple[int, str], list[PlatformAction]] = {}
    for action in actions:
        if action.platform == Platform.PROLIFIC and action.kind == Kind.BONUS:
            bonuses.setdefault((action.project_id, action.study_id), []).append(action)
        else:
            _send_one(action)
    for group in bonuses.values():
        for start in range(0, len(group), BULK_MAX):
            _prolific_bonus(group[start : start + BULK_MAX])
    counts: dict[str, int] = {}
    for state in PlatformAction.objects.filter(pk__in=claimed).values_list("state", flat=True):
        counts[state] = counts.get(state, 0) + 1
    return counts


def _configured_only(action_ids: list[int]) -> set[int]:
    """The rows whose platform has its keys here; the others stay pending (a worker started
    without the keys must not claim rows it cannot send, which would leave them unknown)."""
    rows = PlatformAction.objects.filter(pk__in=action_ids).values_list("pk", "platform")
    ready = set()
    for pk, platform in rows:
        try:
            platforms.check_configured(platform)
        except platforms.PlatformUnavailable as exc:
            log.warning("crowd action %s left pending: %s", pk, exc.message)
            continue
        ready.add(pk)
    return ready


def _send_one(action: PlatformAction) -> None:
    if action.platform == Platform.PROLIFIC:
        path, payload = platforms.prolific_request(
            action.kind,
            session_id=action.session_id,
            reason_code=action.reason_code,
            message=action.message,
        )
        answer = platforms.prolific_post(path, payload, what=action.kind)
    else:
        operation, payload = platforms.mturk_request(
            action.kind,
            session_id=action.session_id,
            worker_id=action.worker_id,
            message=action.message,
            amount=f"{Decimal(action.amount_minor) / 100:.2f}",
            token=action.request_id,
        )
        # A repeat of a bonus whose earlier try got no definite answer: MTurk refuses a token
        # it has already paid, so a refusal now most likely means that try was paid.
        repeat = action.attempts > 1 and (action.status_code or 500) >= 500
        answer = platforms.mturk_post(
            operation, payload, sandbox=crowd_settings(action.project).mturk_sandbox
        )
        if repeat and action.kind == Kind.BONUS and answer.state == platforms.FAILED:
            answer = platforms.Answer(
                State.UNKNOWN,
                answer.status,
                "MTurk refused a repeat of this bonus's token: the earlier try was most likely "
                "paid. Check the worker's bonuses on MTurk and reconcile.",
            )
    _settle([action.pk], answer)


def _prolific_bonus(group: list[PlatformAction]) -> None:
    """One bulk bonus payment for up to ``BULK_MAX`` rows of one study: set it up (pays
    nothing: a failure leaves the rows ``failed``), record its id, then pay it exactly once."""
    ids = [a.pk for a in group]
    lines = [(a.worker_id, f"{Decimal(a.amount_minor) / 100:.2f}") for a in group]
    path, payload = platforms.prolific_bonus_setup_request(study_id=group[0].study_id, lines=lines)
    setup = platforms.prolific_post(path, payload, what="bonus set-up")
    bulk_id = str(setup.data.get("id", ""))[:64] if setup.state == platforms.SENT else ""
    if not bulk_id:
        # Setting up pays nothing, so whatever happened, nothing was paid.
        outcome = setup.outcome if setup.state != platforms.SENT else "Prolific gave no id."
        _settle(ids, platforms.Answer(State.FAILED, setup.status, "Set-up: " + outcome))
        return
    PlatformAction.objects.filter(pk__in=ids).update(
        request_id=bulk_id, outcome="Bulk bonus set up; paying it."
    )
    paid = platforms.prolific_post(f"bulk-bonus-payments/{bulk_id}/pay/", {}, what="bonus pay")
    _settle(ids, paid)


def action_reconcile(*, project: Project, action_id: int, state: str, by=None) -> PlatformAction:
    """Record what the researcher found on the platform for an ``unknown`` row: ``sent`` (it was
    done) or ``failed`` (it was not; a later request may send it again). ``by``: who, for the
    project's audit log."""
    if state not in (State.SENT, State.FAILED):
        raise ActionRefused("Record it as sent or failed.", field="state")
    action = PlatformAction.objects.filter(project=project, pk=action_id).first()
    if action is None:
        raise ActionRefused("No such action in this project.", code="not_found")
    with transaction.atomic():
        updated = PlatformAction.objects.filter(pk=action.pk, state=State.UNKNOWN).update(
            state=state, outcome=f"Recorded as {state} by the researcher."
        )
        if updated:
            audit_record(
                project=project,
                actor=by,
                kind=AuditKind.PLATFORM_ACTION_RECONCILED,
                summary=f"{action.platform.title()} {action.kind} of session "
                f"{action.session_id} recorded as {state}.",
                changes={"action": action.pk, "state": {"before": "unknown", "after": state}},
            )
    if not updated:
        raise ActionRefused(
            f"Only an action in state unknown can be reconciled (this one is {action.state}).",
            code="conflict",
        )
    action.refresh_from_db()
    return action
