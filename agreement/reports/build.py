"""Assemble a report from a :class:`ReportInput` (no Django), and compare two reports.

A report is a JSON-able dict (what :class:`agreement.models.AgreementSnapshot` stores)::

    {"version", "task_type", "generated_at", "filter", "options",
     "coders": [{"id", "kind", "label", "answers"}], "excluded": [...],
     "items", "answered_items", "answers",
     "tables": {name: table},               # "agreement" first, then the section's tables
     "section": {"title", "summary", "tables": [names], "plots", "notes"} | None,
     "comparison": {"scalars", "vector_title", "vector"},
     "available_judges": [...]}
"""

from __future__ import annotations

import math
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from agreement.ranking import cv_star, spearman_rho

from .generic import agreement_table
from .inputs import AnnotatorFilter, ReportInput
from .tables import clean, column, table
from .task_types import section_for

# Bump when the figures a report contains change meaning, so that cached snapshots are redone.
REPORT_VERSION = 1


def build_report(report_input: ReportInput, annotator_filter: AnnotatorFilter | None = None) -> dict:
    """Every figure of the dashboard for one project and one choice of coders."""
    inp = report_input
    agreement = agreement_table(inp)
    tables: dict[str, dict] = {"agreement": agreement}
    section_fn = section_for(inp.task_type)
    section = None
    comparison: dict[str, Any] = {"scalars": {}, "vector_title": "", "vector": {}}
    if section_fn is not None:
        result = section_fn(inp)
        for name, tbl in result["tables"].items():
            if name in tables:
                raise ValueError(f"report table {name!r} defined twice")
            tables[name] = tbl
        section = {
            "title": result["title"],
            "summary": result.get("summary", []),
            "tables": list(result["tables"]),
            "plots": result.get("plots", []),
            "notes": result.get("notes", []),
        }
        comparison.update(result.get("comparison", {}))
    comparison["scalars"] = {
        **{f"α {row['field']}": row["alpha"] for row in agreement["rows"]},
        **comparison["scalars"],
    }
    answers_per_coder = {c: len(a) for c, a in inp.answers.items()}
    answered = {unit for a in inp.answers.values() for unit in a if unit in inp.items}
    return {
        "version": REPORT_VERSION,
        "task_type": inp.task_type,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "filter": asdict(annotator_filter) if annotator_filter is not None else None,
        "options": asdict(inp.options),
        "coders": [
            {"id": c.id, "kind": c.kind, "label": c.label or c.id,
             "answers": answers_per_coder.get(c.id, 0)}
            for c in inp.coders
        ],
        "excluded": inp.excluded,
        "items": len(inp.items),
        "answered_items": len(answered),
        "answers": sum(answers_per_coder.values()),
        "tables": tables,
        "section": section,
        "comparison": {
            "scalars": {k: clean(v) for k, v in comparison["scalars"].items()},
            "vector_title": comparison.get("vector_title", ""),
            "vector": {str(k): clean(v) for k, v in comparison["vector"].items()},
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
    undefined when the mean is not positive). ``vector``: the task type's main result vector
    (MAR per system for rankings, mean F1 per group for citation recovery) side by side with
    CV* per entry, and Spearman's rho over the entries both have (needs at least two).
    """
    first, second = labels
    a_scalars, b_scalars = original["comparison"]["scalars"], other["comparison"]["scalars"]
    scalar_rows = [
        {"measure": name, "a": a_scalars[name], "b": b_scalars[name],
         "cv_star": _cv(a_scalars[name], b_scalars[name])}
        for name in a_scalars
        if name in b_scalars
    ]
    a_vec, b_vec = original["comparison"]["vector"], other["comparison"]["vector"]
    shared = [k for k in a_vec if k in b_vec and a_vec[k] is not None and b_vec[k] is not None]
    vector_rows = [
        {"entry": k, "a": a_vec[k], "b": b_vec[k], "cv_star": _cv(a_vec[k], b_vec[k])}
        for k in shared
    ]
    rho = spearman_rho([a_vec[k] for k in shared], [b_vec[k] for k in shared]) if len(
        shared
    ) >= 2 else float("nan")
    columns = [
        column("a", first, "num"),
        column("b", second, "num"),
        column("cv_star", "CV*", "num"),
    ]
    vector_title = original["comparison"].get("vector_title") or "Result vector"
    return {
        "scalars": table(
            "Headline figures side by side",
            [column("measure", "Measure", "text"), *columns],
            scalar_rows,
            note="CV*: small-sample coefficient of variation of the two values (Belz, Popović "
            "& Mille 2022), in percent; lower means closer.",
        ),
        "vector": table(
            vector_title,
            [column("entry", "Entry", "text"), *columns],
            vector_rows,
            note="Spearman's rho is computed over these entries.",
        ),
        "spearman": clean(rho),
        "shared_entries": len(shared),
    }
