"""The contract every registered task type keeps (one parametrised test per task type), and the
registry's own rules. Missing pieces (report, judge prompt, demo) are reported by the start-up
check in studies/checks.py, tested here too."""

from types import SimpleNamespace

import pytest
from django.contrib.staticfiles import finders
from django.core import checks
from django.template.loader import get_template

from annotation import task_types
from annotation.task_types import AlreadyRegistered, TaskType, TaskTypeNotFound
from core.registry import Registry

KNOWN_DISTANCES = {"nominal", "ordinal", "interval", "ratio", "jaccard", "masi"}
ALL = task_types.all_task_types()


def test_the_registry_holds_the_task_type_packages():
    assert {t.slug for t in ALL} >= {
        "citation_recovery",
        "claim_review",
        "ranking",
        "stance",
        "argument_structure",
    }
    assert all(type(t).__module__ == f"task_types.{t.slug}.task" for t in ALL)


def test_registering_a_duplicate_slug_is_refused():
    twin = type("Twin", (TaskType,), {"slug": "citation_recovery", "name": "Twin"})
    with pytest.raises(AlreadyRegistered, match="citation_recovery"):
        task_types.register(twin)


def test_asking_for_an_unknown_task_type_names_it_and_the_known_ones():
    with pytest.raises(TaskTypeNotFound, match=r"'no_such_task'.*citation_recovery"):
        task_types.get("no_such_task")


def test_a_registry_refuses_duplicates_and_names_what_is_missing():
    registry: Registry[int] = Registry("thing")
    registry.register("a", 1)
    with pytest.raises(AlreadyRegistered, match="'a'"):
        registry.register("a", 2)
    with pytest.raises(TaskTypeNotFound, match=r"'b' \(registered: a\)"):
        registry.get("b")
    assert list(registry) == [1] and "a" in registry


def test_the_startup_check_finds_every_piece_of_every_task_type():
    messages = [m for m in checks.run_checks() if m.id.startswith("concord.")]
    assert messages == []


@pytest.mark.parametrize("task_type", ALL, ids=lambda t: t.slug)
def test_template_and_script_exist(task_type):
    get_template(task_type.template_name)
    assert finders.find(task_type.script)


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
