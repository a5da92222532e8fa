"""The hand-written payload check (``fast_payload``) gives exactly the serializer's validated data
or declines; declined records are validated by DRF, so errors read as they always have."""

from __future__ import annotations

import io
import json
import math
import random

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from annotation import task_types
from studies.services.imports import ImportFailed, import_items
from task_types.citation_recovery.fast_payload import FIELDS, fast_validated_payload
from task_types.citation_recovery.serializers import CitationRecoveryPayloadSerializer
from tests import factories

ANY_CHAR = st.characters(codec=None, blacklist_categories=())
ODD = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        1,
        -1,
        3.0,
        2.5,
        "3",
        " 3 ",
        "3.0",
        "true",
        "1",
        "",
        " ",
        "\u3000",
        [],
        {},
        [1],
        {"a": 1},
        2**70,
        float("nan"),
        "\x00",
        "\ud800",
    ]
)


def padded(text: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda left, core, right: left + core + right,
        st.sampled_from(["", " ", "\t", "\n", "\u00a0", "\u3000"]),
        text,
        st.sampled_from(["", " ", "\r\n", "\u2028"]),
    )


def texts(max_length: int | None) -> st.SearchStrategy:
    ordinary = st.text(st.characters(codec="utf-8"), min_size=1, max_size=20)
    near_limit = (
        st.integers(min_value=max_length - 2, max_value=max_length + 2).map(lambda n: "x" * n)
        if max_length
        else st.just("y" * 5000)
    )
    return st.one_of(
        ordinary,
        padded(ordinary | near_limit),
        near_limit,
        st.text(ANY_CHAR, max_size=12),
        st.sampled_from(["a\x00b", "a\ud800", "ü", "🙂", "half-true"]),
        ODD,
    )


def near(limit: int) -> st.SearchStrategy[str]:
    return st.integers(min_value=limit - 2, max_value=limit + 2).map(lambda n: "x" * n)


WORDS = st.text(st.characters(codec="utf-8"), min_size=1, max_size=20) | st.text(
    ANY_CHAR, min_size=1, max_size=6
)
GOOD_INT_LISTS = st.lists(st.integers(min_value=0, max_value=9), max_size=4)
# Mostly what a record may hold, so that records are often valid and near the edges.
VALID = {
    "id": st.one_of(padded(WORDS), near(200), padded(near(200))),
    "claim": st.one_of(padded(WORDS), st.just("y" * 5000)),
    "label": st.one_of(padded(WORDS), near(50)),
    "evidence": st.lists(
        st.fixed_dictionaries(
            {"id": st.integers(0, 50) | st.sampled_from([" 3", "4"]), "text": padded(WORDS)}
        ),
        min_size=1,
        max_size=4,
    ),
    "explanation": padded(WORDS) | st.lists(padded(WORDS), min_size=1, max_size=3),
    "masked_evidence": st.none() | st.integers(min_value=-3, max_value=20) | st.integers(),
    "generator": st.one_of(padded(WORDS), near(80), st.sampled_from(["", "  "])),
    "evidence_source": st.one_of(padded(WORDS), near(80), st.sampled_from(["", "\t"])),
    "kind": st.sampled_from(["regular", "control", "qualification"]),
    "gold_sentences": GOOD_INT_LISTS,
    "expected_gold_sentences": GOOD_INT_LISTS,
    "negative_control": st.booleans(),
    "provenance": st.dictionaries(WORDS, WORDS, max_size=2),
}
INTS = st.one_of(st.integers(min_value=-3, max_value=20), st.integers(), ODD)
INT_LISTS = st.one_of(st.lists(INTS, max_size=4), ODD)
PASSAGE_IDS = st.one_of(st.integers(0, 5), st.sampled_from([" 3", "4", "٣", "-1"]), ODD)
PASSAGES = st.one_of(st.fixed_dictionaries({"id": PASSAGE_IDS, "text": texts(None)}), ODD)
# Anything: valid, invalid and odd values of every field.
ANY = {
    "id": texts(200),
    "claim": texts(None),
    "label": texts(50),
    "evidence": st.one_of(st.lists(PASSAGES, max_size=4), ODD),
    "explanation": st.one_of(texts(None), st.lists(texts(None), max_size=3), ODD),
    "masked_evidence": INTS,
    "generator": texts(80),
    "evidence_source": texts(80),
    "kind": st.one_of(st.sampled_from(["Control", " control", "regular "]), ODD),
    "gold_sentences": INT_LISTS,
    "expected_gold_sentences": INT_LISTS,
    "negative_control": ODD,
    "provenance": ODD,
}


@st.composite
def records(draw) -> dict:
    base = factories.citation_payload(draw(st.integers(0, 5)), sentences=draw(st.integers(1, 4)))
    names = draw(st.lists(st.sampled_from(sorted(VALID)), max_size=4, unique=True))
    for name in names:
        choice = draw(st.integers(0, 9))
        if choice == 0:
            base.pop(name, None)
        else:
            base[name] = draw(VALID[name] if choice > 4 else ANY[name])
    return dict(draw(st.permutations(list(base.items()))))


def shape(value):
    """A value with its types spelled out (1, 1.0 and True differ) and dict keys in order."""
    if isinstance(value, dict):
        return (type(value).__name__, [(key, shape(child)) for key, child in value.items()])
    if isinstance(value, list):
        return ("list", [shape(child) for child in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, repr(value))


def drf(data):
    return CitationRecoveryPayloadSerializer().run_validation(data)


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(records(), records(), ODD, st.dictionaries(st.sampled_from(FIELDS), ODD)))
def test_fast_result_is_none_or_exactly_drfs(data):
    fast = fast_validated_payload(data)
    event("fast" if fast is not None else "declined")
    if fast is None:
        return
    assert shape(fast) == shape(drf(data))


def bench_record(n: int) -> dict:
    from bench.import_speed import record

    return record(n, random.Random(n))


ORDINARY = [
    factories.citation_payload(1),
    factories.citation_payload(2, masked_evidence=None, evidence_source=""),
    factories.citation_payload(
        3, kind="control", gold_sentences=[0, 2], expected_gold_sentences=[], negative_control=True
    ),
    factories.citation_payload(4, explanation="One [1]. Two [2].", provenance={"a": [1]}),
    {**factories.citation_payload(5), "claim": "Le coût a doublé 🙂 — «vrai»."},
    bench_record(7),
    task_types.get("citation_recovery").demo_payload(),
]


@pytest.mark.parametrize("record", ORDINARY)
def test_ordinary_records_take_the_fast_path(record):
    fast = fast_validated_payload(record)
    assert fast is not None
    assert shape(fast) == shape(drf(record))
    assert list(fast) == [name for name in FIELDS if name in fast]


def test_the_fast_path_follows_the_serializers_fields():
    assert tuple(CitationRecoveryPayloadSerializer().fields) == FIELDS


REMOVE = object()
BAD_RECORDS = [
    {"id": REMOVE},
    {"evidence": REMOVE},
    {"id": " ", "claim": "c"},
    {"id": "x" * 201},
    {"id": 7},
    {"label": "x" * 51},
    {"claim": "a\x00b"},
    {"claim": None},
    {"evidence": [{"id": 1, "text": "a"}, {"id": 1, "text": "b"}]},
    {"evidence": [{"id": "one", "text": "a"}]},
    {"explanation": ["ok [1].", " "]},
    {"masked_evidence": "two"},
    {"masked_evidence": True},
    {"generator": "g" * 81},
    {"kind": "Control"},
    {"gold_sentences": [0, -1]},
    {"expected_gold_sentences": "1"},
    {"negative_control": "maybe"},
    {"negative_control": True},
    {"negative_control": True, "kind": "regular"},
    {"provenance": {"note": "a\x00"}},
]


def import_error(monkeypatch, record: dict, *, fast: bool) -> str:
    task_type = type(task_types.get("citation_recovery"))
    if not fast:
        monkeypatch.setattr(task_type, "fast_payload", lambda self, data: None)
    content = "".join(json.dumps(r) + "\n" for r in [factories.citation_payload(0), record])
    with pytest.raises(ImportFailed) as refused:
        import_items(project=factories.ProjectFactory(), stream=io.StringIO(content), fmt="jsonl")
    monkeypatch.undo()
    return str(refused.value)


@pytest.mark.django_db
@pytest.mark.parametrize("change", BAD_RECORDS)
def test_invalid_records_are_refused_with_todays_messages(monkeypatch, change):
    record = {
        key: value
        for key, value in {**factories.citation_payload(1), **change}.items()
        if value is not REMOVE
    }
    today = import_error(monkeypatch, record, fast=False)
    assert import_error(monkeypatch, record, fast=True) == today
    assert "line 2" in today
