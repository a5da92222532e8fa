"""The admin is scoped per project: a staff researcher who is not a superuser lists, opens,
chooses, adds and acts on only what belongs to the projects they are a researcher of.

The probe's case: a researcher made staff listed another project's items and gold, added
themselves as its member, and then its pages and export opened. Every admin model is checked
(``ADMIN_MODELS``, and a guard that no admin of project data is left out)."""

from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.db.models import ForeignKey
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.models import Adjudication, Annotation, Assignment, Batch, Item
from crowd.models import CrowdEntry, PlatformAction
from llm_judges.models import (
    Judge,
    JudgeCall,
    JudgeResult,
    JudgeRun,
    Preselection,
    PreselectionShown,
)
from projects.admin import ProjectScopedAdmin
from projects.models import Membership, Project
from tests import factories

ANSWER = {"sentences": [1], "none": False, "helpfulness": 50}


def build(project: Project, researcher) -> dict:
    """One row of every admin model in ``project`` (judges are the project's own)."""
    judge = Judge.objects.create(project=project, name="same-name", kind="embedding", model="m")
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    (regular,) = factories.make_items(project, 1)
    (gold,) = factories.make_items(project, 1, kind="control", start=500)
    now = timezone.now()
    batch = Batch.objects.create(
        project=project, annotator=annotator, number=1, size=1, created_at=now, expires_at=now
    )
    assignment = Assignment.objects.create(
        project=project,
        item=regular,
        annotator=annotator,
        reserved_at=now,
        expires_at=now + timedelta(hours=1),
        state=Assignment.State.SUBMITTED,
        batch=batch,
    )
    run = JudgeRun.objects.create(
        judge=judge, project=project, prompt_version="v1", status=JudgeRun.Status.RUNNING
    )
    result = JudgeResult.objects.create(
        item=regular,
        judge=judge,
        prompt_version="v1",
        run=run,
        produced_by=run,
        status="ok",
        answer=ANSWER,
    )
    entry = CrowdEntry.objects.create(
        project=project,
        user=annotator,
        platform="prolific",
        worker_id=factories.unique("w"),
        study_id="S",
        session_id=factories.unique("s"),
    )
    return {
        Project: project,
        Membership: Membership.objects.get(project=project, user=researcher),
        Item: gold,
        Assignment: assignment,
        Annotation: Annotation.objects.create(
            assignment=assignment, item=regular, annotator=annotator, answer=ANSWER
        ),
        Batch: batch,
        CrowdEntry: entry,
        PlatformAction: PlatformAction.objects.create(
            project=project,
            entry=entry,
            platform="prolific",
            session_id=entry.session_id,
            worker_id=entry.worker_id,
            study_id="S",
            kind="approve",
        ),
        Adjudication: Adjudication.objects.create(item=regular, reviewer=researcher, answer=ANSWER),
        # A judge nothing depends on (a judge with runs and results cannot be deleted).
        Judge: Judge.objects.create(project=project, name="spare", kind="embedding", model="m"),
        JudgeRun: run,
        JudgeResult: result,
        JudgeCall: JudgeCall.objects.create(
            run=run, item=regular, attempt=1, outcome="ok", latency_ms=5
        ),
        Preselection: Preselection.objects.create(
            project=project, judge=judge, prompt_version="v1"
        ),
        PreselectionShown: PreselectionShown.objects.create(
            assignment=assignment, judge=judge, result=result, answer=ANSWER
        ),
    }


ADMIN_MODELS = [
    Project,
    Membership,
    Item,
    Assignment,
    Annotation,
    Batch,
    CrowdEntry,
    PlatformAction,
    Adjudication,
    Judge,
    JudgeRun,
    JudgeResult,
    JudgeCall,
    Preselection,
    PreselectionShown,
]


@pytest.fixture
def world(db):
    """Two projects, each with its own researcher; ``me`` is staff with every model permission
    of the project apps but not a superuser (what "make the researcher staff" gives)."""
    me, them = factories.UserFactory(is_staff=True), factories.UserFactory()
    me.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label__in=["projects", "annotation", "crowd", "llm_judges"]
        )
    )
    mine = factories.ProjectFactory(name="Mine Alpha")
    theirs = factories.ProjectFactory(name="Theirs Omega")
    factories.MembershipFactory(project=mine, user=me, role="researcher")
    factories.MembershipFactory(project=theirs, user=them, role="researcher")
    client = Client()
    client.force_login(me)
    return {
        "me": me,
        "client": client,
        "mine": build(mine, me),
        "theirs": build(theirs, them),
    }


def url(model, name: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{name}", args=args)


@pytest.mark.parametrize("model", ADMIN_MODELS, ids=lambda m: m.__name__)
def test_the_changelist_lists_only_the_researchers_own_projects(world, model):
    response = world["client"].get(url(model, "changelist"))
    assert response.status_code == 200
    listed = {obj.pk for obj in response.context["cl"].result_list}
    assert world["mine"][model].pk in listed
    assert world["theirs"][model].pk not in listed
    assert "Theirs Omega" not in response.content.decode()  # not even in a list filter


@pytest.mark.parametrize("model", ADMIN_MODELS, ids=lambda m: m.__name__)
def test_another_projects_object_cannot_be_opened_changed_or_deleted(world, model):
    client = world["client"]
    own, other = world["mine"][model], world["theirs"][model]
    assert client.get(url(model, "change", own.pk)).status_code == 200
    for view in ("change", "delete", "history"):
        response = client.get(url(model, view, other.pk))
        # Exactly what a missing object gives: back to the admin index, nothing shown.
        assert response.status_code == 302 and response["Location"] == reverse("admin:index")
    client.post(url(model, "delete", other.pk), {"post": "yes"})
    assert model.objects.filter(pk=other.pk).exists()


@pytest.mark.parametrize("model", ADMIN_MODELS, ids=lambda m: m.__name__)
def test_an_action_on_another_projects_rows_has_no_effect(world, model):
    own, other = world["mine"][model], world["theirs"][model]
    world["client"].post(
        url(model, "changelist"),
        {"action": "delete_selected", "_selected_action": [own.pk, other.pk], "post": "yes"},
    )
    assert not model.objects.filter(pk=own.pk).exists()  # the action ran on the own row
    assert model.objects.filter(pk=other.pk).exists()


def test_cancelling_another_projects_judge_run_has_no_effect(world):
    own, other = world["mine"][JudgeRun], world["theirs"][JudgeRun]
    world["client"].post(
        url(JudgeRun, "changelist"),
        {"action": "cancel_runs", "_selected_action": [own.pk, other.pk]},
    )
    own.refresh_from_db()
    other.refresh_from_db()
    assert own.status != JudgeRun.Status.RUNNING  # the action ran on the own run
    assert other.status == JudgeRun.Status.RUNNING


def _add_form_errors(world, model, fields: dict) -> dict:
    response = world["client"].post(url(model, "add"), fields)
    if response.status_code == 403:  # the model cannot be added in the admin at all
        return {"*": "forbidden"}
    assert response.status_code == 200  # the form again, with its errors
    return response.context["adminform"].form.errors


def _foreign_keys_to_scoped(model) -> list[str]:
    return [
        f.name
        for f in model._meta.concrete_fields
        if isinstance(f, ForeignKey)
        and isinstance(admin.site.get_model_admin(f.related_model), ProjectScopedAdmin)
    ]


@pytest.mark.parametrize("model", ADMIN_MODELS[1:], ids=lambda m: m.__name__)
def test_adding_with_another_projects_foreign_key_is_refused(world, model):
    keys = _foreign_keys_to_scoped(model)
    assert keys
    before = model.objects.count()
    theirs = {name: getattr(world["theirs"][model], f"{name}_id") for name in keys}
    errors = _add_form_errors(world, model, theirs)
    assert model.objects.count() == before
    if errors.get("*") == "forbidden":
        return
    assert {key: _refused_choice(errors, key) for key in keys} == dict.fromkeys(keys, True)
    # The same keys of the own project are valid choices (the test can tell the difference).
    own = {name: getattr(world["mine"][model], f"{name}_id") for name in keys}
    errors = _add_form_errors(world, model, own)
    assert {key: _refused_choice(errors, key) for key in keys} == dict.fromkeys(keys, False)


def _refused_choice(errors: dict, key: str) -> bool:
    return any("valid choice" in message for message in errors.get(key, []))


def test_a_staff_researcher_cannot_make_themselves_a_member_of_another_project(world):
    theirs = world["theirs"][Project]
    client = world["client"]
    response = client.post(
        url(Membership, "add"),
        {
            "project": theirs.pk,
            "user": world["me"].pk,
            "role": "researcher",
            "qualification": "not_required",
        },
    )
    assert "project" in response.context["adminform"].form.errors
    assert not Membership.objects.filter(project=theirs, user=world["me"]).exists()
    assert client.get(f"/p/{theirs.slug}/").status_code == 404
    assert client.get(f"/p/{theirs.slug}/export/jsonl/").status_code == 404


def test_the_project_autocomplete_offers_only_own_projects(world):
    response = world["client"].get(
        "/admin/autocomplete/",
        {"app_label": "projects", "model_name": "membership", "field_name": "project", "term": ""},
    )
    assert response.status_code == 200
    assert [r["text"] for r in response.json()["results"]] == ["Mine Alpha"]


def test_a_project_a_staff_researcher_creates_in_the_admin_is_theirs(world):
    response = world["client"].post(
        url(Project, "add"),
        {
            "slug": "new-study",
            "name": "New study",
            "task_type": "citation_recovery",
            "guidelines": "",
            "annotators_per_item": 3,
            "status": "active",
            "memberships-TOTAL_FORMS": 0,
            "memberships-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    created = Project.objects.get(slug="new-study")
    assert Membership.objects.get(project=created, user=world["me"]).role == "researcher"
    assert world["client"].get(url(Project, "change", created.pk)).status_code == 200


def test_a_superuser_sees_every_project(world):
    root = factories.UserFactory(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(root)
    for model in (Item, Membership, JudgeCall):
        response = client.get(url(model, "changelist"))
        listed = {obj.pk for obj in response.context["cl"].result_list}
        assert {world["mine"][model].pk, world["theirs"][model].pk} <= listed


def _reaches_project(model, depth: int = 3) -> bool:
    if model is Project:
        return True
    if depth == 0:
        return False
    return any(
        _reaches_project(f.related_model, depth - 1)
        for f in model._meta.concrete_fields
        if isinstance(f, ForeignKey)
    )


def test_every_admin_of_project_data_is_scoped_and_tested():
    """A new admin of a model that leads to a project must use ``ProjectScopedAdmin`` (and be
    added to ``ADMIN_MODELS``)."""
    project_data = {m for m in admin.site._registry if _reaches_project(m)}
    assert project_data == set(ADMIN_MODELS)
    unscoped = [
        m.__name__
        for m in project_data
        if not isinstance(admin.site.get_model_admin(m), ProjectScopedAdmin)
    ]
    assert unscoped == []


def test_the_project_page_links_to_the_admin_only_where_it_opens(world):
    mine = world["mine"][Project]
    admin_url = url(Project, "change", mine.pk)
    page = world["client"].get(f"/p/{mine.slug}/").content.decode()
    assert admin_url in page
    assert world["client"].get(admin_url).status_code == 200
    # A researcher who is not staff would only meet the admin's login page: no link.
    plain = factories.UserFactory()
    factories.MembershipFactory(project=mine, user=plain, role="researcher")
    client = Client()
    client.force_login(plain)
    page = client.get(f"/p/{mine.slug}/")
    assert page.status_code == 200 and admin_url not in page.content.decode()


def test_the_project_form_lists_no_account_of_another_project(world):
    stranger = world["theirs"][Assignment].annotator  # e.g. a crowd worker named by their id
    page = world["client"].get(url(Project, "change", world["mine"][Project].pk))
    assert page.status_code == 200 and stranger.username not in page.content.decode()
