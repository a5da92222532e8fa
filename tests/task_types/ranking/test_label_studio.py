"""Label Studio Ranker interchange: an export with List + Ranker results (with and without
Buckets), written by hand after Label Studio's documented Ranker format (labelstud.io/tags/ranker:
``value.ranker`` is ``{ranker name: [ids in order]}`` without Buckets, ``{bucket: [ids]}`` with
them, ``_`` the unsorted items), becomes a ranking project: the Rankers its criteria, the List's
items its outputs, each result a ranking with ties where a bucket holds several; a bad export is
refused naming the task and the field, importing nothing; a project exported reads back."""

import json
from xml.etree.ElementTree import fromstring

import pytest

from annotation import task_types
from annotation.models import ExternalAnnotation, Item
from studies.services.imports import ImportFailed
from task_types.ranking.label_studio import LabelingConfigError, parse_labeling_config
from task_types.ranking.label_studio_io import (
    export_label_studio,
    import_label_studio,
    labeling_config,
)
from tests import factories
from tests.label_studio_examples import example_files, imported_example

HERE, EXPORT, CONFIG = example_files(__file__)


def ranks_by_system(project) -> dict[tuple[str, str], dict]:
    """(coder, item) -> {criterion: {system: rank}} of the stored external rankings."""
    found = {}
    for a in ExternalAnnotation.objects.filter(item__project=project).select_related(
        "coder", "item"
    ):
        systems = {
            key: o["system"]
            for key, o in zip(a.item.prepared["keys"], a.item.payload["outputs"], strict=True)
        }
        found[(a.coder.name, a.item.external_id)] = {
            c: {systems[k]: r for k, r in ranks.items()} for c, ranks in a.answer["ranks"].items()
        }
    return found


@pytest.fixture
def imported(db):
    return imported_example(
        task_type="ranking", import_label_studio=import_label_studio, export=EXPORT, config=CONFIG
    )


def test_the_rankers_become_criteria_and_other_controls_are_reported():
    config = parse_labeling_config(CONFIG)
    assert config.list_key == "items"
    assert config.claim_key == "prompt"
    assert [(r.name, r.buckets) for r in config.rankers.values()] == [
        ("overall", []),
        ("coverage", ["best", "fine", "poor"]),
    ]
    assert config.project_config["criteria"][0]["definition"] == (
        "Put the answers in order, best first."
    )
    assert config.unmapped == [
        "<Choices name='safe'>: not mapped (a ranking project has Rankers only)"
    ]


def test_ranker_results_become_rankings_with_ties_within_a_bucket(imported):
    project, done = imported
    assert [c["name"] for c in project.config["criteria"]] == ["overall", "coverage"]
    item = Item.objects.get(project=project, external_id="101")
    assert item.payload["claim"] == "How do I reverse a list in Python?"
    assert [(o["system"], o["text"][:10]) for o in item.payload["outputs"]] == [
        ("llm_a", "Use my_lis"),
        ("llm_b", "Use revers"),
        ("llm_c", "Sort it de"),
    ]
    assert ranks_by_system(project) == {
        ("ls-user-7", "101"): {
            "overall": {"llm_b": 1, "llm_a": 2, "llm_c": 3},  # no buckets: the order
            "coverage": {"llm_a": 1, "llm_b": 1, "llm_c": 3},  # a tie for first, then 3
        },
        ("model:reranker-v2", "101"): {"coverage": {"llm_b": 1, "llm_a": 2, "llm_c": 2}},
        ("ls-user-8", "102"): {"overall": {"llm_a": 1, "llm_b": 2}},
    }
    stored = ExternalAnnotation.objects.get(coder__name="ls-user-7", item__external_id="101")
    assert stored.time_spent_ms == 31_500
    assert (done.items, done.annotations, done.predictions, done.coders) == (2, 2, 1, 3)
    assert (done.cancelled, done.empty) == (1, 1)  # ls-user-7 on 102 left llm_b unsorted
    assert done.not_mapped == [
        "<Choices name='safe'>: not mapped (a ranking project has Rankers only)",
        "choices 'safe': no criterion for this control: left out in 1 tasks (101)",
        "'coverage': not every item is in a bucket: left out in 1 tasks (102)",
    ]
    assert "Imported 2 items, 2 rankings and 1 prediction by 3 external coders" in done.summary()


def _bad(change) -> str:
    tasks = json.loads(EXPORT)
    change(tasks)
    return json.dumps(tasks)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (
            lambda t: t[0]["annotations"][0]["result"][1]["value"]["ranker"]["best"].append(
                "llm_z"
            ),
            "annotations.0.result.1.value.ranker.best",
            "'llm_z' is not an item of this task's List",
        ),
        (
            lambda t: t[1]["annotations"][1]["result"][0]["value"]["ranker"].update(
                overall=["llm_a", "llm_a"]
            ),
            "annotations.1.result.0.value.ranker.overall",
            "the item 'llm_a' is ranked twice",
        ),
        (
            lambda t: t[0]["predictions"][0]["result"][0]["value"]["ranker"].update(top=[]),
            "predictions.0.result.0.value.ranker.top",
            "has no such bucket",
        ),
        (lambda t: t[1]["data"].update(items="llm_a"), "data.items", "a list of 2 to 9"),
        (lambda t: t[1]["data"]["items"][1].pop("id"), "data.items.1.id", "needs its id"),
        (lambda t: t[1]["annotations"][1].pop("completed_by"), "annotations.1.completed_by", ""),
        # a coder's name is never cut (two names cut alike would merge two coders)
        (
            lambda t: t[0]["predictions"][0].update(model_version="m" * 95),
            "predictions.0.model_version",
            "names a coder in more than 100 characters (101)",
        ),
        (
            lambda t: t[0]["annotations"][0].update(completed_by="u" * 200),
            "annotations.0.completed_by",
            "more than 100 characters",
        ),
        (
            lambda t: t[0]["predictions"][0].update(model_version={"x": 1}),
            "predictions.0.model_version",
            "the model's version is a text",
        ),
    ],
)
def test_a_bad_export_is_refused_naming_the_task_and_field_and_nothing_is_imported(
    db, change, field, message
):
    project = factories.ProjectFactory(task_type="ranking", config={})
    with pytest.raises(ImportFailed) as refused:
        import_label_studio(project=project, export=_bad(change), labeling_config=CONFIG)
    assert refused.value.field == field
    assert "task at index" in str(refused.value) and message in str(refused.value)
    assert f"field {field!r}" in str(refused.value)
    assert not Item.objects.filter(project=project).exists()
    assert not ExternalAnnotation.objects.filter(item__project=project).exists()
    project.refresh_from_db()
    assert project.config == {}


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        ('<View><Text name="t" value="$t"/></View>', "no <Ranker>"),
        ('<View><List name="l" value="$i"/><Ranker name="r" toName="x"/></View>', "no <Ranker>"),
        ("<View><List", "not XML"),
        ('<!DOCTYPE v [<!ENTITY e "x">]><View/>', "DOCTYPE"),
        (
            '<View><List name="l" value="$i"/><Ranker name="r" toName="l">'
            '<Bucket name="a"/><Bucket name="a"/></Ranker></View>',
            "distinct names",
        ),
    ],
)
def test_a_bad_labeling_config_is_refused(xml, message):
    with pytest.raises(LabelingConfigError) as refused:
        parse_labeling_config(xml)
    assert message in str(refused.value)
    assert refused.value.field == "labeling_config"


def test_a_project_with_items_and_other_criteria_is_refused(db):
    project = factories.ProjectFactory(task_type="ranking", config={})
    import_label_studio(project=project, export=EXPORT, labeling_config=CONFIG)
    other = CONFIG.replace('name="coverage"', 'name="fluency"')
    more = json.loads(EXPORT)
    for task in more:
        task["id"] += 1000
    with pytest.raises(ImportFailed, match="no criterion 'fluency'"):
        import_label_studio(project=project, export=json.dumps(more), labeling_config=other)
    assert Item.objects.filter(project=project).count() == 2


def test_the_item_and_annotation_formats_are_registered_on_the_task_type():
    ranking = task_types.get("ranking")
    assert ranking.label_studio
    assert "label-studio" in ranking.readers and "label-studio" in ranking.annotation_readers
    assert {"label-studio", "label-studio-config"} <= set(ranking.export_formats)


def test_a_project_exported_as_label_studio_reads_back(imported, db):
    project, _ = imported
    exported = "".join(export_label_studio(project=project))
    config = labeling_config(project=project)
    tasks = json.loads(exported)
    first = tasks[0]
    assert [i["id"] for i in first["data"]["items"]] == ["llm_a", "llm_b", "llm_c"]
    ann = next(a for a in first["annotations"] if a["concord_coder"] == "ext:ls-user-7")
    coverage = next(r for r in ann["result"] if r["from_name"] == "coverage")
    assert coverage["type"] == "ranker"
    assert coverage["value"]["ranker"] == {
        "coverage_rank_1": ["llm_a", "llm_b"],
        "coverage_rank_3": ["llm_c"],
    }
    assert first["predictions"][0]["model_version"] == "reranker-v2"
    back = factories.ProjectFactory(task_type="ranking", config={})
    import_label_studio(project=back, export=exported, labeling_config=config)
    back.refresh_from_db()
    assert [c["name"] for c in back.config["criteria"]] == ["overall", "coverage"]
    # The coders come back as they were (concord_coder), not renumbered by completed_by.
    assert ranks_by_system(back) == ranks_by_system(project)
    assert config.count("<Bucket") == 2 * 3  # k = 3 at most: rank_1..rank_3
    # Label Studio 1.23.2 refuses a config that gives a name twice ("Label config contains
    # non-unique names"), Buckets of different Rankers included.
    names = [e.get("name") for e in fromstring(config).iter() if e.get("name")]
    assert len(names) == len(set(names)), names


def test_an_output_the_project_does_not_allow_is_named_by_its_task(db):
    """The project's declared systems are checked by the item import, which names the task."""
    project = factories.ProjectFactory(
        task_type="ranking",
        config={
            "systems": ["llm_a", "llm_b"],
            "criteria": [
                {"name": "overall", "definition": "d"},
                {"name": "coverage", "definition": "d"},
            ],
        },
    )
    with pytest.raises(ImportFailed) as refused:
        import_label_studio(project=project, export=EXPORT, labeling_config=CONFIG)
    assert "task at index 0 (id 101)" in str(refused.value)
    assert "'llm_c'" in str(refused.value)
    assert not ExternalAnnotation.objects.filter(item__project=project).exists()


def test_the_config_is_validated_once_per_import_not_once_per_answer(db, monkeypatch):
    # Each answer is checked against the project's criteria; validating the config through its
    # serializer for every answer made a 10k-task export take minutes (probe finding).
    from task_types.ranking import serializers

    calls = []
    real = serializers._validated_criteria
    monkeypatch.setattr(
        serializers, "_validated_criteria", lambda config: calls.append(1) or real(config)
    )
    serializers._criteria_of_json.cache_clear()
    project, done = imported_example(
        task_type="ranking", import_label_studio=import_label_studio, export=EXPORT, config=CONFIG
    )
    assert done.annotations + done.predictions >= 3
    assert 1 <= len(calls) <= 2  # the empty config, then the one the labeling config set
    assert serializers.project_criteria(project.config) == serializers._validated_criteria(
        project.config
    )
