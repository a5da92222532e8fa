"""On PostgreSQL an import inserts its items with COPY; elsewhere with ``bulk_create``. Both
store the same rows, whatever characters the records hold, and COPY fires the insert triggers
that keep the project's counters."""

import io
import json

import pytest

from annotation.models import Item, ProjectItemCounts
from studies.services import imports
from studies.services.imports import import_items
from tests import factories
from tests.conftest import require

TRICKY = "back\\slash, tab\t, newline\n, CR\r, quote \" and ' — «ünï» ✓ 🙂 \\N \\\\ end"


def records() -> list[dict]:
    result = []
    for n in range(5):
        payload = factories.citation_payload(
            n,
            id=f"claim-{n}\\{TRICKY[:20]}" if n % 2 else f"claim-{n}",
            claim=f"{TRICKY} {n}",
            provenance={"note": TRICKY, "nested": [TRICKY, n, 1.5, None, True]},
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
