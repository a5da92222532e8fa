"""Importing argument structures: CheckWhy's own release files, and generated structures that
state new nodes by their text."""

import io
import json

import pytest

from annotation.models import Item
from annotation.task_types import PayloadError
from studies.services.imports import ImportFailed, import_items
from tests import factories
from tests.task_types.argument_structure.test_task import GOOD_STEPS, TASK, payload

# Generated in the shape of CheckWhy's train.json (the release itself is not bundled): a JSON
# array, one record per claim, evidence with evidence_id / useful / leaf.
CHECKWHY_RECORDS = [
    {
        "checkwhy-id": "cw-101",
        "claim": "The bridge closed because its cables corroded.",
        "cause": "corroded cables",
        "effect": "the bridge closed",
        "label": "SUPPORTS",
        "evidences": [
            {
                "evidence_id": "E1",
                "evidence": "Inspectors found rust.",
                "useful": True,
                "leaf": True,
            },
            {"evidence_id": "E2", "evidence": "Rust weakens steel.", "useful": True, "leaf": True},
            {"evidence_id": "E3", "evidence": "The cables failed.", "useful": True, "leaf": False},
            {"evidence_id": "E4", "evidence": "The mayor likes bridges.", "useful": False},
        ],
        "argument_structure": "E1 & E2 → E3; E3 → claim",
    },
    {
        "checkwhy-id": "cw-102",
        "claim": "Prices rose because the harvest failed.",
        "cause": "failed harvest",
        "effect": "prices rose",
        "label": "NEI",
        "evidences": [
            {"evidence_id": "E1", "evidence": "The harvest was poor.", "useful": True, "leaf": True}
        ],
        "argument_structure": "E1 -> claim",
    },
]


def checkwhy_file(records=CHECKWHY_RECORDS) -> io.BytesIO:
    return io.BytesIO(json.dumps(records, indent=2).encode())


@pytest.fixture
def project(db):
    return factories.ProjectFactory(
        task_type="argument_structure", config={"mode": "edit", "similarity_scorer": "none"}
    )


def test_a_checkwhy_file_becomes_items_with_their_reference_structures(project):
    report = import_items(project=project, stream=checkwhy_file(), fmt="checkwhy")
    assert report.created == 2
    first = Item.objects.get(project=project, external_id="cw-101")
    assert first.payload["label"] == "supports"
    assert first.gold["structure"] == [
        {"premises": ["E1", "E2"], "conclusion": "E3"},
        {"premises": ["E3"], "conclusion": "claim"},
    ]
    # The distractor (useful: false, not in the structure) is left out.
    assert [e["id"] for e in first.payload["evidence"]] == ["E1", "E2", "E3"]
    assert first.payload["evidence"][0]["leaf"] is True
    assert Item.objects.get(external_id="cw-102").payload["label"] == "not enough info"


def test_a_bad_checkwhy_record_names_its_line_and_field_and_imports_nothing(project):
    records = json.loads(json.dumps(CHECKWHY_RECORDS))
    del records[1]["evidences"][0]["evidence"]
    body = checkwhy_file(records)
    # Line of the second record's opening brace in the indented file.
    starts = [n for n, text in enumerate(body.getvalue().decode().splitlines(), 1) if text == "  {"]
    line = starts[1]
    with pytest.raises(ImportFailed) as caught:
        import_items(project=project, stream=body, fmt="checkwhy")
    message = str(caught.value)
    assert f"line {line}" in message and "evidences[1]" in message
    assert not Item.objects.exists()


def test_a_checkwhy_structure_naming_a_missing_statement_names_the_line(project):
    records = [{**CHECKWHY_RECORDS[0], "argument_structure": "E1 & E9 → E3; E3 → claim"}]
    with pytest.raises(ImportFailed) as caught:
        import_items(project=project, stream=checkwhy_file(records), fmt="checkwhy")
    message = str(caught.value)
    assert "line 2" in message and "reference_structure" in message and "'E9'" in message


def test_checkwhy_json_lines_are_read_too(project):
    body = "".join(json.dumps(r) + "\n" for r in CHECKWHY_RECORDS).encode()
    assert import_items(project=project, stream=io.BytesIO(body), fmt="checkwhy").created == 2


# --- generated structures with new nodes ---------------------------------------------------------


def test_a_generated_structure_may_state_new_nodes_by_text_and_they_get_ids():
    generated = [
        {"premises": ["E1", "E2"], "conclusion": "The steel cables lost strength."},
        {"premises": [{"text": "The steel cables lost strength."}], "conclusion": "E4"},
        {"premises": ["E4", "Rust weakens steel cables."], "conclusion": "claim"},
    ]
    data = TASK.validate_payload(payload(structure=generated, reference_structure=GOOD_STEPS))
    added = [e for e in data["evidence"] if e.get("origin")]
    # A new text gets the first free id N1; a text equal to E2's is E2.
    assert added == [
        {"id": "N1", "text": "The steel cables lost strength.", "leaf": None, "origin": "structure"}
    ]
    assert data["structure"] == [
        {"premises": ["E1", "E2"], "conclusion": "N1"},
        {"premises": ["N1"], "conclusion": "E4"},
        {"premises": ["E4", "E2"], "conclusion": "claim"},
    ]


def test_a_generated_structure_with_new_nodes_is_imported_and_scored_as_text(project):
    generated = [
        {"premises": ["E1", "E2"], "conclusion": "The cables could no longer carry the load."},
        {"premises": ["The cables could no longer carry the load."], "conclusion": "claim"},
    ]
    record = payload(structure=generated, reference_structure=GOOD_STEPS)
    import_items(
        project=project, stream=io.BytesIO((json.dumps(record) + "\n").encode()), fmt="jsonl"
    )
    item = Item.objects.get(project=project)
    assert item.payload["evidence"][-1]["id"] == "N1"
    assert item.prepared["draft"][1] == {"premises": ["N1"], "conclusion": "claim"}


def test_a_node_object_without_text_names_step_and_field():
    with pytest.raises(PayloadError) as caught:
        TASK.validate_payload(
            payload(structure=[{"premises": [{"txt": "x"}], "conclusion": "claim"}])
        )
    assert caught.value.field == "structure" and "step 1, premise 1" in str(caught.value)
