"""Worker ids in entry links are not verified (the platforms fill them in), so a crowd login must
reach only its own platform session: nobody who types a worker's id into a study link may read
or change that worker's answers, on MTurk or across Prolific studies and projects."""

import csv
import io
import re
from datetime import timedelta
from types import SimpleNamespace
from urllib.parse import parse_qs, urlparse

from django.apps import apps
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from annotation.models import Assignment, Batch
from crowd import services as crowd_services
from crowd.models import CrowdEntry
from projects.models import Membership
from tests.crowd.conftest import RIGHT, WRONG, crowd_project
from tests.crowd.test_platforms import finish_batch

CROWD = {"batch_size": 2, "controls_per_batch": 1}
User = get_user_model()


def prolific_url(project, *, pid, session, study_id="STUDY42"):
    link = crowd_services.entry_link(
        base_url="http://testserver/", project=project, platform="prolific", study=study_id
    )
    sig = parse_qs(urlparse(link).query)["sig"][0]
    return (
        f"/crowd/{project.slug}/prolific/?sig={sig}&STUDY_ID={study_id}"
        f"&PROLIFIC_PID={pid}&SESSION_ID={session}"
    )


def mturk_url(project, *, worker, assignment, hit="HIT1", study="HITSTUDY"):
    link = crowd_services.entry_link(
        base_url="http://testserver/", project=project, platform="mturk", study=study
    )
    q = parse_qs(urlparse(link).query)
    return (
        f"/crowd/{project.slug}/mturk/?study={q['study'][0]}&sig={q['sig'][0]}"
        f"&assignmentId={assignment}&hitId={hit}&workerId={worker}&turkSubmitTo=https://x"
    )


def open_hit(project, **params):
    """Open the HIT's frame and its start link in a new browser; (frame response, browser)."""
    frame = Client().get(mturk_url(project, **params))
    found = re.search(r'/crowd/start/[^"]+/', frame.content.decode())
    if found is None:
        return frame, None
    tab = Client()
    assert tab.get(found.group(0)).status_code == 302
    return frame, tab


def answer_one(client, project, answer=RIGHT) -> int:
    data = client.post(
        f"/api/projects/{project.slug}/next/", content_type="application/json"
    ).json()
    response = client.post(
        f"/api/assignments/{data['id']}/submit/",
        {"answer": answer, "time_spent_ms": 4000},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return data["id"]


def history_ids(client, project) -> set[int]:
    response = client.get(f"/api/projects/{project.slug}/history/")
    assert response.status_code == 200
    return {row["id"] for row in response.json()["results"]}


def test_a_second_assignment_id_for_the_same_worker_and_hit_is_refused(db):
    """The reviewer's reproduction: the victim is in the middle of their HIT."""
    study = crowd_project(crowd=CROWD, regular=6, controls=3)
    _, victim = open_hit(study, worker="VICTIMWORKER1", assignment="REALASSIGN1")
    answer_one(victim, study)

    frame, attacker = open_hit(study, worker="VICTIMWORKER1", assignment="FORGEDASSIGN")
    assert frame.status_code == 409 and attacker is None
    assert b"already have an assignment of this HIT" in frame.content
    # Another HIT id (which is just as easy to type) is refused while the victim is at work.
    frame, attacker = open_hit(study, worker="VICTIMWORKER1", assignment="FORGED2", hit="HIT9")
    assert frame.status_code == 409 and attacker is None
    assert b"in progress" in frame.content
    assert list(CrowdEntry.objects.values_list("session_id", flat=True)) == ["REALASSIGN1"]


def test_a_worker_id_typed_into_an_mturk_link_never_reaches_the_workers_earlier_answers(db):
    study = crowd_project(crowd=CROWD, regular=6, controls=3)
    _, victim = open_hit(study, worker="VICTIMWORKER1", assignment="REALASSIGN1")
    finish_batch(victim, study)
    theirs = set(Assignment.objects.values_list("id", flat=True))
    answered = sorted(theirs)[0]

    # Once the victim is idle, a new session in their account can be opened ...
    frame, attacker = open_hit(study, worker="VICTIMWORKER1", assignment="FORGED", hit="HIT2")
    assert frame.status_code == 200 and attacker is not None
    # ... but it reaches none of the victim's work: not to read, revise, autosave or list.
    assert attacker.get(f"/api/assignments/{answered}/").status_code == 404
    submit = attacker.post(
        f"/api/assignments/{answered}/submit/", {"answer": WRONG}, content_type="application/json"
    )
    assert submit.status_code == 404
    draft = attacker.put(
        f"/api/assignments/{answered}/draft/",
        {"answer": WRONG, "revision": 99},
        content_type="application/json",
    )
    assert draft.status_code == 404
    assert attacker.post(f"/api/assignments/{answered}/preselection/").status_code == 404
    assert history_ids(attacker, study) == set()
    # Its own batch is new, and only that is in its history.
    own = answer_one(attacker, study, WRONG)
    new_batch = set(Assignment.objects.get(pk=own).batch.assignments.values_list("id", flat=True))
    assert not new_batch & theirs and history_ids(attacker, study) == new_batch
    assert Assignment.objects.get(pk=answered).annotations.get(is_current=True).answer == RIGHT

    # The victim's earlier session is closed: its browser is logged out and cannot come back in.
    assert victim.get(f"/api/assignments/{answered}/").status_code in (401, 403)
    again = Client().get(mturk_url(study, worker="VICTIMWORKER1", assignment="REALASSIGN1"))
    assert again.status_code == 409 and b"closed" in again.content
    entries = dict(CrowdEntry.objects.values_list("session_id", "closed_at"))
    assert entries["REALASSIGN1"] is not None and entries["FORGED"] is None


def test_the_start_link_of_a_closed_session_is_refused(db):
    study = crowd_project(crowd=CROWD, regular=6, controls=3)
    frame, first = open_hit(study, worker="W1", assignment="A1")
    start = re.search(r'/crowd/start/[^"]+/', frame.content.decode()).group(0)
    finish_batch(first, study)
    open_hit(study, worker="W1", assignment="A2", hit="HIT2")
    response = Client().get(start)
    assert response.status_code == 403 and b"closed" in response.content


def test_a_session_entered_but_not_started_holds_off_new_ones_for_the_batch_time(db):
    study = crowd_project(crowd={**CROWD, "batch_minutes": 30}, regular=6, controls=3)
    assert Client().get(mturk_url(study, worker="W1", assignment="A1")).status_code == 200
    busy = Client().get(mturk_url(study, worker="W1", assignment="A2", hit="HIT2"))
    assert busy.status_code == 409
    CrowdEntry.objects.update(last_seen_at=timezone.now() - timedelta(minutes=31))
    assert (
        Client().get(mturk_url(study, worker="W1", assignment="A2", hit="HIT2")).status_code == 200
    )
    assert CrowdEntry.objects.get(session_id="A1").closed_at is not None


def test_an_mturk_link_without_a_hit_id_is_refused(db):
    study = crowd_project(crowd=CROWD, regular=2, controls=1)
    response = Client().get(mturk_url(study, worker="W1", assignment="A1", hit=""))
    assert response.status_code == 400 and b"HIT id" in response.content
    assert not CrowdEntry.objects.exists()


def test_qualification_rounds_of_an_earlier_session_are_out_of_reach_too(db):
    study = crowd_project(
        crowd={**CROWD, "qualification_required": True, "qualification_pass_mark": 0.5},
        regular=6,
        controls=3,
        qualification=2,
    )
    _, first = open_hit(study, worker="W1", assignment="A1")
    finish_batch(first, study)  # the qualification round, then the main batch
    rounds = Assignment.objects.filter(batch__kind=Batch.Kind.QUALIFICATION)
    assert rounds.count() == 2
    assert history_ids(first, study) == set(Assignment.objects.values_list("id", flat=True))

    _, second = open_hit(study, worker="W1", assignment="A2", hit="HIT2")
    for assignment in rounds:
        assert second.get(f"/api/assignments/{assignment.pk}/").status_code == 404
    own = answer_one(second, study)  # qualified already: straight to a main batch
    batch = Assignment.objects.get(pk=own).batch
    assert batch.external_ref == "mturk:A2"
    assert history_ids(second, study) == set(batch.assignments.values_list("id", flat=True))


def test_a_prolific_id_used_in_another_project_gets_another_account(db):
    """The reviewer's reproduction: worker accounts used to be global."""
    a = crowd_project(crowd=CROWD, regular=6, controls=3)
    b = crowd_project(crowd=CROWD, regular=6, controls=3)
    victim = Client()
    assert victim.get(prolific_url(a, pid="VICTIMPID", session="SESSA")).status_code == 302
    victim_assignment = answer_one(victim, a)

    attacker = Client()
    assert attacker.get(prolific_url(b, pid="VICTIMPID", session="ANYTHING")).status_code == 302
    assert attacker.get(f"/api/assignments/{victim_assignment}/").status_code == 404
    assert attacker.get(f"/api/projects/{a.slug}/history/").status_code == 404
    owners = dict(CrowdEntry.objects.values_list("session_id", "user__username"))
    assert owners == {
        "SESSA": f"prolific-VICTIMPID.{a.pk}.STUDY42",
        "ANYTHING": f"prolific-VICTIMPID.{b.pk}.STUDY42",
    }
    assert not Membership.objects.filter(project=a, user__username=owners["ANYTHING"]).exists()


def test_a_prolific_id_used_in_another_study_of_the_same_project_gets_another_account(db):
    study = crowd_project(crowd=CROWD, regular=6, controls=3)
    victim = Client()
    victim.get(prolific_url(study, pid="VICTIMPID", session="SESSA"))
    victim_assignment = answer_one(victim, study)
    attacker = Client()
    response = attacker.get(
        prolific_url(study, pid="VICTIMPID", session="OTHER", study_id="STUDY2")
    )
    assert response.status_code == 302
    assert attacker.get(f"/api/assignments/{victim_assignment}/").status_code == 404
    assert history_ids(attacker, study) == set()
    assert CrowdEntry.objects.values("user").distinct().count() == 2


def test_account_names_cannot_be_shifted_between_study_and_worker_id():
    name = crowd_services.worker_username
    project = SimpleNamespace(pk=7)
    one = name(platform="prolific", project=project, study_id="S-x", worker_id="W")
    other = name(platform="prolific", project=project, study_id="S", worker_id="x-W")
    assert (one, other) == ("prolific-W.7.S-x", "prolific-x-W.7.S")


def test_account_names_too_long_for_django_are_hashed_and_stay_distinct():
    name = crowd_services.worker_username
    project = SimpleNamespace(pk=10**18)  # 19 digits: with 64-character ids, over 150
    long = name(platform="prolific", project=project, study_id="S" * 64, worker_id="W" * 64)
    assert len(long) <= 150 and long.count(".") == 1 and "W" * 64 not in long
    assert long != name(platform="prolific", project=project, study_id="S" * 64, worker_id="V" * 64)
    assert long != name(platform="prolific", project=project, study_id="T" * 64, worker_id="W" * 64)


def test_the_payment_export_names_the_platform_worker_id_whatever_the_account_name(db):
    study = crowd_project(crowd=CROWD, regular=6, controls=3)
    long_pid, long_study = "P" * 64, "S" * 64
    worker = Client()
    assert (
        worker.get(
            prolific_url(study, pid=long_pid, session="SESS1", study_id=long_study)
        ).status_code
        == 302
    )
    finish_batch(worker, study)
    assert CrowdEntry.objects.get().user.username == f"prolific-{long_pid}.{study.pk}.{long_study}"

    researcher = Client()
    researcher.force_login(study.researcher)
    rows = list(
        csv.DictReader(
            io.StringIO(researcher.get(f"/p/{study.slug}/quality/payments.csv").content.decode())
        )
    )
    assert [(r["worker_id"], r["study_id"], r["session_id"], r["batch_state"]) for r in rows] == [
        (long_pid, long_study, "SESS1", "finished")
    ]


def test_a_session_from_before_per_study_accounts_can_still_be_continued(db):
    study = crowd_project(crowd=CROWD, regular=6, controls=3)
    legacy = User.objects.create(username="prolific-OLDPID")
    legacy.set_unusable_password()
    legacy.save()
    Membership.objects.create(project=study, user=legacy, role="annotator")
    CrowdEntry.objects.create(
        project=study,
        user=legacy,
        platform="prolific",
        worker_id="OLDPID",
        study_id="STUDY42",
        session_id="OLDSESS",
    )
    client = Client()
    assert client.get(prolific_url(study, pid="OLDPID", session="OLDSESS")).status_code == 302
    assignment = answer_one(client, study)
    assert Assignment.objects.get(pk=assignment).annotator == legacy
    # Someone else's id with that session is refused, as before.
    assert Client().get(prolific_url(study, pid="OTHER", session="OLDSESS")).status_code == 403


def test_the_migration_keeps_only_the_latest_session_of_an_account_open(db):
    from importlib import import_module

    migration = import_module("crowd.migrations.0002_session_closed_at")
    study = crowd_project(crowd=CROWD, regular=1, controls=0)
    other = crowd_project(crowd=CROWD, regular=1, controls=0)
    worker = User.objects.create(username="mturk-LEGACY")
    made = {}
    for session, project in (("A1", study), ("A2", study), ("B1", other)):
        made[session] = CrowdEntry.objects.create(
            project=project,
            user=worker,
            platform="mturk",
            worker_id="LEGACY",
            study_id="S",
            session_id=session,
            hit_id=session,
        )
    CrowdEntry.objects.filter(pk=made["A1"].pk).update(
        created_at=timezone.now() - timedelta(days=1)
    )
    migration.close_all_but_the_latest(apps, None)
    closed = dict(CrowdEntry.objects.values_list("session_id", "closed_at"))
    assert closed["A1"] is not None and closed["A2"] is None and closed["B1"] is None
    assert CrowdEntry.objects.count() == 3  # nothing deleted


def test_only_link_entered_accounts_have_their_reads_narrowed_to_the_session(db):
    """An account with a usable password is never entered from a link, so its reads of its own
    assignments carry no crowd-session subqueries (the annotator path's most common case); a
    crowd account's do. Once such an account has a password, links refuse it."""
    from crowd.selectors import in_current_session

    study = crowd_project(crowd=CROWD, regular=6, controls=3)
    client = Client()
    assert client.get(prolific_url(study, pid="PWD1", session="S1")).status_code == 302
    answer_one(client, study)
    worker = Membership.objects.get(project=study, user__username__startswith="prolific-").user
    narrowed = str(in_current_session(Assignment.objects.all(), user=worker).query)
    assert "crowd_crowdentry" in narrowed
    password_user = get_user_model().objects.create_user("annotator-with-password", password="x")
    plain = str(in_current_session(Assignment.objects.all(), user=password_user).query)
    assert "crowd_crowdentry" not in plain
    worker.set_password("now-a-regular-account")
    worker.save()
    assert "crowd_crowdentry" not in str(
        in_current_session(Assignment.objects.all(), user=worker).query
    )
    refused = Client().get(prolific_url(study, pid="PWD1", session="S2"))
    assert refused.status_code == 403
