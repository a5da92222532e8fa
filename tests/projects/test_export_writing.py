"""How an export writes its rows (issue 34: 100k exports of every task type at >= 30k rows/s).

CSV lines are made in Python rather than by the csv module's C writer (which copies every
character one by one); they must be the bytes ``csv.writer`` wrote of the spreadsheet-safe cells,
for any cell. While an export runs, the objects that existed before it are left out of the
garbage collector's passes, and handed back when it ends, however it ends.
"""

from __future__ import annotations

import csv
import enum
import gc
import io
import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.spreadsheet import spreadsheet_safe
from studies.services import exports
from studies.services.exports import export_chunks, export_csv, export_jsonl
from tests import factories


def written_by_the_csv_module(values: list) -> str:
    """The oracle: the cells the export made before (JSON for lists and dicts, spreadsheet-safe
    for the rest), written by ``csv.writer``."""
    buffer = io.StringIO()
    cells = [json.dumps(v) if isinstance(v, list | dict) else spreadsheet_safe(v) for v in values]
    csv.writer(buffer).writerow(cells)
    return buffer.getvalue()


class Level(enum.IntEnum):
    HIGH = 3


class Label(str):
    """Text whose ``str()`` is not its text (as a ``str`` mixed into an ``Enum``)."""

    def __str__(self) -> str:
        return "Label.AGREE"


TEXT = st.text(alphabet=st.sampled_from("ab é,\"\r\n\t=+-@ '’x\x00"), max_size=12)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
CELL = (
    TEXT
    | st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats()
    | st.lists(st.integers(), max_size=4)
    | JSON
    | st.sampled_from([Level.HIGH, Label('=agree, "quoted"'), Decimal("1.50"), ""])
)


@settings(max_examples=400, deadline=None)
@given(st.lists(CELL, min_size=0, max_size=8))
def test_a_csv_line_is_what_the_csv_module_wrote_of_the_same_cells(values):
    assert exports._csv_line(values, exports._json_encoder()) == written_by_the_csv_module(values)


@pytest.mark.parametrize(
    "values",
    [
        [""],  # one empty cell: quoted, so that the line is not empty
        [None],
        [],
        ["=SUM(A1)", "+1", "-1", "@x", "\tx", "\rx", "plain"],
        ['say "hi"', "a,b", "line\nbreak", "cr\rlf"],
        [1.0, 0.1 + 0.2, float("nan"), float("inf"), -0.0, 10**20, True, False],
        [[0, 1], [True], {"é": "naïve"}, [{"text": "=cmd"}]],
    ],
)
def test_edge_cells_are_written_as_the_csv_module_wrote_them(values):
    assert exports._csv_line(values, exports._json_encoder()) == written_by_the_csv_module(values)


@given(st.lists(TEXT, max_size=5))
def test_the_header_is_written_as_the_csv_module_wrote_it_without_escaping(names):
    buffer = io.StringIO()
    csv.writer(buffer).writerow(names)
    assert exports._csv_header(names) == buffer.getvalue()


def test_one_json_encoder_serves_every_cell_of_an_export():
    encode = exports._json_encoder()
    shared = {"a": [1, 2]}
    for value in ([shared, shared], {"b": shared}, [1.5, None, "x"], shared):
        assert exports._json_cell(value, encode) == json.dumps(value)


# --- the garbage collector during an export -------------------------------------------------------


def test_old_objects_are_frozen_while_an_export_runs_and_handed_back_after(db):
    assert gc.get_freeze_count() == 0
    with exports.older_objects_set_aside():
        assert gc.get_freeze_count() > 0
        with exports.older_objects_set_aside():  # a second export at the same time
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() > 0, "the first export still runs"
    assert gc.get_freeze_count() == 0


def test_an_export_stopped_early_hands_the_old_objects_back(citation_rows_project):
    rows = export_jsonl(project=citation_rows_project)
    next(rows)
    assert gc.get_freeze_count() > 0
    rows.close()
    assert gc.get_freeze_count() == 0
    assert list(export_csv(project=citation_rows_project))
    assert gc.get_freeze_count() == 0


def test_objects_frozen_by_someone_else_stay_frozen(citation_rows_project):
    # An export generator an earlier test left unfinished would hand its objects back (unfreeze
    # everything) when the collector finalises it, mid-way through this test: finalise it first.
    gc.collect()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert "".join(export_chunks(project=citation_rows_project, fmt="csv"))
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()


def test_an_export_that_fails_hands_the_old_objects_back(citation_rows_project, monkeypatch):
    def failing(*args, **kwargs):
        raise RuntimeError("the cursor failed")

    monkeypatch.setattr(exports, "_current_answers", failing)
    with pytest.raises(RuntimeError, match="the cursor failed"):
        list(export_jsonl(project=citation_rows_project))
    assert gc.get_freeze_count() == 0


@pytest.fixture
def citation_rows_project(db):
    """A citation-recovery project of two items, each answered once."""
    from tests.projects.test_export_rows import answer_all, member

    project = factories.ProjectFactory(annotators_per_item=1)
    factories.make_items(project, 2)
    answer_all(project, member(project), lambda item: {"sentences": [0], "helpfulness": 50})
    return project
