"""Ranking report (Atanasova et al. 2020; ReproHum #0087-01): mean average rank (MAR) per
system, per annotator and overall, for each criterion, and Krippendorff's alpha at all four
levels.

Rules:

* ranks are read as stored (standard competition ranks, "1224", lower is better) and averaged
  as given (:func:`metrics.ranking.mean_average_rank` without conversion);
* MAR per annotator: the mean rank an annotator gave a system over the items they ranked;
  overall MAR: the mean of the annotators' MARs (each annotator weighs the same, as in ReproHum);
  pooled MAR: the mean over all rankings, for comparison;
* alpha: one unit per (item, system), the coders' ranks as values, at the nominal, ordinal,
  interval and ratio levels (ReproHum reports all four because ranks are ordinal);
* every coder that counts is an annotator here (judges too, when selected);
* position bias: a judge run in both orders (``run_judge --both-orders``: each item also judged
  with the outputs in reverse order) is compared with itself, per criterion: the share of items
  it ranked identically (by output, whatever the order), the mean absolute rank difference per
  (item, system), and alpha (ordinal) with the two presentations as two coders. An unbiased
  judge scores 1, 0 and 1;
* the annotators' position effect: each annotator ranks half of their items with the outputs in
  the item's order and half reversed (``Ranking.presentation``); the mean rank given at each
  shown position, and each system's MAR in either presentation (Δ 0 without a position effect).
"""

from __future__ import annotations

from collections.abc import Mapping
from statistics import mean, pstdev
from typing import Any

from agreement.reports import sections
from agreement.reports.generic import alpha_with_ci
from agreement.reports.inputs import HUMAN, JUDGE, ReportInput
from agreement.reports.sections import Estimand, Figure, SectionResult
from agreement.reports.tables import Table, column, table
from metrics.position import mean_rank_by_position
from metrics.ranking import mean_average_rank

from .task import Ranking

LEVELS = ("nominal", "ordinal", "interval", "ratio")
MAX_PLOTTED_ANNOTATORS = 8


def item_extra(payload: dict, prepared: dict) -> dict:
    """The system behind each opaque output key (annotators never see system names)."""
    keys = prepared.get("keys") or []
    outputs = payload.get("outputs") or []
    return {"systems": {k: o.get("system") for k, o in zip(keys, outputs, strict=False)}}


def _criteria(inp: ReportInput) -> list[str]:
    configured = [c.get("name") for c in inp.config.get("criteria") or [] if isinstance(c, Mapping)]
    seen: dict[str, None] = dict.fromkeys(c for c in configured if c)
    for answers in inp.answers.values():
        for answer in answers.values():
            ranks = answer.get("ranks") if isinstance(answer, Mapping) else None
            if isinstance(ranks, Mapping):
                seen.update(dict.fromkeys(ranks))
    return list(seen)


def _rows(inp: ReportInput, criterion: str) -> list[tuple[str, str, str, float]]:
    """``(coder, item, system, rank)`` for one criterion."""
    rows = []
    for coder in inp.coder_ids():
        for unit, answer in inp.answers.get(coder, {}).items():
            item = inp.items.get(unit)
            ranks = (
                (answer.get("ranks") or {}).get(criterion) if isinstance(answer, Mapping) else None
            )
            if item is None or not isinstance(ranks, Mapping):
                continue
            systems = item.extra.get("systems", {})
            for key, rank in ranks.items():
                if rank is not None:
                    rows.append((coder, unit, systems.get(key) or key, float(rank)))
    return rows


def _mar_rows(mar: Any, annotators: list[str]) -> list[dict]:
    """One row per system, best (lowest MAR) first."""
    rows = []
    for system in mar.systems:
        per = [mar.per_annotator[a][system] for a in annotators if system in mar.per_annotator[a]]
        row = {
            "system": str(system),
            "mar": mar.overall[system],
            "pooled": mar.pooled[system],
            "annotators": len(per),
            "spread": pstdev(per) if len(per) > 1 else None,
        }
        for a in annotators:
            row[f"mar:{a}"] = mar.per_annotator[a].get(system)
        rows.append(row)
    rows.sort(key=lambda r: r["mar"])
    return rows


CONVENTION_NOTES = {
    "competition": "standard competition: ties share the best rank, 1, 1, 3",
    "dense": "dense: ties share a rank and the next follows, 1, 1, 2",
    "free": "free: any ranks 1..k the annotators gave, ties allowed",
}


def _mar_table(
    criterion: str, rows: list[dict], annotators: list[str], labels: dict, convention: str
) -> Table:
    return table(
        f"Mean average rank · {criterion}",
        [
            column("system", "System", "text"),
            column("mar", "MAR", "num"),
            column("pooled", "Pooled", "num"),
            column("spread", "SD (annotators)", "num"),
            *[column(f"mar:{a}", labels[a], "num") for a in annotators],
        ],
        rows,
        note="Lower is better. MAR: mean of the annotators' MARs; pooled: mean of all "
        "rankings; then each annotator's MAR. Ranks as stored, in the project's tie convention "
        f"({CONVENTION_NOTES.get(convention, convention)}).",
    )


def _mar_plot(name: str, criterion: str, shown: list[str], labels: dict, top: float) -> dict:
    return {
        "kind": "grouped",
        "table": name,
        "label": "system",
        "series": ["mar", *[f"mar:{a}" for a in shown]],
        "series_labels": {"mar": "All annotators", **{f"mar:{a}": labels[a] for a in shown}},
        "title": f"MAR per system · {criterion} (lower is better)",
        "domain": [1.0, top],
    }


def _alpha_row(inp: ReportInput, criterion: str, rows: list, coders: int) -> dict[str, Any]:
    """Alpha at the four levels over the (item, system) units of one criterion."""
    data: dict[str, dict[str, float]] = {}
    for coder, unit, system, rank in rows:
        data.setdefault(f"{unit}::{system}", {})[coder] = rank
    row: dict[str, Any] = {"criterion": criterion, "units": len(data), "coders": coders}
    for level in LEVELS:
        result = alpha_with_ci(
            data,
            level,
            n_boot=inp.options.n_boot,
            confidence=inp.options.confidence,
            prefix=f"alpha_{level}",
        )
        row.update({k: v for k, v in result.items() if k.startswith("alpha_")})
    return row


def _alpha_table(alpha_rows: list[dict], inp: ReportInput) -> Table:
    return table(
        "Agreement on ranks at the four levels (Krippendorff's α)",
        [
            column("criterion", "Criterion", "text"),
            column("units", "Units (item × system)", "int"),
            column("coders", "Coders", "int"),
            *[column(f"alpha_{level}", level.capitalize(), "ci") for level in LEVELS],
        ],
        alpha_rows,
        note=f"{round(100 * inp.options.confidence)} % bootstrap intervals over units "
        f"({inp.options.n_boot} replicates).",
    )


REVERSED = "reversed"


def self_agreement_rows(
    inp: ReportInput, coder: str, criterion: str, reversed_answers: Mapping[str, dict]
) -> dict[str, Any] | None:
    """One judge's agreement with itself on ``criterion`` between the annotators' order and
    the reversed one, over the items it answered in both; None when there is no such item."""
    forward = inp.answers.get(coder, {})
    data: dict[str, dict[str, float]] = {}
    identical = items = 0
    differences: list[float] = []
    for unit in sorted(set(forward) & set(reversed_answers)):
        shown = (forward[unit].get("ranks") or {}).get(criterion)
        flipped = (reversed_answers[unit].get("ranks") or {}).get(criterion)
        if not isinstance(shown, Mapping) or not isinstance(flipped, Mapping):
            continue
        systems = (inp.items[unit].extra or {}).get("systems", {}) if unit in inp.items else {}
        keys = sorted(set(shown) & set(flipped))
        if not keys:
            continue
        items += 1
        identical += all(shown[k] == flipped[k] for k in keys) and set(shown) == set(flipped)
        for k in keys:
            data[f"{unit}::{systems.get(k) or k}"] = {"shown": shown[k], "reversed": flipped[k]}
            differences.append(abs(float(shown[k]) - float(flipped[k])))
    if not items:
        return None
    row: dict[str, Any] = {
        "judge": next((c.label for c in inp.coders if c.id == coder), coder),
        "criterion": criterion,
        "items": items,
        "identical": identical / items,
        "mean_abs_difference": mean(differences),
    }
    result = alpha_with_ci(
        data,
        "ordinal",
        n_boot=inp.options.n_boot,
        confidence=inp.options.confidence,
        prefix="alpha_ordinal",
    )
    row.update({k: v for k, v in result.items() if k.startswith("alpha_")})
    return row


def _self_agreement_table(rows: list[dict], inp: ReportInput) -> Table:
    return table(
        "Judges' self-agreement across presentation order (position bias)",
        [
            column("judge", "Judge", "text"),
            column("criterion", "Criterion", "text"),
            column("items", "Items judged in both orders", "int"),
            column("identical", "Identical ranking", "pct"),
            column("mean_abs_difference", "Mean |Δ rank|", "num"),
            column("alpha_ordinal", "α ordinal (shown vs reversed)", "ci"),
        ],
        rows,
        note="Each item judged twice, the outputs once in the annotators' order and once "
        "reversed; an unbiased judge ranks them the same both times (100 %, 0, α = 1). "
        f"{round(100 * inp.options.confidence)} % bootstrap intervals over (item, system) units.",
    )


def human_position_rows(inp: ReportInput, criterion: str) -> tuple[list[dict], list[dict]]:
    """The annotators' position effect on ``criterion``, from the answers whose presentation was
    recorded (``Ranking.presentation``: the item's order, or reversed): the mean rank given at
    each shown position, and each system's mean rank in either presentation. With the outputs
    counterbalanced and no position effect, every position has the same mean rank and each
    system the same rank both ways round."""
    positions: list[tuple[int, float]] = []
    by_system: dict[str, dict[bool, list[float]]] = {}
    for coder, layouts in inp.human_presented.items():
        for unit, layout in layouts.items():
            answer = inp.answers.get(coder, {}).get(unit)
            order = layout.get("order") if isinstance(layout, Mapping) else None
            ranks = (
                (answer.get("ranks") or {}).get(criterion) if isinstance(answer, Mapping) else None
            )
            if (
                not isinstance(order, list)
                or not isinstance(ranks, Mapping)
                or unit not in inp.items
            ):
                continue
            systems = inp.items[unit].extra.get("systems", {})
            flipped = bool(layout.get("reversed"))
            for place, key in enumerate(order, start=1):
                rank = ranks.get(key)
                if rank is None:
                    continue
                positions.append((place, float(rank)))
                system = systems.get(key) or key
                by_system.setdefault(system, {False: [], True: []})[flipped].append(float(rank))
    position_rows = [
        {"criterion": criterion, "position": place, "ranks": count, "mean_rank": value}
        for place, (count, value) in mean_rank_by_position(positions).items()
    ]
    system_rows = []
    for system, split in sorted(by_system.items()):
        shown, flipped = split[False], split[True]
        row = {
            "criterion": criterion,
            "system": system,
            "shown": len(shown),
            "reversed": len(flipped),
            "mar_shown": mean(shown) if shown else None,
            "mar_reversed": mean(flipped) if flipped else None,
        }
        row["difference"] = row["mar_reversed"] - row["mar_shown"] if shown and flipped else None
        system_rows.append(row)
    return position_rows, system_rows


def _human_position_tables(position_rows: list[dict], system_rows: list[dict]) -> dict[str, Table]:
    return {
        "human_position": table(
            "Annotators' position effect: mean rank by the position shown",
            [
                column("criterion", "Criterion", "text"),
                column("position", "Position shown", "int"),
                column("ranks", "Ranks given", "int"),
                column("mean_rank", "Mean rank", "num"),
            ],
            position_rows,
            note="Each annotator ranks half of their items (within one) with the outputs in the "
            "item's order and half reversed (the judges' two presentations), so every output "
            "is shown at every position; without a position effect each position has the same "
            "mean rank. Only answers whose presentation was recorded count.",
        ),
        "human_presentation": table(
            "Annotators' ranks as shown and reversed (position bias)",
            [
                column("criterion", "Criterion", "text"),
                column("system", "System", "text"),
                column("shown", "Ranks, item's order", "int"),
                column("reversed", "Ranks, reversed", "int"),
                column("mar_shown", "MAR, item's order", "num"),
                column("mar_reversed", "MAR, reversed", "num"),
                column("difference", "Δ MAR (reversed − item's order)", "num"),
            ],
            system_rows,
            note="The same comparison as the judges' self-agreement, between the annotators "
            "who saw an item each way round: an unbiased panel gives each system the same "
            "mean rank (Δ 0).",
        ),
    }


def section(inp: ReportInput) -> SectionResult:
    labels = {c.id: c.label or c.id for c in inp.coders}
    result = SectionResult(title="Ranking", tables={})
    alpha_rows: list[dict[str, Any]] = []
    for index, criterion in enumerate(_criteria(inp), start=1):
        rows = _rows(inp, criterion)
        if not rows:
            continue
        mar = mean_average_rank(rows)
        annotators = [c for c in inp.coder_ids() if c in mar.per_annotator]
        mar_rows = _mar_rows(mar, annotators)
        name = f"mar_{index}"
        result.tables[name] = _mar_table(
            criterion,
            mar_rows,
            annotators,
            labels,
            (inp.config or {}).get("tie_convention") or "competition",
        )
        shown = annotators[:MAX_PLOTTED_ANNOTATORS]
        top = max(max(r[3] for r in rows), 2.0)
        result.plots.append(_mar_plot(name, criterion, shown, labels, top))
        if len(annotators) > len(shown):
            result.notes.append(
                f"The {criterion} chart shows the first {len(shown)} of {len(annotators)} "
                "annotators; the table has all of them."
            )
        result.vectors[f"MAR · {criterion}"] = {r["system"]: r["mar"] for r in mar_rows}
        result.domains[f"MAR · {criterion}"] = (1.0, top)
        best = mar_rows[0]
        result.summary.append(
            Figure(f"Best · {criterion}", f"{best['system']} ({best['mar']:.2f})")
        )
        alpha_row = _alpha_row(inp, criterion, rows, len(annotators))
        alpha_rows.append(alpha_row)
        result.scalars[f"α ordinal · {criterion}"] = alpha_row.get("alpha_ordinal")
    result.tables["alpha_levels"] = _alpha_table(alpha_rows, inp)
    _add_self_agreement(result, inp)
    _add_human_positions(result, inp)
    return result


def _add_self_agreement(result: SectionResult, inp: ReportInput) -> None:
    """Each judge's agreement with itself on the items shown in reverse order: a table, and a
    scalar per judge and criterion."""
    self_rows = []
    for coder, presented in inp.presented.items():
        reversed_answers = presented.get(REVERSED)
        if not reversed_answers:
            continue
        for criterion in _criteria(inp):
            row = self_agreement_rows(inp, coder, criterion, reversed_answers)
            if row is not None:
                self_rows.append(row)
                result.scalars[f"Self-agreement α · {row['judge']} · {criterion}"] = row.get(
                    "alpha_ordinal"
                )
    if self_rows:
        result.tables["judge_self_agreement"] = _self_agreement_table(self_rows, inp)


def _add_human_positions(result: SectionResult, inp: ReportInput) -> None:
    """Mean rank by the position an output was shown in to humans: tables, and a summary figure
    per criterion."""
    if not inp.human_presented:
        return
    position_rows: list[dict] = []
    system_rows: list[dict] = []
    for criterion in _criteria(inp):
        by_position, by_system = human_position_rows(inp, criterion)
        position_rows += by_position
        system_rows += by_system
        if len(by_position) > 1:
            first, last = by_position[0], by_position[-1]
            result.summary.append(
                Figure(
                    f"Position · {criterion}",
                    f"mean rank {first['mean_rank']:.2f} shown first, "
                    f"{last['mean_rank']:.2f} shown last",
                )
            )
    if position_rows:
        result.tables.update(_human_position_tables(position_rows, system_rows))


def _per_item(
    rows: list[tuple[str, str, str, float]], coders: set[str], value
) -> dict[str, dict[str, float]]:
    """``{system: {item: value}}``: ``value(rank)`` averaged over ``coders``' rankings."""
    found: dict[str, dict[str, list[float]]] = {}
    for coder, unit, system, rank in rows:
        if coder in coders:
            found.setdefault(system, {}).setdefault(unit, []).append(value(rank))
    return {
        system: {unit: mean(values) for unit, values in by_unit.items()}
        for system, by_unit in found.items()
    }


def estimands(inp: ReportInput) -> list[Estimand]:
    """Per criterion and system, over items: the mean rank (MAR with every item weighing the
    same; the humans' value of an item is the mean of their ranks) and the share of items where
    the system is ranked first (its win rate; humans: the share of their rankings)."""
    humans = set(inp.coder_ids(HUMAN))
    judges = [c for c in inp.coders if c.kind == JUDGE]
    found = []
    for criterion in _criteria(inp):
        rows = _rows(inp, criterion)
        for name, value in (("Mean rank", float), ("Ranked first", lambda r: float(r == 1))):
            human = _per_item(rows, humans, value)
            judged = {j.label or j.id: _per_item(rows, {j.id}, value) for j in judges}
            systems = sorted(set(human) | {s for by in judged.values() for s in by})
            # a rank lies from 1 to the number of systems; "ranked first" is a share
            bounds = (1.0, float(max(len(systems), 1))) if name == "Mean rank" else (0.0, 1.0)
            for system in systems:
                found.append(
                    Estimand(
                        figure=f"{name} · {criterion} · {system}",
                        humans=human.get(system, {}),
                        judges={label: by.get(system, {}) for label, by in judged.items()},
                        bounds=bounds,
                    )
                )
    return found


sections.register(Ranking.slug, section=section, item_extra=item_extra, estimands=estimands)
