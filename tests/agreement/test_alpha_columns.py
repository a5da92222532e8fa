"""The columnar input of Krippendorff's alpha (:class:`metrics.ReliabilityColumns`).

The mapping and the triples are adapted to columns, so every metric is computed once; these
tests check that columns built by hand — shuffled, with repeated and missing table entries, as a
database would give them — reach the same alpha and bootstrap, and that bad columns are refused.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metrics import (
    AgreementError,
    ReliabilityColumns,
    alpha_bootstrap,
    alpha_details,
    krippendorff_alpha,
    reliability_columns,
)

from .test_alpha import (
    K2011_EXPECTED,
    k2011_mapping,
    rating_tables,
    sets_with_empty,
    small_ints,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def as_columns(data: dict, rnd: random.Random | None = None, *, as_lists: bool = False):
    """Columns from ``{unit: {coder: value}}`` the way a database gives them: one table entry per
    answer row (so equal values repeat in the table), missing values as -1 or a None entry, rows
    in any order."""
    units = {u: i for i, u in enumerate(data)}
    coders = {c: i for i, c in enumerate(sorted({c for row in data.values() for c in row}))}
    rows = [(units[u], coders[c], v) for u, row in data.items() for c, v in row.items()]
    if rnd is not None:
        rnd.shuffle(rows)
    table, codes = [], []
    for i, (_, _, v) in enumerate(rows):
        if v is None and i % 2:
            codes.append(-1)
            continue
        codes.append(len(table))
        table.append(sorted(v) if as_lists and v is not None else v)
    return ReliabilityColumns(
        units=np.array([r[0] for r in rows], dtype=np.int64),
        coders=np.array([r[1] for r in rows], dtype=np.int64),
        values=np.array(codes, dtype=np.int64),
        table=table,
        n_units=len(units),
        unit_keys=list(units),
        coder_keys=list(coders),
    )


@pytest.mark.parametrize("distance", sorted(K2011_EXPECTED))
def test_columns_reproduce_krippendorff_2011_as_the_mapping(distance):
    data = k2011_mapping()
    columns = as_columns(data, random.Random(1))
    assert krippendorff_alpha(columns, distance) == pytest.approx(
        K2011_EXPECTED[distance], abs=1e-6
    )
    ours, theirs = alpha_details(columns, distance), alpha_details(data, distance)
    # Counts exactly; the disagreements to the last bits only up to summation order (numpy
    # 2.4.6 on this machine sums the ratio level's columns 3e-16 away from the mapping).
    for name in ("distance", "n_units", "n_pairable_units", "n_values", "n_distinct_values"):
        assert getattr(ours, name) == getattr(theirs, name), name
    for name in ("alpha", "observed_disagreement", "expected_disagreement"):
        assert getattr(ours, name) == pytest.approx(getattr(theirs, name), rel=1e-12), name


@SETTINGS
@given(rating_tables(small_ints), st.randoms(use_true_random=False))
def test_shuffled_columns_give_the_mapping_alpha_for_every_classic_level(data, rnd):
    columns = as_columns(data, rnd)
    for distance in ("nominal", "ordinal", "interval", "ratio"):
        ours, theirs = alpha_details(columns, distance), alpha_details(data, distance)
        assert ours.n_values == theirs.n_values
        assert ours.n_pairable_units == theirs.n_pairable_units
        assert ours.alpha == pytest.approx(theirs.alpha, abs=1e-12)


@SETTINGS
@given(rating_tables(sets_with_empty), st.randoms(use_true_random=False), st.booleans())
def test_set_columns_merge_equal_sets_given_as_lists(data, rnd, as_lists):
    columns = as_columns(data, rnd, as_lists=as_lists)
    for distance in ("jaccard", "masi"):
        ours, theirs = alpha_details(columns, distance), alpha_details(data, distance)
        # Distinct values are distinct sets, however often the table repeats them.
        assert ours.n_distinct_values == theirs.n_distinct_values
        assert ours.alpha == pytest.approx(theirs.alpha, abs=1e-12)


def test_bootstrap_of_columns_equals_bootstrap_of_the_mapping():
    rng = np.random.default_rng(5)
    data = {
        u: {c: frozenset(np.flatnonzero(rng.random(5) < 0.4).tolist()) for c in "abc"}
        for u in range(300)
    }
    columns = as_columns(data, random.Random(2))
    ours = alpha_bootstrap(columns, "jaccard", n_boot=200, seed=3)
    theirs = alpha_bootstrap(data, "jaccard", n_boot=200, seed=3)
    assert (ours.lower, ours.upper) == pytest.approx((theirs.lower, theirs.upper), abs=1e-12)


def test_the_mapping_adapter_codes_each_distinct_raw_value_once_and_alpha_merges_equal_sets():
    data = {"u1": {"a": [1, 2], "b": [2, 1]}, "u2": {"a": [1, 2], "b": None}}
    columns = reliability_columns(data, "jaccard")
    assert columns.units.tolist() == [0, 0, 1, 1]
    assert columns.values.tolist() == [0, 1, 0, 2]
    assert columns.table == [(1, 2), (2, 1), None]
    details = alpha_details(columns, "jaccard")
    assert (details.n_distinct_values, details.n_values, details.alpha) == (1, 2, 1.0)


def test_a_coder_with_two_values_for_one_unit_is_refused_naming_both():
    columns = ReliabilityColumns(
        units=[0, 0, 0],
        coders=[0, 1, 1],
        values=[0, 1, 0],
        table=["yes", "no"],
        unit_keys=["claim-7"],
        coder_keys=["ann-a", "ann-b"],
    )
    with pytest.raises(AgreementError, match=r"'ann-b' rated unit 'claim-7' more than once"):
        krippendorff_alpha(columns)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"units": [0, 1], "values": [0], "table": ["x"]}, "one length"),
        ({"units": [0, 1], "values": [0, 2], "table": ["x", "y"]}, "index the table"),
        ({"units": [0, -1], "values": [0, 0], "table": ["x"]}, "unit codes"),
        ({"units": [0, 3], "values": [0, 0], "table": ["x"], "n_units": 2}, "unit codes"),
        ({"units": [0, 0], "values": [0, 0], "table": ["x"], "coders": [0]}, "same length"),
    ],
)
def test_malformed_columns_are_refused(kwargs, message):
    with pytest.raises(AgreementError, match=message):
        ReliabilityColumns(**kwargs)


def test_unhashable_table_entries_are_refused_for_label_distances():
    columns = ReliabilityColumns(units=[0, 0], values=[0, 1], table=[{"a": 1}, "b"])
    with pytest.raises(AgreementError, match="hashable"):
        krippendorff_alpha(columns, "nominal")


def test_units_without_values_count_as_units():
    columns = ReliabilityColumns(units=[0, 0], values=[0, 0], table=["x"], n_units=5)
    assert alpha_details(columns).n_units == 5


@SETTINGS
@given(st.lists(st.lists(st.integers(0, 3), max_size=6), min_size=1, max_size=15))
def test_coded_agreement_rates_equal_the_rates_of_label_lists_bit_for_bit(items):
    from metrics.kappa import (
        all_agree_rate,
        at_least_two_agree_rate,
        coded_agreement_rates,
        pairwise_agreement,
    )

    units = [u for u, labels in enumerate(items) for _ in labels]
    labels = [label for item in items for label in item]
    expected = (pairwise_agreement(items), all_agree_rate(items), at_least_two_agree_rate(items))
    ours = coded_agreement_rates(np.array(units, dtype=np.int64), np.array(labels, dtype=np.int64))
    assert np.array_equal(np.array(ours), np.array(expected), equal_nan=True)


@pytest.mark.parametrize("kind", ["jaccard", "masi"])
def test_set_distances_from_the_table_of_distinct_sets_equal_those_per_pair(kind):
    from metrics.distances import SetMetric

    rng = np.random.default_rng(9)
    sets = list({frozenset(np.flatnonzero(rng.random(7) < 0.4).tolist()) for _ in range(300)})
    metric = SetMetric(np.ones(len(sets)), sets, kind)
    a = rng.integers(0, len(sets), 5 * len(sets) ** 2)
    b = rng.integers(0, len(sets), len(a))
    per_pair = metric._pair_distances(a, b)
    assert metric._lookup is None
    from_table = metric.pair_distances(a, b)
    assert metric._lookup is not None  # as many pairs as the table has entries: it was built
    assert np.array_equal(from_table, per_pair)
    assert np.array_equal(metric.pair_distances(a[:10], b[:10]), per_pair[:10])


# Answers of mixed hashable types as one mapping can hold them: numbers that are equal across
# types (1, 1.0 and True), -1 and -2 (equal hashes in CPython, unequal values), text, tuples,
# frozensets, and the missing values None and NaN.
MIXED_ANSWERS = (0, 1, -1, -2, 1.0, True, False, 0.0, 2.5, "a", "b", "1", (1, 2), (2, 1))
MIXED_ANSWERS += (frozenset({1, 2}), frozenset(), b"a", None, math.nan)


def fresh_copy(value):
    """An equal answer as a new object (as parsed from its own JSON row), not a shared one."""
    if isinstance(value, float):
        return float(repr(value))  # a new NaN is a new object: only equal to itself
    if isinstance(value, str | bytes):
        return value[:0] + value[:1] + value[1:]
    if isinstance(value, tuple | frozenset):
        return type(value)(list(value))
    return value


@st.composite
def answer_mappings(draw, answers):
    """``{item: {annotator: answer}}`` with unequal annotator sets per item (some items with
    one answer or none), answers drawn from ``answers``, some as distinct equal objects."""
    n_items = draw(st.integers(1, 12))
    annotators = [f"ann{i}" for i in range(draw(st.integers(2, 6)))]
    data = {}
    for item in range(n_items):
        who = draw(st.lists(st.sampled_from(annotators), unique=True, max_size=len(annotators)))
        row = {}
        for annotator in who:
            value = draw(st.sampled_from(answers))
            row[annotator] = fresh_copy(value) if draw(st.booleans()) else value
        data[f"claim-{item}"] = row
    # At least one pairable item, with two non-missing answers.
    data["claim-pair"] = {"ann0": fresh_copy(answers[0]), "ann1": fresh_copy(answers[1])}
    return data


def dict_coded(data: dict) -> tuple[list[int], list]:
    """The mapping's value codes the plain way: ``dict.fromkeys`` over all values, then a lookup
    per value (what the adapter did before it coded each value in one pass)."""
    flat = [v for row in data.values() for v in row.values()]
    index = dict.fromkeys(flat)
    for i, key in enumerate(index):
        index[key] = i
    return [index[v] for v in flat], list(index)


@SETTINGS
@given(answer_mappings(MIXED_ANSWERS))
def test_the_mapping_is_coded_as_a_dict_codes_it_and_gives_the_columns_alpha(data):
    columns = reliability_columns(data, "nominal")
    codes, table = dict_coded(data)
    assert columns.values.tolist() == codes
    # The same entries, each the first of its equals (1 before 1.0 before True, say).
    assert len(columns.table) == len(table)
    assert all(ours is theirs for ours, theirs in zip(columns.table, table, strict=True))
    sizes = [len(row) for row in data.values()]
    assert columns.units.tolist() == [u for u, m in enumerate(sizes) for _ in range(m)]

    ours, theirs = alpha_details(data, "nominal"), alpha_details(as_columns(data), "nominal")
    assert ours == theirs


numeric_answers = (0, 1, 2, -1, -2, 1.0, 2.0, 3.5, 0.0, None, math.nan)


@SETTINGS
@given(answer_mappings(numeric_answers))
def test_numeric_answers_of_mixed_types_give_the_columns_alpha_at_every_numeric_level(data):
    for distance in ("ordinal", "interval"):
        assert alpha_details(data, distance) == alpha_details(as_columns(data), distance)


set_answers = (frozenset({0, 1}), (1, 0), [0, 1], frozenset(), [], (2,), [3, 2], None, math.nan)


@SETTINGS
@given(answer_mappings(set_answers))
def test_set_answers_given_as_frozensets_tuples_and_lists_give_the_columns_alpha(data):
    for distance in ("jaccard", "masi"):
        assert alpha_details(data, distance) == alpha_details(as_columns(data), distance)
