"""Krippendorff's alpha: canonical values, cross-checks against NLTK and krippendorff, edge cases."""

from __future__ import annotations

import math
import random

import krippendorff
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from nltk.metrics import agreement as nltk_agreement
from nltk.metrics import distance as nltk_distance

from metrics import (
    AgreementError,
    alpha_details,
    jaccard_distance,
    krippendorff_alpha,
    masi_distance,
)
from metrics.alpha import ReliabilityColumns, prepare

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C:
# four coders, twelve units, "." = missing.
K2011_ROWS = {
    "A": "1 2 3 3 2 1 4 1 2 . . .",
    "B": "1 2 3 3 2 2 4 1 2 5 . 3",
    "C": ". 3 3 3 2 3 4 2 2 5 1 .",
    "D": "1 2 3 3 2 4 4 1 2 5 1 .",
}
K2011_EXPECTED = {
    "nominal": 0.743421,
    "ordinal": 0.815388,
    "interval": 0.849107,
    "ratio": 0.797403,
}


def k2011_mapping() -> dict[int, dict[str, int | None]]:
    data: dict[int, dict[str, int | None]] = {}
    for coder, row in K2011_ROWS.items():
        for unit, token in enumerate(row.split(), start=1):
            data.setdefault(unit, {})[coder] = None if token == "." else int(token)
    return data


def to_triples(data: dict) -> list[tuple]:
    return [(coder, unit, value) for unit, row in data.items() for coder, value in row.items()]


def reference_alpha(data: dict, d) -> float:
    """Textbook alpha straight from the definition, O(n^2) pure Python."""
    units = [[v for v in row.values() if v is not None] for row in data.values()]
    units = [u for u in units if len(u) >= 2]
    n = sum(len(u) for u in units)
    observed = sum(
        d(u[i], u[j]) / (len(u) - 1)
        for u in units
        for i in range(len(u))
        for j in range(len(u))
        if i != j
    )
    pooled = [v for u in units for v in u]
    expected = sum(d(a, b) for a in pooled for b in pooled) / (n - 1)
    return 1.0 if expected == 0 else 1.0 - observed / expected


def close(a: float, b: float, tol: float = 1e-9) -> bool:
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------


@st.composite
def rating_tables(draw, value_strategy, max_units: int = 12, max_coders: int = 5):
    """{unit: {coder: value or None}} with at least one pairable unit."""
    n_units = draw(st.integers(1, max_units))
    n_coders = draw(st.integers(2, max_coders))
    missing = draw(st.floats(0.0, 0.5))
    data = {}
    for u in range(n_units):
        row = {}
        for c in range(n_coders):
            value = draw(value_strategy)
            is_missing = draw(st.floats(0.0, 1.0)) < missing
            row[f"c{c}"] = None if is_missing else value
        data[f"u{u}"] = row
    assume(any(sum(v is not None for v in row.values()) >= 2 for row in data.values()))
    return data


small_sets = st.frozensets(st.integers(0, 5), min_size=1, max_size=4)
sets_with_empty = st.frozensets(st.integers(0, 5), max_size=4)
small_ints = st.integers(0, 6)


def nltk_alpha(data: dict, distance) -> float:
    triples = [(c, u, v) for c, u, v in to_triples(data) if v is not None]
    return nltk_agreement.AnnotationTask(data=triples, distance=distance).alpha()


# --------------------------------------------------------------------------
# Canonical values
# --------------------------------------------------------------------------


@pytest.mark.parametrize("distance", sorted(K2011_EXPECTED))
def test_alpha_reproduces_krippendorff_2011_example(distance):
    assert krippendorff_alpha(k2011_mapping(), distance) == pytest.approx(
        K2011_EXPECTED[distance], abs=1e-6
    )


@pytest.mark.parametrize("distance", sorted(K2011_EXPECTED))
def test_triples_and_mapping_inputs_give_the_same_alpha(distance):
    data = k2011_mapping()
    assert krippendorff_alpha(to_triples(data), distance) == krippendorff_alpha(data, distance)


def test_triples_may_be_a_generator_and_may_omit_missing_values():
    data = k2011_mapping()
    triples = ((c, u, v) for c, u, v in to_triples(data) if v is not None)
    assert krippendorff_alpha(triples, "nominal") == pytest.approx(0.743421, abs=1e-6)


def test_nominal_alpha_accepts_text_labels():
    labels = {1: "true", 2: "mostly-true", 3: "half", 4: "false", 5: "pants-on-fire"}
    data = {
        unit: {coder: None if v is None else labels[v] for coder, v in row.items()}
        for unit, row in k2011_mapping().items()
    }
    assert krippendorff_alpha(data, "nominal") == pytest.approx(0.743421, abs=1e-6)


def test_alpha_details_reports_counts_and_disagreements():
    result = alpha_details(k2011_mapping(), "nominal")
    assert result.n_units == 12
    assert result.n_pairable_units == 11  # unit 12 has a single value
    assert result.n_values == 40
    assert result.n_distinct_values == 5
    assert result.alpha == pytest.approx(
        1 - result.observed_disagreement / result.expected_disagreement
    )
    assert result.distance == "nominal"
    assert not result.no_variation


def test_missing_values_may_be_nan_as_well_as_none():
    data = k2011_mapping()
    with_nan = {
        u: {c: math.nan if v is None else v for c, v in row.items()} for u, row in data.items()
    }
    assert krippendorff_alpha(with_nan, "interval") == krippendorff_alpha(data, "interval")


# --------------------------------------------------------------------------
# Cross-checks
# --------------------------------------------------------------------------


@SETTINGS
@given(rating_tables(small_sets))
def test_jaccard_alpha_equals_nltk_on_random_set_valued_data(data):
    ours = krippendorff_alpha(data, "jaccard")
    theirs = nltk_alpha(data, nltk_distance.jaccard_distance)
    assert close(ours, theirs), (ours, theirs)


@SETTINGS
@given(rating_tables(small_sets))
def test_masi_alpha_equals_nltk_on_random_set_valued_data(data):
    ours = krippendorff_alpha(data, "masi")
    theirs = nltk_alpha(data, nltk_distance.masi_distance)
    assert close(ours, theirs), (ours, theirs)


@SETTINGS
@given(st.data())
def test_set_alphas_with_empty_sets_equal_the_textbook_definition(draw):
    data = draw.draw(rating_tables(sets_with_empty))
    for name, func in (("jaccard", jaccard_distance), ("masi", masi_distance)):
        assert close(krippendorff_alpha(data, name), reference_alpha(data, func))
        # The callable path (Python calls over distinct pairs) must agree too.
        assert close(krippendorff_alpha(data, func), krippendorff_alpha(data, name))


@SETTINGS
@given(st.frozensets(st.integers(0, 6), min_size=1), st.frozensets(st.integers(0, 6), min_size=1))
def test_scalar_set_distances_equal_nltk_exactly(a, b):
    assert jaccard_distance(a, b) == nltk_distance.jaccard_distance(a, b)
    assert masi_distance(a, b) == nltk_distance.masi_distance(a, b)


def test_empty_answers_agree_with_each_other_and_disagree_with_everything_else():
    empty = frozenset()
    assert jaccard_distance(empty, empty) == 0.0
    assert masi_distance(empty, empty) == 0.0
    assert jaccard_distance(empty, {1}) == 1.0
    assert masi_distance(empty, {1, 2}) == 1.0
    data = {1: {"a": set(), "b": set()}, 2: {"a": {1}, "b": {1}}, 3: {"a": set(), "b": {2}}}
    assert krippendorff_alpha(data, "jaccard") == pytest.approx(
        reference_alpha(data, jaccard_distance)
    )


def test_identical_answers_with_labels_nobody_else_used_have_distance_zero():
    # Labels used by only one distinct set get no bit in the bitmask; a set
    # compared with itself must still count them.
    data = {1: {"a": {1, 2}, "b": {1, 2}}, 2: {"a": {3}, "b": {4}}, 3: {"a": {1}, "b": {1, 5}}}
    for name, func in (("jaccard", jaccard_distance), ("masi", masi_distance)):
        assert krippendorff_alpha(data, name) == pytest.approx(
            reference_alpha(data, func), abs=1e-12
        )


def test_masi_uses_nltk_weights_for_subsets_and_overlaps():
    assert masi_distance({1, 2}, {1, 2, 3, 4}) == pytest.approx(1 - 0.5 * 2 / 3)
    assert masi_distance({1, 2}, {2, 3}) == pytest.approx(1 - (1 / 3) / 3)
    assert masi_distance({1}, {2}) == 1.0
    assert masi_distance({1, 2}, {2, 1}) == 0.0


@pytest.mark.parametrize("distance", ["nominal", "ordinal", "interval", "ratio"])
@SETTINGS
@given(data=rating_tables(small_ints, max_units=15, max_coders=5))
def test_classic_levels_equal_the_krippendorff_package(distance, data):
    result = alpha_details(data, distance)
    assume(not result.no_variation)  # the package raises or returns nan there
    coders = sorted({c for row in data.values() for c in row})
    matrix = np.array(
        [[np.nan if row.get(c) is None else row[c] for row in data.values()] for c in coders],
        dtype=float,
    )
    theirs = krippendorff.alpha(reliability_data=matrix, level_of_measurement=distance)
    assert close(result.alpha, float(theirs)), (result.alpha, theirs)


@SETTINGS
@given(rating_tables(small_ints), st.randoms(use_true_random=False))
def test_alpha_does_not_depend_on_unit_or_coder_order_or_names(data, rnd: random.Random):
    units = list(data)
    rnd.shuffle(units)
    coders = sorted({c for row in data.values() for c in row})
    renamed = dict(zip(coders, rnd.sample(range(1000), len(coders)), strict=True))
    shuffled = {}
    for i, unit in enumerate(units):
        row = list(data[unit].items())
        rnd.shuffle(row)
        shuffled[("unit", i)] = {renamed[c]: v for c, v in row}
    triples = to_triples(shuffled)
    rnd.shuffle(triples)
    for distance in ("nominal", "ordinal", "interval"):
        expected = krippendorff_alpha(data, distance)
        assert close(krippendorff_alpha(shuffled, distance), expected, 1e-12)
        assert close(krippendorff_alpha(triples, distance), expected, 1e-12)


@SETTINGS
@given(rating_tables(small_ints))
def test_a_callable_equal_to_nominal_gives_the_nominal_alpha(data):
    def same_or_not(a, b):
        return 0.0 if a == b else 1.0

    assert close(krippendorff_alpha(data, same_or_not), krippendorff_alpha(data, "nominal"), 1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_set_alphas_over_more_than_64_shared_labels_use_multiword_bitmasks(seed):
    rng = np.random.default_rng(seed)
    data = {
        u: {
            c: frozenset(np.flatnonzero(rng.random(300) < rng.uniform(0.3, 0.7)).tolist())
            for c in range(int(rng.integers(3, 6)))
        }
        for u in range(int(rng.integers(2, 7)))
    }
    assert prepare(data, "jaccard").metric.words.shape[1] > 1
    for name, func in (("jaccard", jaccard_distance), ("masi", masi_distance)):
        assert close(krippendorff_alpha(data, name), reference_alpha(data, func))


def test_units_with_many_coders_match_the_krippendorff_package():
    rng = np.random.default_rng(3)
    matrix = rng.integers(0, 5, size=(40, 30)).astype(float)
    matrix[rng.random(matrix.shape) < 0.2] = np.nan
    data = {
        u: {c: None if np.isnan(matrix[c, u]) else int(matrix[c, u]) for c in range(40)}
        for u in range(30)
    }
    for distance in ("nominal", "ordinal", "interval", "ratio"):
        theirs = krippendorff.alpha(reliability_data=matrix, level_of_measurement=distance)
        assert close(krippendorff_alpha(data, distance), float(theirs))


def test_set_values_may_be_lists_tuples_or_sets():
    frozen = {
        1: {"a": frozenset({1, 2}), "b": frozenset({2})},
        2: {"a": frozenset(), "b": frozenset({3})},
    }
    loose = {1: {"a": [2, 1], "b": (2,)}, 2: {"a": [], "b": {3}}}
    assert krippendorff_alpha(loose, "jaccard") == krippendorff_alpha(frozen, "jaccard")
    mixed = {1: {"a": (1, 2), "b": frozenset({2, 1})}, 2: {"a": (), "b": frozenset({3})}}
    assert alpha_details(mixed, "masi").n_distinct_values == 3


# --------------------------------------------------------------------------
# Degenerate input and errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        {},
        [],
        {1: {"a": 1}, 2: {"b": 2}},
        {1: {"a": 1, "b": None}, 2: {"a": None, "b": None}},
        [("a", 1, 1), ("b", 2, 1)],
    ],
)
def test_no_pairable_unit_raises_a_clear_error(data):
    with pytest.raises(AgreementError, match="no pairable unit"):
        krippendorff_alpha(data)


def test_agreement_error_is_a_value_error():
    assert issubclass(AgreementError, ValueError)


@pytest.mark.parametrize("distance", ["nominal", "ordinal", "interval", "ratio"])
def test_all_values_agreeing_gives_alpha_one(distance):
    data = {1: {"a": 3, "b": 3}, 2: {"a": 3, "b": 3, "c": 3}, 3: {"a": 7}}
    result = alpha_details(data, distance)
    assert result.alpha == 1.0
    assert result.no_variation
    assert result.expected_disagreement == 0.0


@pytest.mark.parametrize("distance", ["jaccard", "masi"])
def test_all_set_answers_agreeing_gives_alpha_one(distance):
    for answer in (frozenset(), frozenset({1, 4})):
        data = {u: {"a": answer, "b": answer} for u in range(3)}
        assert krippendorff_alpha(data, distance) == 1.0


def test_single_coder_units_drop_out():
    data = k2011_mapping()
    padded = dict(data)
    padded.update({f"solo{i}": {"A": i % 5 + 1, "B": None} for i in range(20)})
    for distance in K2011_EXPECTED:
        assert krippendorff_alpha(padded, distance) == pytest.approx(
            krippendorff_alpha(data, distance), abs=1e-12
        )
    assert alpha_details(padded).n_pairable_units == 11


def test_a_coder_rating_a_unit_twice_is_an_error():
    with pytest.raises(AgreementError, match="more than once"):
        krippendorff_alpha([("a", 1, 1), ("b", 1, 2), ("a", 1, 2)])


def test_duplicate_ratings_are_found_among_many_coders_and_units():
    # A sparse (unit, coder) key space takes the sorting path of the check.
    triples = [(f"coder{(2 * u + k) % 2000}", u, k) for u in range(2000) for k in range(2)]
    assert krippendorff_alpha(triples) == pytest.approx(
        krippendorff_alpha({u: {"x": 0, "y": 1} for u in range(2000)})
    )
    triples.insert(17, ("coder1999", 1999, 0))
    with pytest.raises(AgreementError, match="'coder1999' rated unit 1999"):
        krippendorff_alpha(triples)


def test_unknown_distance_is_an_error():
    with pytest.raises(AgreementError, match="unknown distance"):
        krippendorff_alpha(k2011_mapping(), "euclidean")


def test_numeric_distances_reject_text_values():
    with pytest.raises(AgreementError, match="numeric"):
        krippendorff_alpha({1: {"a": "x", "b": "y"}}, "interval")


def test_ratio_distance_rejects_negative_values():
    with pytest.raises(AgreementError, match="non-negative"):
        krippendorff_alpha({1: {"a": -1, "b": 2}}, "ratio")


def test_set_distances_reject_plain_strings():
    with pytest.raises(AgreementError, match="string"):
        krippendorff_alpha({1: {"a": "AB", "b": {"A"}}}, "jaccard")


def test_set_distances_reject_unhashable_labels():
    with pytest.raises(AgreementError, match="hashable labels"):
        krippendorff_alpha({1: {"a": [[1]], "b": [[2]]}}, "jaccard")


def test_unhashable_values_for_nominal_are_an_error():
    with pytest.raises(AgreementError, match="hashable"):
        krippendorff_alpha({1: {"a": [1], "b": [1]}}, "nominal")


def test_malformed_input_is_an_error():
    with pytest.raises(AgreementError, match="triples"):
        krippendorff_alpha([(1, 2)])
    with pytest.raises(AgreementError, match="mapping"):
        krippendorff_alpha({1: [1, 2]})


# --------------------------------------------------------------------------
# Edge cases found by the fidelity audit (issue 28)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("distance", ["ordinal", "interval", "ratio"])
def test_a_numeric_string_is_the_number_it_spells_for_numeric_distances(distance):
    # A CSV import beside a JSON one: "2" and 2 are one value, not two ranks.
    mixed = {"u1": {"a": 1, "b": 1}, "u2": {"a": 2, "b": "2"}, "u3": {"a": 3, "b": 3}}
    integers = {"u1": {"a": 1, "b": 1}, "u2": {"a": 2, "b": 2}, "u3": {"a": 3, "b": 3}}
    result = alpha_details(mixed, distance)
    assert result == alpha_details(integers, distance)
    assert result.alpha == 1.0 and result.n_distinct_values == 3
    columns = ReliabilityColumns(units=[0, 0, 1, 1], values=[0, 1, 2, 3], table=[2, "2.0", 1, 4])
    assert alpha_details(columns, distance).n_distinct_values == 3


def test_numeric_strings_stay_labels_for_nominal_alpha_and_text_is_still_refused():
    mixed = {"u1": {"a": 1, "b": 1}, "u2": {"a": 2, "b": "2"}, "u3": {"a": 3, "b": 3}}
    assert alpha_details(mixed, "nominal").n_distinct_values == 4
    with pytest.raises(AgreementError, match="numeric values, got 'two'"):
        krippendorff_alpha({"u1": {"a": 1, "b": "two"}}, "ordinal")


# Scaling every value by c multiplies each difference by c up to one rounding of each value
# (relative eps / 2), so on K2011's integers 1..5 (differences >= 1, |x| <= 5) a squared
# difference moves by at most ~ 4 * 5 * eps relative, and each sum of 40-odd such terms adds at
# most ~ 40 eps of its own: alpha agrees to ~ 100 eps ≈ 2e-14. The tolerance is 1e-12.
@pytest.mark.parametrize("distance", ["interval", "ratio"])
@pytest.mark.parametrize("scale", [1e154, 1e200, 1e300, 1e-200, 1e-300, 2.0**-1000])
def test_interval_and_ratio_alpha_do_not_depend_on_the_scale_of_the_values(distance, scale):
    data = k2011_mapping()
    scaled = {
        u: {c: None if v is None else v * scale for c, v in r.items()} for u, r in data.items()
    }
    result = alpha_details(scaled, distance)
    assert not result.no_variation
    assert math.isclose(result.alpha, K2011_EXPECTED[distance], abs_tol=5e-7)
    assert close(result.alpha, krippendorff_alpha(data, distance), 1e-12)


# The floats these levels gave before values were rescaled (float.hex, read off the code
# before the change): rescaling is by a power of two, which is exact, so not one bit moves.
BEFORE_RESCALING = {
    "interval": ("0x1.b2be2be2be2bep-1", "0x1.bbbbbbbbbbbbbp-2", "0x1.6f96f96f96f97p+1"),
    "ratio": ("0x1.98452d2e40870p-1", "0x1.6f89aef988b55p-6", "0x1.c5885bc5f0625p-4"),
    "ordinal": ("0x1.a17a788c637a5p-1", "0x1.7a33333333333p+5", "0x1.0013b13b13b14p+8"),
}


@pytest.mark.parametrize("distance", sorted(BEFORE_RESCALING))
def test_ordinary_data_gives_the_same_floats_as_before_rescaling(distance):
    result = alpha_details(k2011_mapping(), distance)
    got = (result.alpha, result.observed_disagreement, result.expected_disagreement)
    assert tuple(map(float.hex, got)) == BEFORE_RESCALING[distance]


def test_set_alphas_do_not_wrap_past_65535_shared_labels():
    shared = frozenset(range(65_536))
    a, b, c = shared | {"a"}, shared | {"b"}, frozenset({"c"})
    data = {1: {"x": a, "y": b}, 2: {"x": a, "y": a}, 3: {"x": c, "y": b}, 4: {"x": c, "y": c}}
    assert prepare(data, "jaccard").metric.words.shape[1] == 1024
    # Each Jaccard distance is two roundings off (i / (a + b - i) against (u - i) / u) and the
    # sums have eight values: the two alphas agree to ~ 100 eps; the tolerance is 1e-12.
    for name, func in (("jaccard", jaccard_distance), ("masi", masi_distance)):
        assert close(krippendorff_alpha(data, name), reference_alpha(data, func), 1e-12)
