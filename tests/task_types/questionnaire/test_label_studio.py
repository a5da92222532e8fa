"""Label Studio interchange: a JSON export and its labeling config, written by hand from Label
Studio's documented format (tests/task_types/questionnaire/label_studio/), become a
questionnaire project with its annotators and predictions as external coders; agreement on
them equals an independent computation; a project exported as Label Studio JSON reads back.

Every result in export.json passes label-studio-sdk 2.1.2's ``LabelInterface.validate_region``
against config.xml except the choice 'Wrong' (deliberately not in the config) and the first
Pairwise result, whose ``to_name`` is the control itself as Label Studio's editor writes it (the
SDK wants one of the compared objects; the importer reads either). Checked by hand, as is the
export's: the SDK is not a dependency."""

import io
import json

import krippendorff
import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from agreement.reports import AnnotatorFilter, ReportOptions, build_report
from agreement.reports.gather import gather
from annotation import services as annotation_services
from annotation import task_types
from annotation.models import ExternalAnnotation, ExternalCoder, Item
from projects.models import Project
from studies.services.external_annotations import import_annotations
from studies.services.imports import ImportFailed, import_items
from task_types.questionnaire.label_studio import LabelingConfigError, parse_labeling_config
from task_types.questionnaire.label_studio_io import (
    export_label_studio,
    import_label_studio,
    labeling_config,
)
from task_types.questionnaire.serializers import project_config
from tests import factories
from tests.conftest import client_for
from tests.label_studio_examples import example_files, imported_example

HERE, EXPORT, CONFIG = example_files(__file__)


def _answers(project) -> dict[tuple[str, str], dict]:
    return {
        (a.coder.name, a.item.external_id): a.answer
        for a in ExternalAnnotation.objects.filter(item__project=project).select_related(
            "coder", "item"
        )
    }


def _times(project) -> dict[tuple[str, str], object]:
    return {
        (a.coder.name, a.item.external_id): a.annotated_at
        for a in ExternalAnnotation.objects.filter(item__project=project).select_related(
            "coder", "item"
        )
    }


@pytest.fixture
def imported(db):
    return imported_example(
        task_type="questionnaire",
        import_label_studio=import_label_studio,
        export=EXPORT,
        config=CONFIG,
    )


def test_the_labeling_config_becomes_questions_and_reports_what_it_cannot_map():
    config = parse_labeling_config(CONFIG)
    questions = {q["id"]: q for q in config.questionnaire["questions"]}
    assert {i: q["kind"] for i, q in questions.items()} == {
        "preference": "pairwise",
        "accuracy": "single",
        "issues": "multiple",
        "helpfulness": "likert",
        "confidence": "slider",
        "comment": "text",
    }
    assert [f["name"] for f in config.fields] == ["prompt", "response_a", "response_b"]
    assert questions["preference"]["fields"] == ["response_a", "response_b"]
    assert questions["preference"]["allow_tie"] is False
    assert questions["accuracy"]["options"][1] == {"value": "partly", "label": "Partly accurate"}
    assert questions["helpfulness"]["points"] == ["1", "2", "3", "4", "5"]
    assert questions["preference"]["prompt"] == "Which response answers the prompt better?"
    assert all(q["required"] is False for q in questions.values())
    assert len(config.unmapped) == 2
    assert "<Labels name='spans'>: not mapped" in config.unmapped[0]
    assert "<Ranker name='rank'>: not mapped" in config.unmapped[1]


def test_an_export_becomes_items_and_external_coders(imported):
    project, done = imported
    assert (done.items, done.annotations, done.predictions) == (4, 11, 2)
    assert (done.coders, done.cancelled, done.config_replaced) == (4, 1, True)
    assert Item.objects.filter(project=project).count() == 4
    assert set(ExternalCoder.objects.filter(project=project).values_list("name", flat=True)) == {
        "ls-user-1",
        "ls-user-2",
        "ls-user-3",
        "model:judge-v1",
    }
    answers = _answers(project)
    assert answers["ls-user-1", "1"] == {
        "accuracy": "Accurate",
        "helpfulness": 4,
        "preference": -1,
        "issues": ["Too long"],
        "confidence": 80,
        "comment": "Good, but long.",
    }
    assert answers["ls-user-3", "1"]["accuracy"] == "partly"  # the choice's alias is stored
    assert answers["ls-user-2", "2"]["preference"] == 1  # right: the second field is better
    # The choice that is not in the config is left out; the rest of that annotation stays.
    assert answers["ls-user-2", "4"] == {"helpfulness": 2, "preference": 1}
    assert ("ls-user-3", "4") not in answers  # cancelled
    assert answers["model:judge-v1", "3"] == {"accuracy": "partly", "helpfulness": 5}
    stored = ExternalAnnotation.objects.get(coder__name="ls-user-1", item__external_id="1")
    assert stored.time_spent_ms == 10_000
    assert stored.annotated_at.isoformat() == "2024-03-01T10:01:00+00:00"
    item = Item.objects.get(project=project, external_id="1")
    assert item.payload["response_a"] == "For most adults, yes, with food."
    assert item.payload["system_a"] == "careful"  # provenance, never shown
    assert "e-mail" not in done.summary() and "example.org" not in str(_answers(project))
    assert done.summary() == (
        "Imported 4 items, 11 annotations and 2 predictions by 4 external coders from Label "
        "Studio; left out 1 cancelled annotation."
    )
    report = "\n".join(done.not_mapped)
    assert "'accuracy': the choice 'Wrong' is not in the labeling config: left out in 1 " in report
    assert "tasks (4)" in report
    assert "labels 'spans': no question for this control: left out in 1 tasks (1)" in report
    assert "ranker 'rank': no question for this control: left out in 1 tasks (3)" in report


def _matrix(answers: dict, question: str, coders: list[str], units: list[str], code=None):
    code = code or (lambda v: v)
    return np.array(
        [
            [
                np.nan
                if answers.get((c, u), {}).get(question) is None
                else code(answers[c, u][question])
                for u in units
            ]
            for c in coders
        ],
        dtype=float,
    )


def test_agreement_on_imported_answers_equals_an_independent_computation(imported):
    project, _ = imported
    report = build_report(
        gather(
            project=project, annotator_filter=AnnotatorFilter(), options=ReportOptions(n_boot=20)
        ),
        AnnotatorFilter(),
    )
    alphas = {row["field"]: row["alpha"] for row in report["tables"]["agreement"]["rows"]}
    coders = ["ls-user-1", "ls-user-2", "ls-user-3", "model:judge-v1"]
    units = ["1", "2", "3", "4"]
    answers = _answers(project)
    helpfulness = _matrix(answers, "helpfulness", coders, units)
    # Written out, so that the import itself is checked too.
    assert np.array_equal(
        np.nan_to_num(helpfulness, nan=0),
        [[4, 2, 5, 1], [5, 2, 4, 2], [4, 3, 5, 0], [4, 0, 5, 0]],
    )
    expected = krippendorff.alpha(reliability_data=helpfulness, level_of_measurement="ordinal")
    assert alphas["helpfulness"] == pytest.approx(expected, abs=1e-9)
    codes = {"Accurate": 0, "partly": 1, "Inaccurate": 2}
    accuracy = _matrix(answers, "accuracy", coders, units, codes.get)
    expected = krippendorff.alpha(reliability_data=accuracy, level_of_measurement="nominal")
    assert alphas["accuracy"] == pytest.approx(expected, abs=1e-9)
    preference = _matrix(answers, "preference", coders, units)
    expected = krippendorff.alpha(reliability_data=preference, level_of_measurement="ordinal")
    assert alphas["preference"] == pytest.approx(expected, abs=1e-9)


def test_the_command_creates_the_project_and_prints_the_report(db, tmp_path):
    researcher = factories.UserFactory()
    out = io.StringIO()
    call_command(
        "import_label_studio",
        str(HERE / "export.json"),
        config=str(HERE / "config.xml"),
        project="from-ls",
        create_for=researcher.username,
        stdout=out,
    )
    text = out.getvalue()
    assert "Imported 4 items, 11 annotations and 2 predictions by 4 external coders" in text
    assert "Not mapped: <Ranker name='rank'>" in text
    project = Project.objects.get(slug="from-ls")
    assert project.task_type == "questionnaire"
    assert project.memberships.filter(user=researcher, role="researcher").exists()
    assert ExternalAnnotation.objects.filter(item__project=project).first().source == "export.json"


def _bad(tasks_change) -> str:
    tasks = json.loads(EXPORT)
    tasks_change(tasks)
    return json.dumps(tasks)


@pytest.mark.parametrize(
    ("change", "message", "field"),
    [
        (
            lambda t: t[2]["data"].pop("response_a"),
            "task at index 2 (id 3), field 'data.response_a': this field is shown",
            "data.response_a",
        ),
        (
            lambda t: t[1].update(data=[]),
            "task at index 1 (id 2), field 'data': a task's data is an object",
            "data",
        ),
        (
            lambda t: t[3]["annotations"][0].update(result={}),
            "task at index 3 (id 4), field 'annotations.0.result': must be a list",
            "annotations.0.result",
        ),
        (
            lambda t: t[0]["annotations"][1].update(completed_by=None),
            "annotations.1.completed_by",
            "annotations.1.completed_by",
        ),
        (
            lambda t: t[1].update(id=1),
            "task at index 1 (id 1), field 'id': the task id 1 appears twice",
            "id",
        ),
        (
            lambda t: t[0]["annotations"][0].update(lead_time="long"),
            "annotations.0.lead_time",
            "annotations.0.lead_time",
        ),
    ],
)
def test_a_bad_task_is_named_and_nothing_is_imported(db, change, message, field):
    project = factories.ProjectFactory(task_type="questionnaire", config={})
    with pytest.raises(ImportFailed) as failed:
        import_label_studio(project=project, export=_bad(change), labeling_config=CONFIG)
    assert message in failed.value.message
    assert failed.value.field == field
    project.refresh_from_db()
    assert project.config == {}
    assert not Item.objects.filter(project=project).exists()
    assert not ExternalCoder.objects.filter(project=project).exists()


def test_a_bad_annotation_time_refuses_the_whole_import_after_the_items(db):
    # The external-annotation import refuses a date before 1990: the items go too.
    project = factories.ProjectFactory(task_type="questionnaire", config={})
    export = _bad(lambda t: t[3]["annotations"][1].update(created_at="1970-01-01T00:00:00Z"))
    with pytest.raises(ImportFailed) as failed:
        import_label_studio(project=project, export=export.encode(), labeling_config=CONFIG)
    assert "task at index 3 (id 4), annotations.1, field 'annotated_at'" in failed.value.message
    assert not Item.objects.filter(project=project).exists()


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        (
            '<?xml version="1.0"?><!DOCTYPE v [<!ENTITY x "boom">]><View>&x;</View>',
            "may not declare a DOCTYPE or entities",
        ),
        ("<View><Text name='t' value='$text'/>", "not XML"),
        ("<Config/>", "starts with <View>"),
        ("<View><Choices name='c' toName='t'/></View>", "no <Text> tag"),
        ("<View><Text name='t' value='$text'/><Labels name='l' toName='t'/></View>", "no control"),
        ("<View>" + "<Header value='x'/>" * 30000 + "</View>", "larger than 256 KiB"),
    ],
)
def test_a_bad_labeling_config_is_refused(db, xml, message):
    with pytest.raises(LabelingConfigError, match=message):
        parse_labeling_config(xml)
    project = factories.ProjectFactory(task_type="questionnaire", config={})
    with pytest.raises(ImportFailed, match=message) as failed:
        import_label_studio(project=project, export=EXPORT, labeling_config=xml)
    assert failed.value.field == "labeling_config"


def test_not_json_is_refused(db):
    project = factories.ProjectFactory(task_type="questionnaire", config={})
    with pytest.raises(ImportFailed, match="not JSON") as failed:
        import_label_studio(project=project, export="[{", labeling_config=CONFIG)
    assert failed.value.field == "file"


def test_a_project_with_items_and_other_questions_is_refused(db):
    project = factories.ProjectFactory(task_type="questionnaire", config={})
    demo = json.dumps(task_types.get("questionnaire").demo_payload()) + "\n"
    import_items(project=project, stream=io.StringIO(demo), fmt="jsonl")
    with pytest.raises(
        ImportFailed,
        match="its questions are not the labeling config's: it has no question 'accuracy'",
    ):
        import_label_studio(project=project, export=EXPORT, labeling_config=CONFIG)
    assert not ExternalCoder.objects.filter(project=project).exists()


def test_the_item_import_detects_a_label_studio_export(db):
    project = factories.ProjectFactory(
        task_type="questionnaire", config=parse_labeling_config(CONFIG).questionnaire
    )
    report = import_items(project=project, stream=io.StringIO(EXPORT), fmt="detect")
    assert (report.fmt, report.detected, report.created) == ("label-studio", True, 4)
    # Chosen as JSON Lines, the refusal names the format the file looks like.
    other = factories.ProjectFactory(task_type="questionnaire", config=project.config)
    with pytest.raises(ImportFailed, match="looks like the label-studio format"):
        import_items(project=other, stream=io.StringIO(EXPORT), fmt="jsonl")


def test_answers_of_some_questions_import_through_the_generic_jsonl_format(imported):
    project, _ = imported
    rows = [
        {"item": "2", "coder": "paper", "answer": {"helpfulness": 3}},
        {"item": "3", "coder": "paper", "answer": {"accuracy": "Accurate", "comment": "ok"}},
    ]
    body = "".join(json.dumps(r) + "\n" for r in rows)
    counts = import_annotations(project=project, stream=io.StringIO(body), fmt="jsonl")
    assert counts["annotations"] == 2
    bad = json.dumps({"item": "2", "coder": "paper", "answer": {"helpfulness": 9}}) + "\n"
    with pytest.raises(ImportFailed, match="answer.helpfulness") as failed:
        import_annotations(project=project, stream=io.StringIO(bad), fmt="jsonl")
    assert "Choose a point from 1 to 5" in failed.value.message


def test_a_project_exported_as_label_studio_json_reads_back(imported, db):
    project, _ = imported
    config_xml = labeling_config(project=project)
    text = "".join(export_label_studio(project=project))
    tasks = json.loads(text)
    assert [t["id"] for t in tasks] == ["1", "2", "3", "4"]
    assert tasks[0]["data"]["response_b"] == "Ibuprofen cures colds."
    assert [p["model_version"] for p in tasks[0]["predictions"]] == ["judge-v1"]
    first = tasks[0]["annotations"][0]
    assert first["concord_coder"] == "ext:ls-user-1" and first["lead_time"] == 10.0
    assert {
        "from_name": "preference",
        "to_name": "response_a",
        "type": "pairwise",
        "value": {"selected": "left"},
    } in first["result"]
    copy = factories.ProjectFactory(task_type="questionnaire", config={})
    done = import_label_studio(project=copy, export=text, labeling_config=config_xml)
    assert done.not_mapped == [] and (done.items, done.predictions) == (4, 2)
    copy.refresh_from_db()
    questions = lambda p: [  # noqa: E731
        {k: v for k, v in q.items() if k != "labels"} for q in project_config(p.config)["questions"]
    ]
    assert questions(copy) == questions(project)
    # Each coder comes back as it was (concord_coder), with its time annotated.
    assert _answers(copy) == _answers(project)
    assert _times(copy) == _times(project) and any(_times(project).values())
    assert {i.external_id: i.payload for i in Item.objects.filter(project=copy)} == {
        i.external_id: i.payload for i in Item.objects.filter(project=project)
    }


def test_the_export_command_writes_the_export_and_the_config(imported, tmp_path):
    project, _ = imported
    call_command(
        "export_label_studio",
        project=project.slug,
        out=str(tmp_path / "ls.json"),
        config_out=str(tmp_path / "ls.xml"),
    )
    assert len(json.loads((tmp_path / "ls.json").read_text())) == 4
    assert parse_labeling_config((tmp_path / "ls.xml").read_text()).unmapped == []
    with pytest.raises(CommandError, match="No project"):
        call_command("export_label_studio", project="nope")


def test_the_annotation_import_form_reads_an_export_with_its_config_as_the_mapping(db):
    """The two steps of the project page: the items (detected), then the annotations with the
    labeling config as the mapping file."""
    project = factories.ProjectFactory(
        task_type="questionnaire", config=parse_labeling_config(CONFIG).questionnaire
    )
    import_items(project=project, stream=io.StringIO(EXPORT), fmt="detect")
    counts = import_annotations(
        project=project,
        stream=io.BytesIO(EXPORT.encode()),
        fmt="label-studio",
        options={"mapping": CONFIG},
    )
    assert (counts["annotations"], counts["coders"]) == (13, 4)
    assert _answers(project)["ls-user-2", "4"] == {"helpfulness": 2, "preference": 1}
    with pytest.raises(ImportFailed, match="labeling config") as failed:
        import_annotations(project=project, stream=io.BytesIO(EXPORT.encode()), fmt="label-studio")
    assert failed.value.field == "mapping"


def test_the_export_api_and_page_offer_label_studio_files_with_annotators_answers(db):
    researcher = factories.UserFactory()
    project = factories.ProjectFactory(task_type="questionnaire", config={})
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    import_label_studio(project=project, export=EXPORT, labeling_config=CONFIG)
    annotator = factories.UserFactory()
    membership = factories.MembershipFactory(project=project, user=annotator, role="annotator")
    assignment = annotation_services.assignment_next(project=project, annotator=annotator)
    answer = {"accuracy": "Inaccurate", "helpfulness": 1, "preference": 1, "issues": ["Unsafe"]}
    stored, _ = annotation_services.annotation_submit(
        assignment=assignment, answer=answer, time_spent_ms=4200
    )
    api = client_for(researcher)
    response = api.get(f"/api/projects/{project.slug}/export/?format=label-studio")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert f'filename="{project.slug}-label-studio.json"' in response["Content-Disposition"]
    tasks = json.loads(b"".join(response.streaming_content))
    task = next(t for t in tasks if t["id"] == assignment.item.external_id)
    human = next(a for a in task["annotations"] if a["concord_coder"] == membership.pseudonym)
    assert human["lead_time"] == stored.time_spent_ms / 1000  # the server's measure
    assert {r["from_name"]: r["value"] for r in human["result"]} == {
        "preference": {"selected": "right"},
        "accuracy": {"choices": ["Inaccurate"]},
        "issues": {"choices": ["Unsafe"]},
        "helpfulness": {"rating": 1},
    }
    response = api.get(f"/api/projects/{project.slug}/export/?format=label-studio-config")
    config_xml = b"".join(response.streaming_content).decode()
    assert response["Content-Type"] == "application/xml"
    copy = factories.ProjectFactory(task_type="questionnaire", config={})
    done = import_label_studio(project=copy, export=json.dumps(tasks), labeling_config=config_xml)
    assert done.annotations == 12 and done.not_mapped == []
    # The annotator comes back under their pseudonym, with the answer and when it was made.
    back = ExternalAnnotation.objects.get(
        item__project=copy, coder__name=membership.pseudonym, item__external_id=task["id"]
    )
    assert back.answer == answer and back.annotated_at == stored.created_at
    refused = api.get(f"/api/projects/{project.slug}/export/?format=xml")
    assert refused.status_code == 400 and refused.json()["field"] == "format"
    other = factories.ProjectFactory(task_type="stance")
    factories.MembershipFactory(project=other, user=researcher, role="researcher")
    assert api.get(f"/api/projects/{other.slug}/export/?format=label-studio").status_code == 400
    page = Client()
    page.force_login(researcher)
    detail = page.get(f"/p/{project.slug}/")
    assert f"/p/{project.slug}/export/label-studio/" in detail.content.decode()
    assert "Download Label Studio JSON" in detail.content.decode()
    download = page.get(f"/p/{project.slug}/export/label-studio-config/")
    assert download.status_code == 200
    assert b"".join(download.streaming_content).decode() == config_xml
    assert "label-studio" not in page.get(f"/p/{other.slug}/").content.decode()


def test_values_out_of_range_and_empty_annotations_are_left_out_and_reported(db):
    def change(tasks):
        first = tasks[0]["annotations"][0]["result"]
        for result in first:
            if result["from_name"] == "helpfulness":
                result["value"] = {"rating": 9}
            if result["from_name"] == "confidence":
                result["value"] = {"number": 12.5}
        tasks[1]["annotations"][0]["result"] = [
            {"from_name": "spans", "to_name": "prompt", "type": "labels", "value": {"labels": []}}
        ]
        tasks[1]["predictions"] = [{"model_version": "", "result": []}]

    project = factories.ProjectFactory(task_type="questionnaire", config={})
    done = import_label_studio(project=project, export=_bad(change), labeling_config=CONFIG)
    assert (done.annotations, done.predictions, done.empty) == (10, 2, 2)
    assert "left out 2 annotations or predictions with no result that maps" in done.summary()
    report = "\n".join(done.not_mapped)
    assert "'helpfulness': rating 9 is outside 1..5: left out in 1 tasks (1)" in report
    assert "'confidence': number 12.5 is not a whole number: left out in 1 tasks (1)" in report
    answers = _answers(project)
    assert "helpfulness" not in answers["ls-user-1", "1"]
    assert answers["ls-user-1", "1"]["accuracy"] == "Accurate"
    assert ("ls-user-1", "2") not in answers
