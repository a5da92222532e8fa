"""Chart legends wrap into rows (a probe's finding: past four series the one-row legend ran off
the chart's right edge): with eight series every name is drawn inside the viewBox, and the
chart grows so that the rows never sit on the plot."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from agreement.reports.plots import LEGEND_CHAR, grouped, histogram, lines, stacked

SVG = "{http://www.w3.org/2000/svg}"
NAMES = [f"System {name} output" for name in ("Alpha", "Bravo", "Charlie", "Delta")] + [
    "Echo",
    "Foxtrot-large-2024",
    "Golf (baseline)",
    "Hotel with a very long name indeed",
]
SERIES = [f"s{i}" for i in range(len(NAMES))]
LABELS = dict(zip(SERIES, NAMES, strict=True))


def _rows() -> list[dict]:
    return [
        {"label": f"row {r}", "x": r, **{key: 0.1 * (i + 1) + r for i, key in enumerate(SERIES)}}
        for r in range(3)
    ]


CHARTS = {
    "grouped": lambda: grouped(
        _rows(), {"label": "label", "series": SERIES, "series_labels": LABELS}
    ),
    "stacked": lambda: stacked(
        _rows(), {"label": "label", "series": SERIES, "series_labels": LABELS}
    ),
    "histogram": lambda: histogram(
        _rows(), {"label": "label", "series": SERIES, "series_labels": LABELS}
    ),
    "lines": lambda: lines(_rows(), {"x": "x", "series": SERIES, "series_labels": LABELS}),
}


def _legend_texts(root: ET.Element) -> list[tuple[ET.Element, str]]:
    """The legend's text elements and the name each shows (whole, from its title if cut)."""
    found = []
    for text in root.iter(f"{SVG}text"):
        title = text.find(f"{SVG}title")
        shown = "".join(text.itertext())
        whole = title.text if title is not None else shown
        if whole in NAMES and (title is None or shown.endswith("…")):
            found.append((text, whole))
    return found


@pytest.mark.parametrize("kind", sorted(CHARTS))
def test_every_series_name_is_in_the_svg_inside_its_viewbox(kind):
    root = ET.fromstring(CHARTS[kind]())
    _, _, width, height = (float(v) for v in root.get("viewBox").split())
    legend = _legend_texts(root)
    assert sorted(name for _, name in legend) == sorted(NAMES)
    for text, _ in legend:
        x, y = float(text.get("x")), float(text.get("y"))
        shown = "".join(text.itertext()).removeprefix(text.findtext(f"{SVG}title") or "")
        assert 0 <= x and x + LEGEND_CHAR * len(shown) <= width, shown
        assert 10 <= y <= height, shown
    assert len({float(text.get("y")) for text, _ in legend}) > 1  # wrapped into rows


@pytest.mark.parametrize("kind", ["grouped", "stacked", "histogram"])
def test_a_legend_above_the_plot_pushes_the_bars_below_its_last_row(kind):
    root = ET.fromstring(CHARTS[kind]())
    last_row = max(float(text.get("y")) for text, _ in _legend_texts(root))
    bars = [float(r.get("y")) for r in root.iter(f"{SVG}rect") if r.get("height") != "10"]
    assert bars and min(bars) > last_row


def test_a_cut_name_keeps_its_whole_text_as_a_title():
    svg = CHARTS["grouped"]()
    assert "<title>Hotel with a very long name indeed</title>Hotel with a very long …" in svg


def test_a_lines_legend_below_the_plot_grows_the_chart():
    root = ET.fromstring(CHARTS["lines"]())
    height = float(root.get("viewBox").split()[3])
    axis_title = max(float(t.get("y")) for t in root.iter(f"{SVG}text") if t.text == "x")
    legend_ys = [float(text.get("y")) for text, _ in _legend_texts(root)]
    assert min(legend_ys) > axis_title and max(legend_ys) <= height - 8


def test_two_short_series_stay_on_one_row_at_the_old_height():
    svg = grouped([{"label": "a", "x": 1.0, "y": 2.0}], {"label": "label", "series": ["x", "y"]})
    root = ET.fromstring(svg)
    assert root.get("viewBox") == "0 0 580 98"  # 30 + 2 bars of 14 + 12 + 28
