"""The part of every report that is the same for all task types: agreement per answer field.

For each ``field -> distance`` of the task type's ``measures``: Krippendorff's alpha under that
distance with a unit-bootstrap confidence interval, the numbers of units, pairable units, coders
and values, and, for fields whose values are labels or sets (nominal, ordinal, Jaccard, MASI),
the raw rates a reader expects next to alpha: mean pairwise agreement, "all agree" and "at least
two agree" (exact equality of the values; for sets, the same set). Rates are not shown for
interval and ratio fields, where exact equality of, say, a 0–100 score says little.

How an answer field becomes values (:func:`reliability_data`):

* set distances: a list (or set) is one set-valued value; ``None`` or an absent key is missing;
* other distances: a scalar is one value; a dict ``{key: value}`` is one value per key, each its
  own unit ``"<item>::<key>"`` (e.g. a rank per system, a stance per sentence); a list is one
  value (compared as a whole, as a tuple).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agreement.alpha import alpha_details
from agreement.bootstrap import alpha_bootstrap
from agreement.distances import SET_DISTANCES, AgreementError
from agreement.kappa import all_agree_rate, at_least_two_agree_rate, pairwise_agreement

from .inputs import BOOTSTRAP_SEED, ReportInput
from .tables import column, table

LABEL_DISTANCES = frozenset({"nominal", "ordinal"}) | SET_DISTANCES
SUBUNIT_SEPARATOR = "::"


def _as_value(value: Any, distance: str) -> Any:
    if value is None:
        return None
    if distance in SET_DISTANCES:
        if isinstance(value, (list, tuple, set, frozenset)):
            return frozenset(value)
        raise AgreementError(f"expected a list of labels for a {distance} field, got {value!r}")
    if isinstance(value, list):
        return tuple(value)
    return value


def reliability_data(
    answers: Mapping[str, Mapping[str, Mapping]],
    field: str,
    distance: str,
    units: set[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """``{unit: {coder: value}}`` for one answer field (see the module docstring for the rules).

    ``answers`` is ``{coder: {unit: answer dict}}``; ``units`` restricts to those item ids.
    """
    data: dict[str, dict[str, Any]] = {}
    for coder, by_unit in answers.items():
        for unit, answer in by_unit.items():
            if units is not None and unit not in units:
                continue
            if not isinstance(answer, Mapping):
                continue
            value = answer.get(field)
            if isinstance(value, Mapping) and distance not in SET_DISTANCES:
                for key, sub in value.items():
                    if sub is not None:
                        data.setdefault(f"{unit}{SUBUNIT_SEPARATOR}{key}", {})[coder] = _as_value(
                            sub, distance
                        )
                continue
            value = _as_value(value, distance)
            if value is not None:
                data.setdefault(unit, {})[coder] = value
    return data


def alpha_with_ci(
    data: Mapping[str, Mapping[str, Any]],
    distance: str,
    *,
    n_boot: int,
    confidence: float = 0.95,
    prefix: str = "alpha",
) -> dict:
    """Alpha, its bootstrap interval and counts as flat row keys; ``<prefix>_error`` when undefined.

    Keys: ``<prefix>``, ``<prefix>_lower``, ``<prefix>_upper``, ``pairable_units``, ``values``,
    ``no_variation``, ``ci_expected`` ("resampled" or "fixed" D_e, see
    :func:`agreement.alpha_bootstrap`).
    """
    try:
        details = alpha_details(data, distance)
    except AgreementError as exc:
        return {prefix: None, f"{prefix}_lower": None, f"{prefix}_upper": None,
                "pairable_units": 0, "values": 0, f"{prefix}_error": str(exc)}
    boot = alpha_bootstrap(
        data, distance, n_boot=n_boot, confidence=confidence, seed=BOOTSTRAP_SEED
    )
    return {
        prefix: details.alpha,
        f"{prefix}_lower": boot.lower,
        f"{prefix}_upper": boot.upper,
        "pairable_units": details.n_pairable_units,
        "values": details.n_values,
        "no_variation": details.no_variation,
        "ci_expected": boot.expected,
        f"{prefix}_error": "",
    }


def field_row(report_input: ReportInput, field: str, distance: str) -> dict:
    """One row of the agreement table for ``field``."""
    data = reliability_data(report_input.answers, field, distance, set(report_input.items))
    coders = {c for values in data.values() for c in values}
    row: dict[str, Any] = {
        "field": field,
        "distance": distance,
        "units": len(data),
        "coders": len(coders),
    }
    options = report_input.options
    row.update(alpha_with_ci(data, distance, n_boot=options.n_boot, confidence=options.confidence))
    if distance in LABEL_DISTANCES:
        labels = [list(values.values()) for values in data.values()]
        row["pairwise"] = pairwise_agreement(labels)
        row["all_agree"] = all_agree_rate(labels)
        row["at_least_two"] = at_least_two_agree_rate(labels)
    else:
        row["pairwise"] = row["all_agree"] = row["at_least_two"] = None
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
            "Raw rates count identical answers (for sets: the same set); \"at least two agree\" "
            "needs three or more answers on a unit."
        ),
    )
