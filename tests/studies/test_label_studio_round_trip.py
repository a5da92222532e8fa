"""Label Studio exports read back as they were written (a probe's findings): the coder Concord
named in ``concord_coder`` is kept, not renumbered by ``completed_by``; a ``created_at`` given as
a number (Unix time) is kept, not dropped; and an object that gives a key twice is refused,
naming the task and the key, where JSON would have kept the last one silently."""

import io
import json
from datetime import UTC, datetime

import pytest

from annotation.models import ExternalAnnotation, Item
from core.json_safety import UnsafeJSON
from core.json_safety import loads as safe_json_loads
from studies.services.external_annotations import import_annotations
from studies.services.imports import ImportFailed, import_items
from task_types.questionnaire.label_studio import parse_labeling_config
from task_types.questionnaire.label_studio_io import import_label_studio
from tests import factories
from tests.conftest import REPO
from tests.label_studio_examples import example_files

# The questionnaire's hand-written example export and labeling config.
_, EXPORT, CONFIG = example_files(str(REPO / "tests/task_types/questionnaire/test_label_studio.py"))


def _export(change) -> str:
    tasks = json.loads(EXPORT)
    change(tasks)
    return json.dumps(tasks)


def _coders(project) -> set[str]:
    return set(
        ExternalAnnotation.objects.filter(item__project=project).values_list(
            "coder__name", flat=True
        )
    )


@pytest.fixture
def project(db):
    return factories.ProjectFactory(task_type="questionnaire", config={})


def test_concord_coder_names_the_coder_and_completed_by_only_numbers(project):
    def name(tasks):
        for task in tasks:
            for entry in task["annotations"]:
                entry["concord_coder"] = f"ext:rater-{entry['completed_by']}"
        tasks[0]["annotations"][0]["concord_coder"] = "ann-4f2a"  # an annotator's pseudonym

    import_label_studio(project=project, export=_export(name), labeling_config=CONFIG)
    assert "ann-4f2a" in _coders(project)
    assert not any(c.startswith(("ls-user-", "ext:")) for c in _coders(project))


@pytest.mark.parametrize("value", [7, "", "ext:", None, ["a"]])
def test_a_concord_coder_that_is_not_a_name_is_refused_naming_it(project, value):
    export = _export(lambda t: t[1]["annotations"][0].update(concord_coder=value))
    with pytest.raises(ImportFailed) as refused:
        import_label_studio(project=project, export=export, labeling_config=CONFIG)
    assert refused.value.field == "annotations.0.concord_coder"
    assert "task at index 1" in refused.value.message
    assert not Item.objects.filter(project=project).exists()


@pytest.mark.parametrize("as_text", [False, True])
def test_a_created_at_in_unix_seconds_is_kept(project, as_text):
    when = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    seconds = str(int(when.timestamp())) if as_text else when.timestamp()
    export = _export(lambda t: t[0]["annotations"][0].update(created_at=seconds))
    import_label_studio(project=project, export=export, labeling_config=CONFIG)
    first = json.loads(EXPORT)[0]
    coder = f"ls-user-{first['annotations'][0]['completed_by']}"
    kept = ExternalAnnotation.objects.get(
        item__project=project, item__external_id=str(first["id"]), coder__name=coder
    )
    assert kept.annotated_at == when


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (1714564800000, "annotations.0.created_at"),  # milliseconds: never read as seconds
        (True, "annotations.0.created_at"),
        ({"at": 1}, "annotations.0.created_at"),
        ("yesterday", "annotations.0.created_at"),  # was reported under annotated_at
    ],
)
def test_a_created_at_that_is_not_a_time_is_refused(project, value, field):
    export = _export(lambda t: t[0]["annotations"][0].update(created_at=value))
    with pytest.raises(ImportFailed) as refused:
        import_label_studio(project=project, export=export, labeling_config=CONFIG)
    assert refused.value.field == field
    if value == 1714564800000:
        assert "looks like milliseconds" in refused.value.message
    assert not Item.objects.filter(project=project).exists()


def _twice(text: str, after: str, key_value: str) -> str:
    """``text`` with ``key_value`` written again right after the first ``after``."""
    at = text.index(after) + len(after)
    return text[:at] + key_value + "," + text[at:]


def test_a_key_given_twice_refuses_the_one_step_import_naming_task_and_key(project):
    export = _twice(EXPORT, '"completed_by": 1,', ' "completed_by": 99')
    with pytest.raises(ImportFailed) as refused:
        import_label_studio(project=project, export=export, labeling_config=CONFIG)
    message = refused.value.message
    assert "task at index 0" in message and "'completed_by' is given twice" in message
    assert refused.value.field == "annotations.0.completed_by"
    assert not Item.objects.filter(project=project).exists()


def test_a_key_given_twice_refuses_the_item_and_the_annotation_formats(project):
    export = _twice(EXPORT, '"id": 1,', ' "id": 5')
    config = parse_labeling_config(CONFIG).questionnaire
    other = factories.ProjectFactory(task_type="questionnaire", config=config)
    with pytest.raises(ImportFailed, match="'id' is given twice"):
        import_items(project=other, stream=io.StringIO(export), fmt="label-studio")
    import_items(project=other, stream=io.StringIO(EXPORT), fmt="label-studio")
    with pytest.raises(ImportFailed, match="'id' is given twice"):
        import_annotations(
            project=other,
            stream=io.BytesIO(export.encode()),
            fmt="label-studio",
            options={"mapping": CONFIG},
        )


def test_unique_keys_names_the_path_to_the_first_key_given_twice():
    text = '{"a": [1, {"b": 1, "c": {"d": 1, "d": 2}}], "e": {"f": 1, "f": 1}}'
    with pytest.raises(UnsafeJSON) as refused:
        safe_json_loads(text, unique_keys=True)
    assert refused.value.path == ["a", "1", "c", "d"]
    assert safe_json_loads(text)["e"] == {"f": 1}  # without the option: JSON's own rule
    assert safe_json_loads('{"a": {"b": 1}, "b": 2}', unique_keys=True) == {"a": {"b": 1}, "b": 2}
