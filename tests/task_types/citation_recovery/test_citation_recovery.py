"""The citation-recovery task type: preparation, masking, answers and scores."""

from types import SimpleNamespace

import pytest

from annotation import task_types
from annotation.task_types import PayloadError
from tests import factories

TASK = task_types.get("citation_recovery")


def prepare(payload, **config):
    return TASK.prepare(dict(TASK.validate_payload(payload)), config=TASK.validate_config(config))


def test_markers_of_the_masked_evidence_are_removed_and_others_kept():
    payload = factories.citation_payload(1, sentences=3)
    payload["explanation"] = ["First [1][2].", "Second [2, 3].", "Third [3]."]
    (item,) = prepare(payload)
    assert item.prepared["sentences"] == ["First [1].", "Second [3].", "Third [3]."]
    assert item.gold == {"evidence_id": 2, "sentences": [0, 1]}


def test_other_markers_can_be_removed_too():
    payload = factories.citation_payload(1, sentences=3)
    payload["explanation"] = ["First [1][2].", "Second [2, 3].", "Third [3]."]
    (item,) = prepare(payload, keep_other_markers=False)
    assert item.prepared["sentences"] == ["First.", "Second.", "Third."]


def test_an_explanation_without_citations_is_a_rating_only_item():
    payload = factories.citation_payload(1)
    payload["explanation"] = ["Nothing is cited here.", "Nor here."]
    payload["masked_evidence"] = None
    (item,) = prepare(payload)
    assert item.prepared == {
        "sentences": ["Nothing is cited here.", "Nor here."],
        "target_evidence_id": None,
        "rating_only": True,
    }
    assert item.gold is None and item.kind == "regular" and "rating-only" in item.notes[0]
    shown = TASK.display(SimpleNamespace(payload=payload, prepared=item.prepared))
    assert shown["rating_only"] and not any(e["target"] for e in shown["evidence"])
    assert prepare(payload, uncited="skip") == []
    # A control is scored against gold: without a citation to recover it is skipped.
    assert prepare({**payload, "kind": "control"}) == []


def test_a_rating_only_item_takes_a_helpfulness_rating_and_refuses_a_selection():
    payload = factories.citation_payload(1, explanation=["No citation."], masked_evidence=None)
    (prepared,) = prepare(payload)
    item = SimpleNamespace(prepared=prepared.prepared)

    def checked(answer):
        return TASK.answer_serializer(data=answer, context={"item": item})

    ok = checked({"helpfulness": 70})
    assert ok.is_valid(), ok.errors
    assert ok.validated_data == {"helpfulness": 70}
    for bad in ({"helpfulness": 70, "sentences": [0]}, {"helpfulness": 70, "none": True}):
        refused = checked(bad)
        assert not refused.is_valid()
        assert "cites no evidence" in str(refused.errors["sentences"])
    missing = checked({})
    assert not missing.is_valid() and "helpfulness" in missing.errors
    assert TASK.answer_text({"helpfulness": 70}) == "helpfulness 70"
    assert TASK.score({"helpfulness": 70}, None) == {}


def test_a_masked_evidence_that_is_not_cited_is_an_error():
    payload = factories.citation_payload(1, sentences=2)
    payload["evidence"].append({"id": 9, "text": "Never cited."})
    payload["masked_evidence"] = 9
    with pytest.raises(PayloadError, match="not cited") as caught:
        prepare(payload)
    assert caught.value.field == "masked_evidence"


def test_duplicate_evidence_ids_are_refused():
    payload = factories.citation_payload(1)
    payload["evidence"].append({"id": 1, "text": "again"})
    with pytest.raises(PayloadError, match="appears twice"):
        TASK.validate_payload(payload)


def test_display_shows_the_target_but_never_gold_or_group():
    (prepared,) = prepare(factories.citation_payload(1))
    item = SimpleNamespace(payload=prepared.payload, prepared=prepared.prepared, gold=prepared.gold)
    shown = TASK.display(item)
    assert [e["id"] for e in shown["evidence"] if e["target"]] == [2]
    assert set(shown) == {"claim", "label", "evidence", "sentences"}


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        ({1, 2}, {2}, (0.5, 1.0, 2 / 3)),
        (set(), set(), (1.0, 1.0, 1.0)),
        (set(), {1}, (0.0, 0.0, 0.0)),
        ({1}, set(), (0.0, 0.0, 0.0)),
        ({3}, {1, 2}, (0.0, 0.0, 0.0)),
    ],
)
def test_scores_follow_the_documented_conventions(predicted, gold, expected):
    scores = TASK.score({"sentences": sorted(predicted)}, {"sentences": sorted(gold)})
    assert (scores["precision"], scores["recall"]) == pytest.approx(expected[:2])
    assert scores["f1"] == pytest.approx(expected[2])


def test_score_of_a_none_answer_against_empty_gold_is_correct():
    assert TASK.score({"sentences": [], "none": True}, {"sentences": []})["correct"] is True


def test_the_answer_serializer_normalises_and_validates():
    item = SimpleNamespace(prepared={"sentences": ["a", "b", "c"]})
    ok = TASK.answer_serializer(
        data={"sentences": [2, 0, 2], "helpfulness": 40}, context={"item": item}
    )
    assert ok.is_valid(), ok.errors
    assert ok.validated_data == {"sentences": [0, 2], "none": False, "helpfulness": 40}
    both = TASK.answer_serializer(
        data={"sentences": [1], "none": True, "helpfulness": 40}, context={"item": item}
    )
    assert not both.is_valid() and "none" in both.errors
    out_of_range = TASK.answer_serializer(
        data={"sentences": [3], "helpfulness": 1}, context={"item": item}
    )
    assert not out_of_range.is_valid() and "does not exist" in str(out_of_range.errors)
    slider = TASK.answer_serializer(
        data={"sentences": [1], "helpfulness": 101}, context={"item": item}
    )
    assert not slider.is_valid() and "helpfulness" in slider.errors


def test_text_with_lone_surrogates_or_nul_is_refused_with_the_field_named():
    payload = factories.citation_payload(1)
    payload["evidence"][0]["text"] = "broken \ud800 text"
    with pytest.raises(PayloadError) as caught:
        TASK.validate_payload(payload)
    assert caught.value.field == "evidence" and "surrogate" in caught.value.message
    payload = factories.citation_payload(1)
    payload["explanation"][0] = "nul \x00 here [1]."
    with pytest.raises(PayloadError, match="NUL"):
        TASK.validate_payload(payload)
