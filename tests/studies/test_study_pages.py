"""New study and study settings in the pages: the form is generated from the study files' JSON
Schema and saved as a study file, so the pages check what a study file is checked for."""

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils.html import escape

from annotation import task_types
from projects.models import Membership, Project
from studies.study_files import study_apply, study_export
from studies.study_forms import study_form_for
from tests import factories


def browser_data(form) -> dict:
    """What a browser posts for ``form`` as the page shows it (initial values, CRLF newlines)."""
    data = {}
    for field in form:
        if field.field.disabled:
            continue
        value = field.value()  # as the widget shows it (prepared)
        if value is True:
            data[field.html_name] = "on"
        elif value in (False, None):
            continue
        else:
            data[field.html_name] = str(value).replace("\n", "\r\n")
    return data


@pytest.fixture
def creator(db):
    user = factories.UserFactory(username=factories.unique("creator"))
    user.user_permissions.add(Permission.objects.get(codename="add_project"))
    client = Client()
    client.force_login(user)
    return user, client


def test_only_users_allowed_to_create_projects_see_new_study(creator):
    _, client = creator
    page = client.get("/p/new/").content.decode()
    for kind in task_types.all_task_types():
        assert escape(kind.name) in page and escape(kind.description) in page
        assert f"/static/{kind.slug}/preview.png" in page
        assert f"/p/new/{kind.slug}/" in page
    assert 'id="new-study"' in client.get("/").content.decode()
    stranger = factories.UserFactory(username=factories.unique("annotator"))
    other = Client()
    other.force_login(stranger)
    assert other.get("/p/new/").status_code == 404
    assert other.post("/p/new/ranking/", {"name": "x", "slug": "x"}).status_code == 404
    assert 'id="new-study"' not in other.get("/").content.decode()


@pytest.mark.parametrize("slug", [t.slug for t in task_types.all_task_types()])
def test_a_study_of_every_task_type_is_created_with_the_form_as_shown(creator, slug):
    user, client = creator
    form = study_form_for(slug)()
    data = browser_data(form)
    data.update(
        {
            "name": f"My {slug} study",
            "slug": f"my-{slug}".replace("_", "-"),
            "guidelines": "# Read me\r\n\r\nCarefully.\r\n",
            "action": "save",
        }
    )
    response = client.post(f"/p/new/{slug}/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    project = Project.objects.get(slug=data["slug"])
    assert response["Location"] == f"/p/{project.slug}/"
    assert project.task_type == slug and project.created_by == user
    assert Membership.objects.get(project=project, user=user).role == "researcher"
    # Only what differs from the defaults is stored, and the guidelines as typed (LF, the
    # trailing newline kept).
    assert project.config == {} and project.crowd == {}
    assert project.guidelines == "# Read me\n\nCarefully.\n"


def test_a_bad_value_is_refused_next_to_its_field_and_nothing_is_created(creator):
    _, client = creator
    form = study_form_for("ranking")()
    data = {**browser_data(form), "name": "R", "slug": "r-study", "action": "save"}
    data["crowd__batch_size"] = "0"
    data["annotators_per_item"] = "0"
    response = client.post("/p/new/ranking/", data)
    assert response.status_code == 400
    page = response.content.decode()
    assert "crowd.batch_size" in page and "greater than or equal to 1" in page
    assert not Project.objects.filter(slug="r-study").exists()
    taken = factories.ProjectFactory(slug="taken")
    data = {**browser_data(form), "name": "R", "slug": taken.slug, "action": "save"}
    response = client.post("/p/new/ranking/", data)
    assert response.status_code == 400 and "is not available" in response.content.decode()
    response = client.post("/p/new/ranking/", {**data, "slug": "new"})
    assert response.status_code == 400 and "a page of its own" in response.content.decode()


def test_saving_the_settings_unchanged_changes_nothing_and_the_file_applies_cleanly(
    project, researcher
):
    project.guidelines = "Line one\nLine two\n"
    project.config = {"masking": "sample"} if project.task_type == "citation_recovery" else {}
    project.save()
    before = study_export(project=project)
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/p/{project.slug}/settings/")
    assert page.status_code == 200
    form = study_form_for(project.task_type)(project=project)
    response = client.post(
        f"/p/{project.slug}/settings/", {**browser_data(form), "action": "save"}, follow=True
    )
    assert "Nothing changed." in response.content.decode()
    project.refresh_from_db()
    assert study_export(project=project) == before
    download = client.get(f"/p/{project.slug}/study.yaml")
    assert download["Content-Disposition"].endswith(f'{project.slug}.study.yaml"')
    from core.yaml_safety import yaml_load

    result = study_apply(data=yaml_load(download.content.decode()), user=researcher)
    assert result["changes"] == []
    assert client.get(f"/p/{project.slug}/study.json").json() == before


def test_the_settings_are_for_the_projects_researchers_only(project):
    annotator = factories.UserFactory(username=factories.unique("a"))
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    client = Client()
    client.force_login(annotator)
    assert client.get(f"/p/{project.slug}/settings/").status_code == 404
    assert client.get(f"/p/{project.slug}/study.yaml").status_code == 404


def test_a_question_with_answers_keeps_its_kind(db, researcher):
    from annotation.models import ExternalAnnotation, ExternalCoder, Item

    project = factories.ProjectFactory(slug="survey", task_type="questionnaire")
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    points = ["No", "Somewhat", "Yes"]
    questions = [{"id": "clear", "kind": "likert", "prompt": "Is it clear?", "points": points}]
    study = {**study_export(project=project), "config": {"questions": questions}}
    study_apply(data=study, user=researcher)
    changed = [{"id": "clear", "kind": "text", "prompt": "Is it clear?"}]
    # Before any answer, anything may change.
    study_apply(data={**study, "config": {"questions": changed}}, dry_run=True, user=researcher)
    item = Item.objects.create(project=project, external_id="i1", payload={}, prepared={})
    coder = ExternalCoder.objects.create(project=project, name="w1")
    ExternalAnnotation.objects.create(coder=coder, item=item, answer={"clear": 3})
    client = Client()
    client.force_login(researcher)
    form = study_form_for("questionnaire")(project=project)
    data = {**browser_data(form), "action": "save"}
    import json

    data["config__questions"] = json.dumps(changed)
    response = client.post(f"/p/{project.slug}/settings/", data)
    assert response.status_code == 400
    assert "cannot become a text question" in response.content.decode()
    project.refresh_from_db()
    assert project.config["questions"][0]["kind"] == "likert"


def test_previewing_the_guidelines_saves_nothing(creator):
    _, client = creator
    form = study_form_for("stance")()
    data = {
        **browser_data(form),
        "name": "S",
        "slug": "s-study",
        "guidelines": "**Bold** <script>alert(1)</script>",
        "action": "preview",
    }
    response = client.post("/p/new/stance/", data)
    page = response.content.decode()
    assert response.status_code == 200 and "<strong>Bold</strong>" in page
    assert "<script>alert(1)</script>" not in page
    assert not Project.objects.filter(slug="s-study").exists()


def test_enter_in_a_field_saves_rather_than_previews(creator):
    """The form's first submit button is the form's default (what Enter presses): save."""
    import re

    _, client = creator
    page = client.get("/p/new/stance/").content.decode()
    form = page[page.index('<form method="post" class="study-form"') :]
    first = re.search(r"<button[^>]*type=\"submit\"[^>]*>", form).group(0)
    assert 'value="save"' in first
