"""The Python client (clients/python, package concord-client) against a live Concord: the
test server (pytest-django's ``live_server``) over real HTTP, Celery eager. Nothing is mocked."""

import hashlib
import json

import httpx
import pytest

# concord-client is installed by make install (pip install -e clients/python): `make test`
# always has it, so these tests never skip.
from concord_client import (
    AnnotationExport,
    Concord,
    ExportFormatError,
    ImportFailedError,
    IncompleteExportError,
    InvalidRequest,
    NotAuthenticated,
    NotFound,
)
from concord_client.webhooks import InvalidSignature, verify

from llm_judges import services as judges
from tests import factories
from webhooks import signing

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}


def jsonl(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


@pytest.fixture
def team(transactional_db, celery_eager):
    researcher = factories.UserFactory(username=factories.unique("client-researcher"))
    annotators = [factories.UserFactory(username=factories.unique("client-ann")) for _ in range(2)]
    project = factories.ProjectFactory(annotators_per_item=2)
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    for annotator in annotators:
        factories.MembershipFactory(project=project, user=annotator, role="annotator")
    return project, researcher, annotators


OPEN: list[Concord] = []


@pytest.fixture(autouse=True)
def _close_clients():
    """Close every client a test opened, so no kept-alive connection outlives the test."""
    yield
    while OPEN:
        OPEN.pop().close()


def login(live_server, user) -> Concord:
    concord = Concord.login(live_server.url, user.username, factories.PASSWORD)
    OPEN.append(concord)
    return concord


def test_a_researcher_scripts_a_study_from_import_to_dataframe(team, live_server):
    project, researcher, annotators = team
    concord = login(live_server, researcher)
    assert [(p["slug"], p["role"]) for p in concord.projects()] == [(project.slug, "researcher")]

    # study file: export, change, apply
    study = concord.export_study(project.slug)
    assert study["slug"] == project.slug
    changed = concord.apply_study(project.slug, {**study, "guidelines": "Read the claim first."})
    assert changed["study"]["guidelines"] == "Read the claim first."
    assert changed["changes"]

    # items, with the job's progress
    seen = []
    job = concord.import_items(
        project.slug,
        jsonl(factories.citation_payload(n) for n in range(3)),
        on_progress=seen.append,
    )
    assert job["status"] == "done" and seen and seen[-1]["status"] == "done"
    assert len(list(concord.items(project.slug))) == 3

    # annotations collected elsewhere
    counts = concord.import_annotations(
        project.slug,
        jsonl([{"item": "claim-0", "coder": "w1", "answer": {"helpfulness": 40}}]),
        source="pilot",
    )
    assert counts["summary"]

    # two annotators answer by script
    for annotator in annotators:
        bot = login(live_server, annotator)
        assert bot.annotate(project.slug, lambda assignment: ANSWER) == 3
        assert bot.next_item(project.slug) is None  # nothing left
    assert concord.progress(project.slug)

    # a flagged item's record fixed: the answers already made keep the revision they saw
    item = next(i for i in concord.items(project.slug) if i["external_id"] == "claim-1")
    record = {**item["payload"], "claim": "A corrected claim."}
    fixed = concord.fix_item(project.slug, item["id"], record, note="typo in the claim")
    assert (fixed["revision"], fixed["earlier_answers"]) == (2, 2)
    with pytest.raises(InvalidRequest) as same:
        concord.fix_item(project.slug, item["id"], record)
    assert same.value.field == "record" and "nothing to fix" in same.value.detail

    reader = concord.export_reader(project.slug)
    rows = list(reader)  # the server's end line checked: 6 rows, their sha256
    assert reader.trailer["concord_export_end"]["rows"] == 6 == reader.rows
    assert {r["item_revision"] for r in rows} == {1}
    assert len(rows) == 6 and {r["helpfulness"] for r in rows} == {70}
    assert all(r["annotator"].startswith("ann-") for r in rows)
    external = list(concord.export_annotations(project.slug, coders="external"))
    assert [r["coder"] for r in external] == ["ext:w1"]

    frame = concord.annotations_dataframe(project.slug, coders="all")
    assert len(frame) == 7 and "coder_kind" in frame.columns
    dataset = concord.annotations_dataset(project.slug)
    assert dataset.num_rows == 6 and "item_id" in dataset.column_names
    concord.logout()
    with pytest.raises(NotAuthenticated) as refused:
        concord.projects()
    assert refused.value.status == 401


def test_refusals_carry_the_apis_code_and_field(team, live_server):
    project, researcher, annotators = team
    concord = login(live_server, researcher)
    with pytest.raises(InvalidRequest) as bad:
        concord.import_items(project.slug, b'{"id": "x"}\n')
    # the import names line and field in its message (the API sends no "field" here)
    assert bad.value.code == "invalid" and "line 1, field 'claim'" in bad.value.detail
    with pytest.raises(InvalidRequest) as bad_format:
        concord.import_items(project.slug, b"{}\n", format="xlsx")
    assert bad_format.value.field == "format"
    with pytest.raises(InvalidRequest) as bad_coders:
        list(concord.export_annotations(project.slug, coders="aliens"))
    assert bad_coders.value.field == "coders"
    with pytest.raises(InvalidRequest) as bad_hook:
        concord.create_webhook(project.slug, "http://127.0.0.1:9/", ["answer.submitted"])
    assert bad_hook.value.field == "url" and "loopback" in bad_hook.value.detail
    with pytest.raises(NotFound) as missing:
        login(live_server, annotators[0]).export_study(project.slug)
    assert missing.value.code == "not_found" and missing.value.status == 404
    with pytest.raises(InvalidRequest) as no_judge:
        concord.estimate_judge_run(project.slug, "nobody")
    assert no_judge.value.field == "judge"
    with pytest.raises(NotAuthenticated), Concord(live_server.url, token="0" * 64) as stranger:
        stranger.projects()
    with pytest.raises(InvalidRequest):
        Concord.login(live_server.url, researcher.username, "wrong password")


def test_a_staff_member_creates_a_project_from_a_study_file(team, live_server):
    project, researcher, _ = team
    staff = factories.UserFactory(username=factories.unique("client-staff"), is_staff=True)
    study = login(live_server, researcher).export_study(project.slug)
    slug = factories.unique("scripted")
    created = login(live_server, staff).create_project({**study, "slug": slug, "members": []})
    assert created["study"]["slug"] == slug


def test_a_judge_run_is_estimated_started_and_followed(team, live_server):
    project, researcher, _ = team
    factories.make_items(project, 2)
    judges.judge_create(
        project=project,
        name="minilm",
        kind="embedding",
        model="all-MiniLM-L6-v2",
        parameters={"threshold": 0.6},
    )
    concord = login(live_server, researcher)
    estimate = concord.estimate_judge_run(project.slug, "minilm")
    assert estimate["items"] == 2
    run = concord.start_judge_run(project.slug, "minilm")
    progress = list(concord.follow_judge_run(project.slug, run["id"], poll_s=0.2, timeout_s=120))
    assert progress[-1]["status"] == "done"
    assert [r["id"] for r in concord.judge_runs(project.slug)] == [run["id"]]


def test_a_failed_import_is_raised_with_its_job(team, live_server, monkeypatch):
    """A job that fails after it was queued (here: a worker error on a valid-looking file)."""
    project, researcher, _ = team
    concord = login(live_server, researcher)
    job = concord.import_items(
        project.slug, jsonl([factories.citation_payload(0)]), wait=False
    )  # already done in eager mode: polling it again is a 200 with the job
    assert concord.wait_for_import(project.slug, job["id"])["status"] == "done"
    from studies.models import ImportJob

    ImportJob.objects.filter(pk=job["id"]).update(status="failed", message="the worker died")
    with pytest.raises(ImportFailedError) as failed:
        concord.wait_for_import(project.slug, job["id"])
    assert failed.value.job["id"] == job["id"] and "worker died" in failed.value.detail


# --- the export reader checks the end line (issue 34) ----------------------------------------


def export_bytes(rows: int) -> bytes:
    """A JSONL export as the server writes it: rows, then the end line (studies.export_check)."""
    from studies.export_check import trailer

    body = b"".join(
        json.dumps({"item_id": f"i{n}", "annotator": "ann-1", "answer": {"x": n}}).encode() + b"\n"
        for n in range(rows)
    )
    return body + trailer(fmt="jsonl", rows=rows, sha256=hashlib.sha256(body).hexdigest()).encode()


def read(data: bytes, chunk: int = 7):
    export = AnnotationExport(iter([data[i : i + chunk] for i in range(0, len(data), chunk)]))
    return list(export), export


def test_a_complete_export_is_read_whole_and_its_end_line_kept():
    for chunk in (1, 7, 64, 1 << 20):
        rows, export = read(export_bytes(5), chunk)
        assert [row["item_id"] for row in rows] == ["i0", "i1", "i2", "i3", "i4"]
        assert export.rows == 5 and export.trailer["concord_export_end"]["rows"] == 5
    assert read(export_bytes(0))[0] == []


def test_an_export_cut_anywhere_is_refused_as_incomplete():
    """Found by an outside probe: a file cut at 50,000 of 100,002 rows, one cut mid-line and
    one with a wrong sha256 were all read without complaint."""
    whole = export_bytes(6)
    end = whole.rindex(b'{"concord_export_end"')
    for cut in range(1, len(whole)):  # every byte a connection could stop at
        with pytest.raises(IncompleteExportError):
            read(whole[:cut])
    rows_only = whole[:end]
    with pytest.raises(IncompleteExportError, match="no end line: it was cut after 6 rows"):
        read(rows_only)
    first_three = b"".join(rows_only.splitlines(keepends=True)[:3])
    with pytest.raises(IncompleteExportError, match="do not match the 3 rows"):
        read(first_three + whole[end:])  # the end line of the whole file after 3 rows
    tampered = whole.replace(b'"x": 2', b'"x": 9')
    with pytest.raises(IncompleteExportError, match="do not match"):
        read(tampered)


def test_a_line_before_the_end_that_is_not_a_row_is_named():
    whole = export_bytes(2)
    with pytest.raises(ExportFormatError, match="line 2"):
        read(whole.replace(b"\n", b"\n# not a row\n", 1))


def test_a_connection_that_breaks_mid_export_is_an_incomplete_export():
    def chunks():
        yield export_bytes(3)[:40]
        raise httpx.RemoteProtocolError("incomplete chunked read")

    with pytest.raises(IncompleteExportError, match="the connection broke"):
        list(AnnotationExport(chunks()))


# --- webhooks: the receiver's side ----------------------------------------------------------


def test_verify_accepts_concords_signature_and_refuses_replays_and_tampering():
    body = signing.body_bytes({"id": "e1", "event": "item.complete", "data": {"item": 3}})
    headers = signing.signed_headers(
        secret="whsec_x", event="item.complete", event_id="e1", timestamp=1_000_000, body=body
    )
    assert verify(secret="whsec_x", headers=headers, body=body, now=1_000_010)["data"] == {
        "item": 3
    }
    with pytest.raises(InvalidSignature, match="too old"):
        verify(secret="whsec_x", headers=headers, body=body, now=1_000_000 + 301)
    with pytest.raises(InvalidSignature, match="does not match"):
        verify(secret="whsec_x", headers=headers, body=body + b" ", now=1_000_010)
    with pytest.raises(InvalidSignature, match="does not match"):
        verify(secret="whsec_y", headers=headers, body=body, now=1_000_010)
    replayed = {**headers, "Concord-Timestamp": str(1_000_000 + 3600)}
    with pytest.raises(InvalidSignature, match="does not match"):
        verify(secret="whsec_x", headers=replayed, body=body, now=1_000_000 + 3600)


def test_a_label_studio_export_goes_in_through_the_client(
    transactional_db, celery_eager, live_server
):
    """The two steps of the page by script: the items (the format detected), then the answers
    with the labeling config as the mapping file."""
    from pathlib import Path

    from task_types.questionnaire.label_studio import parse_labeling_config

    here = Path(__file__).parents[1] / "task_types" / "questionnaire" / "label_studio"
    researcher = factories.UserFactory(username=factories.unique("client-researcher"))
    project = factories.ProjectFactory(
        task_type="questionnaire",
        config=parse_labeling_config((here / "config.xml").read_text()).questionnaire,
    )
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    concord = login(live_server, researcher)
    job = concord.import_items(project.slug, here / "export.json")
    assert job["status"] == "done"
    counts = concord.import_annotations(
        project.slug, here / "export.json", format="label-studio", mapping=here / "config.xml"
    )
    assert (counts["annotations"], counts["coders"]) == (13, 4)
    with pytest.raises(InvalidRequest) as refused:
        concord.import_annotations(project.slug, here / "export.json", format="label-studio")
    assert refused.value.field == "mapping"


def test_a_label_studio_project_goes_in_through_the_client_in_one_step(
    transactional_db, celery_eager, live_server
):
    from pathlib import Path

    here = Path(__file__).parents[1] / "task_types" / "ranking" / "label_studio"
    researcher = factories.UserFactory(username=factories.unique("client-researcher"))
    project = factories.ProjectFactory(task_type="ranking", config={})
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    concord = login(live_server, researcher)
    done = concord.import_label_studio(
        project.slug, here / "export.json", here / "config.xml", source="LS pilot"
    )
    assert (done["items"], done["coders"]) == (2, 3) and "from Label Studio" in done["summary"]
    with pytest.raises(InvalidRequest) as refused:
        concord.import_label_studio(project.slug, here / "export.json", b"<View><Text")
    assert refused.value.field == "labeling_config"
