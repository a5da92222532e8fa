"""The argument-structure check (one rule at a time) and the compact text form."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from task_types.argument_structure.graph import (
    CLAIM,
    StructureSyntaxError,
    check_structure,
    parse_compact,
    to_compact,
)

EVIDENCE = ["E1", "E2", "E3", "E4"]
# (E1, E2) -> E3; (E3, E4) -> claim: well formed, with a many-to-one step.
GOOD = [
    {"premises": ["E1", "E2"], "conclusion": "E3"},
    {"premises": ["E3", "E4"], "conclusion": CLAIM},
]


def codes(problems):
    return [p.code for p in problems]


def test_a_well_formed_structure_has_no_problem():
    assert check_structure(EVIDENCE, GOOD) == []


def test_one_to_many_links_are_well_formed():
    steps = [
        {"premises": ["E1"], "conclusion": "E2"},
        {"premises": ["E1"], "conclusion": "E3"},
        {"premises": ["E2", "E3", "E4"], "conclusion": CLAIM},
    ]
    assert check_structure(EVIDENCE, steps) == []


def test_an_unknown_premise_id_is_named_with_its_step():
    steps = [*GOOD, {"premises": ["E9"], "conclusion": "E4"}]
    (problem,) = [p for p in check_structure(EVIDENCE, steps) if p.code == "unknown_id"]
    assert problem.message == "Step 3 uses E9, which is not an evidence id."
    assert problem.step == 2 and problem.nodes == ("E9",)


def test_an_unknown_conclusion_id_is_named_with_its_step():
    steps = [
        GOOD[0],
        {"premises": ["E3", "E4"], "conclusion": "E7"},
        {"premises": ["E7"], "conclusion": CLAIM},
    ]
    problems = check_structure(EVIDENCE, steps)
    assert "Step 2 concludes E7, which is not an evidence id." in [p.message for p in problems]
    assert "Step 3 uses E7, which is not an evidence id." in [p.message for p in problems]
    assert set(codes(problems)) == {"unknown_id"}


def test_a_step_without_premises_is_reported():
    steps = [*GOOD, {"premises": [], "conclusion": "E4"}]
    assert codes(check_structure(EVIDENCE, steps)) == ["no_premises"]
    assert check_structure(EVIDENCE, steps)[0].message.startswith("Step 3 has no premises")


def test_a_step_without_conclusion_is_reported():
    steps = [*GOOD, {"premises": ["E1"], "conclusion": ""}]
    assert codes(check_structure(EVIDENCE, steps)) == ["no_conclusion"]


def test_a_cycle_is_reported_with_its_path():
    steps = [*GOOD, {"premises": ["E3"], "conclusion": "E1"}]
    problems = check_structure(EVIDENCE, steps)
    assert codes(problems) == ["cycle"]
    assert problems[0].message == (
        "Cycle: E1 → E3 → E1. A statement cannot support itself, even through other steps."
    )
    assert problems[0].nodes == ("E1", "E3")


def test_a_statement_supporting_itself_is_a_cycle():
    steps = [*GOOD, {"premises": ["E4"], "conclusion": "E4"}]
    assert [p.message for p in check_structure(EVIDENCE, steps)] == [
        "Cycle: E4 → E4. A statement cannot support itself, even through other steps."
    ]


def test_a_longer_cycle_is_reported_once():
    steps = [
        {"premises": ["E1"], "conclusion": "E2"},
        {"premises": ["E2"], "conclusion": "E3"},
        {"premises": ["E3"], "conclusion": "E1"},
        {"premises": ["E3", "E4"], "conclusion": CLAIM},
    ]
    problems = check_structure(EVIDENCE, steps)
    assert codes(problems) == ["cycle"]
    assert "E1 → E2 → E3 → E1" in problems[0].message


def test_a_node_that_does_not_reach_the_claim_is_reported():
    # E4 is concluded from E3 but never used further: a dead end next to the chain.
    steps = [
        GOOD[0],
        {"premises": ["E3"], "conclusion": "E4"},
        {"premises": ["E3"], "conclusion": CLAIM},
    ]
    problems = check_structure(EVIDENCE, steps)
    assert codes(problems) == ["not_reaching_claim"]
    assert problems[0].message == (
        "E4 does not lead to the claim: use it as a premise of a step towards the claim."
    )


def test_a_disconnected_part_is_reported_with_its_members():
    evidence = [*EVIDENCE, "E5", "E6"]
    steps = [*GOOD, {"premises": ["E5"], "conclusion": "E6"}]
    problems = check_structure(evidence, steps)
    assert codes(problems) == ["disconnected"]
    assert problems[0].message == "E5, E6 form a part that is not connected to the claim."


def test_evidence_used_in_no_step_is_reported():
    problems = check_structure([*EVIDENCE, "E5"], GOOD)
    assert codes(problems) == ["unused"]
    assert problems[0].message.startswith("E5 is not used in any step")


def test_unused_evidence_may_be_allowed_for_imported_structures():
    assert check_structure([*EVIDENCE, "E5"], GOOD, require_all_evidence=False) == []


def test_the_claim_used_as_a_premise_is_reported():
    steps = [*GOOD, {"premises": [CLAIM], "conclusion": "E4"}]
    problems = check_structure(EVIDENCE, steps)
    assert codes(problems) == ["claim_as_premise"]
    assert problems[0].message == (
        "Step 3 uses the claim as a premise; the claim can only be a conclusion."
    )


def test_a_structure_that_never_reaches_the_claim_says_so():
    steps = [
        {"premises": ["E1", "E2"], "conclusion": "E3"},
        {"premises": ["E3"], "conclusion": "E4"},
    ]
    problems = check_structure(EVIDENCE, steps)
    assert codes(problems)[0] == "no_claim_step"


def test_an_empty_structure_gives_one_clear_problem():
    assert codes(check_structure(EVIDENCE, [])) == ["empty"]


def test_a_repeated_step_is_reported():
    steps = [*GOOD, {"premises": ["E2", "E1"], "conclusion": "E3"}]
    problems = check_structure(EVIDENCE, steps)
    assert [p.message for p in problems] == ["Step 3 repeats step 1."]


def test_claim_and_ids_are_normalised_before_checking():
    steps = [
        {"premises": [" E1 ", "E2", "E1"], "conclusion": "E3"},
        {"premises": ["E3", "E4"], "conclusion": "Claim"},
    ]
    assert check_structure(EVIDENCE, steps) == []


# --- compact text form ---------------------------------------------------------------------------

EXAMPLE = "(E1, E2) -> E3 -> E6; (E5, E6) -> claim"


def test_the_compact_example_reads_as_three_steps():
    assert parse_compact(EXAMPLE) == [
        {"premises": ["E1", "E2"], "conclusion": "E3"},
        {"premises": ["E3"], "conclusion": "E6"},
        {"premises": ["E5", "E6"], "conclusion": CLAIM},
    ]


def test_the_compact_example_round_trips_exactly():
    assert to_compact(parse_compact(EXAMPLE)) == EXAMPLE


def test_spacing_and_case_of_claim_do_not_matter():
    assert parse_compact("(E1,E2)->E3->E6 ;(E5 , E6)->CLAIM") == parse_compact(EXAMPLE)


def test_a_group_on_the_right_gives_one_step_per_member():
    assert parse_compact("E1 -> (E2, E3) -> E4") == [
        {"premises": ["E1"], "conclusion": "E2"},
        {"premises": ["E1"], "conclusion": "E3"},
        {"premises": ["E2", "E3"], "conclusion": "E4"},
    ]


def test_an_empty_text_is_an_empty_structure():
    assert parse_compact("  ") == [] and to_compact([]) == ""


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("E1 E2 -> claim", "expected '->' or ';' but found 'E2'", 4),
        ("(E1, E2 -> claim", "expected ',' or ')' but found '->'", 9),
        ("E1 -> ", "expected an evidence id, 'claim' or '('", 6),
        ("E1; E2 -> claim", "a part without '->'", 1),
        ("E1 -> E2 & claim", "unexpected character '&'", 10),
        ("() -> claim", "expected an evidence id inside '(' but found ')'", 2),
    ],
)
def test_bad_compact_text_names_the_problem_and_column(text, message, column):
    with pytest.raises(StructureSyntaxError) as caught:
        parse_compact(text)
    assert message in caught.value.message
    assert caught.value.column == column


ids = st.sampled_from(["E1", "E2", "E3", "E4", "E5", "x_1", "e.2", "A-3", CLAIM])
steps_strategy = st.lists(
    st.fixed_dictionaries(
        {"premises": st.lists(ids, min_size=1, max_size=3, unique=True), "conclusion": ids}
    ),
    max_size=6,
)


@given(steps_strategy)
def test_any_steps_round_trip_through_the_compact_text(steps):
    text = to_compact(steps)
    assert parse_compact(text) == steps
    assert to_compact(parse_compact(text)) == text
