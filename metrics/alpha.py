"""Krippendorff's alpha over plain data (no Django).

Method (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"):
every value is replaced by an integer code for the distinct value it equals.
Within a unit with ``m_u >= 2`` values, each ordered pair of values from
different coders contributes ``1 / (m_u - 1)`` to the coincidence matrix
``o_vv'``. Its marginals ``n_v`` are the pairable value frequencies and
``n = sum n_v``. Then

    D_o = (1 / n) * sum_{v,v'} o_vv' d(v, v')
    D_e = 1 / (n (n - 1)) * sum_{v,v'} n_v n_v' d(v, v')
    alpha = 1 - D_o / D_e

The coincidence matrix is never materialised: ``sum o_vv' d(v, v')`` is the
sum of per-unit disagreements (distances of all within-unit pairs, computed
vectorised over units of equal size), and the expected term comes from the
metric's closed form or its blocked kernel (see :mod:`metrics.distances`).
Units with fewer than two non-missing values drop out, as in Krippendorff's
definition.

Every input is first turned into :class:`ReliabilityColumns`: integer unit,
coder and value codes plus a table of the values. The report builds those
columns straight from the database; ``{unit: {coder: value}}`` and
``(coder, unit, value)`` triples are adapted to them
(:func:`reliability_columns`), so each step is written once. Set-valued tables
are canonicalised per distinct entry, and set distances between the distinct
sets are looked up in a small V x V table once that pays
(:class:`metrics.distances.SetMetric`).

The ``krippendorff`` package is not called at run time, although it handles
the four classic levels: it needs a coders x units matrix (or units x values
counts) and builds a units x V x V array, and ``bench/agreement_speed.py``
measured it slower than this module once the input is converted (on the
same coded 100k-unit data, 34-136 ms for its core against 7-13 ms here;
converting the mapping to its matrix alone took longer than this module's
whole parse). It stays the reference in the tests.
"""

from __future__ import annotations

import gc
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, count
from operator import itemgetter
from typing import Any

import numpy as np

from .distances import (
    NUMERIC_DISTANCES,
    SET_DISTANCES,
    AgreementError,
    DistanceSpec,
    Metric,
    build_metric,
    canonical_set,
    check_distance,
    distance_name,
    is_missing,
    numeric_key,
)

__all__ = [
    "AgreementError",
    "AlphaResult",
    "ReliabilityColumns",
    "ReliabilityData",
    "alpha_details",
    "coded_values",
    "krippendorff_alpha",
    "reliability_columns",
]


# Units with more values than this are handled through their distinct values
# and counts rather than all m (m - 1) / 2 value pairs.
_SMALL_UNIT = 16
# Values gathered per vectorised step when walking units of equal size.
_UNIT_CHUNK = 1 << 20


@dataclass(frozen=True)
class ReliabilityColumns:
    """Reliability data as integer columns: the form every alpha computation works on.

    One entry per value: ``units[i]`` (a unit code in ``0 .. n_units - 1``), ``values[i]`` (an
    index into ``table``, or ``-1`` for a missing value) and, optionally, ``coders[i]`` (a
    coder code in ``0 .. n_coders - 1``; when given, a coder with two values for one unit is
    refused, as for triples). ``table`` holds the values themselves, each listed once or more:
    entries that are the same value (equal labels; for set distances, the same set given as a
    list, tuple or frozenset) are merged, and a None (or NaN) entry is missing. Values need not
    be grouped by unit. ``unit_keys`` and ``coder_keys`` only name units and coders in errors.

    Columns come straight from a database (``values_list`` of unit and coder ids and each
    distinct answer parsed once), so nothing is built per value in Python. The mapping and
    triples forms are adapted to this one by :func:`reliability_columns`.
    """

    units: np.ndarray
    values: np.ndarray
    table: Sequence[Any]
    coders: np.ndarray | None = None
    n_units: int = -1
    n_coders: int = -1
    unit_keys: Sequence[Hashable] | None = None
    coder_keys: Sequence[Hashable] | None = None

    def __post_init__(self) -> None:
        units = np.asarray(self.units, dtype=np.int64)
        values = np.asarray(self.values, dtype=np.int64)
        object.__setattr__(self, "units", units)
        object.__setattr__(self, "values", values)
        if units.shape != values.shape or units.ndim != 1:
            raise AgreementError(
                f"units and values must be 1-d columns of one length, got shapes "
                f"{units.shape} and {values.shape}"
            )
        if len(values) and (values.min() < -1 or values.max() >= len(self.table)):
            raise AgreementError(
                f"value codes must index the table of {len(self.table)} value(s) (or be -1)"
            )
        n_units = self.n_units if self.n_units >= 0 else int(units.max()) + 1 if len(units) else 0
        if len(units) and (units.min() < 0 or units.max() >= n_units):
            raise AgreementError(f"unit codes must lie in 0 .. {n_units - 1}")
        object.__setattr__(self, "n_units", n_units)
        if self.coders is not None:
            coders = np.asarray(self.coders, dtype=np.int64)
            object.__setattr__(self, "coders", coders)
            if coders.shape != units.shape:
                raise AgreementError("coders must be a column of the same length as units")
            n_coders = (
                self.n_coders if self.n_coders >= 0 else int(coders.max()) + 1 if len(coders) else 0
            )
            if len(coders) and (coders.min() < 0 or coders.max() >= n_coders):
                raise AgreementError(f"coder codes must lie in 0 .. {n_coders - 1}")
            object.__setattr__(self, "n_coders", n_coders)

    def grouped(self) -> ReliabilityColumns:
        """The same values listed unit by unit (a stable sort: each unit keeps the order of its
        values), as alpha groups them anyway: selections of grouped columns (:meth:`select`)
        need no sorting again."""
        units = self.units
        if len(units) < 2 or bool(np.all(units[1:] >= units[:-1])):
            return self
        order = np.argsort(units, kind="stable")
        return ReliabilityColumns(
            units=units[order],
            values=self.values[order],
            table=self.table,
            coders=self.coders[order] if self.coders is not None else None,
            n_units=self.n_units,
            n_coders=self.n_coders,
            unit_keys=self.unit_keys,
            coder_keys=self.coder_keys,
        )

    def select(self, keep: np.ndarray) -> ReliabilityColumns:
        """The values where the boolean column ``keep`` is True (a subset of units, all coders
        but one…), with the same table, unit and coder codes: no value is re-coded."""
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != self.units.shape:
            raise AgreementError("keep must be a boolean column as long as units")
        return ReliabilityColumns(
            units=self.units[keep],
            values=self.values[keep],
            table=self.table,
            coders=self.coders[keep] if self.coders is not None else None,
            n_units=self.n_units,
            n_coders=self.n_coders,
            unit_keys=self.unit_keys,
            coder_keys=self.coder_keys,
        )


#: ``{unit: {coder: value}}``, an iterable of ``(coder, unit, value)`` triples, or columns.
ReliabilityData = (
    Mapping[Hashable, Mapping[Hashable, Any]]
    | Iterable[tuple[Hashable, Hashable, Any]]
    | ReliabilityColumns
)


@dataclass(frozen=True)
class AlphaResult:
    """Krippendorff's alpha with the quantities it was computed from.

    ``n_units`` counts every unit in the input; ``n_pairable_units`` those with
    at least two non-missing values (the only ones alpha uses); ``n_values``
    is ``n``, the number of pairable values; ``n_distinct_values`` the number
    of distinct values among them. ``observed_disagreement`` and
    ``expected_disagreement`` are Krippendorff's ``D_o`` and ``D_e`` in the
    data's units (for interval values beyond about 1e154 they overflow to inf,
    below about 1e-162 they underflow to 0; alpha is computed on rescaled
    values and is right either way); ``alpha = 1 - D_o / D_e``, except that
    ``alpha = 1.0`` when ``D_e == 0`` (see :func:`krippendorff_alpha`).

    ``no_variation`` is True when the expected disagreement is 0 — every
    pairable value is the same — so alpha is 0/0, undefined: the 1.0 reported
    then is a convention, and pages show "undefined: every value is the same".
    """

    alpha: float
    distance: str
    n_units: int
    n_pairable_units: int
    n_values: int
    n_distinct_values: int
    observed_disagreement: float
    expected_disagreement: float
    no_variation: bool = False


@dataclass
class _Prepared:
    """Pairable data in coded form, shared by alpha and the bootstrap."""

    distance: str
    n_units: int
    codes: np.ndarray  # compact value code per pairable value, grouped by unit
    unit_sizes: np.ndarray  # m_u per pairable unit
    unit_starts: np.ndarray  # offset of each pairable unit's first value in ``codes``
    metric: Metric

    @property
    def n_values(self) -> int:
        return len(self.codes)


def krippendorff_alpha(data: ReliabilityData, distance: DistanceSpec = "nominal") -> float:
    """Krippendorff's alpha for ``data`` under ``distance``.

    ``data`` is ``{unit: {coder: value}}``, an iterable of
    ``(coder, unit, value)`` triples (units and coders: any hashables), or
    :class:`ReliabilityColumns` (integer codes, e.g. read from a database). A
    value of None (or float NaN) is missing. ``distance`` is "nominal",
    "ordinal", "interval", "ratio" (numeric values; "ratio" non-negative),
    "jaccard" or "masi" (values are iterables of hashable labels, compared as
    sets; the empty set is a legitimate answer), or a callable ``d(a, b)``
    that is symmetric, non-negative and zero for equal values (it is only
    ever called on two distinct values).

    "ordinal" is Krippendorff's rank metric, which depends on how often each
    value is used (pairable marginal frequencies), not the plain difference
    of ranks. Units with fewer than two values drop out.

    Raises :class:`AgreementError` (a ValueError) when no unit has two or more
    values, for an unknown distance, for values the distance cannot handle,
    or when a ``(coder, unit)`` pair occurs twice among the triples.

    When every pairable value is the same (more generally, when the expected
    disagreement ``D_e`` is 0), ``D_o`` is 0 too and alpha is 0/0; this
    function returns 1.0. That is NLTK's convention: coders never disagreed,
    and a float result keeps dashboards and aggregations simple. Krippendorff
    calls such data uninformative rather than reliable, and the
    ``krippendorff`` package raises instead; use :func:`alpha_details` and
    its ``no_variation`` flag to tell this case apart.
    """
    return alpha_details(data, distance).alpha


def alpha_details(data: ReliabilityData, distance: DistanceSpec = "nominal") -> AlphaResult:
    """Like :func:`krippendorff_alpha` but returns an :class:`AlphaResult` with counts and D_o, D_e."""
    prep = prepare(data, distance)
    disagreements = unit_disagreements(prep)
    n = prep.n_values
    observed_sum = float(disagreements.sum())
    expected_sum = prep.metric.expected_sum() if prep.metric.n_values > 1 else 0.0
    unit2 = prep.metric.unit * prep.metric.unit  # sums are in rescaled units; see Metric.unit
    return AlphaResult(
        alpha=alpha_from_sums(observed_sum, expected_sum, n),
        distance=prep.distance,
        n_units=prep.n_units,
        n_pairable_units=len(prep.unit_sizes),
        n_values=n,
        n_distinct_values=prep.metric.n_values,
        observed_disagreement=observed_sum / n * unit2,
        expected_disagreement=expected_sum / (n * (n - 1)) * unit2,
        no_variation=expected_sum <= 0.0,
    )


def alpha_from_sums(observed_sum: float, expected_sum: float, n: float) -> float:
    """``1 - D_o / D_e`` from the unnormalised sums; 1.0 when ``D_e == 0`` (no variation)."""
    if expected_sum <= 0.0:
        return 1.0
    return 1.0 - (n - 1.0) * observed_sum / expected_sum


# --------------------------------------------------------------------------
# Input normalisation
# --------------------------------------------------------------------------


def prepare(data: ReliabilityData, distance: DistanceSpec) -> _Prepared:
    """Code ``data`` for ``distance``: drop missing values and unpairable units, build the metric.

    Every input form is first turned into :class:`ReliabilityColumns` (the mapping and the
    triples by :func:`reliability_columns`); the rest works on those integer columns only.
    """
    check_distance(distance)
    set_valued = isinstance(distance, str) and distance in SET_DISTANCES
    columns = data if isinstance(data, ReliabilityColumns) else reliability_columns(data, distance)
    return _prepare_columns(columns, distance, set_valued)


def _prepare_columns(
    columns: ReliabilityColumns, distance: DistanceSpec, set_valued: bool
) -> _Prepared:
    n_units = columns.n_units
    numeric = isinstance(distance, str) and distance in NUMERIC_DISTANCES
    unit_of, coder_of, codes, values = _present_values(columns, set_valued, numeric)

    if coder_of is not None:
        _check_one_value_per_coder(
            unit_of, coder_of, n_units, columns.n_coders, columns.unit_keys, columns.coder_keys
        )
    # Values listed unit by unit are already grouped; otherwise group them (stable sort).
    if len(unit_of) > 1 and not np.all(unit_of[1:] >= unit_of[:-1]):
        order = np.argsort(unit_of, kind="stable")
        unit_of, codes = unit_of[order], codes[order]

    sizes = np.bincount(unit_of, minlength=n_units)
    pairable = sizes >= 2
    if not pairable.any():
        raise AgreementError(
            f"no pairable unit: alpha needs at least one unit with two or more non-missing values "
            f"({n_units} unit(s), {len(codes)} non-missing value(s) in total)"
        )
    codes = codes[pairable[unit_of]]
    unit_sizes = sizes[pairable]

    # Compact codes to the values that occur in pairable units.
    counts = np.bincount(codes, minlength=len(values))
    used = counts > 0
    new_code = np.cumsum(used) - 1
    codes = new_code[codes]
    kept = np.flatnonzero(used)
    values = [values[i] for i in kept.tolist()]
    n_v = counts[used]

    starts = np.zeros(len(unit_sizes), dtype=np.int64)
    np.cumsum(unit_sizes[:-1], out=starts[1:])
    return _Prepared(
        distance=distance_name(distance),
        n_units=n_units,
        codes=codes,
        unit_sizes=unit_sizes,
        unit_starts=starts,
        metric=build_metric(distance, values, n_v),
    )


def _present_values(
    columns: ReliabilityColumns, set_valued: bool, numeric: bool = False
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, list]:
    """(unit codes, coder codes or None, value codes, distinct values) of the non-missing values;
    equal table entries share one value code."""
    remap, values, valid = _code_table(columns.table, set_valued, numeric)
    raw, unit_of, coder_of = columns.values, columns.units, columns.coders
    present = raw >= 0
    if not present.all():
        raw, unit_of = raw[present], unit_of[present]
        coder_of = coder_of[present] if coder_of is not None else None
    codes = remap[raw]
    keep = valid[codes]
    if not keep.all():
        codes, unit_of = codes[keep], unit_of[keep]
        coder_of = coder_of[keep] if coder_of is not None else None
    return unit_of, coder_of, codes, values


def coded_values(
    columns: ReliabilityColumns, distance: DistanceSpec
) -> tuple[np.ndarray, np.ndarray]:
    """(unit code, value code) of each non-missing value of ``columns``, with one value code per
    distinct value under ``distance`` (for sets: per distinct set), for raw agreement rates
    (:func:`metrics.kappa.coded_agreement_rates`)."""
    check_distance(distance)
    set_valued = isinstance(distance, str) and distance in SET_DISTANCES
    numeric = isinstance(distance, str) and distance in NUMERIC_DISTANCES
    units, _coders, codes, _values = _present_values(columns, set_valued, numeric)
    return units, codes


def reliability_columns(data: ReliabilityData, distance: DistanceSpec) -> ReliabilityColumns:
    """The mapping or triples input as :class:`ReliabilityColumns` (a thin adapter).

    Values are coded by the distinct (hashable) value they equal; set-valued lists become
    tuples first, so that they can be counted. ``distance`` only decides that.
    """
    if isinstance(data, ReliabilityColumns):
        return data
    set_valued = isinstance(distance, str) and distance in SET_DISTANCES
    if isinstance(data, Mapping):
        coded = _code_mapping(data)
        if coded is None:  # rows that are not dicts, or unhashable values: the general path
            n_units, unit_of, flat = _flatten_mapping(data)
            codes, table = _raw_codes(flat, set_valued)
        else:
            n_units, unit_of, codes, table = coded
        return ReliabilityColumns(
            units=unit_of, values=codes, table=table, n_units=n_units, unit_keys=list(data)
        )
    n_units, unit_of, flat, coder_of, unit_keys, coder_keys = _flatten_triples(data)
    codes, table = _raw_codes(flat, set_valued)
    return ReliabilityColumns(
        units=unit_of,
        values=codes,
        table=table,
        coders=coder_of,
        n_units=n_units,
        unit_keys=unit_keys,
        coder_keys=coder_keys,
    )


def _code_mapping(data: Mapping) -> tuple[int, np.ndarray, np.ndarray, list] | None:
    """``{unit: {coder: value}}`` with dict rows and hashable values, coded in one pass:
    (n_units, unit code per value, value code per value, distinct values); None for any other
    input, which :func:`_flatten_mapping` and :func:`_raw_codes` handle (and refuse).

    Each value is read once, straight from its row: no list of all values is built, so an
    answer object is touched once (a list of them would touch each again to count and release
    the reference; with distinct answer objects spread over memory, every touch is a cache miss).
    """
    rows = list(data.values())
    try:
        sizes = np.fromiter(map(len, rows), np.int64, len(rows))
        values = chain.from_iterable(map(dict.values, rows))
        codes, table = _first_appearance_codes(values, int(sizes.sum()))
    except TypeError:
        return None
    unit_of = np.repeat(np.arange(len(rows), dtype=np.int64), sizes)
    return len(rows), unit_of, codes, table


def _first_appearance_codes(items: Iterable[Hashable], n: int) -> tuple[np.ndarray, list]:
    """Code each of the ``n`` items by the distinct item it equals, in order of first
    appearance: (codes, distinct items, each the first of its equals). Raises TypeError for an
    unhashable item.

    One dict lookup per item: ``setdefault`` maps each distinct item to the position where it
    first appears, and those positions are then ranked in numpy. Equal items are merged exactly
    as ``dict.fromkeys`` merges them (same hash, then identity or ``==``), so 1, 1.0 and True
    are one item, and a NaN only equals itself (the same object).
    """
    index: dict = {}
    first = np.fromiter(map(index.setdefault, items, count()), np.int64, n)
    is_first = np.zeros(n, dtype=bool)
    is_first[first] = True
    rank = np.cumsum(is_first, dtype=np.int64)
    rank -= 1
    return rank[first], list(index)


def _flatten_mapping(data: Mapping) -> tuple[int, np.ndarray, list]:
    """Values of ``{unit: {coder: value}}`` in unit order, with each value's unit index."""
    units = list(data.values())
    try:
        sizes = np.fromiter(map(len, units), np.int64, len(units))
        try:
            # map(dict.values) is the fastest way to flatten millions of values.
            flat = list(chain.from_iterable(map(dict.values, units)))
        except TypeError:
            flat = list(chain.from_iterable(map(_values_of, units)))
    except TypeError as exc:
        raise AgreementError(
            "expected {unit: {coder: value}} (a mapping of mappings) "
            "or an iterable of (coder, unit, value) triples"
        ) from exc
    unit_of = np.repeat(np.arange(len(units), dtype=np.int64), sizes)
    return len(units), unit_of, flat


def _values_of(ratings: Any) -> Iterable[Any]:
    if isinstance(ratings, dict):
        return ratings.values()
    if isinstance(ratings, Mapping):
        return list(ratings.values())
    raise TypeError(type(ratings).__name__)


def _flatten_triples(data: Iterable) -> tuple[int, np.ndarray, list, np.ndarray, list, list]:
    """Columns of ``(coder, unit, value)`` triples, units and coders as integer codes.

    Returns (n_units, unit code per value, values, coder code per value,
    unit keys, coder keys); codes follow order of first appearance.
    """
    rows = data if isinstance(data, list) else list(data)
    if not rows:
        empty = np.zeros(0, np.int64)
        return 0, empty, [], empty, [], []
    try:
        lengths = set(map(len, rows))
    except TypeError:
        lengths = set()
    if lengths != {3}:
        raise AgreementError(
            "expected an iterable of (coder, unit, value) triples or {unit: {coder: value}}"
        )
    # itemgetter columns: zip(*rows) is several times slower on millions of rows.
    coders = list(map(itemgetter(0), rows))
    units = list(map(itemgetter(1), rows))
    values = list(map(itemgetter(2), rows))
    unit_codes, unit_keys = _index(units, "unit")
    coder_codes, coder_keys = _index(coders, "coder")
    return len(unit_keys), unit_codes, values, coder_codes, unit_keys, coder_keys


def _check_one_value_per_coder(
    unit_of: np.ndarray,
    coder_of: np.ndarray,
    n_units: int,
    n_coders: int,
    unit_keys: Sequence | None,
    coder_keys: Sequence | None,
) -> None:
    """Raise AgreementError if some coder has two non-missing values for one unit."""
    key = unit_of * n_coders + coder_of
    if len(key) < 2 or bool(np.all(key[1:] > key[:-1])):
        return  # strictly increasing (values unit by unit, coders in order): no pair twice
    if n_units * n_coders <= 4 * len(key) + (1 << 20):
        # Dense key space: counting is O(n), much cheaper than sorting.
        counts = np.bincount(key, minlength=n_units * n_coders)
        dup_keys = np.flatnonzero(counts > 1)
        first = int(dup_keys[0]) if len(dup_keys) else None
    else:
        key = np.sort(key)
        dup = np.flatnonzero(key[1:] == key[:-1])
        first = int(key[dup[0]]) if len(dup) else None
    if first is not None:
        unit, coder = divmod(first, n_coders)
        unit_name = unit_keys[unit] if unit_keys is not None else unit
        coder_name = coder_keys[coder] if coder_keys is not None else coder
        raise AgreementError(
            f"coder {coder_name!r} rated unit {unit_name!r} more than once; "
            "give each (coder, unit) pair one value"
        )


def _index(keys: Iterable[Hashable], what: str) -> tuple[np.ndarray, list]:
    """Integer code per key, in order of first appearance."""
    keys = keys if isinstance(keys, list) else list(keys)
    try:
        return _first_appearance_codes(keys, len(keys))
    except TypeError as exc:
        raise AgreementError(f"{what} identifiers must be hashable") from exc


def _raw_codes(flat: list, set_valued: bool) -> tuple[np.ndarray, list]:
    """Code each value by the distinct (hashable) value it equals: (codes, distinct values)."""
    try:
        return _first_appearance_codes(flat, len(flat))
    except TypeError as exc:
        if not set_valued:
            bad = next(v for v in flat if not _hashable(v))
            raise AgreementError(
                f"values must be hashable for this distance, got {type(bad).__name__} {bad!r}"
            ) from exc
        flat = _hashable_keys(flat)
        try:
            return _first_appearance_codes(flat, len(flat))
        except TypeError as exc2:
            raise AgreementError("set-valued distances need iterables of hashable labels") from exc2


def _code_table(
    table: Sequence[Any], set_valued: bool, numeric: bool = False
) -> tuple[np.ndarray, list, np.ndarray]:
    """Merge the entries of a value table that are the same value.

    Returns (code of each entry, distinct values, valid) where ``valid[code]`` is False for
    the missing value. Set-valued entries are canonicalised to frozensets, so equal sets given
    as different types (a list, a tuple and a frozenset) get one code; for ``numeric``
    distances (ordinal, interval, ratio) a numeric string is the number it spells, so ``"2"``
    (from a CSV) and ``2`` (from JSON) are one value, not two ranks. The cost is per
    *distinct* entry, never per value.
    """
    canon: dict[Any, int] = {}
    values: list = []
    valid: list[bool] = []
    remap = np.empty(len(table), dtype=np.int64)
    missing_code = None
    for i, entry in enumerate(table):
        if is_missing(entry):
            if missing_code is None:
                missing_code = len(values)
                values.append(None)
                valid.append(False)
            remap[i] = missing_code
            continue
        key = canonical_set(entry) if set_valued else numeric_key(entry) if numeric else entry
        try:
            code = canon.get(key)
        except TypeError as exc:
            raise AgreementError(
                f"values must be hashable for this distance, got {type(entry).__name__} {entry!r}"
            ) from exc
        if code is None:
            code = canon[key] = len(values)
            values.append(key)
            valid.append(True)
        remap[i] = code
    return remap, values, np.array(valid, dtype=bool)


def _hashable_keys(flat: list) -> list:
    """Unhashable answers (lists, sets) as tuples, so that they can be counted in a dict.

    Tuples are cheaper to build than frozensets, and the distinct keys are
    made frozensets afterwards (merging tuples that are the same set).
    Millions of new objects would trigger the cyclic garbage collector over
    and over (measured: alpha on 1M units of list answers took 7.1 s instead
    of 2.0 s), so it is paused while they are built.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return [v if v is None or v.__hash__ is not None else tuple(v) for v in flat]
    except TypeError:
        return [None if is_missing(v) else canonical_set(v) for v in flat]
    finally:
        if was_enabled:
            gc.enable()


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


# --------------------------------------------------------------------------
# Observed disagreement
# --------------------------------------------------------------------------


def unit_disagreements(prep: _Prepared) -> np.ndarray:
    """Per pairable unit: ``sum over ordered within-unit pairs i != j of d / (m_u - 1)``.

    Their sum is ``n * D_o``. Units of equal size are processed together as
    an (units x m) code matrix, one vectorised distance call per column pair;
    large units are reduced to their distinct values and counts first.
    """
    codes, sizes, starts, metric = prep.codes, prep.unit_sizes, prep.unit_starts, prep.metric
    out = np.zeros(len(sizes))
    for m in np.unique(sizes).tolist():
        units = np.flatnonzero(sizes == m)
        if m > _SMALL_UNIT:
            for u in units.tolist():
                out[u] = _large_unit_disagreement(codes[starts[u] : starts[u] + m], metric)
            continue
        step = max(1, _UNIT_CHUNK // m)
        cols = np.arange(m)
        for lo in range(0, len(units), step):
            chunk = units[lo : lo + step]
            mat = codes[starts[chunk][:, None] + cols]
            acc = np.zeros(len(chunk))
            for i in range(m - 1):
                left = mat[:, i]
                for j in range(i + 1, m):
                    acc += metric.pair_distances(left, mat[:, j])
            out[chunk] = acc * (2.0 / (m - 1))
    return out


def _large_unit_disagreement(unit_codes: np.ndarray, metric: Metric) -> float:
    """Disagreement of one unit with many values, via its distinct values and their counts."""
    m = len(unit_codes)
    distinct, counts = np.unique(unit_codes, return_counts=True)
    counts = counts.astype(np.float64)
    total = 0.0
    for i in range(len(distinct) - 1):
        others = distinct[i + 1 :]
        d = metric.pair_distances(np.full(len(others), distinct[i]), others)
        total += counts[i] * float(counts[i + 1 :] @ d)
    return 2.0 * total / (m - 1)
