"""Assemble a report from a :class:`ReportInput` (no Django), and compare two reports.

A report is a JSON-able dict (what :class:`agreement.models.AgreementSnapshot` stores)::

    {"version", "task_type", "generated_at", "filter", "options",
     "coders": [{"id", "kind", "label", "answers"}], "excluded": [...],
     "items", "answered_items", "answers",
     "human_items",                          # items with a human answer
     "judge_items": {judge label: items it answered},
     "tables": {name: table},               # "agreement" first, then the section's tables
     "section": {"title", "summary", "tables": [names], "plots", "notes"} | None,
     "comparison": {"scalars": {name: value}, "vectors": {title: {entry: value}},
                    "domains": {title: [low, high]}},   # axis range of a vector's chart
     "available_judges": [...]}
"""

from __future__ import annotations

import math
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from metrics.ranking import cv_star, spearman_rho

from .coverage import coverage, same_items_input, shared_rows, with_all_items_rows
from .estimates import (
    ACTIVE_CI_TABLE,
    ESTIMATES_TABLE,
    active_ci_plots,
    active_ci_table,
    estimates_table,
)
from .generic import agreement_table
from .inputs import AnnotatorFilter, ReportInput
from .sections import SectionResult, section_for
from .tables import clean, column, table

# Bump when the figures a report contains change meaning, so that cached snapshots are redone.
# 3: ordinal bootstrap intervals re-estimate rank positions per replicate; alpha rows carry
# ``alpha_no_variation``. 4: the questionnaire and ranking sections show the annotators'
# position effect. 5: judges and humans side by side on the same items (judges' all-items rows
# labelled); prediction-powered estimates. 6: active sampling: the estimates table names its
# method and the active estimate replaces PPI++ where the project deals actively. 7: figures over
# units of several items (citation recovery's explanations, stance's consistency pairs) get the
# grouped active estimate; the interval's narrowing as answers arrived is drawn; LLM judges'
# uncertainty comes from token log-probabilities where the server returns them.
REPORT_VERSION = 7


def _section(inp: ReportInput) -> tuple[SectionResult | None, dict[str, dict]]:
    """The generic agreement table and the task type's section computed on ``inp``."""
    tables: dict[str, dict] = {"agreement": agreement_table(inp)}
    section_fn = section_for(inp.task_type)
    if section_fn is None:
        return None, tables
    result = section_fn(inp)
    for name, tbl in result.tables.items():
        if name in tables:
            raise ValueError(f"report table {name!r} defined twice")
        tables[name] = tbl
    return result, tables


def _same_items_tables(inp: ReportInput, cover) -> tuple[SectionResult | None, dict[str, dict]]:
    """Every table on the items with human answers (:mod:`.coverage`); where a judge answered
    more, its all-items rows are added, labelled."""
    if not cover.extends:
        return _section(inp)
    result, tables = _section(same_items_input(inp, cover.human_items))
    _, every = _section(inp)
    return result, {
        name: with_all_items_rows(tbl, every.get(name), cover) for name, tbl in tables.items()
    }


def build_report(
    report_input: ReportInput, annotator_filter: AnnotatorFilter | None = None
) -> dict:
    """Every figure of the dashboard for one project and one choice of coders."""
    inp = report_input
    cover = coverage(inp)
    result, tables = _same_items_tables(inp, cover)
    section = None
    # An alpha without variation is undefined (0/0), not the 1.0 kept by convention.
    scalars: dict[str, Any] = {
        f"α {row['field']}": None if row.get("alpha_no_variation") else row["alpha"]
        for row in shared_rows(tables["agreement"]["rows"])
    }
    vectors: dict[str, dict] = {}
    domains: dict[str, list] = {}
    if result is not None:
        added = {ESTIMATES_TABLE: estimates_table(inp), ACTIVE_CI_TABLE: active_ci_table(inp)}
        tables.update({key: t for key, t in added.items() if t is not None})
        section = {
            "title": result.title,
            "summary": [asdict(figure) for figure in result.summary],
            "tables": [*result.tables, *(key for key, t in added.items() if t is not None)],
            "plots": [
                *result.plots,
                *active_ci_plots(added[ACTIVE_CI_TABLE], inp.options.confidence),
            ],
            "notes": result.notes,
        }
        scalars.update(result.scalars)
        vectors.update(result.vectors)
        domains.update({title: list(domain) for title, domain in result.domains.items()})
    answers_per_coder = {c: len(a) for c, a in inp.answers.items()}
    answered = {unit for a in inp.answers.values() for unit in a if unit in inp.items}
    return {
        "version": REPORT_VERSION,
        "task_type": inp.task_type,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "filter": asdict(annotator_filter) if annotator_filter is not None else None,
        "options": asdict(inp.options),
        "coders": [
            {
                "id": c.id,
                "kind": c.kind,
                "label": c.label or c.id,
                "answers": answers_per_coder.get(c.id, 0),
            }
            for c in inp.coders
        ],
        "excluded": inp.excluded,
        "items": len(inp.items),
        "answered_items": len(answered),
        "human_items": len(cover.human_items),
        "judge_items": cover.judge_items,
        "answers": sum(answers_per_coder.values()),
        "tables": tables,
        "section": section,
        "comparison": {
            "scalars": {str(k): clean(v) for k, v in scalars.items()},
            "vectors": {
                str(title): {str(k): clean(v) for k, v in vector.items()}
                for title, vector in vectors.items()
            },
            "domains": {str(title): list(domain) for title, domain in domains.items()},
        },
        "available_judges": list(inp.available_judges),
    }


def _cv(a: Any, b: Any) -> float | None:
    if a is None or b is None:
        return None
    value = cv_star([float(a), float(b)])
    return None if math.isnan(value) else value


def compare_reports(original: dict, other: dict, *, labels: tuple[str, str]) -> dict:
    """Side-by-side tables of two reports over the same items (original vs reproduction).

    ``scalars``: every headline figure both reports have, with CV* (Belz et al. 2022, unshifted;
    undefined when the mean is not positive). ``vectors``: the task type's result vectors (MAR
    per system for each ranking criterion, mean F1 per group for citation recovery) entry by
    entry with CV*; ``spearman``: Spearman's rho over the entries of each vector that both
    reports have (undefined below two entries or for a constant vector).
    """
    first, second = labels
    a_scalars, b_scalars = original["comparison"]["scalars"], other["comparison"]["scalars"]
    scalar_rows = [
        {
            "measure": name,
            "a": a_scalars[name],
            "b": b_scalars[name],
            "cv_star": _cv(a_scalars[name], b_scalars[name]),
        }
        for name in a_scalars
        if name in b_scalars
    ]
    vector_rows, spearman_rows = [], []
    b_vectors = other["comparison"]["vectors"]
    for title, a_vec in original["comparison"]["vectors"].items():
        b_vec = b_vectors.get(title)
        if b_vec is None:
            continue
        shared = [k for k in a_vec if k in b_vec and a_vec[k] is not None and b_vec[k] is not None]
        for k in shared:
            vector_rows.append(
                {
                    "vector": title,
                    "entry": k,
                    "a": a_vec[k],
                    "b": b_vec[k],
                    "cv_star": _cv(a_vec[k], b_vec[k]),
                }
            )
        rho = (
            spearman_rho([a_vec[k] for k in shared], [b_vec[k] for k in shared])
            if len(shared) >= 2
            else float("nan")
        )
        spearman_rows.append({"vector": title, "entries": len(shared), "rho": rho})
    columns = [
        column("a", first, "num"),
        column("b", second, "num"),
        column("cv_star", "CV*", "num"),
    ]
    return {
        "scalars": table(
            "Headline figures side by side",
            [column("measure", "Measure", "text"), *columns],
            scalar_rows,
            note="CV*: small-sample coefficient of variation of the two values (Belz, Popović "
            "& Mille 2022), in percent; lower means closer.",
        ),
        "vectors": table(
            "Result vectors side by side",
            [column("vector", "Vector", "text"), column("entry", "Entry", "text"), *columns],
            vector_rows,
        ),
        "spearman": table(
            "Spearman's rho between the two result vectors",
            [
                column("vector", "Vector", "text"),
                column("entries", "Entries", "int"),
                column("rho", "Spearman's ρ", "num"),
            ],
            spearman_rows,
            note="Rank correlation of the two projects' values over the entries both have.",
        ),
    }
