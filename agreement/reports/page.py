"""The dashboard's view of a report, computed once with the report and stored beside it.

:func:`report_page` turns a report (what :func:`agreement.reports.build.build_report` returns)
into what the dashboard template shows: the agreement table and each section table rendered
cell by cell (long tables cut to a preview; the CSV download carries every row), every plot
rendered to SVG, the headline figures and notes, and the few report facts the page names
(answers, coders, excluded coders, available judges). A snapshot stores it as ``page``, so a
request renders a template and computes nothing; the full report stays in ``result`` for the
CSV downloads and comparisons.

Plain data, no Django. Links depend on the request's query: a rendered table names its
``download`` and the view adds the URL (:func:`with_links`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .coverage import shared_rows
from .plots import render as render_plot
from .tables import render_cell

# Section tables longer than twice this are shown cut to this many rows.
PREVIEW_ROWS = 15
# Bump when the page's shape changes: older stored pages are then rebuilt from the result.
PAGE_VERSION = 2


def rendered_table(name: str, tbl: Mapping, preview: int | None = None) -> dict:
    """A table as header and cell texts (the first ``preview`` rows when given)."""
    rows = tbl["rows"]
    shown = rows if preview is None else rows[:preview]
    numeric = [col["fmt"] != "text" for col in tbl["columns"]]
    return {
        "name": name,
        "title": tbl["title"],
        "note": tbl.get("note", ""),
        "headers": [
            {"label": col["label"], "numeric": num}
            for col, num in zip(tbl["columns"], numeric, strict=True)
        ],
        "rows": [
            [
                {"text": render_cell(row, col), "numeric": num}
                for col, num in zip(tbl["columns"], numeric, strict=True)
            ]
            for row in shown
        ],
        "hidden_rows": len(rows) - len(shown),
        "download": name,
    }


def report_page(report: Mapping[str, Any]) -> dict:
    """What the dashboard shows of ``report`` (see the module docstring); JSON-able."""
    tables = report["tables"]
    section = report.get("section")
    blocks = []
    if section:
        plots_by_table: dict[str, list] = {}
        for spec in section["plots"]:
            svg = render_plot(spec, tables)
            if svg:
                plots_by_table.setdefault(spec["table"], []).append(
                    {"title": spec.get("title", ""), "svg": svg}
                )
        for name in section["tables"]:
            tbl = tables[name]
            preview = PREVIEW_ROWS if len(tbl["rows"]) > 2 * PREVIEW_ROWS else None
            plots = plots_by_table.get(name, [])
            blocks.append(
                {
                    "table": rendered_table(name, tbl, preview),
                    "plots": plots,
                    # Under a row of charts, a long table of their numbers starts folded;
                    # beside a single chart it has room.
                    "collapse": len(plots) > 1 and len(tbl["rows"]) > 6,
                }
            )
    return {
        "version": PAGE_VERSION,
        "generated_at": report["generated_at"],
        "agreement": rendered_table("agreement", tables["agreement"]),
        "blocks": blocks,
        "section": (
            {"summary": section["summary"], "notes": section["notes"]} if section else None
        ),
        "report": {
            "filter": report["filter"],
            "section": {"tables": list(section["tables"])} if section else None,
            "answers": report["answers"],
            "answered_items": report["answered_items"],
            # Items with a human answer, and each judge's items (reports before version 5
            # lack them: the template falls back on the answered items).
            "human_items": report.get("human_items"),
            "judge_items": report.get("judge_items") or {},
            "humans": sum(1 for c in report["coders"] if c["kind"] != "judge"),
            "judges": sum(1 for c in report["coders"] if c["kind"] == "judge"),
            "coders": report["coders"],
            "excluded": report["excluded"],
            "available_judges": report["available_judges"],
            "tables": {"agreement": {"rows": shared_rows(tables["agreement"]["rows"])}},
            "comparison": {"vectors": list(report["comparison"]["vectors"])},
        },
    }


def is_current(page: Mapping | None) -> bool:
    return page is not None and page.get("version") == PAGE_VERSION


def with_links(rendered: dict, base_query: str) -> dict:
    """``rendered`` (from :func:`rendered_table`) with its CSV link for this page's query."""
    prefix = "?" + (base_query + "&" if base_query else "")
    return {**rendered, "csv_url": f"{prefix}download={rendered['download']}"}
