"""The part of every report that is the same for all task types: agreement per answer field.

For each ``field -> distance`` of the task type's ``measures``: Krippendorff's alpha under that
distance with a unit-bootstrap confidence interval, the numbers of units, pairable units, coders
and values, and, for fields whose values are labels or sets (nominal, ordinal, Jaccard, MASI),
the raw rates a reader expects next to alpha: mean pairwise agreement, "all agree" and "at least
two agree" (exact equality of the values; for sets, the same set). Rates are not shown for
interval and ratio fields, where exact equality of, say, a 0–100 score says little.

How an answer field becomes values (:func:`field_columns`, integer columns for the metrics core;
:func:`reliability_data` is the same as a mapping), so that every task type's
answers can be measured without task-specific code:

* set distances: a list (or set) is one set-valued value (inner lists become tuples);
* other distances, recursively: a dict ``{key: value}`` is one unit per key,
  ``"<item>::<key>"`` (a rank per criterion and output, …); a list of dicts that each carry an
  ``"id"`` or ``"index"`` is one unit per element (a label per sentence, a decision per claim),
  the element's other keys being flattened in turn; any other list is one value, compared as a
  whole; a scalar is one value;
* ``None`` or an absent key is missing. A value that is still not hashable becomes its canonical
  JSON text (nominal comparison).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Mapping
from typing import Any

import numpy as np

from metrics.alpha import ReliabilityColumns, ReliabilityData, alpha_details, coded_values
from metrics.bootstrap import alpha_bootstrap
from metrics.distances import SET_DISTANCES, AgreementError
from metrics.kappa import coded_agreement_rates

from .inputs import BOOTSTRAP_SEED, ReportInput
from .tables import column, table

LABEL_DISTANCES = frozenset({"nominal", "ordinal"}) | SET_DISTANCES
SUBUNIT_SEPARATOR = "::"


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        value = tuple(_hashable(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return json.dumps(value, sort_keys=True, default=str)
    return value


def _set_value(value: Any, distance: str) -> frozenset:
    if isinstance(value, (list, tuple, set, frozenset)):
        try:
            return frozenset(value)
        except TypeError:  # unhashable labels (e.g. [premise, conclusion] pairs)
            return frozenset(_hashable(v) for v in value)
    raise AgreementError(f"expected a list of labels for a {distance} field, got {value!r}")


# Free wording (a revised or added claim's text, an edited evidence text) is not a label: two
# annotators who made the same decision in other words agree. Decisions stay (action, label…).
FREE_TEXT_KEYS = frozenset({"text"})


def _element_key(element: Any) -> Any:
    if isinstance(element, Mapping):
        for key in ("id", "index"):
            if key in element:
                return element[key]
    return None


def _flatten(value: Any, path: str, out: dict[str, Any]) -> None:
    """Leaf values of a non-set answer field under their unit paths (see the module docstring)."""
    if value is None:
        return
    if isinstance(value, Mapping):
        for key, sub in value.items():
            if key in FREE_TEXT_KEYS:
                continue
            _flatten(sub, f"{path}{SUBUNIT_SEPARATOR}{key}", out)
        return
    if isinstance(value, list) and value and all(_element_key(e) is not None for e in value):
        for element in value:
            key = _element_key(element)
            rest = {k: v for k, v in element.items() if k not in ("id", "index")}
            if len(rest) == 1:
                (rest,) = rest.values()
            _flatten(rest, f"{path}{SUBUNIT_SEPARATOR}{key}", out)
        return
    out[path] = _hashable(value)


def field_columns(
    answers: Mapping[str, Mapping[str, Mapping]],
    field: str,
    distance: str,
    units: set[str] | None = None,
) -> ReliabilityColumns:
    """One answer field as :class:`ReliabilityColumns` (see the module docstring for the rules).

    ``answers`` is ``{coder: {unit: answer dict}}``; ``units`` restricts to those item ids. Unit
    keys are item ids or sub-unit paths (``"<item>::<key>"``), in order of first appearance;
    coder keys are the coders of ``answers``. Each distinct answer *object* is read once (its
    set, or its flattened leaves), so answers parsed once per distinct JSON text (as
    :func:`agreement.reports.gather.gather` does) cost a dict lookup each.
    """
    set_valued = distance in SET_DISTANCES
    unit_index: dict[str, int] = {}
    unit_col: array[int] = array("q")
    coder_col: array[int] = array("q")
    value_col: array[int] = array("q")
    table: list[Any] = []
    seen: dict[int, Any] = {}  # id(answer value) -> its table code, or its [(suffix, code)]
    alive: list[Any] = []  # the objects whose id is a key of ``seen``
    leaf_code: dict[Any, int] = {}
    for coder_no, by_unit in enumerate(answers.values()):
        for unit, answer in by_unit.items():
            if units is not None and unit not in units:
                continue
            if type(answer) is not dict and not isinstance(answer, Mapping):
                continue
            value = answer.get(field)
            if value is None:
                continue
            found = seen.get(id(value))
            if found is None:
                if set_valued:
                    found = len(table)
                    table.append(_set_value(value, distance))
                else:
                    leaves: dict[str, Any] = {}
                    _flatten(value, "", leaves)
                    found = [
                        (suffix, leaf_code.setdefault(leaf, len(leaf_code)))
                        for suffix, leaf in leaves.items()
                    ]
                seen[id(value)] = found
                alive.append(value)
            if set_valued:
                unit_col.append(unit_index.setdefault(unit, len(unit_index)))
                coder_col.append(coder_no)
                value_col.append(found)
                continue
            for suffix, code in found:
                path = unit + suffix
                unit_col.append(unit_index.setdefault(path, len(unit_index)))
                coder_col.append(coder_no)
                value_col.append(code)
    return ReliabilityColumns(
        units=np.frombuffer(unit_col, dtype=np.int64),
        coders=np.frombuffer(coder_col, dtype=np.int64),
        values=np.frombuffer(value_col, dtype=np.int64),
        table=table if set_valued else list(leaf_code),
        n_units=len(unit_index),
        n_coders=len(answers),
        unit_keys=list(unit_index),
        coder_keys=list(answers),
    )


def columns_of(
    report_input: ReportInput, field: str, distance: str, kind: str | None = None
) -> ReliabilityColumns:
    """:func:`field_columns` of ``report_input``'s answers on its items (of the coders of
    ``kind`` only, when given), built once per report input: the agreement table and a task
    type's section read the same columns. Columns are read-only (``select`` makes new ones)."""
    coders = report_input.coder_ids(kind) if kind is not None else None
    answers = report_input.answers
    if coders is not None and set(coders) != set(answers):
        answers = report_input.answers_of(kind)
    key = (tuple(answers), field, distance)
    cached = report_input.columns_cache.get(key)
    if cached is None:
        cached = field_columns(answers, field, distance, set(report_input.items))
        report_input.columns_cache[key] = cached
    return cached


def reliability_data(
    answers: Mapping[str, Mapping[str, Mapping]],
    field: str,
    distance: str,
    units: set[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """``{unit: {coder: value}}`` for one answer field: :func:`field_columns` as a mapping,
    for sections that combine it with other data."""
    columns = field_columns(answers, field, distance, units)
    unit_keys, coder_keys, table = columns.unit_keys, columns.coder_keys, columns.table
    data: dict[str, dict[str, Any]] = {}
    for u, c, v in zip(
        columns.units.tolist(), columns.coders.tolist(), columns.values.tolist(), strict=True
    ):
        data.setdefault(unit_keys[u], {})[coder_keys[c]] = table[v]
    return data


def alpha_with_ci(
    data: ReliabilityData,
    distance: str,
    *,
    n_boot: int,
    confidence: float = 0.95,
    prefix: str = "alpha",
) -> dict:
    """Alpha, its bootstrap interval and counts as flat row keys; ``<prefix>_error`` when undefined.

    Keys: ``<prefix>``, ``<prefix>_lower``, ``<prefix>_upper``, ``pairable_units``, ``values``,
    ``<prefix>_no_variation`` (every value is the same: alpha is 0/0, undefined, and the 1.0
    kept in ``<prefix>`` is a convention; cells show "undefined: every value is the same"),
    ``ci_expected`` ("resampled" or "fixed" D_e, see
    :func:`agreement.alpha_bootstrap`), ``<prefix>_ci_method`` (the interval in words) and
    ``<prefix>_outside_ci`` (the estimate lies outside its interval: too few units to trust it).
    """
    try:
        details = alpha_details(data, distance)
    except AgreementError as exc:
        return {
            prefix: None,
            f"{prefix}_lower": None,
            f"{prefix}_upper": None,
            "pairable_units": 0,
            "values": 0,
            f"{prefix}_error": str(exc),
        }
    boot = alpha_bootstrap(
        data, distance, n_boot=n_boot, confidence=confidence, seed=BOOTSTRAP_SEED
    )
    outside = (
        boot.lower is not None
        and boot.upper is not None
        and not boot.lower <= details.alpha <= boot.upper
    )
    fixed = " with D_e held at the full data's" if boot.expected == "fixed" else ""
    return {
        prefix: details.alpha,
        f"{prefix}_lower": boot.lower,
        f"{prefix}_upper": boot.upper,
        f"{prefix}_ci_method": (
            f"{round(100 * confidence)} % percentile bootstrap CI of this α, resampling items{fixed}"
        ),
        f"{prefix}_outside_ci": outside,
        "pairable_units": details.n_pairable_units,
        "values": details.n_values,
        f"{prefix}_no_variation": details.no_variation,
        "ci_expected": boot.expected,
        f"{prefix}_error": "",
    }


def field_row(report_input: ReportInput, field: str, distance: str) -> dict:
    """One row of the agreement table for ``field`` (from columns: no mapping is built)."""
    try:
        columns = columns_of(report_input, field, distance)
    except AgreementError as exc:
        return {
            "field": field,
            "distance": distance,
            "units": 0,
            "coders": 0,
            "alpha": None,
            "alpha_lower": None,
            "alpha_upper": None,
            "alpha_error": str(exc),
        }
    row: dict[str, Any] = {
        "field": field,
        "distance": distance,
        "units": columns.n_units,
        "coders": len(np.unique(columns.coders)),
    }
    options = report_input.options
    row.update(
        alpha_with_ci(columns, distance, n_boot=options.n_boot, confidence=options.confidence)
    )
    row["pairwise"] = row["all_agree"] = row["at_least_two"] = None
    if distance in LABEL_DISTANCES:
        try:
            units, codes = coded_values(columns, distance)
        except AgreementError:
            return row  # the alpha error already says why
        rates = coded_agreement_rates(units, codes, n_units=columns.n_units)
        row["pairwise"], row["all_agree"], row["at_least_two"] = rates
    return row


def agreement_table(report_input: ReportInput) -> dict:
    """The per-field agreement table of a report."""
    rows = [field_row(report_input, f, d) for f, d in report_input.measures.items()]
    confidence = round(100 * report_input.options.confidence)
    return table(
        "Agreement per answer field",
        [
            column("field", "Field", "text"),
            column("distance", "Distance", "text"),
            column("alpha", f"Krippendorff's α [{confidence} % CI]", "ci"),
            column("units", "Units", "int"),
            column("pairable_units", "Pairable units", "int"),
            column("coders", "Coders", "int"),
            column("values", "Values", "int"),
            column("pairwise", "Pairwise agreement", "pct"),
            column("all_agree", "All agree", "pct"),
            column("at_least_two", "At least two agree", "pct"),
        ],
        rows,
        note=(
            f"Bootstrap: {report_input.options.n_boot} replicates resampling units (seed "
            f"{BOOTSTRAP_SEED}). Units with fewer than two answers are not pairable and drop out. "
            'Raw rates count identical answers (for sets: the same set); "at least two agree" '
            "needs three or more answers on a unit."
        ),
    )
