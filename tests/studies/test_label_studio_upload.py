"""The Label Studio import in one step (``studies.services.label_studio``): the project page's
form and the API take the JSON export and the labeling config together and import items and
external coders' answers; a bad export or config is a 400 naming the field (HTML: beside the
form, the source as typed; JSON: ``field``), and nothing is imported."""

import io
import json

import pytest
from django.test import Client

from annotation.models import ExternalAnnotation, Item
from projects.audit import AuditKind
from projects.models import AuditEntry
from tests import factories
from tests.conftest import client_for
from tests.task_types.questionnaire import test_label_studio as questionnaire_ls
from tests.task_types.ranking import test_label_studio as ranking_ls


def _file(text: str, name: str) -> io.BytesIO:
    upload = io.BytesIO(text.encode())
    upload.name = name
    return upload


@pytest.fixture
def researcher(db):
    return factories.UserFactory()


def _project(researcher, task_type: str):
    project = factories.ProjectFactory(task_type=task_type, config={})
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    return project


def page_post(client, project, export: str, config: str, source: str = ""):
    return client.post(
        f"/p/{project.slug}/import/label-studio/",
        {
            "label_studio-file": _file(export, "export.json"),
            "label_studio-labeling_config": _file(config, "config.xml"),
            "label_studio-source": source,
        },
    )


@pytest.mark.parametrize(
    ("task_type", "module", "items", "answers"),
    [("ranking", ranking_ls, 2, 3), ("questionnaire", questionnaire_ls, 4, 13)],
)
def test_the_page_imports_items_and_answers_in_one_submit(
    researcher, task_type, module, items, answers
):
    project = _project(researcher, task_type)
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/p/{project.slug}/").content.decode()
    assert "Import a Label Studio project" in page
    assert f'action="/p/{project.slug}/import/label-studio/"' in page
    response = page_post(client, project, module.EXPORT, module.CONFIG, source="LS pilot")
    assert response.status_code == 302
    followed = client.get(response["Location"]).content.decode()
    assert "from Label Studio" in followed
    assert Item.objects.filter(project=project).count() == items
    stored = ExternalAnnotation.objects.filter(item__project=project)
    assert stored.count() == answers
    assert set(stored.values_list("source", flat=True)) == {"LS pilot"}


def test_the_page_names_the_field_keeps_the_source_and_imports_nothing(researcher):
    project = _project(researcher, "ranking")
    client = Client()
    client.force_login(researcher)
    tasks = json.loads(ranking_ls.EXPORT)
    tasks[1]["data"]["items"][0]["id"] = True
    response = page_post(client, project, json.dumps(tasks), ranking_ls.CONFIG, "typed source")
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="label-studio-import-errors"' in html and "Nothing was imported." in html
    assert "Label Studio JSON export: Nothing imported. task at index 1 (id 102), field " in html
    assert "&#x27;data.items.0.id&#x27;" in html
    assert 'value="typed source"' in html
    assert not Item.objects.filter(project=project).exists()
    assert not ExternalAnnotation.objects.exists()

    response = page_post(client, project, ranking_ls.EXPORT, "<View><Text", "typed source")
    assert response.status_code == 400
    assert "Labeling config (XML): Nothing imported." in response.content.decode()
    assert not Item.objects.filter(project=project).exists()


def test_an_export_too_large_for_one_request_is_refused_with_what_to_do(researcher, settings):
    # Beyond the limit the request would be cut by the server's timeout, saying nothing.
    settings.CONCORD_LABEL_STUDIO_WEB_TASKS = 1
    project = _project(researcher, "ranking")
    client = client_for(researcher)
    response = client.post(
        f"/api/projects/{project.slug}/import/label-studio/",
        {
            "file": _file(ranking_ls.EXPORT, "export.json"),
            "labeling_config": _file(ranking_ls.CONFIG, "config.xml"),
        },
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"] == "file"
    assert "This export holds 2 tasks" in body["detail"]
    assert "up to 1 in one request" in body["detail"]
    assert "manage.py import_label_studio" in body["detail"]
    assert not Item.objects.filter(project=project).exists()
    settings.CONCORD_LABEL_STUDIO_WEB_TASKS = 2  # at the limit: imported
    response = client.post(
        f"/api/projects/{project.slug}/import/label-studio/",
        {
            "file": _file(ranking_ls.EXPORT, "export.json"),
            "labeling_config": _file(ranking_ls.CONFIG, "config.xml"),
        },
    )
    assert response.status_code == 201, response.content
    assert Item.objects.filter(project=project).count() == 2


def test_a_missing_config_is_named_by_the_form(researcher):
    project = _project(researcher, "ranking")
    client = Client()
    client.force_login(researcher)
    response = client.post(
        f"/p/{project.slug}/import/label-studio/",
        {"label_studio-file": _file(ranking_ls.EXPORT, "export.json")},
    )
    assert response.status_code == 400
    assert "Labeling config (XML): This field is required." in response.content.decode()
    assert not Item.objects.filter(project=project).exists()


def api_post(client, project, export: str, config: str):
    return client.post(
        f"/api/projects/{project.slug}/import/label-studio/",
        {
            "file": _file(export, "export.json"),
            "labeling_config": _file(config, "config.xml"),
        },
        format="multipart",
    )


def test_the_api_imports_in_one_request_and_refuses_naming_the_field(researcher):
    project = _project(researcher, "ranking")
    client = client_for(researcher)
    tasks = json.loads(ranking_ls.EXPORT)
    del tasks[0]["annotations"][0]["result"][1]["value"]["ranker"]
    response = api_post(client, project, json.dumps(tasks), ranking_ls.CONFIG)
    assert response.status_code == 400
    assert response.json()["field"] == "annotations.0.result.1.value.ranker"
    assert "task at index 0 (id 101)" in json.dumps(response.json())
    assert not Item.objects.filter(project=project).exists()

    response = api_post(client, project, ranking_ls.EXPORT, ranking_ls.CONFIG)
    assert response.status_code == 201
    body = response.json()
    assert (body["items"], body["annotations"], body["predictions"]) == (2, 2, 1)
    assert body["not_mapped"][0].startswith("<Choices name='safe'>")


def test_a_task_type_that_reads_no_label_studio_projects_offers_no_form_and_refuses(researcher):
    project = _project(researcher, "stance")
    client = Client()
    client.force_login(researcher)
    assert "Import a Label Studio project" not in client.get(f"/p/{project.slug}/").content.decode()
    response = api_post(client_for(researcher), project, ranking_ls.EXPORT, ranking_ls.CONFIG)
    assert response.status_code == 400
    assert response.json()["field"] == "file"


def test_someone_not_a_researcher_gets_404(researcher, db):
    project = _project(researcher, "ranking")
    stranger = factories.UserFactory()
    client = Client()
    client.force_login(stranger)
    response = page_post(client, project, ranking_ls.EXPORT, ranking_ls.CONFIG)
    assert response.status_code == 404
    assert not Item.objects.filter(project=project).exists()


@pytest.mark.parametrize("task_type", ["ranking", "questionnaire"])
@pytest.mark.parametrize("via", ["page", "api"])
def test_the_import_is_in_the_audit_log_under_the_researcher(researcher, task_type, via):
    """The same entries as the item and the annotation imports write, and the settings change
    (the project's config from the labeling config), naming who imported."""
    module = {"ranking": ranking_ls, "questionnaire": questionnaire_ls}[task_type]
    project = _project(researcher, task_type)
    if via == "page":
        client = Client()
        client.force_login(researcher)
        assert page_post(client, project, module.EXPORT, module.CONFIG).status_code == 302
    else:
        response = api_post(client_for(researcher), project, module.EXPORT, module.CONFIG)
        assert response.status_code == 201
    entries = AuditEntry.objects.filter(project=project)
    assert {(e.kind, e.actor_id) for e in entries} == {
        (AuditKind.SETTINGS_CHANGED, researcher.pk),  # the config from the labeling config
        (AuditKind.ITEMS_IMPORTED, researcher.pk),
        (AuditKind.ANNOTATIONS_IMPORTED, researcher.pk),
    }
    annotations = entries.get(kind=AuditKind.ANNOTATIONS_IMPORTED)
    assert annotations.changes["format"] == "label-studio"
    assert (
        annotations.changes["annotations"]
        == ExternalAnnotation.objects.filter(item__project=project).count()
    )
