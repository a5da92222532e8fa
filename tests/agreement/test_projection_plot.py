"""The labels-needed plot (issue 27): its curves stay inside the plot's range, cut at its top,
and the parts above it are said in words (the projection's ``off_plot``, the chart's desc)."""

from __future__ import annotations

import re

import pytest

from agreement.reports.plots import _below, lines, off_the_top, render
from agreement.reports.projection import projection
from agreement.reports.sections import Estimand

TOP, BOTTOM = 28, 248  # the lines plot's box (top and bottom edges, in SVG units)


def _estimand(bounds=(0.0, 1.0)) -> Estimand:
    """40 units, 20 labelled by humans (a 0/1 share), the judge on all of them, right on most."""
    humans = {f"u{n}": float(n % 5 in (0, 1, 3)) for n in range(20)}
    judge = {f"u{n}": float(n % 5 in (0, 1, 3) or n % 7 == 0) for n in range(40)}
    return Estimand("Share", humans, {"gpt": judge}, bounds=bounds)


def _polyline_ys(svg: str) -> list[float]:
    ys = []
    for points in re.findall(r'<polyline points="([^"]*)"', svg):
        ys += [float(pair.split(",")[1]) for pair in points.split()]
    return ys


def test_the_curves_are_cut_at_the_plots_top_and_the_cut_is_said():
    result = projection(_estimand(), "gpt", target_width=0.2)
    y_max = result.plot["y_max"]
    assert y_max == pytest.approx(2 * max(result.current_alone, 0.2))
    rows = result.tables["projection"]["rows"]
    assert max(row["humans_alone"] for row in rows) > y_max  # 2 labels: far wider
    svg = render(result.plot, result.tables)
    ys = _polyline_ys(svg)
    assert ys and all(TOP - 0.05 <= y <= BOTTOM + 0.05 for y in ys)
    assert min(ys) == pytest.approx(TOP, abs=0.05)  # reaches the top edge, where it is cut
    ticks = [float(t) for t in re.findall(r'text-anchor="end" fill="#667085">([\d.]+)<', svg)]
    assert max(ticks) <= y_max + 1e-9
    above = max(row["labels"] for row in rows if row["humans_alone"] > y_max)
    assert result.off_plot[0].startswith(f"Humans alone: wider than {y_max:.3g} (above the plot)")
    assert f"with {above} human labels or fewer" in result.off_plot[0]
    assert "Cut at the top: Humans alone" in svg  # the chart's desc says it too


def test_the_plots_top_is_never_above_the_figures_whole_range():
    result = projection(_estimand(bounds=(0.0, 0.3)), "gpt")
    assert result.plot["y_max"] == pytest.approx(0.3)


def test_a_curve_that_stays_inside_is_drawn_whole_and_not_mentioned():
    rows = [{"n": n, "a": 1 / n} for n in range(1, 6)]
    spec = {"kind": "lines", "x": "n", "series": ["a"], "y_max": 5.0}
    assert off_the_top(rows, spec) == {}
    assert len(_polyline_ys(lines(rows, spec))) == 5


def test_a_polyline_is_cut_where_it_crosses_the_top():
    assert _below([(0, 4), (1, 2), (2, 0)], 3) == [[(0.5, 3), (1, 2), (2, 0)]]
    # leaves and comes back: two parts
    assert _below([(0, 0), (1, 4), (2, 0)], 2) == [[(0, 0), (0.5, 2)], [(1.5, 2), (2, 0)]]
