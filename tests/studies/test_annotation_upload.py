"""Existing annotations uploaded on the project page and through the API (researchers only):
all or nothing, the first bad row named by line and field, through the same service as
``manage.py import_annotations``."""

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import ExternalAnnotation, ExternalCoder, Item
from studies.services.imports import import_items
from tests import factories
from tests.conftest import REPO

GOOD = (
    '{"item": "claim-0", "coder": "w1", "answer": {"helpfulness": 70}}\n'
    '{"item": "claim-1", "coder": "w2", "answer": {"sentences": [1], "helpfulness": 20}}\n'
)
BAD = (
    '{"item": "claim-0", "coder": "w1", "answer": {"helpfulness": 70}}\n'
    '{"item": "claim-1", "coder": "w2", "answer": {"helpfulness": 150}}\n'
)


def upload(text: str, name: str = "batch.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="application/octet-stream")


def nothing_imported(project) -> bool:
    return not (
        ExternalCoder.objects.filter(project=project).exists()
        or ExternalAnnotation.objects.filter(item__project=project).exists()
    )


def api_url(project) -> str:
    return f"/api/projects/{project.slug}/annotations/import/"


# --- API ----------------------------------------------------------------------------------------


def test_the_api_imports_and_answers_with_the_counts(researcher_client, project, items):
    response = researcher_client.post(
        api_url(project), {"file": upload(GOOD), "format": "jsonl"}, format="multipart"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["annotations"], body["coders"], body["new_coders"]) == (2, 2, 2)
    assert body["summary"].startswith("Imported 2 annotations by 2 external coders")
    stored = ExternalAnnotation.objects.get(coder__name="w2")
    assert stored.answer == {"sentences": [1], "helpfulness": 20}
    assert stored.source == "batch.jsonl"  # the file's name when no source is given


def test_a_bad_row_is_a_400_naming_line_and_field_and_nothing_is_imported(
    researcher_client, project, items
):
    response = researcher_client.post(
        api_url(project),
        {"file": upload(BAD), "format": "jsonl", "source": "mturk"},
        format="multipart",
    )
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    body = response.json()
    assert body["field"] == "answer.helpfulness"
    assert body["detail"].startswith("Nothing imported. line 2, field 'answer.helpfulness'")
    assert nothing_imported(project)


@pytest.mark.parametrize(
    "data, field, words",
    [
        ({"format": "xlsx"}, "format", "Unknown format 'xlsx'"),
        ({"format": "csv"}, "file", "line 1: the CSV needs an 'item' column"),
        ({"format": "jsonl", "file": b"\xff\xfe"}, "file", "not UTF-8"),
        ({"format": "jsonl", "mapping": b"column,system\n"}, "mapping", "takes no mapping"),
        ({"format": "jsonl", "mapping": b"\xff"}, "mapping", "not UTF-8"),
        ({}, "format", "required"),
    ],
)
def test_other_bad_uploads_name_their_field(researcher_client, project, items, data, field, words):
    content = data.pop("file", GOOD.encode())
    payload = {"file": SimpleUploadedFile("f", content), **data}
    if "mapping" in data:
        payload["mapping"] = SimpleUploadedFile("m.csv", data["mapping"])
    response = researcher_client.post(api_url(project), payload, format="multipart")
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field and words in str(response.json())
    assert nothing_imported(project)


def test_the_upload_limit_holds(researcher_client, project, items, settings):
    settings.CONCORD_MAX_UPLOAD_BYTES = 20
    response = researcher_client.post(
        api_url(project), {"file": upload(GOOD), "format": "jsonl"}, format="multipart"
    )
    assert response.status_code == 413 and response.json()["field"] == "file"
    assert nothing_imported(project)


def test_only_researchers_of_the_project_may_upload(annotator_client, project, items):
    response = annotator_client.post(
        api_url(project), {"file": upload(GOOD), "format": "jsonl"}, format="multipart"
    )
    assert response.status_code == 404 and nothing_imported(project)


def test_the_api_takes_the_mapping_file_of_the_original_rankings(db, researcher):
    from tests.conftest import client_for

    data = REPO / "data" / "explanation-ranking"
    mapping = (data / "reprohum_mapping.csv").read_text()
    project = factories.ProjectFactory(task_type="ranking", config={})
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    with open(data / "reprohum_sheet.csv", "rb") as stream:
        import_items(project=project, stream=stream, fmt="reprohum", options={"mapping": mapping})
    claim = mapping.splitlines()[1].split(",")[0]
    sheet = "id,annotator," + ",".join(
        f"{c} {n}"
        for c in ("Coverage", "Non-redundancy", "Non-contradiction", "Overall")
        for n in (1, 2, 3)
    )
    sheet += f"\n{claim},orig-1," + ",".join(["1", "2", "3"] * 4) + "\n"
    response = client_for(researcher).post(
        api_url(project),
        {
            "file": upload(sheet, "original.csv"),
            "format": "reprohum-ranks",
            "mapping": SimpleUploadedFile("mapping.csv", mapping.encode()),
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content
    (stored,) = ExternalAnnotation.objects.filter(item__project=project)
    assert stored.coder.name == "orig-1" and len(stored.answer["ranks"]) == 4


# --- the project page ---------------------------------------------------------------------------


def page_post(client, project, text: str, **fields):
    data = {
        "annotations-file": io.BytesIO(text.encode()),
        "annotations-format": "jsonl",
        **{f"annotations-{k}": v for k, v in fields.items()},
    }
    data["annotations-file"].name = "ratings.jsonl"
    return client.post(f"/p/{project.slug}/annotations/import/", data)


def test_the_project_page_offers_the_upload_and_imports(client, researcher, project, items):
    client.force_login(researcher)
    page = client.get(f"/p/{project.slug}/").content.decode()
    assert "Import existing annotations" in page
    assert f'action="/p/{project.slug}/annotations/import/"' in page
    assert '<option value="utility-ratings">utility-ratings</option>' in page

    response = page_post(client, project, GOOD, source="pilot batch")
    assert response.status_code == 302
    followed = client.get(response["Location"]).content.decode()
    assert "Imported 2 annotations by 2 external coders (2 new)." in followed
    assert "This project has 2 external coders." in followed
    assert set(ExternalAnnotation.objects.values_list("source", flat=True)) == {"pilot batch"}


def test_the_project_page_names_line_and_field_and_imports_nothing(
    client, researcher, project, items
):
    client.force_login(researcher)
    response = page_post(client, project, BAD)
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="annotation-import-errors"' in html and "Nothing was imported." in html
    assert "line 2, field &#x27;answer.helpfulness&#x27;" in html
    assert nothing_imported(project)
    # The item import's form is untouched by the annotations' error.
    assert 'id="import-errors"' not in html


def test_the_page_upload_is_for_researchers_only(client, annotator, project, items):
    client.force_login(annotator)
    assert page_post(client, project, GOOD).status_code == 404
    assert nothing_imported(project)


# --- values that must be refused, never a 500 (issue 24) ----------------------------------------

LONG_NUMBER = "9" * 5000


@pytest.mark.parametrize(
    "line, field",
    [
        (
            '{"item": "claim-0", "coder": "w1", "answer": {"helpfulness": 70}, "expect": [1]}',
            "expect",
        ),
        (
            '{"item": "claim-0", "coder": "w1", "answer": {"helpfulness": 70}, "expect": "abc"}',
            "expect",
        ),
        (
            '{"item": "claim-0", "coder": "w1", "answer": {"helpfulness": 70}, "time_spent_ms": '
            + LONG_NUMBER
            + "}",
            "time_spent_ms",
        ),
        (
            '{"item": "claim-0", "coder": "w1", "answer": {"helpfulness": ' + LONG_NUMBER + "}}",
            "answer.helpfulness",
        ),
    ],
    ids=["expect-list", "expect-text", "long-time-spent", "long-answer-number"],
)
def test_odd_jsonl_values_are_a_400_naming_the_field(
    researcher_client, project, items, line, field
):
    response = researcher_client.post(
        api_url(project), {"file": upload(line + "\n"), "format": "jsonl"}, format="multipart"
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"] == field and "line 1" in body["detail"], body
    assert nothing_imported(project)


def test_a_long_number_in_a_csv_time_cell_is_a_400(researcher_client, project, items):
    sheet = f"item,coder,time_spent_ms,helpfulness\nclaim-0,w1,{LONG_NUMBER},70\n"
    response = researcher_client.post(
        api_url(project), {"file": upload(sheet, "b.csv"), "format": "csv"}, format="multipart"
    )
    assert response.status_code == 400, response.content
    assert response.json()["field"] == "time_spent_ms" and "line 2" in response.json()["detail"]
    assert nothing_imported(project)


@pytest.mark.parametrize(
    "when",
    [
        "9999-12-31T23:59:59-14:00",
        "0001-01-01T00:00:00+14:00",
        "1850-01-01T00:00:00Z",
        "2999-01-01T00:00:00Z",
    ],
)
def test_an_annotation_date_outside_a_sane_range_is_refused_naming_line_and_field(
    researcher_client, project, items, when
):
    text = GOOD + json.dumps(
        {"item": "claim-2", "coder": "w3", "answer": {"helpfulness": 5}, "annotated_at": when}
    )
    response = researcher_client.post(
        api_url(project), {"file": upload(text), "format": "jsonl"}, format="multipart"
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"] == "annotated_at" and "line 3" in body["detail"], body
    assert nothing_imported(project)


def test_a_plausible_annotation_date_is_kept(researcher_client, project, items):
    text = json.dumps(
        {
            "item": "claim-0",
            "coder": "w1",
            "answer": {"helpfulness": 5},
            "annotated_at": "2021-03-04T05:06:07+02:00",
        }
    )
    response = researcher_client.post(
        api_url(project), {"file": upload(text), "format": "jsonl"}, format="multipart"
    )
    assert response.status_code == 201, response.content
    stored = ExternalAnnotation.objects.get(coder__name="w1").annotated_at
    assert stored.isoformat() == "2021-03-04T03:06:07+00:00"


def test_nested_answer_errors_read_as_text_not_python(researcher_client, project, items):
    line = '{"item": "claim-0", "coder": "w1", "answer": {"sentences": [1, "x"], "helpfulness": 3}}'
    response = researcher_client.post(
        api_url(project), {"file": upload(line), "format": "jsonl"}, format="multipart"
    )
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert "ErrorDetail" not in detail and "{" not in detail, detail
    assert response.json()["field"].startswith("answer.sentences")


def stance_project(researcher):
    project = factories.ProjectFactory(task_type="stance", config={})
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    Item.objects.create(
        project=project,
        external_id="coffee",
        payload={"id": "coffee", "claim": "c", "response": "One. Two. Three."},
        prepared={"sentences": ["One.", "Two.", "Three."], "targets": [{"index": 1}]},
        position=0,
    )
    return project


@pytest.mark.parametrize("index, status", [(99999, 400), (3, 400), (2, 201)])
def test_an_external_stance_sentence_must_be_a_sentence_of_the_response(researcher, index, status):
    from tests.conftest import client_for

    project = stance_project(researcher)
    line = json.dumps(
        {
            "item": "coffee",
            "coder": "orig",
            "answer": {"label": "agree", "sentences": [{"index": index, "label": "neutral"}]},
        }
    )
    response = client_for(researcher).post(
        api_url(project), {"file": upload(line), "format": "jsonl"}, format="multipart"
    )
    assert response.status_code == status, response.content
    if status == 400:
        body = response.json()
        assert body["field"] == "answer.sentences" and "line 1" in body["detail"], body
        assert nothing_imported(project)


@pytest.mark.parametrize("where", ["cell", "header"])
def test_a_long_number_in_the_original_rankings_is_a_400(db, researcher, where):
    from tests.conftest import client_for

    data = REPO / "data" / "explanation-ranking"
    mapping = (data / "reprohum_mapping.csv").read_text()
    project = factories.ProjectFactory(task_type="ranking", config={})
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    with open(data / "reprohum_sheet.csv", "rb") as stream:
        import_items(project=project, stream=stream, fmt="reprohum", options={"mapping": mapping})
    claim = mapping.splitlines()[1].split(",")[0]
    columns = [f"Coverage {n}" for n in (1, 2, 3)]
    cells = ["1", "2", "3"]
    if where == "cell":
        cells[1] = LONG_NUMBER
    else:
        columns.append(f"Coverage {LONG_NUMBER}")
        cells.append("4")
    sheet = "id,annotator," + ",".join(columns) + f"\n{claim},orig-1," + ",".join(cells) + "\n"
    response = client_for(researcher).post(
        api_url(project),
        {
            "file": upload(sheet, "original.csv"),
            "format": "reprohum-ranks",
            "mapping": SimpleUploadedFile("mapping.csv", mapping.encode()),
        },
        format="multipart",
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"] == ("Coverage 2" if where == "cell" else f"Coverage {LONG_NUMBER}"[:40])
    assert "at most 6 digits" in body["detail"]
    assert nothing_imported(project)
