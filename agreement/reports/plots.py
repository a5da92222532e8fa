"""Small server-side SVG charts for the dashboard: no JavaScript, no chart library.

:func:`render` turns a plot spec (as stored in a report) and its table into an SVG string. Every
label passes through :func:`html.escape`, so dataset text (group names, system names) can never
become markup. Charts carry ``role="img"``, a ``<title>`` and an ``aria-label`` for screen
readers; every plotted number is also in a table on the same page and in its CSV download.

Spec kinds:

* ``bars``: one horizontal bar per row, ``label`` and ``value`` keys, optional whiskers from
  ``lower``/``upper`` keys (a confidence interval) or ``sd`` (value ± sd), ``domain`` [lo, hi];
* ``histogram``: vertical bars per row (bins), one colour per ``series`` key;
* ``grouped``: horizontal bars grouped by row ``label``, one bar per ``series`` key (e.g. MAR
  per system, one bar per annotator); optional ``domain``;
* ``stacked``: one 100 % horizontal bar per row, segments from the ``series`` keys (shares);
* ``lines``: one line per ``series`` key against the numeric ``x`` key (e.g. an interval's
  projected width against human labels), axes titled ``x_title`` and ``y_title``; ``marks``
  ``{"x": [{"value", "label"}], "y": [...]}`` draws dashed reference lines (the labels so far,
  a target); ``description`` becomes the chart's ``<desc>``; ``y_max`` (optional) tops the y axis:
  a curve above it is cut at the plot's top edge (say so beside the chart: :func:`off_the_top`);
  from a long table, ``series_from`` (a row key: one line per value, e.g. per judge) and ``y``
  (the value key) replace ``series``, and ``where`` ``{key: value}`` keeps matching rows only;
* ``heatmap``: a matrix of cells from long rows, ``row``, ``column`` and ``value`` keys, in
  first-seen order (e.g. a confusion matrix: humans' label × judge's label → units); each
  cell is shaded by its share of its row and shows its count. ``where`` (optional)
  ``{key: value}`` keeps only matching rows (one judge of a table of several).

``series_labels`` (optional) maps series keys to the names shown in legends and tooltips.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

PALETTE = ("#2f5bd3", "#e07b39", "#3a9a6b", "#9b59b6", "#c0392b", "#7f8c8d", "#d4ac0d", "#16a085")
INK = "#1d2330"
MUTED = "#667085"
GRID = "#e3e6ec"
FONT = 'font-family="system-ui, sans-serif" font-size="12"'


def _num(value) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _svg(width: int, height: int, title: str, body: list[str], description: str = "") -> str:
    t = escape(title)
    desc = f"<desc>{escape(description)}</desc>" if description else ""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="100%" style="max-width:{width}px" role="img" aria-label="{t}" {FONT}>'
        f"<title>{t}</title>{desc}" + "".join(body) + "</svg>"
    )


def _truncate(text: str, limit: int = 22) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    value = first
    while value <= hi + 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


LEGEND_ROW = 18  # px between legend rows
LEGEND_CHAR = 7  # px per character of a 12 px label, as the legend lays them out


def _legend_entry_width(label: str) -> float:
    """The width a legend entry takes: its swatch, a gap, its label and the space after it."""
    return 24 + LEGEND_CHAR * len(label)


def _legend(
    series: Sequence[str], x: float, y: float, names: Mapping | None, right: float
) -> tuple[list[str], float]:
    """Swatches and names of ``series`` from ``(x, y)``, wrapped into rows that end before
    ``right``; and the height the rows after the first take (the chart grows by it).

    A name longer than 24 characters is cut with "…" and keeps its whole text in a ``<title>``.
    """
    out: list[str] = []
    offset, row = 0.0, 0
    for i, key in enumerate(series):
        name = str((names or {}).get(key, key))
        label = _truncate(name, 24)
        if offset > 0 and x + offset + _legend_entry_width(label) - 10 > right:
            offset, row = 0.0, row + 1
        top = y + row * LEGEND_ROW
        colour = PALETTE[i % len(PALETTE)]
        out.append(
            f'<rect x="{x + offset:.1f}" y="{top - 9}" width="10" height="10" fill="{colour}"/>'
        )
        whole = f"<title>{escape(name)}</title>" if label != name else ""
        out.append(
            f'<text x="{x + offset + 14:.1f}" y="{top}" fill="{INK}">{whole}{escape(label)}</text>'
        )
        offset += _legend_entry_width(label)
    return out, row * LEGEND_ROW


def bars(rows: Sequence[Mapping], spec: Mapping) -> str:
    """Horizontal bars with optional CI or ± SD whiskers."""
    label_key, value_key = spec["label"], spec["value"]
    points = []
    for row in rows:
        value = _num(row.get(value_key))
        lo = hi = None
        if spec.get("sd") and value is not None:
            sd = _num(row.get(spec["sd"])) or 0.0
            lo, hi = value - sd, value + sd
        elif spec.get("lower") and spec.get("upper"):
            lo, hi = _num(row.get(spec["lower"])), _num(row.get(spec["upper"]))
        points.append((str(row.get(label_key, "")), value, lo, hi))
    # A confidence interval widens the axis; a ± SD spread (descriptive, and often past a
    # bounded scale such as F1's [0, 1]) is clipped to it instead.
    widen = [p[1] for p in points] + ([] if spec.get("sd") else [v for p in points for v in p[2:]])
    values = [v for v in widen if v is not None]
    d_lo, d_hi = spec.get("domain") or [min(values or [0.0]), max(values or [1.0])]
    d_lo = min([d_lo] + values)
    d_hi = max([d_hi] + values)
    if d_hi <= d_lo:
        d_hi = d_lo + 1.0
    label_w, plot_w, row_h, top = 150, 340, 30, 12
    width = label_w + plot_w + 50
    height = top + row_h * max(len(points), 2) + 34

    def x(v: float) -> float:
        return label_w + (v - d_lo) / (d_hi - d_lo) * plot_w

    body = []
    for tick in _ticks(d_lo, d_hi):
        tx = x(tick)
        body.append(
            f'<line x1="{tx:.1f}" y1="{top - 4}" x2="{tx:.1f}" y2="{height - 26}" stroke="{GRID}"/>'
        )
        body.append(
            f'<text x="{tx:.1f}" y="{height - 10}" text-anchor="middle" '
            f'fill="{MUTED}">{tick:g}</text>'
        )
    zero = x(max(d_lo, min(0.0, d_hi)))
    for i, (label, value, lo, hi) in enumerate(points):
        y = top + i * row_h
        body.append(
            f'<text x="{label_w - 8}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end" '
            f'fill="{INK}"><title>{escape(label)}</title>{escape(_truncate(label))}</text>'
        )
        if value is None:
            body.append(
                f'<text x="{label_w + 4}" y="{y + row_h / 2 + 4:.1f}" fill="{MUTED}">'
                "not defined</text>"
            )
            continue
        x0, x1 = sorted((zero, x(value)))
        body.append(
            f'<rect x="{x0:.1f}" y="{y + 5}" width="{max(x1 - x0, 1):.1f}" '
            f'height="{row_h - 10}" rx="2" fill="{PALETTE[0]}" fill-opacity="0.8"/>'
        )
        if lo is not None and hi is not None:
            lx, hx, cy = x(max(lo, d_lo)), x(min(hi, d_hi)), y + row_h / 2
            body.append(
                f'<line x1="{lx:.1f}" y1="{cy:.1f}" x2="{hx:.1f}" y2="{cy:.1f}" '
                f'stroke="{INK}" stroke-width="1.5"/>'
            )
            for wx in (lx, hx):
                body.append(
                    f'<line x1="{wx:.1f}" y1="{cy - 6:.1f}" x2="{wx:.1f}" '
                    f'y2="{cy + 6:.1f}" stroke="{INK}" stroke-width="1.5"/>'
                )
        text_x = x(min(max(value, hi if hi is not None else value), d_hi)) + 6
        body.append(
            f'<text x="{text_x:.1f}" y="{y + row_h / 2 + 4:.1f}" fill="{INK}">{value:.2f}</text>'
        )
    body.append(
        f'<line x1="{zero:.1f}" y1="{top - 4}" x2="{zero:.1f}" y2="{height - 26}" '
        f'stroke="{MUTED}"/>'
    )
    return _svg(width, height, spec.get("title", ""), body)


def histogram(rows: Sequence[Mapping], spec: Mapping) -> str:
    """Vertical bars per bin, one colour per series, side by side within a bin."""
    series = list(spec["series"])
    counts = [[_num(row.get(s)) or 0.0 for s in series] for row in rows]
    peak = max([c for row in counts for c in row] + [1.0])
    left, plot_w, plot_h = 46, 600, 200
    width = left + plot_w + 20
    slot = plot_w / max(len(rows), 1)
    bar_w = (slot - 6) / max(len(series), 1)
    names = spec.get("series_labels") or {}
    body, extra = _legend(series, left, 14, names, width - 10) if len(series) > 1 else ([], 0.0)
    top = 28 + extra
    height = top + plot_h + 40
    for tick in _ticks(0.0, peak, 4):
        ty = top + plot_h - tick / peak * plot_h
        body.append(
            f'<line x1="{left}" y1="{ty:.1f}" x2="{left + plot_w}" y2="{ty:.1f}" stroke="{GRID}"/>'
        )
        body.append(
            f'<text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end" fill="{MUTED}">'
            f"{tick:g}</text>"
        )
    for i, row in enumerate(rows):
        x0 = left + i * slot + 3
        for j, count in enumerate(counts[i]):
            h = count / peak * plot_h
            colour = PALETTE[j % len(PALETTE)]
            body.append(
                f'<rect x="{x0 + j * bar_w:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w:.1f}" '
                f'height="{h:.1f}" fill="{colour}" fill-opacity="0.85">'
                f"<title>{escape(str(names.get(series[j], series[j])))}: {count:g}</title></rect>"
            )
        label = escape(str(row.get(spec["label"], "")))
        body.append(
            f'<text x="{x0 + (slot - 6) / 2:.1f}" y="{top + plot_h + 16}" '
            f'text-anchor="middle" fill="{MUTED}" font-size="10">{label}</text>'
        )
    body.append(
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" '
        f'y2="{top + plot_h}" stroke="{MUTED}"/>'
    )
    return _svg(width, height, spec.get("title", ""), body)


def grouped(rows: Sequence[Mapping], spec: Mapping) -> str:
    """Horizontal bars grouped by row label, one bar (colour) per series."""
    series = list(spec["series"])
    values = [_num(row.get(s)) for row in rows for s in series]
    present = [v for v in values if v is not None]
    d_lo, d_hi = spec.get("domain") or [min(present + [0.0]), max(present + [1.0])]
    d_lo, d_hi = min([d_lo] + present), max([d_hi] + present)
    if d_hi <= d_lo:
        d_hi = d_lo + 1.0
    label_w, plot_w, bar_h, gap = 140, 380, 14, 12
    group_h = bar_h * len(series) + gap
    width = label_w + plot_w + 60
    names = spec.get("series_labels") or {}
    body, extra = _legend(series, label_w, 14, names, width - 10)
    top = 30 + extra
    height = top + group_h * max(len(rows), 1) + 28

    def x(v: float) -> float:
        return label_w + (v - d_lo) / (d_hi - d_lo) * plot_w

    for tick in _ticks(d_lo, d_hi):
        tx = x(tick)
        body.append(
            f'<line x1="{tx:.1f}" y1="{top - 4}" x2="{tx:.1f}" y2="{height - 24}" stroke="{GRID}"/>'
        )
        body.append(
            f'<text x="{tx:.1f}" y="{height - 8}" text-anchor="middle" '
            f'fill="{MUTED}">{tick:g}</text>'
        )
    base = x(max(d_lo, min(0.0, d_hi)))
    for i, row in enumerate(rows):
        y0 = top + i * group_h
        label = str(row.get(spec["label"], ""))
        body.append(
            f'<text x="{label_w - 8}" y="{y0 + bar_h * len(series) / 2 + 4:.1f}" '
            f'text-anchor="end" fill="{INK}"><title>{escape(label)}</title>'
            f"{escape(_truncate(label, 20))}</text>"
        )
        for j, name in enumerate(series):
            value = _num(row.get(name))
            if value is None:
                continue
            x0, x1 = sorted((base, x(value)))
            y = y0 + j * bar_h
            body.append(
                f'<rect x="{x0:.1f}" y="{y + 1}" width="{max(x1 - x0, 1):.1f}" '
                f'height="{bar_h - 2}" fill="{PALETTE[j % len(PALETTE)]}" fill-opacity="0.85">'
                f"<title>{escape(str(names.get(name, name)))}: {value:.3g}</title></rect>"
            )
            body.append(
                f'<text x="{x1 + 4:.1f}" y="{y + bar_h - 3}" fill="{MUTED}" '
                f'font-size="10">{value:.2f}</text>'
            )
    return _svg(width, height, spec.get("title", ""), body)


def stacked(rows: Sequence[Mapping], spec: Mapping) -> str:
    """One 100 % bar per row; segments are the row's shares of the series keys."""
    series = list(spec["series"])
    label_w, plot_w, row_h = 160, 460, 26
    width = label_w + plot_w + 20
    names = spec.get("series_labels") or {}
    body, extra = _legend(series, label_w, 14, names, width - 10)
    top = 30 + extra
    height = top + row_h * max(len(rows), 1) + 10
    for i, row in enumerate(rows):
        y = top + i * row_h
        label = str(row.get(spec["label"], ""))
        body.append(
            f'<text x="{label_w - 8}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end" '
            f'fill="{INK}">{escape(_truncate(label, 22))}</text>'
        )
        parts = [max(_num(row.get(s)) or 0.0, 0.0) for s in series]
        total = sum(parts)
        if total <= 0:
            continue
        x = float(label_w)
        for j, part in enumerate(parts):
            w = part / total * plot_w
            if w <= 0:
                continue
            body.append(
                f'<rect x="{x:.1f}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" '
                f'fill="{PALETTE[j % len(PALETTE)]}" fill-opacity="0.85">'
                f"<title>{escape(str(names.get(series[j], series[j])))}: "
                f"{100 * part / total:.1f} %</title></rect>"
            )
            if w > 34:
                body.append(
                    f'<text x="{x + w / 2:.1f}" y="{y + row_h / 2 + 4:.1f}" '
                    f'text-anchor="middle" fill="#fff" font-size="10">'
                    f"{100 * part / total:.0f} %</text>"
                )
            x += w
    return _svg(width, height, spec.get("title", ""), body)


def heatmap(rows: Sequence[Mapping], spec: Mapping) -> str:
    """A matrix of counts; cells shaded by their share of their row (recall, in a confusion
    matrix with the reference as rows)."""
    where = spec.get("where") or {}
    rows = [r for r in rows if all(r.get(k) == v for k, v in where.items())]
    row_keys = list(dict.fromkeys(str(r.get(spec["row"], "")) for r in rows))
    col_keys = list(dict.fromkeys(str(r.get(spec["column"], "")) for r in rows))
    values = {
        (str(r.get(spec["row"], "")), str(r.get(spec["column"], ""))): _num(r.get(spec["value"]))
        for r in rows
    }
    label_w, cell, top = 150, 64, 46
    width = label_w + cell * max(len(col_keys), 1) + 20
    height = top + cell * max(len(row_keys), 1) + 30
    body = [
        f'<text x="{label_w + cell * len(col_keys) / 2:.1f}" y="14" text-anchor="middle" '
        f'fill="{MUTED}">{escape(spec.get("column_title", spec["column"]))}</text>'
    ]
    for j, col in enumerate(col_keys):
        body.append(
            f'<text x="{label_w + cell * j + cell / 2:.1f}" y="{top - 8}" text-anchor="middle" '
            f'fill="{INK}" font-size="11">{escape(_truncate(col, 10))}</text>'
        )
    for i, row in enumerate(row_keys):
        y = top + cell * i
        body.append(
            f'<text x="{label_w - 8}" y="{y + cell / 2 + 4:.1f}" text-anchor="end" '
            f'fill="{INK}">{escape(_truncate(row, 20))}</text>'
        )
        total = sum(values.get((row, col)) or 0.0 for col in col_keys)
        for j, col in enumerate(col_keys):
            value = values.get((row, col)) or 0.0
            share = value / total if total > 0 else 0.0
            x = label_w + cell * j
            text_fill = "#fff" if share > 0.55 else INK
            body.append(
                f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" '
                f'fill="{PALETTE[0]}" fill-opacity="{0.06 + 0.9 * share:.3f}">'
                f"<title>{escape(row)} → {escape(col)}: {value:g} ({100 * share:.0f} % of the row)"
                f"</title></rect>"
                f'<text x="{x + cell / 2 - 1:.1f}" y="{y + cell / 2 + 4:.1f}" '
                f'text-anchor="middle" fill="{text_fill}">{value:g}</text>'
            )
    body.append(
        f'<text x="{label_w - 8}" y="{top - 8}" text-anchor="end" fill="{MUTED}" '
        f'font-size="11">{escape(spec.get("row_title", spec["row"]))} ↓</text>'
    )
    return _svg(width, height, spec.get("title", ""), body)


def _line_points(rows: Sequence[Mapping], x_key: str, key: str) -> list[tuple[float, float]]:
    points = []
    for row in rows:
        x, y = _num(row.get(x_key)), _num(row.get(key))
        if x is not None and y is not None:
            points.append((x, y))
    return points


def _line_marks(marks: Mapping, x, y, box: tuple[float, float, float, float]) -> list[str]:
    """Dashed reference lines across the plot box (left, top, right, bottom), labelled."""
    left, top, right, bottom = box
    out = []
    for mark in marks.get("x", []):
        mx = x(mark["value"])
        out.append(
            f'<line x1="{mx:.1f}" y1="{top}" x2="{mx:.1f}" y2="{bottom}" stroke="{INK}" '
            f'stroke-dasharray="4 3"/><text x="{mx + 4:.1f}" y="{top + 12}" fill="{INK}">'
            f"{escape(str(mark['label']))}</text>"
        )
    for mark in marks.get("y", []):
        my = y(mark["value"])
        out.append(
            f'<line x1="{left}" y1="{my:.1f}" x2="{right}" y2="{my:.1f}" stroke="{PALETTE[4]}" '
            f'stroke-dasharray="6 3"/><text x="{right - 4}" y="{my - 5:.1f}" '
            f'text-anchor="end" fill="{PALETTE[4]}">{escape(str(mark["label"]))}</text>'
        )
    return out


def _below(points: Sequence[tuple[float, float]], top: float) -> list[list[tuple[float, float]]]:
    """The parts of a polyline at or below ``top``: a segment that crosses it is cut where it
    does (a curve that leaves the plot and comes back gives two parts)."""
    pieces: list[list[tuple[float, float]]] = []
    current: list[tuple[float, float]] = []
    previous = None
    for point in points:
        if previous is not None and (previous[1] > top) != (point[1] > top):
            (x0, y0), (x1, y1) = previous, point
            crossing = (x0 + (top - y0) / (y1 - y0) * (x1 - x0), top)
            current.append(crossing)
            if point[1] > top:
                pieces.append(current)
                current = []
        if point[1] <= top:
            current.append(point)
        previous = point
    if current:
        pieces.append(current)
    return [piece for piece in pieces if len(piece) > 1]


def off_the_top(rows: Sequence[Mapping], spec: Mapping) -> dict[str, list[float]]:
    """{series: its x values whose y is above the spec's ``y_max``} (series that stay inside
    left out): what a chart cut at ``y_max`` does not show."""
    y_max = _num(spec.get("y_max"))
    if y_max is None:
        return {}
    rows, spec = _widened(rows, spec)
    found = {}
    for key in spec["series"]:
        above = [px for px, py in _line_points(rows, spec["x"], key) if py > y_max]
        if above:
            found[key] = above
    return found


def _widened(rows: Sequence[Mapping], spec: Mapping) -> tuple[list[Mapping], Mapping]:
    """A long table's rows (one row per x and series value) as one row per x with a key per
    series, and the spec with those series; a wide spec as it is."""
    where = spec.get("where") or {}
    rows = [row for row in rows if all(row.get(k) == v for k, v in where.items())]
    if not spec.get("series_from"):
        return rows, spec
    by_x: dict = {}
    series: list[str] = []
    for row in rows:
        name = str(row.get(spec["series_from"], ""))
        if name not in series:
            series.append(name)
        by_x.setdefault(row.get(spec["x"]), {spec["x"]: row.get(spec["x"])})[name] = row.get(
            spec["y"]
        )
    return list(by_x.values()), {**spec, "series": series}


def lines(rows: Sequence[Mapping], spec: Mapping) -> str:
    """One line per series against a numeric x, with dashed reference marks."""
    rows, spec = _widened(rows, spec)
    series = list(spec["series"])
    curves = {key: _line_points(rows, spec["x"], key) for key in series}
    marks = spec.get("marks") or {}
    xs = [p[0] for c in curves.values() for p in c] + [m["value"] for m in marks.get("x", [])]
    ys = [p[1] for c in curves.values() for p in c] + [m["value"] for m in marks.get("y", [])]
    if not xs or not ys:
        return ""
    x_lo = min(xs)
    x_hi = max(max(xs), x_lo + 1)
    y_hi = max(ys) * 1.05 if max(ys) > 0 else 1.0
    y_max = _num(spec.get("y_max"))
    if y_max is not None and 0 < y_max < y_hi:
        y_hi = y_max
    left, top, plot_w, plot_h = 60, 28, 420, 220
    right, bottom = left + plot_w, top + plot_h

    def x(v: float) -> float:
        return left + (v - x_lo) / (x_hi - x_lo) * plot_w

    def y(v: float) -> float:
        return bottom - v / y_hi * plot_h

    body = [
        f'<text x="{left}" y="16" fill="{MUTED}">{escape(spec.get("y_title", ""))}</text>',
        f'<text x="{right}" y="{bottom + 34}" text-anchor="end" fill="{MUTED}">'
        f"{escape(spec.get('x_title', spec['x']))}</text>",
    ]
    for tick in _ticks(0.0, y_hi):
        body.append(
            f'<line x1="{left}" y1="{y(tick):.1f}" x2="{right}" y2="{y(tick):.1f}" '
            f'stroke="{GRID}"/><text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" '
            f'fill="{MUTED}">{tick:g}</text>'
        )
    for tick in _ticks(x_lo, x_hi):
        body.append(
            f'<text x="{x(tick):.1f}" y="{bottom + 16}" text-anchor="middle" '
            f'fill="{MUTED}">{tick:g}</text>'
        )
    body.append(
        f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{MUTED}"/>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="{MUTED}"/>'
    )
    names = spec.get("series_labels") or {}
    for i, key in enumerate(series):
        dash = ' stroke-dasharray="2 2"' if i % 2 else ""
        for piece in _below(curves[key], y_hi):
            path = " ".join(f"{x(px):.1f},{y(py):.1f}" for px, py in piece)
            body.append(
                f'<polyline points="{path}" fill="none" stroke="{PALETTE[i % len(PALETTE)]}" '
                f'stroke-width="2"{dash}><title>{escape(str(names.get(key, key)))}</title>'
                "</polyline>"
            )
    body += _line_marks(marks, x, y, (left, top, right, bottom))
    legend, extra = _legend(series, left, bottom + 56, names, right + 10)
    body += legend
    return _svg(
        right + 20, bottom + 66 + extra, spec.get("title", ""), body, spec.get("description", "")
    )


KINDS = {
    "bars": bars,
    "lines": lines,
    "histogram": histogram,
    "grouped": grouped,
    "stacked": stacked,
    "heatmap": heatmap,
}


def render(spec: Mapping, tables: Mapping[str, Mapping]) -> str:
    """SVG markup for ``spec`` drawn from its table; empty string when there is nothing to draw."""
    tbl = tables.get(spec.get("table", ""))
    if not tbl or not tbl["rows"]:
        return ""
    try:
        draw = KINDS[spec["kind"]]
    except KeyError:
        raise ValueError(f"unknown plot kind {spec.get('kind')!r}") from None
    # A judge's all-items rows (:mod:`.coverage`) are in the table, not in its chart.
    rows = [row for row in tbl["rows"] if not row.get("judge_all_items")]
    return draw(rows, spec) if rows else ""
