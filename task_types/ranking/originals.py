"""The original study's rankings, loaded as annotations collected elsewhere (external coders):
the ``reprohum-ranks`` reader and the conversion of a ranking by system name into the stored
answer (by opaque output key).

The ReproHum #0087 sheet holds one row per (claim, annotator): ``id``, ``annotator``, optionally
the claim, label and justification texts (ignored here), and one rank column per criterion and
justification, ``<criterion> <n>`` — the rank the annotator gave justification *n* on that
criterion (``Coverage 1``, ``Overall 3``). Which system wrote justification *n* of a row is in
the same mapping file as for the items (``id,column,system`` with columns ``justification
<n>``; see ``formats.parse_mapping``)::

    import_annotations --project P --format reprohum-ranks \\
        --mapping reprohum_mapping.csv original_rankings.csv

A criterion whose cells are all empty in a row was not ranked there (left out of the answer); a
criterion ranked for some justifications only is an error naming the column. The ranks must
follow the project's tie convention and name the project's criteria (case does not matter);
the justification order of the row is kept as the order the original annotator saw.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator, Mapping
from typing import IO, Any

from annotation.task_types.base import PayloadError

from .formats import parse_mapping
from .serializers import _rank_problem, project_criteria

_RANK_COLUMN = re.compile(r"^(?P<criterion>.*\S)\s+(?P<n>\d+)$")
_JUSTIFICATION = re.compile(r"^justification\s*_?(?P<n>\d+)$", re.I)
# Justification numbers and ranks are small: a column "Coverage 999…" or a cell of thousands of
# digits is refused naming it, before Python is asked to convert it.
_MAX_RANK_DIGITS = 6


def _number(digits: str, column: str) -> int:
    if len(digits) > _MAX_RANK_DIGITS:
        raise PayloadError(
            f"a justification number has at most {_MAX_RANK_DIGITS} digits",
            field=column[:40],
            location="line 1",
        )
    return int(digits)


REQUIRED = ("id", "annotator")


def _systems_by_number(columns: Mapping[str, str]) -> dict[int, str]:
    """``{justification number: system}`` of one row's mapping."""
    found = {}
    for column, system in columns.items():
        match = _JUSTIFICATION.match(column.strip())
        if match:
            found[_number(match["n"], column)] = system
    return found


def _rank_columns(header: list[str]) -> dict[str, dict[int, str]]:
    """``{criterion: {justification number: column}}`` of the sheet's rank columns."""
    criteria: dict[str, dict[int, str]] = {}
    for column in header:
        name = (column or "").strip()
        if _JUSTIFICATION.match(name):
            continue
        match = _RANK_COLUMN.match(name)
        if match:
            criteria.setdefault(match["criterion"], {})[_number(match["n"], column)] = column
    return criteria


def _rank(cell: str, *, field: str, location: str) -> int:
    if not cell.isascii() or not cell.isdigit() or len(cell) > _MAX_RANK_DIGITS:
        raise PayloadError(
            f"a rank is a whole number of at most {_MAX_RANK_DIGITS} digits, not {cell[:20]!r}",
            field=field,
            location=location,
        )
    return int(cell)


def read_reprohum_ranks(stream: IO[str], mapping: str | None = None) -> Iterator[tuple[str, dict]]:
    """Rows ``(location, {item, coder, answer})`` with the answer by system name:
    ``{"order": [systems as shown], "ranks": {criterion: {system: rank}}}``."""
    if mapping is None:
        raise PayloadError(
            "The reprohum-ranks format needs the mapping file from justification column to "
            "system (--mapping), the same as for the items."
        )
    systems_by_row = {row: _systems_by_number(cols) for row, cols in parse_mapping(mapping).items()}
    reader = csv.DictReader(stream)
    header = reader.fieldnames or []
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise PayloadError(f"the sheet has no {missing[0]!r} column", location="line 1")
    rank_columns = _rank_columns(header)
    if not rank_columns:
        raise PayloadError(
            "the sheet has no rank columns ('<criterion> <n>', e.g. 'Coverage 1')",
            location="line 1",
        )
    for row in reader:
        location = f"line {reader.line_num}"
        if None in row:
            raise PayloadError("more cells than header columns", location=location)
        item_id = (row["id"] or "").strip()
        if not item_id:
            raise PayloadError("the claim's id is needed", field="id", location=location)
        systems = systems_by_row.get(item_id) or systems_by_row.get(None)
        if not systems:
            raise PayloadError(
                f"the mapping file has no justification columns for row {item_id!r}",
                field="id",
                location=location,
            )
        ranks: dict[str, dict[str, Any]] = {}
        for criterion, columns in rank_columns.items():
            given = _criterion_ranks(criterion, columns, row, systems, location=location)
            if given is not None:
                ranks[criterion] = given
        if not ranks:
            raise PayloadError("no ranks in this row", field="annotator", location=location)
        yield (
            location,
            {
                "item": item_id,
                "coder": row["annotator"],
                "answer": {"order": [systems[n] for n in sorted(systems)], "ranks": ranks},
            },
        )


def _criterion_ranks(
    criterion: str,
    columns: dict[int, str],
    row: Mapping[str, Any],
    systems: dict[int, str],
    *,
    location: str,
) -> dict[str, Any] | None:
    """One criterion's ranks in a row, ``{system: rank}``; None if none of its cells is filled.
    Every justification of the row must then be ranked."""
    cells = {n: (row[column] or "").strip() for n, column in columns.items()}
    if not any(cells.values()):
        return None
    given = {}
    for n, cell in sorted(cells.items()):
        column = columns[n]
        if n not in systems:
            raise PayloadError(
                f"the mapping names no system for justification {n} of this row",
                field=column,
                location=location,
            )
        if not cell:
            raise PayloadError(
                f"{criterion} is ranked for other justifications of this row but not "
                f"justification {n}",
                field=column,
                location=location,
            )
        given[systems[n]] = _rank(cell, field=column, location=location)
    unranked = sorted(n for n in systems if n not in cells)
    if unranked:
        raise PayloadError(
            f"the sheet has no {criterion} column for justification {unranked[0]}",
            field=criterion,
            location=location,
        )
    return given


def ranking_from_systems(
    answer: dict, *, payload: Mapping[str, Any], prepared: Mapping[str, Any], config: Mapping
) -> dict:
    """A ranking that names outputs by system (``order``: systems as shown, optional: the
    item's order; ``ranks``: ``{criterion: {system: rank}}``) as the stored answer, by opaque
    key. Checked like an annotator's answer: the item's systems each once, the project's
    criteria, ranks 1..k in the project's tie convention."""
    by_system = {
        o["system"]: key for key, o in zip(prepared["keys"], payload["outputs"], strict=True)
    }
    system_of = {key: system for system, key in by_system.items()}
    # Outputs are named by system; an answer exported from Concord names them by key.
    key_of = {**by_system, **{key: key for key in system_of}}
    listed = ", ".join(by_system)
    order = [key_of.get(s, s) for s in answer.get("order") or list(by_system)]
    strangers = [s for s in order if s not in system_of]
    if strangers:
        raise PayloadError(
            f"{strangers[0]!r} is not a system of this item ({listed})", field="answer.order"
        )
    if sorted(order) != sorted(system_of):
        raise PayloadError(
            f"the order must name each of this item's systems once ({listed})",
            field="answer.order",
        )
    keys = order
    names = {c["name"].casefold(): c["name"] for c in project_criteria(config)}
    convention = config.get("tie_convention") or "competition"
    ranks = {}
    for criterion, ranked in (answer.get("ranks") or {}).items():
        name = names.get(str(criterion).strip().casefold())
        if name is None:
            raise PayloadError(
                f"not a criterion of this project ({', '.join(names.values())})",
                field=f"answer.ranks.{criterion}",
            )
        strangers = [s for s in ranked if s not in key_of]
        if strangers:
            raise PayloadError(
                f"{strangers[0]!r} is not a system of this item ({listed})",
                field=f"answer.ranks.{criterion}",
            )
        given = {key_of[s]: rank for s, rank in ranked.items()}
        problem = _rank_problem(given, keys, system_of, convention=convention)
        if problem:
            raise PayloadError(problem, field=f"answer.ranks.{criterion}")
        ranks[name] = {key: given[key] for key in keys}
    if not ranks:
        raise PayloadError("no criterion is ranked", field="answer.ranks")
    return {"order": keys, "ranks": ranks}
