"""On PostgreSQL an import inserts its items with COPY; elsewhere with ``bulk_create``. Both
store the same rows, whatever characters the records hold, and COPY fires the insert triggers
that keep the project's counters."""

import io
import json
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from annotation.models import Item, ProjectItemCounts
from studies.services import imports
from studies.services.imports import import_items
from tests import factories
from tests.conftest import require

TRICKY = (
    "back\\slash, tab\t, newline\n, CR\r, quote \" and ' — «ünï» ✓ 🙂 \\N \\\\ end"
    " \u2028 \u2029 \x7f \x01 \x1f 中文 😀👍🏽 \\u00e9 é"
)
NUMBERS = [1e16, 1e-07, 1e-05, -0.0, 0.1, 1e22, 2.5, 9007199254740991, -3, 0, 123456.0]


def records() -> list[dict]:
    result = []
    for n in range(5):
        payload = factories.citation_payload(
            n,
            id=f"claim-{n}\\{TRICKY[:20]}" if n % 2 else f"claim-{n}",
            claim=f"{TRICKY} {n}",
            provenance={
                "note": TRICKY,
                # a null sends the record's payload through json.dumps, as before; without one
                # it goes through orjson
                "nested": [TRICKY, n, 1.5, None if n % 2 else False, True],
                "deep": [[TRICKY, ["🙂", [NUMBERS, {"k\u2028🙂": [[]]}]]], {}],
            },
        )
        if n == 3:
            payload.update(kind="control", gold_sentences=[1])
        result.append(payload)
    return result


def imported_rows(project) -> list[tuple]:
    return list(
        Item.objects.filter(project=project)
        .order_by("position")
        .values_list(
            "external_id",
            "payload",
            "prepared",
            "gold",
            "kind",
            "group",
            "position",
            "assigned_count",
            "is_full",
        )
    )


def run_import(project) -> None:
    content = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records())
    imports.import_items(project=project, stream=io.StringIO(content), fmt="jsonl")


@pytest.mark.django_db
def test_copy_and_bulk_create_store_the_same_rows(monkeypatch):
    from django.db import connection

    require(connection.vendor == "postgresql", "COPY is the PostgreSQL path (set DATABASE_URL)")
    copied = factories.ProjectFactory()
    run_import(copied)
    monkeypatch.setattr(imports, "_copy_supported", lambda: False)
    created = factories.ProjectFactory()
    run_import(created)
    rows = imported_rows(copied)
    assert len(rows) == 5
    assert rows == imported_rows(created)
    assert rows[1][0].startswith("claim-1\\back\\slash, tab\t")
    assert rows[0][1]["claim"] == f"{TRICKY} 0"
    assert rows[0][1]["provenance"]["nested"][0] == TRICKY
    for project in (copied, created):
        counts = ProjectItemCounts.objects.get(project=project)
        assert (counts.items, counts.regular_items) == (5, 4)


@pytest.mark.django_db
def test_a_second_import_continues_the_positions_and_the_counts():
    project = factories.ProjectFactory()
    run_import(project)
    more = [factories.citation_payload(n) for n in range(10, 13)]
    import_items(
        project=project,
        stream=io.StringIO("".join(json.dumps(r) + "\n" for r in more)),
        fmt="jsonl",
    )
    positions = list(
        Item.objects.filter(project=project).order_by("position").values_list("position", flat=True)
    )
    assert positions == list(range(1, 9))
    counts = ProjectItemCounts.objects.get(project=project)
    assert (counts.items, counts.regular_items) == (8, 7)


@pytest.mark.django_db
def test_a_bad_record_after_chunks_copied_in_the_background_imports_nothing(monkeypatch):
    # Each chunk's COPY runs on a helper thread while the next is prepared; a bad record in a
    # later chunk must still leave nothing behind, and the connection fit for the next query.
    monkeypatch.setattr(imports, "CHUNK_SIZE", 2)
    project = factories.ProjectFactory()
    lines = [json.dumps(factories.citation_payload(n)) for n in range(9)]
    lines.append('{"id": "broken", oops')
    with pytest.raises(imports.ImportFailed, match="line 10"):
        import_items(project=project, stream=io.StringIO("\n".join(lines)), fmt="jsonl")
    assert not Item.objects.filter(project=project).exists()
    assert ProjectItemCounts.objects.filter(project=project, items__gt=0).count() == 0


@pytest.mark.django_db
def test_a_copy_the_database_refuses_fails_the_import_and_imports_nothing(monkeypatch):
    from django.db import DataError, connection

    require(connection.vendor == "postgresql", "COPY is the PostgreSQL path (set DATABASE_URL)")
    monkeypatch.setattr(imports, "CHUNK_SIZE", 2)
    real = imports._copy_json
    # The third chunk's payloads are not JSON: the database refuses that COPY, on the helper
    # thread, while the main thread prepares the fourth chunk.
    monkeypatch.setattr(
        imports,
        "_copy_json",
        lambda value: (
            "{not json" if str(value.get("id", "")) in ("claim-4", "claim-5") else real(value)
        ),
    )
    project = factories.ProjectFactory()
    content = "".join(json.dumps(factories.citation_payload(n)) + "\n" for n in range(9))
    with pytest.raises(DataError, match="jsonb|json"):
        import_items(project=project, stream=io.StringIO(content), fmt="jsonl")
    assert not Item.objects.filter(project=project).exists()
    monkeypatch.setattr(imports, "_copy_json", real)
    import_items(project=project, stream=io.StringIO(content), fmt="jsonl")  # the connection works
    assert Item.objects.filter(project=project).count() == 9


ODD_TEXT = st.text(st.characters(codec=None, blacklist_categories=()), max_size=10)
ODD_NUMBERS = (
    st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([1e16, 1e-07, 1e-05, -0.0, 1e22, 5e-324, 1.7976931348623157e308])
)
VALUES = st.recursive(
    st.none() | st.booleans() | ODD_NUMBERS | ODD_TEXT,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(ODD_TEXT, children, max_size=4)
        | st.dictionaries(st.integers(0, 3) | st.none(), children, max_size=2)
    ),
    max_leaves=20,
)


def _as_jsonb(copy_text: str):
    """What jsonb makes of a COPY field: numbers as (value, scale) as PostgreSQL's numeric keeps
    them, so 1e-07 and 1e-7 agree and 1e16 and 10000000000000000.0 do not."""

    def number(text: str):
        value = Decimal(text)
        return ("number", value, max(0, -value.as_tuple().exponent))

    return json.loads(
        copy_text.replace("\\\\", "\\"), parse_float=number, parse_int=number, parse_constant=str
    )


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(VALUES)
@example(float("nan"))
@example({"a": [1.5, float("-inf")]})
@example({1: "a", None: "b"})
@example(["\ud800"])
@example([2**64, -(2**63) - 1])
@example({"a": "é\u2028🙂\x7f\x00\\", "b": [1e16, 1e-07, -0.0]})
def test_copy_json_stores_what_json_dumps_stored(value):
    try:
        before = json.dumps(value).replace("\\", "\\\\")
    except (TypeError, ValueError, RecursionError) as exc:
        with pytest.raises(type(exc)):
            imports._copy_json(value)
        return
    after = imports._copy_json(value)
    assert not any(char in after for char in "\t\n\r")
    if after != before:
        assert _as_jsonb(after) == _as_jsonb(before)


def test_the_same_file_imported_twice_at_once_gives_the_usual_duplicate_message(transactional_db):
    # Found by the outside probe: the second import failed with the database's raw unique-key
    # error from inside COPY. Imports into one project now take turns, so the second one sees
    # the first one's items and refuses with the message a later import gets.
    from django.db import connection

    from tests.annotation.test_concurrency import at_once

    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    project = factories.ProjectFactory()
    content = "".join(json.dumps(factories.citation_payload(n)) + "\n" for n in range(1500))
    outcomes = []

    def run(_):
        try:
            import_items(project=project, stream=io.StringIO(content), fmt="jsonl")
            outcomes.append("done")
        except imports.ImportFailed as exc:
            outcomes.append(str(exc))

    assert not at_once(run, range(2), timeout=120)
    assert len(outcomes) == 2 and "done" in outcomes
    (refusal,) = [outcome for outcome in outcomes if outcome != "done"]
    assert "line 1, field 'id': an item with external id 'claim-0' already exists" in refusal
    assert Item.objects.filter(project=project).count() == 1500
