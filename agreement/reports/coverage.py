"""Same-item comparisons: judges and humans side by side only over the items both have.

A judge usually answers every item and the humans only some. A table that put the judge's
precision over 484 items beside the humans' over 10 would compare two different samples. So
wherever the report puts coders side by side (the generic agreement table and every table of a
task type's section), :func:`agreement.reports.build.build_report` computes it on
:func:`same_items_input`: the judges' answers cut down to the items that have at least one human
answer. When a judge answered more items than that, the section is computed a second time on
the full input, and the rows that change (the judges' figures over all their items, and any
figure that mixes them in) are added to the same table as separate rows, each labelled in the
:data:`BASIS` column with the items it speaks for (:func:`with_all_items_rows`); the rows
computed on the shared items say so, with their count. Plots and headline tiles draw only the
shared-items rows (:data:`ALL_ITEMS`).

Where no judge is selected, or no judge goes beyond the humans' items, tables are unchanged.
Plain part of the reports layer (no Django).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace

from .inputs import HUMAN, JUDGE, ReportInput
from .tables import Table, column

BASIS = "items_basis"  # row key of the "Items" column: which items a row speaks for
ALL_ITEMS = "judge_all_items"  # row flag: a judge's figure over all its items (not comparable)


@dataclass(frozen=True)
class Coverage:
    """Who answered which items: the humans' items, and each judge's (by label)."""

    human_items: frozenset[str]
    judge_items: dict[str, int]  # judge label -> items it answered
    judges_beyond: dict[str, int]  # judge label -> its items, for judges beyond the humans'

    @property
    def extends(self) -> bool:
        """Whether a same-items and an all-items figure differ for some judge."""
        return bool(self.human_items) and bool(self.judges_beyond)

    def all_items_label(self) -> str:
        counts = ", ".join(f"{label}: {n}" for label, n in sorted(self.judges_beyond.items()))
        return f"judge's all items ({counts}); not comparable with the humans"

    def same_items_label(self) -> str:
        return f"the {len(self.human_items)} items with human answers"


def coverage(inp: ReportInput) -> Coverage:
    humans: set[str] = set()
    for answers in inp.answers_of(HUMAN).values():
        humans.update(unit for unit in answers if unit in inp.items)
    judge_items, beyond = {}, {}
    for coder in inp.coders:
        if coder.kind != JUDGE:
            continue
        units = {u for u in inp.answers.get(coder.id, {}) if u in inp.items}
        label = coder.label or coder.id
        judge_items[label] = len(units)
        if units - humans:
            beyond[label] = len(units)
    return Coverage(frozenset(humans), judge_items, beyond)


def same_items_input(inp: ReportInput, items: frozenset[str]) -> ReportInput:
    """``inp`` with every judge's answers (and its answers in other presentations) cut down to
    ``items``; humans, items and options unchanged (a fresh column cache)."""
    judges = set(inp.coder_ids(JUDGE))
    answers = {
        coder: ({u: a for u, a in by_unit.items() if u in items} if coder in judges else by_unit)
        for coder, by_unit in inp.answers.items()
    }
    presented = {
        coder: {
            shown: {u: a for u, a in by_unit.items() if u in items}
            for shown, by_unit in by_shown.items()
        }
        for coder, by_shown in inp.presented.items()
    }
    return replace(inp, answers=answers, presented=presented, columns_cache={})


def _key(row: Mapping) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def with_all_items_rows(same: Table, every: Table | None, cover: Coverage) -> Table:
    """``same`` (computed on the shared items) with an "Items" column, plus every row of
    ``every`` (computed with the judges on all their items) that ``same`` does not have,
    labelled as the judges' all-items figure."""
    rows = [{**row, BASIS: cover.same_items_label()} for row in same["rows"]]
    seen = {_key(row) for row in same["rows"]}
    if every is not None:
        for row in every["rows"]:
            if _key(row) not in seen:
                rows.append({**row, BASIS: cover.all_items_label(), ALL_ITEMS: True})
    columns = [*same["columns"], column(BASIS, "Items", "text")]
    note = same["note"]
    extra = (
        "Rows are computed on the items with human answers (judges' answers on other items left "
        "out), so judges and humans are compared on the same items; rows marked “judge's all "
        "items” give a judge's figure over every item it answered, not comparable with the "
        "humans' rows."
    )
    return {**same, "columns": columns, "rows": rows, "note": f"{note} {extra}".strip()}


def shared_rows(rows: list[dict]) -> list[dict]:
    """The rows computed on the shared items (what plots and tiles draw)."""
    return [row for row in rows if not row.get(ALL_ITEMS)]
