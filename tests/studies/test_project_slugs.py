"""Project slugs are addresses, unique ignoring case (a probe's finding: "Demo" was created next
to "demo", and the refusal of a taken slug told anyone allowed to create studies that a project
they cannot see exists, with how to change it). A new project's slug is stored in lower case;
a taken one is refused in words that say no more than an address being taken, and a new study's
judges are never checked against the judges and endpoints of the project holding the slug."""

import copy

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.test import Client

from llm_judges.models import ModelEndpoint
from projects.models import Project
from studies.study_files import study_apply, study_export
from studies.study_forms import study_form_for
from tests import factories
from tests.conftest import client_for
from tests.studies.test_study_pages import browser_data

STUDY = {"slug": "Demo", "name": "Demo", "task_type": "citation_recovery"}
NOT_AVAILABLE = "slug: the address /p/demo/ is not available; choose another slug."


@pytest.fixture
def creator(db):
    user = factories.UserFactory(username=factories.unique("creator"))
    user.user_permissions.add(Permission.objects.get(codename="add_project"))
    return user


@pytest.fixture
def hidden(db):
    """Someone else's project "demo", with a judge endpoint open to it alone."""
    project = factories.ProjectFactory(slug="demo", name="Secret merger study")
    endpoint = ModelEndpoint.objects.create(
        name="their-private-endpoint", base_url="https://api.example.org/v1", api_key_env="K"
    )
    endpoint.projects.add(project)
    return project


def test_a_new_projects_slug_is_stored_in_lower_case(creator):
    project = study_apply(data=STUDY, user=creator, create_only=True)["project"]
    assert project.slug == "demo"
    assert study_export(project=project)["slug"] == "demo"


@pytest.mark.parametrize("slug", ["demo", "Demo", "DEMO"])
def test_the_api_refuses_a_slug_taken_in_any_case_and_says_only_that(creator, hidden, slug):
    response = client_for(creator).post("/api/projects/", {**STUDY, "slug": slug}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "slug" and body["detail"] == NOT_AVAILABLE
    assert Project.objects.filter(slug__iexact="demo").count() == 1


def test_the_new_study_page_refuses_it_in_the_same_words(creator, hidden):
    client = Client()
    client.force_login(creator)
    form = study_form_for("citation_recovery")()
    data = {**browser_data(form), "name": "Mine", "slug": "DeMo", "action": "save"}
    response = client.post("/p/new/citation_recovery/", data)
    page = response.content.decode()
    assert response.status_code == 400 and "is not available; choose another slug." in page
    assert "Secret merger study" not in page and "PUT" not in page


def test_a_new_studys_judges_are_not_checked_against_the_project_holding_its_slug(creator, hidden):
    """Else the answer would tell whether an endpoint is open to a project the sender cannot see
    (the judge passes there, and only the slug is refused)."""
    client = client_for(creator)
    judge = {"name": "j", "kind": "llm", "model": "m", "endpoint": "their-private-endpoint"}
    answers = [
        client.post("/api/projects/", {**STUDY, "slug": slug, "judges": [judge]}, format="json")
        for slug in ("demo", "nobody-has-this")
    ]
    assert [a.status_code for a in answers] == [400, 400]
    assert answers[0].json() == answers[1].json()
    assert answers[0].json()["field"] == "judges[0].endpoint"


def test_reserved_addresses_are_reserved_in_any_case(creator):
    response = client_for(creator).post("/api/projects/", {**STUDY, "slug": "NEW"}, format="json")
    assert response.status_code == 400 and response.json()["field"] == "slug"
    assert not Project.objects.exists()


def test_a_study_file_that_says_Demo_applies_again_to_the_demo_it_created(db, tmp_path):
    path = tmp_path / "study.json"
    path.write_text('{"slug": "Demo", "name": "Demo", "task_type": "citation_recovery"}')
    call_command("study", "apply", str(path))
    call_command("study", "apply", str(path))
    assert list(Project.objects.values_list("slug", flat=True)) == ["demo"]


def test_its_researchers_put_a_file_that_spells_the_slug_in_another_case(creator):
    study_apply(data=STUDY, user=creator, create_only=True)
    changed = copy.deepcopy({**STUDY, "name": "Renamed"})
    response = client_for(creator).put("/api/projects/demo/", changed, format="json")
    assert response.status_code == 200, response.content
    assert Project.objects.get(slug="demo").name == "Renamed"


def test_the_slug_as_sent_reaches_the_project_stored_in_lower_case(creator):
    # Found by an outside probe: POST {"slug": "MyStudy"} gave "mystudy", and then /p/MyStudy/
    # and /api/projects/MyStudy/… were 404s, even for its researcher and for a client that kept
    # the slug it sent; a non-member still gets the same 404 as for a missing project.
    client = client_for(creator)
    created = client.post("/api/projects/", {**STUDY, "slug": "MyStudy"}, format="json")
    assert created.status_code == 201
    assert client.get("/api/projects/MyStudy/progress/").status_code == 200
    again = client.put("/api/projects/MyStudy/", {**STUDY, "slug": "MyStudy"}, format="json")
    assert again.status_code == 200, again.content
    assert Project.objects.filter(slug__iexact="mystudy").count() == 1
    page = Client()
    page.force_login(creator)
    assert page.get("/p/MyStudy/").status_code == 200
    outsider = client_for(factories.UserFactory())
    assert outsider.get("/api/projects/MyStudy/progress/").json() == (
        outsider.get("/api/projects/NoSuchStudy/progress/").json()
    )
