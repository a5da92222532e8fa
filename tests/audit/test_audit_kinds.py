"""Issue 30 item 5: every change of a project writes exactly one audit entry, with who and what
(one test per kind), and none when nothing changed."""

import io
import json

import pytest
from django.contrib import admin
from django.test import Client, RequestFactory

from annotation.models import Item
from crowd import services as crowd_services
from llm_judges import services as judge_services
from llm_judges.models import Judge, ModelEndpoint
from projects import members
from projects.audit import AuditKind, audit_record
from projects.models import AuditEntry, Invitation, Membership, Project
from studies.bundles import bundle_load, bundle_write
from studies.services.external_annotations import import_annotations
from studies.services.imports import ImportFailed, import_items
from studies.study_files import study_apply, study_export
from tests import factories
from tests.conftest import client_for
from tests.llm_judges.conftest import make_llm_judge, stub_endpoint
from tests.llm_judges.stub_llm import StubLLM


def entries(project, kind=None) -> list[AuditEntry]:
    rows = AuditEntry.objects.filter(project=project).select_related("actor").order_by("id")
    return list(rows.filter(kind=kind) if kind else rows)


def only_one(project, kind) -> AuditEntry:
    found = entries(project, kind)
    assert len(found) == 1, [(e.kind, e.summary) for e in entries(project)]
    return found[0]


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def other(db):
    return factories.UserFactory(username=factories.unique("other"))


STUDY = {
    "slug": "audited-study",
    "name": "Audited study",
    "task_type": "citation_recovery",
    "annotators_per_item": 2,
    "guidelines": "Read the claim.",
    "config": {"masking": "sample", "seed": 7},
}


# --- settings and guidelines -------------------------------------------------------------------


def test_a_new_study_writes_one_project_created_entry_and_its_creator_joins(researcher):
    project = study_apply(data=STUDY, user=researcher, create_only=True, via="API")["project"]
    created = only_one(project, AuditKind.PROJECT_CREATED)
    assert created.actor == researcher and "via API" in created.summary
    assert created.changes["guidelines"] == {"before": None, "after": "Read the claim."}
    joined = only_one(project, AuditKind.MEMBER_ADDED)
    assert joined.actor == researcher and joined.changes["role"] == "researcher"
    assert len(entries(project)) == 2


def test_a_settings_change_writes_one_entry_with_before_and_after_and_a_same_file_none(
    researcher,
):
    project = study_apply(data=STUDY, user=researcher, create_only=True)["project"]
    changed = {**study_export(project=project), "guidelines": "Read the claim twice."}
    changed["annotators_per_item"] = 3
    study_apply(data=changed, user=researcher, slug=project.slug, via="settings page")
    entry = only_one(project, AuditKind.SETTINGS_CHANGED)
    assert entry.actor == researcher
    assert entry.changes == {
        "annotators_per_item": {"before": 2, "after": 3},
        "guidelines": {"before": "Read the claim.", "after": "Read the claim twice."},
    }
    assert "annotators_per_item, guidelines" in entry.summary
    count = len(entries(project))
    project.refresh_from_db()
    study_apply(data=study_export(project=project), user=researcher, slug=project.slug)
    assert len(entries(project)) == count, entries(project)[-1].changes  # same file: nothing


def test_the_settings_page_records_the_researcher(project, researcher):
    from tests.projects.test_settings_versions import change_guidelines_on_the_settings_page

    change_guidelines_on_the_settings_page(project, researcher, "New guidelines.\n")
    entry = only_one(project, AuditKind.SETTINGS_CHANGED)
    assert entry.actor == researcher and set(entry.changes) == {"guidelines"}


def test_an_admin_save_of_the_project_records_the_change(project, db):
    staff = factories.UserFactory(is_staff=True, is_superuser=True)
    model_admin = admin.site._registry[Project]
    request = RequestFactory().post("/")
    request.user = staff
    project.status = Project.Status.PAUSED
    model_admin.save_model(request, project, form=None, change=True)
    entry = only_one(project, AuditKind.SETTINGS_CHANGED)
    assert entry.actor == staff and entry.changes == {
        "status": {"before": "active", "after": "paused"}
    }
    model_admin.save_model(request, project, form=None, change=True)  # nothing changed
    assert len(entries(project, AuditKind.SETTINGS_CHANGED)) == 1


def _admin_request(user):
    request = RequestFactory().post("/")
    request.user = user
    return request


def test_a_members_role_changed_in_the_admin_writes_one_entry_with_before_and_after(
    project, researcher, other
):
    from django.forms.models import model_to_dict

    staff = factories.UserFactory(is_staff=True, is_superuser=True)
    membership = Membership.objects.create(project=project, user=other, role="annotator")
    model_admin = admin.site._registry[Membership]
    request = _admin_request(staff)
    form_class = model_admin.get_form(request, membership, change=True)
    data = {k: v for k, v in model_to_dict(membership).items() if v is not None}
    form = form_class(data={**data, "role": "reviewer"}, instance=membership)
    assert form.is_valid(), form.errors
    model_admin.save_model(request, form.save(commit=False), form, change=True)
    entry = only_one(project, AuditKind.ADMIN_CHANGED)
    assert entry.actor == staff and entry.changes["model"] == "projects.Membership"
    assert entry.changes["fields"] == {"role": {"before": "annotator", "after": "reviewer"}}
    unchanged = form_class(data={**data, "role": "reviewer"}, instance=membership)
    assert unchanged.is_valid() and unchanged.changed_data == []
    model_admin.save_model(request, unchanged.save(commit=False), unchanged, change=True)
    assert len(entries(project, AuditKind.ADMIN_CHANGED)) == 1  # nothing changed, no entry


def test_a_judge_deleted_in_the_admin_writes_one_entry_naming_it(project, researcher):
    staff = factories.UserFactory(is_staff=True, is_superuser=True)
    judge = Judge.objects.create(project=project, name="Doomed judge", kind="embedding")
    pk = judge.pk
    admin.site._registry[Judge].delete_model(_admin_request(staff), judge)
    entry = only_one(project, AuditKind.ADMIN_CHANGED)
    assert entry.actor == staff
    assert entry.changes == {"model": "llm_judges.Judge", "object": pk, "verb": "deleted"}
    assert "Doomed judge" in entry.summary and not Judge.objects.filter(pk=pk).exists()


# --- members and roles ---------------------------------------------------------------------------


def test_adding_a_member_on_the_page_writes_one_entry_naming_the_researcher(
    project, researcher, other
):
    response = logged_in(researcher).post(
        f"/p/{project.slug}/members/", {"username": other.username, "role": "reviewer"}
    )
    assert response.status_code == 302
    entry = only_one(project, AuditKind.MEMBER_ADDED)
    assert entry.actor == researcher and other.username in entry.summary
    assert entry.changes["role"] == "reviewer" and entry.changes["username"] == other.username


def test_a_role_change_writes_one_entry_and_setting_the_same_role_none(project, researcher, other):
    membership = members.member_add(project=project, username=other.username, role="annotator")
    members.member_role_set(membership=membership, role="reviewer", by=researcher)
    members.member_role_set(membership=membership, role="reviewer", by=researcher)
    entry = only_one(project, AuditKind.MEMBER_ROLE_CHANGED)
    assert entry.actor == researcher
    assert entry.changes["role"] == {"before": "annotator", "after": "reviewer"}


def test_removing_a_member_through_the_api_writes_one_entry(project, researcher, other):
    members.member_add(project=project, username=other.username, role="annotator")
    response = client_for(researcher).delete(
        f"/api/projects/{project.slug}/members/{other.username}/"
    )
    assert response.status_code in (200, 204)
    entry = only_one(project, AuditKind.MEMBER_REMOVED)
    assert entry.actor == researcher and other.username in entry.summary


def test_a_refused_change_writes_nothing(project, researcher):
    membership = Membership.objects.get(project=project, user=researcher)
    before = len(entries(project))
    with pytest.raises(Exception, match="last researcher"):
        members.member_remove(membership=membership, by=researcher)
    assert len(entries(project)) == before


# --- invitations ---------------------------------------------------------------------------------


def test_creating_several_invitation_links_writes_one_entry_with_the_count(project, researcher):
    response = logged_in(researcher).post(
        f"/p/{project.slug}/invitations/",
        {"role": "annotator", "count": "3", "note": "pilot"},
    )
    assert response.status_code == 302
    entry = only_one(project, AuditKind.INVITATIONS_CREATED)
    assert entry.actor == researcher and entry.changes["count"] == 3
    assert entry.changes["notes"] == ["pilot 1", "pilot 2", "pilot 3"]
    assert Invitation.objects.filter(project=project).count() == 3


def test_an_invitation_through_the_api_writes_one_entry(project, researcher):
    response = client_for(researcher).post(
        f"/api/projects/{project.slug}/invitations/", {"role": "reviewer"}, format="json"
    )
    assert response.status_code == 201
    entry = only_one(project, AuditKind.INVITATIONS_CREATED)
    assert entry.changes["count"] == 1 and entry.changes["role"] == "reviewer"


def test_withdrawing_an_invitation_writes_one_entry_and_again_none(project, researcher):
    invitation = members.invitation_create(project=project, role="annotator", created_by=None)
    client = logged_in(researcher)
    for _ in range(2):
        client.post(f"/p/{project.slug}/invitations/{invitation.pk}/revoke/")
    entry = only_one(project, AuditKind.INVITATION_REVOKED)
    assert entry.actor == researcher and entry.changes["invitation"] == invitation.pk


def test_accepting_an_invitation_writes_one_entry_by_the_new_account(project):
    invitation = members.invitation_create(project=project, role="annotator", created_by=None)
    user = members.invitation_accept(
        token=members.invitation_token(invitation=invitation),
        username=factories.unique("newcomer"),
        password="a long enough passphrase 42",
    )
    entry = only_one(project, AuditKind.INVITATION_ACCEPTED)
    assert entry.actor == user and user.username in entry.summary


# --- judges and runs -----------------------------------------------------------------------------


@pytest.fixture
def endpoint(project):
    endpoint = ModelEndpoint.objects.create(name="team-vllm", base_url="https://vllm.example/v1")
    endpoint.projects.add(project)
    return endpoint


def test_adding_a_judge_on_the_judges_page_writes_one_entry(project, researcher, endpoint):
    response = logged_in(researcher).post(
        f"/p/{project.slug}/judges/",
        {
            "action": "add",
            "add-name": "gpt-j",
            "add-kind": "llm",
            "add-model": "gpt-4o",
            "add-endpoint": endpoint.pk,
        },
    )
    assert response.status_code == 302
    entry = only_one(project, AuditKind.JUDGE_CREATED)
    assert entry.actor == researcher and entry.changes["judge"] == "gpt-j"
    assert entry.changes["endpoint"] == "team-vllm"


def test_changing_a_judge_writes_one_entry_per_change(project, researcher, endpoint):
    judge = judge_services.judge_create(project=project, name="j", kind="llm", model="m")
    judge_services.judge_endpoint_set(judge=judge, endpoint=endpoint, by=researcher)
    judge_services.judge_endpoint_set(judge=judge, endpoint=endpoint, by=researcher)  # same
    entry = only_one(project, AuditKind.JUDGE_CHANGED)
    assert entry.actor == researcher
    assert entry.changes["endpoint"] == {"before": None, "after": "team-vllm"}


def test_a_study_file_that_changes_a_judge_writes_one_judge_entry(researcher):
    judge = {"name": "nli", "kind": "nli", "model": "roberta-large-mnli"}
    project = study_apply(data={**STUDY, "judges": [judge]}, user=researcher, create_only=True)[
        "project"
    ]
    only_one(project, AuditKind.JUDGE_CREATED)
    changed = {**study_export(project=project)}
    changed["judges"] = [{**changed["judges"][0], "description": "the entailment judge"}]
    study_apply(data=changed, user=researcher, slug=project.slug)
    entry = only_one(project, AuditKind.JUDGE_CHANGED)
    assert entry.changes["description"] == {"before": "", "after": "the entailment judge"}
    assert not entries(project, AuditKind.SETTINGS_CHANGED)


def test_starting_and_cancelling_a_run_write_one_entry_each(project, researcher, monkeypatch):
    monkeypatch.setenv("STUB_LLM_API_KEY", "sk-test-not-a-secret")
    factories.make_items(project, 3)
    with StubLLM() as stub:
        stub_endpoint(stub, project)
        judge = make_llm_judge(stub, project)
        run = judge_services.judge_run_start(
            judge=judge, project=project, started_by=researcher, enqueue=False
        )
        started = only_one(project, AuditKind.JUDGE_RUN_STARTED)
        assert started.actor == researcher and started.changes["run"] == run.pk
        assert "3 items" in started.summary
        assert judge_services.judge_run_cancel(run=run, by=researcher)
        assert not judge_services.judge_run_cancel(run=run, by=researcher)  # ended already
    cancelled = only_one(project, AuditKind.JUDGE_RUN_CANCELLED)
    assert cancelled.actor == researcher and cancelled.changes["run"] == run.pk


# --- imports, exports, bundles ------------------------------------------------------------------


def jsonl(records) -> io.BytesIO:
    return io.BytesIO("".join(json.dumps(r) + "\n" for r in records).encode())


def test_an_import_writes_one_entry_with_its_counts_and_a_refused_one_none(project, researcher):
    records = [factories.citation_payload(n) for n in range(4)]
    import_items(
        project=project, stream=jsonl(records), fmt="jsonl", by=researcher, source="claims.jsonl"
    )
    entry = only_one(project, AuditKind.ITEMS_IMPORTED)
    assert entry.actor == researcher and "claims.jsonl" in entry.summary
    assert entry.changes["created"] == 4 and entry.changes["records"] == 4
    with pytest.raises(ImportFailed):
        import_items(project=project, stream=jsonl(records), fmt="jsonl", by=researcher)
    assert len(entries(project, AuditKind.ITEMS_IMPORTED)) == 1


def test_an_upload_on_the_project_page_records_the_researcher_and_the_file(
    project, researcher, celery_eager, django_capture_on_commit_callbacks
):
    body = jsonl([factories.citation_payload(n) for n in range(2)]).getvalue()
    from django.core.files.uploadedfile import SimpleUploadedFile

    with django_capture_on_commit_callbacks(execute=True):  # the queued job runs
        response = logged_in(researcher).post(
            f"/p/{project.slug}/",
            {"file": SimpleUploadedFile("two.jsonl", body), "format": "jsonl"},
        )
    assert response.status_code in (200, 302)
    entry = only_one(project, AuditKind.ITEMS_IMPORTED)
    assert entry.actor == researcher and entry.changes["source"] == "two.jsonl"


def test_importing_external_annotations_writes_one_entry(project, researcher):
    factories.make_items(project, 2)
    rows = [
        {"item": item.external_id, "coder": "w1", "answer": {"helpfulness": 50}}
        for item in Item.objects.filter(project=project)
    ]
    import_annotations(
        project=project,
        stream=io.StringIO("".join(json.dumps(r) + "\n" for r in rows)),
        fmt="jsonl",
        source="mturk",
        by=researcher,
    )
    entry = only_one(project, AuditKind.ANNOTATIONS_IMPORTED)
    assert entry.actor == researcher and entry.changes["annotations"] == 2


def test_an_export_through_the_api_writes_one_entry_naming_the_format(project, researcher):
    response = client_for(researcher).get(f"/api/projects/{project.slug}/export/?format=csv")
    assert response.status_code == 200
    b"".join(response.streaming_content)
    entry = only_one(project, AuditKind.EXPORTED)
    assert entry.actor == researcher
    assert entry.changes == {"format": "csv", "coders": "humans", "via": "API"}


def test_an_item_browser_download_writes_one_entry_naming_its_filter(project, researcher):
    factories.make_items(project, 3)
    url = f"/p/{project.slug}/items/export/csv/"
    response = logged_in(researcher).get(url, {"sort": "external_id", "q": ""})
    assert response.status_code == 200
    b"".join(response.streaming_content)
    entry = only_one(project, AuditKind.EXPORTED)
    assert entry.actor == researcher
    assert entry.changes == {
        "format": "csv",
        "via": "item browser",
        "filter": {"sort": "external_id"},
    }
    assert entry.summary == "Exported the item browser's rows as csv (filter: sort=external_id)."
    refused = logged_in(researcher).get(url, {"judge": "no such judge"})
    assert refused.status_code == 400 and len(entries(project, AuditKind.EXPORTED)) == 1


def test_a_refused_export_writes_nothing(project, researcher):
    response = client_for(researcher).get(f"/api/projects/{project.slug}/export/?format=xml")
    assert response.status_code == 400
    assert not entries(project, AuditKind.EXPORTED)


def test_a_bundle_writes_one_entry_and_carries_the_log_without_account_names(
    project, researcher, other, tmp_path
):
    factories.make_items(project, 2)
    members.member_add(project=project, username=other.username, role="annotator", by=researcher)
    members.invitations_create(
        project=project,
        role="annotator",
        created_by=researcher,
        count=1,
        notes=["someone@example.org"],
    )
    bundle_write(project=project, out=tmp_path / "b", by=researcher)
    entry = only_one(project, AuditKind.BUNDLE_WRITTEN)
    assert entry.actor == researcher
    text = (tmp_path / "b" / "audit.jsonl").read_text()
    rows = [json.loads(line) for line in text.splitlines()]
    assert [r["kind"] for r in rows] == [e.kind for e in entries(project)]
    assert rows[-1]["kind"] == "bundle_written"
    pseudonym = Membership.objects.get(project=project, user=researcher).pseudonym
    assert rows[0]["actor"] == pseudonym
    assert other.username not in text and researcher.username not in text
    assert "someone@example.org" not in text
    assert "audit.jsonl" in (tmp_path / "b" / "README.md").read_text()
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["files"]["audit.jsonl"]["rows"] == len(rows)


def test_loading_a_bundle_writes_one_entry_and_reads_its_log(project, researcher, tmp_path):
    factories.make_items(project, 2)
    bundle_write(project=project, out=tmp_path / "b", by=researcher)
    source_entries = len(entries(project))
    project.delete()
    loader = factories.UserFactory()
    loaded = bundle_load(directory=tmp_path / "b", user=loader)
    entry = only_one(loaded, AuditKind.BUNDLE_LOADED)
    assert entry.actor == loader
    assert entry.changes == {"items": 2, "source_audit_entries": source_entries}


def test_a_bundle_whose_log_was_changed_is_refused(project, researcher, tmp_path):
    bundle_write(project=project, out=tmp_path / "b", by=researcher)
    log = tmp_path / "b" / "audit.jsonl"
    log.write_text(log.read_text() + '{"kind": "forged"}\n')
    project.delete()
    with pytest.raises(Exception, match="audit.jsonl does not match its sha256"):
        bundle_load(directory=tmp_path / "b", user=researcher)


# --- crowd ---------------------------------------------------------------------------------------


@pytest.fixture
def crowd_annotator(project):
    user = factories.UserFactory()
    return factories.MembershipFactory(project=project, user=user, role="annotator")


def test_a_qualification_decision_on_the_quality_page_writes_one_entry(
    project, researcher, crowd_annotator
):
    project.crowd = {"batch_size": 2, "controls_per_batch": 1}
    project.save()
    response = logged_in(researcher).post(
        f"/p/{project.slug}/quality/",
        {"membership": crowd_annotator.pk, "action": "disqualify"},
    )
    assert response.status_code == 302
    entry = only_one(project, AuditKind.QUALIFICATION_DECIDED)
    assert entry.actor == researcher and entry.changes["decision"] == "disqualify"
    assert entry.changes["qualification"]["after"] == "disqualified"


def test_feedback_writes_one_entry_and_the_same_feedback_none(project, researcher, crowd_annotator):
    client = logged_in(researcher)
    for _ in range(2):
        client.post(
            f"/p/{project.slug}/quality/",
            {"membership": crowd_annotator.pk, "action": "feedback", "feedback": "Slow down."},
        )
    entry = only_one(project, AuditKind.FEEDBACK_SET)
    assert entry.actor == researcher and entry.changes["feedback"]["after"] == "Slow down."


def test_a_crowd_session_writes_one_entry_and_its_return_none(project):
    project.crowd = {"batch_size": 2, "controls_per_batch": 0}
    project.save()
    factories.make_items(project, 4)
    arrive = {
        "project": project,
        "platform": "prolific",
        "worker_id": "5f1a2b3c4d5e6f7a8b9c0d1e",
        "study_id": "STUDY42",
        "session_id": "sess0001",
    }
    entry = crowd_services.worker_enter(**arrive)
    crowd_services.worker_enter(**arrive)  # the same session comes back
    logged = only_one(project, AuditKind.CROWD_SESSION_OPENED)
    assert logged.actor == entry.user and logged.changes["platform"] == "prolific"


# --- the service itself --------------------------------------------------------------------------


def test_an_unknown_kind_is_a_programming_error(project):
    with pytest.raises(ValueError, match="Unknown audit kind"):
        audit_record(project=project, actor=None, kind="annotation", summary="x")
    long = audit_record(project=project, actor=None, kind="exported", summary="word " * 200)
    assert len(long.summary) == 500 and long.summary.endswith("…") and long.actor is None


def test_every_kind_is_written_somewhere_in_the_code():
    """The closed list has no kind that nothing writes (each is named in a service)."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2]
    code = "\n".join(
        path.read_text()
        for app in ("projects", "studies", "llm_judges", "crowd", "annotation")
        for path in (root / app).rglob("*.py")
        if "migrations" not in path.parts
    )
    unused = [k.name for k in AuditKind if not re.search(rf"AuditKind\.{k.name}\b", code)]
    assert unused == []


def test_judges_are_not_touched_by_other_projects_entries(project, researcher):
    """An entry belongs to one project: another project's log stays empty."""
    second = factories.ProjectFactory()
    judge_services.judge_create(project=project, name="j", kind="nli", model="m", by=researcher)
    assert Judge.objects.filter(project=project).count() == 1
    assert entries(second) == []
