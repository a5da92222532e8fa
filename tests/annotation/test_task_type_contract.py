"""The contract every registered task type keeps (one parametrised test per task type).

Its judge prompt is checked per task type in tests/llm_judges/test_prompts.py (the judges app owns
the prompts; ``annotation`` never imports ``llm_judges``)."""

from types import SimpleNamespace

import pytest
from django.template.loader import get_template

from annotation import task_types
from annotation.task_types.registry import AlreadyRegistered, TaskTypeNotFound
from tests.conftest import REPO

KNOWN_DISTANCES = {"nominal", "ordinal", "interval", "ratio", "jaccard", "masi"}
ALL = task_types.all_task_types()


def test_the_registry_holds_the_built_in_task_types():
    assert "citation_recovery" in {t.slug for t in ALL}


def test_registering_a_duplicate_slug_is_refused():
    with pytest.raises(AlreadyRegistered, match="citation_recovery"):
        task_types.register(task_types.get("citation_recovery"))


def test_asking_for_an_unknown_task_type_names_it_and_the_known_ones():
    with pytest.raises(TaskTypeNotFound, match=r"'no_such_task'.*citation_recovery"):
        task_types.get("no_such_task")


@pytest.mark.parametrize("task_type", ALL, ids=lambda t: t.slug)
def test_template_and_script_exist(task_type):
    get_template(task_type.template_name)
    assert (REPO / "static" / task_type.script).is_file()


@pytest.mark.parametrize("task_type", ALL, ids=lambda t: t.slug)
def test_demo_payload_validates_and_prepares(task_type):
    config = task_type.validate_config({})
    payload = task_type.validate_payload(task_type.demo_payload())
    prepared = task_type.prepare(dict(payload), config=config)
    assert prepared, "the demo payload must yield at least one item"
    for item in prepared:
        assert item.external_id


@pytest.mark.parametrize("task_type", ALL, ids=lambda t: t.slug)
def test_measures_name_known_distances(task_type):
    assert task_type.measures
    assert set(task_type.measures.values()) <= KNOWN_DISTANCES


@pytest.mark.parametrize("task_type", ALL, ids=lambda t: t.slug)
def test_display_never_contains_gold(task_type):
    config = task_type.validate_config({})
    payload = task_type.validate_payload(task_type.demo_payload())
    prepared = task_type.prepare(dict(payload), config=config)[0]
    item = SimpleNamespace(payload=prepared.payload, prepared=prepared.prepared, gold=prepared.gold)
    shown = task_type.display(item)
    assert "gold" not in repr(shown).lower()
