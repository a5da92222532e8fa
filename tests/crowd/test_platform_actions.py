"""Prolific and MTurk actions from quality-control results (approve, reject, return, bonus),
against local stub servers of both APIs (tests/crowd/platform_stubs.py): dry runs, the ledger
that keeps them idempotent, errors and timeouts, SigV4, the page and the CLI."""

from __future__ import annotations

import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from annotation.models import Batch
from crowd import actions, sigv4
from crowd.celery_tasks import send_actions
from crowd.models import CrowdEntry, PlatformAction
from projects.models import Membership
from tests import factories
from tests.crowd import platform_stubs as stubs
from tests.crowd.conftest import crowd_project

State = PlatformAction.State
REJECTION = (
    "Your answers to the attention checks in this study were wrong on most of the control items, "
    "so we cannot accept this submission."
)
CROWD = {"batch_size": 2, "controls_per_batch": 1, "currency": "USD", "bonus_per_batch": "0.75"}


def add_session(project, platform, worker, session, *, finished=True, passed=True, study="S1"):
    """A platform session as the entry flow leaves it: the worker's account and membership, the
    entry, and its main batch (finished or open); ``passed=False`` disqualifies the worker."""
    # Worker accounts have no password (as the entry flow makes them; no hashing either).
    user = factories.UserFactory(
        username=f"{platform}-{worker}.{project.pk}.{study}", password=None
    )
    factories.MembershipFactory(
        project=project,
        user=user,
        role="annotator",
        qualification=Membership.Qualification.NOT_REQUIRED
        if passed
        else Membership.Qualification.DISQUALIFIED,
    )
    entry = CrowdEntry.objects.create(
        project=project,
        user=user,
        platform=platform,
        worker_id=worker,
        study_id=study,
        session_id=session,
        hit_id="HIT1" if platform == "mturk" else "",
    )
    now = timezone.now()
    Batch.objects.create(
        project=project,
        annotator=user,
        number=1,
        size=3,
        state=Batch.State.FINISHED if finished else Batch.State.OPEN,
        external_ref=entry.batch_ref,
        created_at=now,
        expires_at=now + timedelta(hours=1),
        finished_at=now if finished else None,
    )
    return entry


@pytest.fixture
def prolific(settings):
    stub = stubs.ProlificStub()
    server = stubs.serve(stub, stubs.ProlificHandler)
    settings.CONCORD_PROLIFIC_TOKEN = stubs.PROLIFIC_TOKEN
    settings.CONCORD_PROLIFIC_API_URL = f"{stub.url}/api/v1/"
    settings.CONCORD_CROWD_ACTION_TIMEOUT = 0.5
    yield stub
    stub.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def mturk(settings):
    stub = stubs.MTurkStub()
    server = stubs.serve(stub, stubs.MTurkHandler)
    settings.CONCORD_MTURK_ACCESS_KEY_ID = stubs.MTURK_KEY
    settings.CONCORD_MTURK_SECRET_ACCESS_KEY = stubs.MTURK_SECRET
    settings.CONCORD_MTURK_SANDBOX_ENDPOINT = f"{stub.url}/"
    settings.CONCORD_MTURK_ENDPOINT = "http://127.0.0.1:9/"  # production: never used here
    settings.CONCORD_CROWD_ACTION_TIMEOUT = 0.5
    yield stub
    stub.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def study(db, celery_eager):
    """Prolific sessions: two passed and finished, one finished and failed, one stopped early."""
    project = crowd_project(crowd=CROWD, regular=0, controls=0)
    add_session(project, "prolific", "PASS1", "sub-1")
    add_session(project, "prolific", "PASS2", "sub-2")
    add_session(project, "prolific", "FAIL1", "sub-3", passed=False)
    add_session(project, "prolific", "GONE1", "sub-4", passed=False, finished=False)
    return project


def run(project, kind, platform="prolific", **options):
    choice = actions.action_choice(project=project, platform=platform, kind=kind, **options)
    plan = actions.actions_record(project=project, choice=choice)
    sent = actions.actions_send(action_ids=[r.action_id for r in plan.to_send])
    return plan, sent


# --- SigV4 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        (
            {"Param2": "value2", "Param1": "value1"},
            "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
        ),
    ],
)
def test_sigv4_matches_the_aws_test_suite_vectors(query, expected):
    """AWS's SigV4 test suite, get-vanilla and get-vanilla-query-order-key-case."""
    signed, signature = sigv4.signature(
        method="GET",
        path="/",
        query=query,
        headers={"Host": "example.amazonaws.com", "X-Amz-Date": "20150830T123600Z"},
        body=b"",
        secret="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        region="us-east-1",
        service="service",
        amz_date="20150830T123600Z",
    )
    assert (signed, signature) == ("host;x-amz-date", expected)


# --- Prolific ------------------------------------------------------------------------------------


def test_a_dry_run_shows_what_would_be_sent_and_sends_nothing(study, prolific):
    choice = actions.action_choice(project=study, platform="prolific", kind="approve")
    plan = actions.action_plan(project=study, choice=choice)
    assert [r.worker_id for r in plan.to_send] == ["PASS1", "PASS2"]
    assert f"POST {prolific.url}/api/v1/submissions/sub-1/transition/" in plan.rows[0].request
    assert '{"action": "APPROVE"}' in plan.rows[0].request
    assert prolific.requests == [] and not PlatformAction.objects.exists()


def test_approve_sends_one_call_per_passed_submission_and_a_repeat_sends_nothing(study, prolific):
    plan, sent = run(study, "approve")
    assert sent == {"sent": 2}
    assert [body for body in prolific.calls("transition")] == [{"action": "APPROVE"}] * 2
    assert prolific.status == {"sub-1": "APPROVED", "sub-2": "APPROVED"}
    again, sent = run(study, "approve")
    assert [r.status for r in again.rows] == ["sent", "sent"] and sent == {}
    # A redelivered task with the same rows sends nothing either (rows are claimed once).
    send_actions.delay([r.action_id for r in plan.rows])
    assert len(prolific.requests) == 2


def test_reject_needs_prolifics_category_and_a_long_message_and_goes_to_failed_workers(
    study, prolific
):
    with pytest.raises(actions.ActionRefused) as refused:
        actions.action_choice(
            project=study, platform="prolific", kind="reject", reason_code="X", message=REJECTION
        )
    assert refused.value.field == "reason_code"
    with pytest.raises(actions.ActionRefused) as refused:
        actions.action_choice(
            project=study, platform="prolific", kind="reject", reason_code="FAILED_CHECK",
            message="too short",
        )  # fmt: skip
    assert refused.value.field == "message"
    _, sent = run(study, "reject", reason_code="FAILED_CHECK", message=REJECTION)
    assert sent == {"sent": 1}
    assert prolific.calls("transition sub-3 REJECT") == [
        {"action": "REJECT", "message": REJECTION, "rejection_category": "FAILED_CHECK"}
    ]
    # An approved submission is not rejected afterwards (the worker was disqualified later).
    run(study, "approve")
    Membership.objects.filter(user__crowd_entries__worker_id="PASS1").update(
        qualification=Membership.Qualification.DISQUALIFIED
    )
    plan, sent = run(study, "reject", reason_code="FAILED_CHECK", message=REJECTION)
    assert {r.worker_id: r.status for r in plan.rows} == {"PASS1": "conflict", "FAIL1": "sent"}
    assert sent == {} and prolific.status["sub-1"] == "APPROVED"


def test_return_requests_go_to_workers_stopped_before_finishing(study, prolific):
    _, sent = run(study, "return", message="Did not pass the qualification checks.")
    assert sent == {"sent": 1}
    assert prolific.calls("return sub-4") == [
        {"request_return_reasons": ["Did not pass the qualification checks."]}
    ]


def test_bonus_is_one_bulk_payment_per_study_paid_once_and_never_again(study, prolific):
    prolific.participants["S1"] = {"PASS1", "PASS2"}
    plan, sent = run(study, "bonus", amount="0.50")
    assert sent == {"sent": 2}
    assert prolific.calls("bonus set-up") == [
        {"study_id": "S1", "csv_bonuses": "PASS1,0.50\nPASS2,0.50"}
    ]
    assert prolific.paid == [("PASS1", Decimal("0.50")), ("PASS2", Decimal("0.50"))]
    row = PlatformAction.objects.get(worker_id="PASS1")
    assert (row.amount_minor, row.currency, row.state) == (50, "USD", State.SENT)
    assert row.request_id in prolific.bulk
    again, sent = run(study, "bonus", amount="0.50")
    assert sent == {} and len(prolific.paid) == 2


def test_a_timed_out_bulk_bonus_stays_unknown_and_is_not_paid_again(study, prolific):
    prolific.participants["S1"] = {"PASS1", "PASS2"}
    prolific.hang_next("pay/$")  # Prolific pays, and its answer never arrives
    _, sent = run(study, "bonus", amount="1.00")
    assert sent == {"unknown": 2} and len(prolific.paid) == 2
    row = PlatformAction.objects.get(worker_id="PASS1")
    assert "No answer from Prolific" in row.outcome
    # Asking again (page, CLI, a redelivered task) sends nothing: the researcher must reconcile.
    plan, sent = run(study, "bonus", amount="1.00")
    assert [r.status for r in plan.rows] == ["unknown", "unknown"] and sent == {}
    actions.actions_send(action_ids=[row.pk])
    assert len(prolific.paid) == 2 and len(prolific.calls("bonus pay")) == 1
    actions.action_reconcile(project=study, action_id=row.pk, state="sent")
    assert PlatformAction.objects.get(pk=row.pk).state == State.SENT


def test_a_failed_set_up_pays_nothing_and_may_be_sent_again(study, prolific):
    prolific.participants["S1"] = {"PASS1"}  # PASS2 unknown to Prolific: 400 naming it
    _, sent = run(study, "bonus", amount="0.50")
    assert sent == {"failed": 2} and prolific.paid == []
    row = PlatformAction.objects.get(worker_id="PASS2")
    assert row.outcome == "Set-up: Prolific refused it (400); see the server log."
    assert "Unknown participant" not in row.outcome  # the platform's body is not echoed
    prolific.participants["S1"].add("PASS2")
    plan, sent = run(study, "bonus", amount="0.50")
    assert [r.status for r in plan.rows] == ["retry", "retry"] and sent == {"sent": 2}
    assert len(prolific.paid) == 2


@pytest.mark.parametrize(
    ("status", "state", "words"),
    [
        (400, State.FAILED, "refused it (400)"),
        (429, State.FAILED, "slow down (429)"),
        (500, State.UNKNOWN, "had an error (500)"),
    ],
)
def test_platform_errors_are_recorded_without_their_bodies(study, prolific, status, state, words):
    prolific.fail_next("sub-1/transition", status, {"detail": "internal: token abc123"})
    _, sent = run(study, "approve")
    row = PlatformAction.objects.get(session_id="sub-1")
    assert (row.state, row.status_code) == (state, status)
    assert words in row.outcome and "abc123" not in row.outcome
    # A failed or unknown approval is sent again (Prolific's transitions are idempotent).
    plan, _ = run(study, "approve")
    assert PlatformAction.objects.get(session_id="sub-1").state == State.SENT
    assert prolific.status["sub-1"] == "APPROVED"


def test_without_a_token_nothing_is_recorded_or_sent(study, settings):
    settings.CONCORD_PROLIFIC_TOKEN = ""
    choice = actions.action_choice(project=study, platform="prolific", kind="approve")
    with pytest.raises(actions.platforms.PlatformUnavailable):
        actions.actions_record(project=study, choice=choice)
    assert not PlatformAction.objects.exists()


def test_a_worker_without_the_token_leaves_the_rows_pending(study, prolific, settings):
    choice = actions.action_choice(project=study, platform="prolific", kind="approve")
    plan = actions.actions_record(project=study, choice=choice)
    settings.CONCORD_PROLIFIC_TOKEN = ""  # the worker's environment lacks the key
    assert actions.actions_send(action_ids=[r.action_id for r in plan.to_send]) == {}
    assert set(PlatformAction.objects.values_list("state", flat=True)) == {State.PENDING}
    settings.CONCORD_PROLIFIC_TOKEN = stubs.PROLIFIC_TOKEN
    again, sent = run(study, "approve")  # recorded earlier: sent now
    assert [r.status for r in again.rows] == ["queued", "queued"] and sent == {"sent": 2}


@pytest.mark.parametrize(
    ("amount", "field"), [("-1", "amount"), ("0", "amount"), ("0.005", "amount"), ("21", "amount")]
)
def test_bonus_amounts_are_bounded(study, amount, field):
    with pytest.raises(actions.ActionRefused) as refused:
        actions.action_choice(project=study, platform="prolific", kind="bonus", amount=amount)
    assert refused.value.field == field


# --- MTurk ---------------------------------------------------------------------------------------


@pytest.fixture
def hits(db, celery_eager):
    project = crowd_project(crowd=CROWD, regular=0, controls=0)
    add_session(project, "mturk", "AW1", "ASSIGN1")
    add_session(project, "mturk", "AW2", "ASSIGN2", passed=False)
    return project


def test_mturk_calls_are_signed_and_the_stub_verifies_the_signature(hits, mturk, settings):
    mturk.assignments.update({"ASSIGN1": "AW1", "ASSIGN2": "AW2"})
    _, sent = run(hits, "approve", platform="mturk")
    assert sent == {"sent": 1} and mturk.calls("ApproveAssignment") == [{"AssignmentId": "ASSIGN1"}]
    _, sent = run(hits, "reject", platform="mturk", message="Most control answers were wrong.")
    assert mturk.calls("RejectAssignment") == [
        {"AssignmentId": "ASSIGN2", "RequesterFeedback": "Most control answers were wrong."}
    ]
    assert mturk.bad_signatures == 0
    # A wrong secret is refused by the stub as AWS refuses it.
    settings.CONCORD_MTURK_SECRET_ACCESS_KEY = "wrong"
    PlatformAction.objects.update(state=State.FAILED)
    mturk.status.clear()
    _, sent = run(hits, "approve", platform="mturk")
    assert sent == {"failed": 1} and mturk.bad_signatures == 1


def test_an_mturk_bonus_that_timed_out_is_retried_with_its_token_and_paid_once(hits, mturk):
    mturk.assignments.update({"ASSIGN1": "AW1"})
    mturk.hang_next("SendBonus")
    _, sent = run(hits, "bonus", platform="mturk", amount="0.75")
    assert sent == {"unknown": 1} and len(mturk.tokens) == 1
    row = PlatformAction.objects.get()
    assert row.request_id == f"concord-{hits.pk}-{row.pk}"
    plan, sent = run(hits, "bonus", platform="mturk", amount="0.75")
    assert [r.status for r in plan.rows] == ["retry"]
    assert mturk.calls("SendBonus")[0]["UniqueRequestToken"] == row.request_id
    assert list(mturk.tokens) == [row.request_id]  # the same token: MTurk paid it once
    assert mturk.tokens[row.request_id] == ("AW1", Decimal("0.75"))
    row.refresh_from_db()  # MTurk refused the repeated token: most likely paid, never "failed"
    assert row.state == State.UNKNOWN and "most likely paid" in row.outcome


def test_an_mturk_bonus_needs_usd(hits):
    hits.crowd = {**CROWD, "currency": "GBP"}
    hits.save()
    hits._crowd_settings = None
    with pytest.raises(actions.ActionRefused, match="US dollars"):
        actions.action_choice(project=hits, platform="mturk", kind="bonus")


# --- the page and the CLI ------------------------------------------------------------------------


def test_the_page_previews_then_sends_on_confirm(
    study, prolific, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    client = Client()
    client.force_login(study.researcher)
    url = f"/p/{study.slug}/quality/actions/"
    with django_assert_max_num_queries(20):
        page = client.get(url)
    assert page.status_code == 200
    preview = client.post(url, {"platform": "prolific", "kind": "approve", "step": "preview"})
    html = preview.content.decode()
    assert preview.status_code == 200 and "PASS1" in html and "will be sent" in html
    assert prolific.requests == []
    with django_capture_on_commit_callbacks(execute=True):
        done = client.post(url, {"platform": "prolific", "kind": "approve", "step": "confirm"})
    assert done.status_code == 302
    assert prolific.status == {"sub-1": "APPROVED", "sub-2": "APPROVED"}
    with django_assert_max_num_queries(20):  # the same bound with ledger rows: no query per row
        ledger = client.get(url).content.decode()
    assert "sub-1" in ledger and "Sent" in ledger


def test_the_page_reconciles_an_unknown_action_of_its_own_project_only(study, prolific):
    prolific.participants["S1"] = {"PASS1", "PASS2"}
    prolific.hang_next("pay/$")
    run(study, "bonus", amount="0.50")
    row = PlatformAction.objects.filter(state=State.UNKNOWN).first()
    url = f"/p/{study.slug}/quality/actions/"
    stranger = Client()
    stranger.force_login(crowd_project(crowd=CROWD, regular=0, controls=0).researcher)
    form = {"step": "reconcile", "action": row.pk, "as": "sent"}
    assert stranger.post(url, form).status_code == 404
    client = Client()
    client.force_login(study.researcher)
    page = client.get(url).content.decode()
    assert "It was done" in page and "Unknown: check on the platform" in page
    assert client.post(url, form).status_code == 302
    assert PlatformAction.objects.get(pk=row.pk).state == State.SENT
    assert client.post(url, form).status_code == 409  # only an unknown one
    assert len(prolific.paid) == 2


def test_a_bad_reason_is_a_400_naming_the_field(study, prolific):
    client = Client()
    client.force_login(study.researcher)
    response = client.post(
        f"/p/{study.slug}/quality/actions/",
        {"platform": "prolific", "kind": "reject", "reason_code": "NOPE", "step": "preview"},
    )
    assert response.status_code == 400 and b"rejection categories" in response.content
    assert prolific.requests == []


def test_researchers_of_another_project_and_annotators_cannot_act(study, prolific):
    other = crowd_project(crowd=CROWD, regular=0, controls=0)
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=study, user=annotator, role="annotator")
    for user in (other.researcher, annotator):
        client = Client()
        client.force_login(user)
        url = f"/p/{study.slug}/quality/actions/"
        assert client.get(url).status_code == 404
        response = client.post(url, {"platform": "prolific", "kind": "approve", "step": "confirm"})
        assert response.status_code == 404
    assert prolific.requests == [] and not PlatformAction.objects.exists()


def test_the_confirm_step_is_csrf_protected(study, prolific):
    client = Client(enforce_csrf_checks=True)
    client.force_login(study.researcher)
    response = client.post(
        f"/p/{study.slug}/quality/actions/",
        {"platform": "prolific", "kind": "approve", "step": "confirm"},
    )
    assert response.status_code == 403 and prolific.requests == []


def test_the_cli_dry_run_sends_nothing_and_the_real_run_sends_once(study, prolific):
    out = io.StringIO()
    call_command(
        "crowd_actions", study.slug, "--platform", "prolific", "--approve-passed", "--dry-run",
        stdout=out,
    )  # fmt: skip
    text = out.getvalue()
    assert "Dry run" in text and "PASS1" in text and "/submissions/sub-1/transition/" in text
    assert prolific.requests == []
    out = io.StringIO()
    call_command(
        "crowd_actions", study.slug, "--platform", "prolific", "--approve-passed", stdout=out
    )
    assert "sent: 2" in out.getvalue() and len(prolific.requests) == 2
    call_command(
        "crowd_actions", study.slug, "--platform", "prolific", "--approve-passed", stdout=out
    )
    assert len(prolific.requests) == 2


def test_the_cli_reconciles_an_unknown_bonus(study, prolific):
    prolific.participants["S1"] = {"PASS1", "PASS2"}
    prolific.hang_next("pay/$")
    out = io.StringIO()
    call_command(
        "crowd_actions", study.slug, "--platform", "prolific", "--bonus-passed", "--amount",
        "0.40", stdout=out,
    )  # fmt: skip
    assert "unknown: 2" in out.getvalue()
    row = PlatformAction.objects.filter(state=State.UNKNOWN).first()
    ledger = io.StringIO()
    call_command("crowd_actions", study.slug, "--ledger", stdout=ledger)
    assert f"{row.pk}\tprolific\tbonus\t" in ledger.getvalue() and "0.40 USD" in ledger.getvalue()
    call_command("crowd_actions", study.slug, "--reconcile", str(row.pk), "--as", "failed")
    assert PlatformAction.objects.get(pk=row.pk).state == State.FAILED
    with pytest.raises(CommandError, match="Only an action in state unknown"):
        call_command("crowd_actions", study.slug, "--reconcile", str(row.pk), "--as", "sent")


# --- a real worker -------------------------------------------------------------------------------


def test_a_real_worker_sends_what_the_page_confirmed_once(transactional_db, settings):
    """The page's confirm queues the task on the real broker; a real Celery worker process sends
    the approvals to the Prolific stub (needs PostgreSQL and Redis)."""
    import uuid

    import redis
    from django.db import connection

    from config.celery import app as celery_app
    from tests.conftest import require
    from tests.llm_judges.worker import CeleryWorker, database_url, redis_reachable, wait_for

    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    require(redis_reachable(), "needs Redis (set REDIS_URL)")
    stub = stubs.ProlificStub()
    server = stubs.serve(stub, stubs.ProlificHandler)
    queue = f"crowd-test-{uuid.uuid4().hex[:8]}"
    settings.CONCORD_CROWD_QUEUE = queue
    settings.CONCORD_PROLIFIC_TOKEN = stubs.PROLIFIC_TOKEN
    previous, celery_app.conf.task_always_eager = celery_app.conf.task_always_eager, False
    project = crowd_project(crowd=CROWD, regular=0, controls=0)
    add_session(project, "prolific", "PASS1", "sub-1")
    add_session(project, "prolific", "PASS2", "sub-2")
    worker = CeleryWorker(
        queue=queue,
        database_url=database_url(connection.settings_dict),
        redis_url=settings.REDIS_URL,
        env={
            "CONCORD_CROWD_QUEUE": queue,
            "CONCORD_PROLIFIC_TOKEN": stubs.PROLIFIC_TOKEN,
            "CONCORD_PROLIFIC_API_URL": f"{stub.url}/api/v1/",
        },
    )
    try:
        worker.wait_ready()
        client = Client()
        client.force_login(project.researcher)
        url = f"/p/{project.slug}/quality/actions/"
        form = {"platform": "prolific", "kind": "approve", "step": "confirm"}
        assert client.post(url, form).status_code == 302
        sent = PlatformAction.objects.filter(state=State.SENT)
        wait_for(lambda: sent.count() == 2, timeout=60, what="the approvals", worker=worker)
        assert client.post(url, form).status_code == 302  # confirmed twice: nothing more queued
        assert stub.status == {"sub-1": "APPROVED", "sub-2": "APPROVED"}
        assert len(stub.requests) == 2
    finally:
        worker.stop()
        celery_app.conf.task_always_eager = previous
        server.shutdown()
        server.server_close()
        redis.Redis.from_url(settings.REDIS_URL).delete(
            queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}"
        )


# --- the project's audit log (issue 30) ------------------------------------------------------------


def test_sending_platform_actions_writes_one_audit_entry_and_a_repeat_none(study, prolific):
    from projects.audit import AuditKind
    from projects.models import AuditEntry

    choice = actions.action_choice(project=study, platform="prolific", kind="approve")
    plan = actions.actions_record(project=study, choice=choice, user=study.researcher)
    actions.actions_send(action_ids=[r.action_id for r in plan.to_send])
    entry = AuditEntry.objects.get(project=study, kind=AuditKind.PLATFORM_ACTIONS)
    assert entry.actor == study.researcher
    assert entry.summary == "Prolific: approve for 2 sessions."
    assert entry.changes["sessions"] == 2 and entry.changes["action"] == "approve"
    actions.actions_record(project=study, choice=choice, user=study.researcher)  # all sent
    assert AuditEntry.objects.filter(project=study, kind=AuditKind.PLATFORM_ACTIONS).count() == 1


def test_reconciling_an_unknown_action_writes_one_audit_entry(study, prolific):
    from projects.audit import AuditKind
    from projects.models import AuditEntry

    prolific.participants["S1"] = {"PASS1", "PASS2"}
    prolific.hang_next("pay/$")
    run(study, "bonus", amount="0.50")
    row = PlatformAction.objects.filter(state=State.UNKNOWN).first()
    client = Client()
    client.force_login(study.researcher)
    form = {"step": "reconcile", "action": row.pk, "as": "sent"}
    assert client.post(f"/p/{study.slug}/quality/actions/", form).status_code == 302
    entry = AuditEntry.objects.get(project=study, kind=AuditKind.PLATFORM_ACTION_RECONCILED)
    assert entry.actor == study.researcher
    assert entry.changes["state"] == {"before": "unknown", "after": "sent"}
    assert client.post(f"/p/{study.slug}/quality/actions/", form).status_code == 409
    assert AuditEntry.objects.filter(project=study, kind=entry.kind).count() == 1
