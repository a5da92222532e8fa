"""Prolific and MTurk entry links, worker accounts, completion codes and the payment export."""

import csv
import io
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.models import Batch
from crowd import services as crowd_services
from crowd.models import CrowdEntry
from projects.models import Membership
from tests.crowd.conftest import RIGHT, add_annotator, crowd_project

CROWD = {
    "batch_size": 2,
    "controls_per_batch": 1,
    "prolific_completion_code": "C1ABCDEF",
    "prolific_screened_out_code": "SCREENED1",
}


@pytest.fixture
def study(db):
    return crowd_project(crowd=CROWD, regular=6, controls=3)


def prolific_url(
    project, *, pid="5f1a2b3c4d5e6f7a8b9c0d1e", session="sess0001", study_id="STUDY42", sig=None
):
    link = crowd_services.entry_link(
        base_url="http://testserver/", project=project, platform="prolific", study=study_id
    )
    query = parse_qs(urlparse(link).query)
    sig = sig if sig is not None else query["sig"][0]
    return f"/crowd/{project.slug}/prolific/?sig={sig}&STUDY_ID={study_id}&PROLIFIC_PID={pid}&SESSION_ID={session}"


def finish_batch(client, project, clock=None):
    """Answer every item the API gives until it stops; return the stop. With ``clock``, each
    answer takes the 4 s it reports (the server counts no more than the time that passed)."""
    for _ in range(20):
        response = client.post(
            f"/api/projects/{project.slug}/next/", content_type="application/json"
        )
        assert response.status_code == 200, response.content
        data = response.json()
        if "stop" in data:
            return data["stop"]
        if clock is not None:
            clock.advance(seconds=4)
        submitted = client.post(
            f"/api/assignments/{data['id']}/submit/",
            {"answer": RIGHT, "time_spent_ms": 4000},
            content_type="application/json",
        )
        assert submitted.status_code == 201
    raise AssertionError("the batch never ended")


def test_the_study_link_generated_for_prolific_has_the_placeholders_prolific_fills(study):
    link = crowd_services.entry_link(
        base_url="https://concord.example/", project=study, platform="prolific", study="STUDY42"
    )
    assert link.startswith(f"https://concord.example/crowd/{study.slug}/prolific/?sig=")
    assert "STUDY_ID=STUDY42" in link
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in link and "SESSION_ID={{%SESSION_ID%}}" in link


@pytest.mark.parametrize(
    "tamper",
    ["signature", "study", "project", "missing"],
)
def test_a_prolific_entry_link_with_a_tampered_signature_is_refused(study, tamper):
    other = crowd_project(crowd=CROWD, regular=1, controls=0)
    url = prolific_url(study)
    if tamper == "signature":
        sig = parse_qs(urlparse(url).query)["sig"][0]
        url = url.replace(sig, sig[:-1] + ("A" if sig[-1] != "A" else "B"))
    elif tamper == "study":
        url = url.replace("STUDY_ID=STUDY42", "STUDY_ID=STUDY43")
    elif tamper == "project":
        url = url.replace(f"/crowd/{study.slug}/", f"/crowd/{other.slug}/")
    else:
        url = url.split("sig=")[0] + "STUDY_ID=STUDY42&PROLIFIC_PID=abc&SESSION_ID=def"
    response = Client().get(url)
    assert response.status_code == 403
    assert b"not valid" in response.content
    assert not get_user_model().objects.filter(username__startswith="prolific").exists()
    assert not CrowdEntry.objects.exists()


def test_a_valid_prolific_link_creates_the_worker_and_returns_the_completion_code_after_the_batch(
    study, clock
):
    client = Client()
    response = client.get(prolific_url(study))
    assert response.status_code == 302 and response["Location"] == f"/p/{study.slug}/annotate/"
    worker = get_user_model().objects.get(
        username=f"prolific-5f1a2b3c4d5e6f7a8b9c0d1e.{study.pk}.STUDY42"
    )
    assert not worker.has_usable_password()
    assert Membership.objects.get(project=study, user=worker).role == "annotator"
    page = client.get(f"/p/{study.slug}/annotate/")
    assert b"Return to Prolific" in page.content  # shown (by the page's JS) once the batch is done

    # Not finished yet: the way back sends the worker to their items.
    assert client.get(f"/crowd/{study.slug}/finish/")["Location"] == f"/p/{study.slug}/annotate/"
    stop = finish_batch(client, study, clock)
    batch = Batch.objects.get(annotator=worker)
    assert (batch.size, batch.state) == (3, Batch.State.FINISHED)
    assert stop["reason"] == "batch_complete" and stop["code"] == batch.code
    assert stop["can_start_another"] is False  # one batch per Prolific session
    finish = client.get(f"/crowd/{study.slug}/finish/")
    assert finish.status_code == 302
    assert finish["Location"] == "https://app.prolific.com/submissions/complete?cc=C1ABCDEF"

    # Coming back through the same link shows the same finished batch, no new one.
    client.get(prolific_url(study))
    assert finish_batch(client, study)["code"] == batch.code
    assert Batch.objects.filter(annotator=worker).count() == 1

    rows = list(csv.DictReader(io.StringIO(_payments(study))))
    assert len(rows) == 1
    row = rows[0]
    assert (row["platform"], row["worker_id"], row["study_id"], row["session_id"]) == (
        "prolific",
        "5f1a2b3c4d5e6f7a8b9c0d1e",
        "STUDY42",
        "sess0001",
    )
    assert (row["completion_code"], row["batch_state"], row["items_submitted"]) == (
        batch.code,
        "finished",
        "3",
    )
    assert row["passed_qc"] == "True" and float(row["active_minutes"]) == 0.2


def _payments(project):
    client = Client()
    client.force_login(project.researcher)
    response = client.get(f"/p/{project.slug}/quality/payments.csv")
    assert response.status_code == 200 and response["Content-Type"] == "text/csv"
    return response.content.decode()


def test_nobody_can_take_over_another_workers_prolific_session(study):
    assert Client().get(prolific_url(study, pid="victim01", session="sessV")).status_code == 302
    # Someone else with the victim's session id is refused; so is a second session of the
    # victim's id in the same study (Prolific gives one session per participant and study).
    assert Client().get(prolific_url(study, pid="attacker", session="sessV")).status_code == 403
    assert Client().get(prolific_url(study, pid="victim01", session="sessOther")).status_code == 409
    assert CrowdEntry.objects.count() == 1


def test_entry_ids_with_odd_characters_are_refused(study):
    response = Client().get(prolific_url(study, pid="x%27%3B--"))
    assert response.status_code == 400 and b"worker id" in response.content


def test_a_disqualified_prolific_worker_goes_back_with_the_screened_out_code(study):
    client = Client()
    client.get(prolific_url(study))
    worker = get_user_model().objects.get(username__startswith="prolific-")
    from annotation import quality

    quality.qualification_decide(
        membership=Membership.objects.get(user=worker), decision="disqualify"
    )
    stop = client.post(f"/api/projects/{study.slug}/next/").json()["stop"]
    assert stop["reason"] == "closed_by_researcher" and "code" not in stop
    finish = client.get(f"/crowd/{study.slug}/finish/")
    assert finish["Location"] == "https://app.prolific.com/submissions/complete?cc=SCREENED1"


def test_a_disqualified_prolific_worker_without_a_screened_out_code_is_told_to_return(db):
    project = crowd_project(
        crowd={**CROWD, "prolific_screened_out_code": ""}, regular=6, controls=3
    )
    client = Client()
    client.get(prolific_url(project))
    worker = get_user_model().objects.get(username__startswith="prolific-")
    from annotation import quality

    quality.qualification_decide(
        membership=Membership.objects.get(user=worker), decision="disqualify"
    )
    stop = client.post(f"/api/projects/{project.slug}/next/").json()["stop"]
    assert stop["screened_out"] is True and "code" not in stop
    page = client.get(f"/p/{project.slug}/annotate/").content.decode()
    assert 'id="crowd-return-screened-out"' in page
    finish = client.get(f"/crowd/{project.slug}/finish/")
    html = finish.content.decode()
    assert finish.status_code == 200  # a page with the way back, not a dead end
    assert "return your submission" in html
    assert 'href="https://app.prolific.com/submissions"' in html
    assert worker.username not in html


def mturk_url(project, **params):
    link = crowd_services.entry_link(
        base_url="http://testserver/", project=project, platform="mturk", study="pilot-1"
    )
    extra = "&".join(f"{k}={v}" for k, v in params.items())
    return urlparse(link)._replace(scheme="", netloc="").geturl() + ("&" + extra if extra else "")


def test_mturk_preview_shows_the_task_and_creates_nothing(study):
    response = Client().get(
        mturk_url(study, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", hitId="HIT1")
    )
    assert response.status_code == 200
    assert b"This is a preview" in response.content and b"Submit HIT" not in response.content
    assert "frame-ancestors https://worker.mturk.com" in response["Content-Security-Policy"]
    assert not response.has_header("X-Frame-Options")
    assert not CrowdEntry.objects.exists()


def test_an_mturk_hit_opens_the_task_and_posts_the_code_back_with_the_assignment_id(study):
    frame = Client().get(
        mturk_url(
            study,
            assignmentId="ASSIGN123",
            hitId="HIT1",
            workerId="A1WORKER",
            turkSubmitTo="https://evil.example",
        )
    )
    html = frame.content.decode()
    assert frame.status_code == 200
    assert (
        'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in html
    )  # never turkSubmitTo
    assert 'name="assignmentId" value="ASSIGN123"' in html
    start = html.split('href="/crowd/start/')[1].split('"')[0]
    tab = Client()  # the task opens in a new, top-level tab
    assert tab.get(f"/crowd/start/{start}")["Location"] == f"/p/{study.slug}/annotate/"
    stop = finish_batch(tab, study)
    entry = CrowdEntry.objects.get()
    assert (entry.worker_id, entry.session_id, entry.hit_id) == ("A1WORKER", "ASSIGN123", "HIT1")
    assert stop["code"] == Batch.objects.get(external_ref="mturk:ASSIGN123").code
    page = tab.get(f"/p/{study.slug}/annotate/").content.decode()
    assert "paste the completion code there" in page
    assert Client().get(f"/crowd/start/{start[:-2]}x/").status_code == 403

    study.crowd = {**CROWD, "mturk_sandbox": False}
    study.save()
    production = Client().get(
        mturk_url(study, assignmentId="ASSIGN124", hitId="HIT1", workerId="A2WORKER")
    )
    assert 'action="https://www.mturk.com/mturk/externalSubmit"' in production.content.decode()


def test_an_mturk_worker_stopped_by_quality_control_is_told_to_return_the_hit(study):
    frame = Client().get(
        mturk_url(study, assignmentId="ASSIGN9", hitId="HIT9", workerId="A9WORKER")
    )
    start = frame.content.decode().split('href="/crowd/start/')[1].split('"')[0]
    tab = Client()
    tab.get(f"/crowd/start/{start}")
    worker = get_user_model().objects.get(crowd_entries__worker_id="A9WORKER")
    from annotation import quality

    quality.qualification_decide(
        membership=Membership.objects.get(user=worker), decision="disqualify"
    )
    stop = tab.post(f"/api/projects/{study.slug}/next/").json()["stop"]
    assert stop["screened_out"] is True and "code" not in stop
    page = tab.get(f"/p/{study.slug}/annotate/").content.decode()
    assert "press <strong>Return</strong> at the top of the HIT" in page
    finish = tab.get(f"/crowd/{study.slug}/finish/").content.decode()
    assert "press <strong>Return</strong> at the top of the HIT" in finish


def test_a_second_hit_of_the_same_worker_gets_its_own_batch_and_code(study):
    codes = []
    for assignment, hit in (("ASSIGN1", "HIT1"), ("ASSIGN2", "HIT2")):
        frame = Client().get(
            mturk_url(study, assignmentId=assignment, hitId=hit, workerId="A1WORKER")
        )
        start = frame.content.decode().split('href="/crowd/start/')[1].split('"')[0]
        tab = Client()
        tab.get(f"/crowd/start/{start}")
        codes.append(finish_batch(tab, study)["code"])
    assert len(set(codes)) == 2
    assert Batch.objects.filter(state="finished").count() == 2


def test_worker_accounts_cannot_log_in_with_a_password(study):
    pid = "5f1a2b3c4d5e6f7a8b9c0d1e"
    Client().get(prolific_url(study, pid=pid))
    worker = get_user_model().objects.get(username__startswith="prolific-")
    assert not worker.has_usable_password()
    # What a password derived from the entry would be: the worker id, the account name, the
    # study's or session's ids. None logs in.
    for password in (pid, worker.username, "STUDY42", "sess0001", study.slug):
        client = Client()
        response = client.post("/login/", {"username": worker.username, "password": password})
        assert response.status_code == 200, password  # the form again, not a redirect
        assert "_auth_user_id" not in client.session, password


def test_crowd_pages_for_researchers_are_closed_to_annotators_and_reviewers(study):
    annotator = add_annotator(study)
    reviewer = add_annotator(study)
    Membership.objects.filter(user=reviewer).update(role="reviewer")
    for user, allowed in (
        (annotator, set()),
        (reviewer, {"review/"}),
        (study.researcher, {"quality/", "quality/payments.csv", "review/"}),
    ):
        client = Client()
        client.force_login(user)
        for path in ("quality/", "quality/payments.csv", "review/"):
            expected = 200 if path in allowed else 404
            assert client.get(f"/p/{study.slug}/{path}").status_code == expected, (user, path)


def test_a_crowd_worker_sees_neither_the_internal_account_name_nor_the_api_link(study):
    client = Client()
    entered = client.get(prolific_url(study), follow=True)
    assert entered.status_code == 200
    page = client.get(f"/p/{study.slug}/annotate/").content.decode()
    worker = get_user_model().objects.get(crowd_entries__isnull=False)
    assert worker.username not in page
    assert "/api/docs/" not in page


def test_the_payment_export_gives_reward_bonus_and_screened_out_amounts(db):
    project = crowd_project(
        crowd={
            **CROWD,
            "currency": "USD",
            "reward_per_batch": "2.50",
            "bonus_per_batch": 0.75,
            "screened_out_reward": "0.40",
        },
        regular=6,
        controls=3,
    )
    finisher, stopped, newcomer = Client(), Client(), Client()
    finisher.get(prolific_url(project, pid="finisher01", session="s1"))
    finish_batch(finisher, project)
    stopped.get(prolific_url(project, pid="stopped01", session="s2"))
    from annotation import quality

    quality.qualification_decide(
        membership=Membership.objects.get(user__crowd_entries__worker_id="stopped01"),
        decision="disqualify",
    )
    newcomer.get(prolific_url(project, pid="newcomer1", session="s3"))
    rows = {r["worker_id"]: r for r in csv.DictReader(io.StringIO(_payments(project)))}
    assert (rows["finisher01"]["reward"], rows["finisher01"]["bonus"]) == ("2.50", "0.75")
    assert rows["finisher01"]["total"] == "3.25" and rows["finisher01"]["currency"] == "USD"
    assert (rows["stopped01"]["reward"], rows["stopped01"]["total"]) == ("0.40", "0.40")
    assert rows["newcomer1"]["total"] == "0.00"  # started, nothing finished, not stopped
    client = Client()
    client.force_login(project.researcher)
    bonus = client.get(f"/p/{project.slug}/quality/payments.csv?format=prolific-bonus")
    assert bonus.content.decode().splitlines() == ["finisher01,0.75"]


@pytest.mark.parametrize(
    ("setting", "value"),
    [("reward_per_batch", "-1"), ("bonus_per_batch", "0.005"), ("currency", "pounds")],
)
def test_bad_payment_settings_are_refused_naming_the_setting(setting, value):
    from rest_framework.exceptions import ValidationError

    from projects.crowd import parse_crowd_settings

    with pytest.raises(ValidationError) as refused:
        parse_crowd_settings({setting: value})
    assert setting in refused.value.detail
