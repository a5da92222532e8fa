"""Distance metrics for Krippendorff's alpha, scalar and vectorised.

Two layers live here:

* Scalar functions (:func:`jaccard_distance`, :func:`masi_distance`, ...) for
  callers that want to compare two answers directly. They define the rules.
* Vectorised "metric" objects built over the *distinct* values observed in a
  data set. :mod:`metrics.alpha` encodes every value as an integer code and
  asks the metric for (a) distances of many code pairs at once (the
  within-unit pairs behind observed disagreement) and (b) the weighted sum
  ``sum_{v,v'} n_v n_v' d(v, v')`` over all distinct values (expected
  disagreement). Every metric computes (b) without a Python loop over value
  pairs: closed forms for nominal/interval/ordinal, and bitmask popcounts
  grouped by set size for Jaccard/MASI.

This module imports nothing from Django and is the lowest layer of
``agreement``; :class:`AgreementError` is defined here so that every other
module can raise it without circular imports.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from itertools import chain
from typing import Any, Literal

import numpy as np

__all__ = [
    "MAX_DENSE_VALUES",
    "AgreementError",
    "DistanceName",
    "DistanceSpec",
    "Metric",
    "build_metric",
    "canonical_set",
    "distance_name",
    "interval_distance",
    "jaccard_distance",
    "masi_distance",
    "nominal_distance",
    "ratio_distance",
]

DistanceName = Literal["nominal", "ordinal", "interval", "ratio", "jaccard", "masi"]
DistanceSpec = DistanceName | Callable[[Any, Any], float]

CLASSIC_DISTANCES = frozenset({"nominal", "ordinal", "interval", "ratio"})
NUMERIC_DISTANCES = frozenset({"ordinal", "interval", "ratio"})
SET_DISTANCES = frozenset({"jaccard", "masi"})

# Above this many distinct values a dense V x V distance matrix is not built
# (4096**2 float64 = 128 MiB); callers fall back to chunked or closed-form sums.
MAX_DENSE_VALUES = 4096
# Set metrics answer pairs from a V x V table of distances up to this many distinct sets.
_LOOKUP_VALUES = 1024

# Elements per work block in the set-metric kernels. Blocks are computed into
# preallocated buffers: allocating fresh multi-MB arrays per block costs more
# in page faults than the arithmetic itself. 2**15-2**16 measured fastest
# (the buffers stay in L2 cache); 2**19 was five times slower.
_BLOCK = 1 << 16


class AgreementError(ValueError):
    """Input for which an agreement coefficient cannot be computed.

    Raised with a readable message, e.g. when no unit has two or more values,
    when values do not fit the chosen distance (text for "interval", negative
    numbers for "ratio"), or when a coder rated the same unit twice.
    """


# --------------------------------------------------------------------------
# Scalar distances
# --------------------------------------------------------------------------


def nominal_distance(a: Hashable, b: Hashable) -> float:
    """0 if the two labels are equal, else 1."""
    return 0.0 if a == b else 1.0


def interval_distance(a: float, b: float) -> float:
    """Krippendorff's interval metric: squared difference."""
    return float((a - b) ** 2)


def ratio_distance(a: float, b: float) -> float:
    """Krippendorff's ratio metric ``((a - b) / (a + b))**2``; 0 when ``a + b == 0``.

    Values must be non-negative (ratio scales have an absolute zero).
    """
    s = a + b
    return 0.0 if s == 0 else float(((a - b) / s) ** 2)


def canonical_set(value: Iterable[Hashable]) -> frozenset:
    """Return ``value`` as a frozenset, rejecting strings.

    A string is an iterable of characters, so ``frozenset("AB")`` would silently
    turn one label into two; that is almost always a bug in the caller, so it
    raises instead. Wrap single labels in a tuple or set.
    """
    if isinstance(value, (str, bytes)):
        raise AgreementError(
            f"set-valued distances need an iterable of labels, got the string {value!r}; "
            "wrap single labels, e.g. {'A'} or ('A',)"
        )
    try:
        return frozenset(value)
    except TypeError as exc:
        raise AgreementError(
            f"set-valued distances need an iterable of hashable labels, got {value!r}"
        ) from exc


def jaccard_distance(a: Iterable[Hashable], b: Iterable[Hashable]) -> float:
    """Jaccard distance ``1 - |A & B| / |A | B|`` between two sets of labels.

    ``d(∅, ∅) = 0``: two annotators who both say "no sentence supports this"
    agree perfectly. (NLTK's ``jaccard_distance`` raises ZeroDivisionError here.)
    """
    sa, sb = canonical_set(a), canonical_set(b)
    union = len(sa | sb)
    if union == 0:
        return 0.0
    return (union - len(sa & sb)) / union


def masi_distance(a: Iterable[Hashable], b: Iterable[Hashable]) -> float:
    """MASI distance (Passonneau 2006): ``1 - J * M``.

    ``J`` is the Jaccard similarity and ``M`` the monotonicity weight: 1 if the
    sets are equal, 2/3 if one is a subset of the other, 1/3 if they intersect
    otherwise, 0 if they are disjoint. The weights are the exact fractions
    2/3 and 1/3 (not the rounded 0.67 / 0.33 of the paper), matching NLTK's
    ``masi_distance`` bit for bit. The empty set is a subset of every set, but
    ``J = 0`` there, so ``d(∅, B) = 1`` for non-empty ``B``. ``d(∅, ∅) = 0``
    (equal sets); NLTK raises ZeroDivisionError for that case.
    """
    sa, sb = canonical_set(a), canonical_set(b)
    inter = len(sa & sb)
    union = len(sa | sb)
    if union == 0:
        return 0.0
    la, lb = len(sa), len(sb)
    # Same branch order and float operations as NLTK, so results are identical.
    if la == lb and la == inter:
        m = 1.0
    elif inter == min(la, lb):
        m = 2 / 3
    elif inter > 0:
        m = 1 / 3
    else:
        m = 0.0
    return 1 - inter / union * m


def distance_name(distance: DistanceSpec) -> str:
    """Human-readable name of a distance spec (for results and messages)."""
    if isinstance(distance, str):
        return distance
    return getattr(distance, "__name__", type(distance).__name__)


# --------------------------------------------------------------------------
# Vectorised metrics over distinct values
# --------------------------------------------------------------------------


class Metric:
    """Distances between distinct values, addressed by integer code.

    ``values[k]`` is the value with code ``k``; ``n_v[k]`` its number of
    pairable occurrences (all positive: codes are compacted to values that
    occur in pairable units). Subclasses implement :meth:`pair_distances` and
    :meth:`expected_sum`.
    """

    name: str = "custom"
    #: Distances are in units of ``unit ** 2`` of the values' own (interval data are rescaled
    #: by a power of two before squaring); multiply sums of distances by ``unit ** 2`` to get
    #: them in the data's units. Alpha, a ratio of such sums, needs no conversion.
    unit: float = 1.0

    def __init__(self, n_v: np.ndarray) -> None:
        self.n_v = np.asarray(n_v, dtype=np.float64)
        self.n_values = len(self.n_v)

    def pair_distances(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``d(values[a[i]], values[b[i]])`` for equal-length code arrays, float64."""
        raise NotImplementedError

    def expected_sum(self) -> float:
        """``sum over ordered pairs (v, v') of n_v * n_v' * d(v, v')``.

        Dividing by ``n (n - 1)`` gives Krippendorff's expected disagreement.
        """
        raise NotImplementedError

    def dense_matrix(self) -> np.ndarray | None:
        """The full V x V distance matrix, or None when V > MAX_DENSE_VALUES."""
        v = self.n_values
        if v > MAX_DENSE_VALUES:
            return None
        out = np.empty((v, v))
        codes = np.arange(v)
        rows = max(1, _BLOCK // max(v, 1))
        for start in range(0, v, rows):
            r = codes[start : start + rows]
            a = np.repeat(r, v)
            b = np.tile(codes, len(r))
            out[start : start + len(r)] = self.pair_distances(a, b).reshape(len(r), v)
        return out

    def _dense_expected_sum(self) -> float:
        """Generic O(V^2) expected sum, computed in row blocks (no V x V matrix)."""
        v = self.n_values
        codes = np.arange(v)
        rows = max(1, _BLOCK // max(v, 1))
        total = 0.0
        for start in range(0, v, rows):
            r = codes[start : start + rows]
            d = self.pair_distances(np.repeat(r, v), np.tile(codes, len(r))).reshape(len(r), v)
            total += float(self.n_v[r] @ (d @ self.n_v))
        return total


def _rescaled(x: np.ndarray) -> tuple[np.ndarray, float]:
    """``(x / unit, unit)`` with ``unit`` the power of two just above ``max |x|`` (1 for all
    zeros), so the rescaled values lie within (-1, 1) and the division is exact."""
    largest = float(np.max(np.abs(x), initial=0.0))
    if largest == 0.0:
        return x, 1.0
    exponent = math.frexp(largest)[1]
    return np.ldexp(x, -exponent), math.ldexp(1.0, exponent)


class NominalMetric(Metric):
    """d = 0 for equal values, 1 otherwise. Codes are distinct per value."""

    name = "nominal"

    def pair_distances(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a != b).astype(np.float64)

    def expected_sum(self) -> float:
        n = self.n_v.sum()
        return float(n * n - np.dot(self.n_v, self.n_v))

    def dense_matrix(self) -> np.ndarray | None:
        if self.n_values > MAX_DENSE_VALUES:
            return None
        return 1.0 - np.eye(self.n_values)


class SquaredDifferenceMetric(Metric):
    """d = (x_a - x_b)^2 on per-value coordinates ``x``.

    Used for "interval" (x = the value) and "ordinal" (x = the value's
    mid-rank position in the pairable marginal distribution, see
    :func:`ordinal_positions`).
    """

    def __init__(self, n_v: np.ndarray, x: np.ndarray, name: str) -> None:
        super().__init__(n_v)
        n = self.n_v.sum()
        # Rescale before squaring: alpha is scale-free, but squares of values near 1e154
        # overflow and those near 1e-162 underflow. Dividing by a power of two is exact, so
        # ordinary data give the same floats as unscaled; distances are in units of
        # ``self.unit ** 2`` (see :attr:`Metric.unit`).
        x, self.unit = _rescaled(np.asarray(x, dtype=np.float64))
        # Centre the coordinates: the closed-form expected sum subtracts two
        # large numbers otherwise, losing precision for large values.
        mean = float(self.n_v @ x) / n if n else 0.0
        self.x = x - mean
        self.name = name

    def pair_distances(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        diff = self.x[a] - self.x[b]
        return diff * diff

    def expected_sum(self) -> float:
        # sum_{v,v'} n_v n_v' (x_v - x_v')^2 = 2 (n sum n_v x_v^2 - (sum n_v x_v)^2)
        n = self.n_v.sum()
        s1 = float(self.n_v @ self.x)
        s2 = float(self.n_v @ (self.x * self.x))
        return max(0.0, 2.0 * (n * s2 - s1 * s1))

    def dense_matrix(self) -> np.ndarray | None:
        if self.n_values > MAX_DENSE_VALUES:
            return None
        diff = self.x[:, None] - self.x[None, :]
        return diff * diff


def ordinal_positions(x: np.ndarray, n_v: np.ndarray) -> np.ndarray:
    """Mid-rank positions that turn Krippendorff's ordinal metric into a squared difference.

    Krippendorff's ordinal distance between ranked values c <= k is
    ``(sum_{g=c..k} n_g - (n_c + n_k) / 2) ** 2`` with ``n_g`` the pairable
    marginal frequencies. With ``t_v = (sum_{g<=v} n_g) - n_v / 2`` this equals
    ``(t_k - t_c) ** 2``, so observed and expected sums reuse the interval code.
    Values with equal ``x`` must not occur (they are one value).
    """
    order = np.argsort(x, kind="stable")
    counts = n_v[order]
    t_sorted = np.cumsum(counts) - counts / 2.0
    t = np.empty_like(t_sorted)
    t[order] = t_sorted
    return t


class RatioMetric(Metric):
    """d = ((a - b) / (a + b))^2, 0 when a + b == 0 (both zero)."""

    name = "ratio"

    def __init__(self, n_v: np.ndarray, x: np.ndarray) -> None:
        super().__init__(n_v)
        # The ratio is scale-free; rescaling (exact, by a power of two) keeps a + b finite.
        self.x = _rescaled(np.asarray(x, dtype=np.float64))[0]

    def pair_distances(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        xa, xb = self.x[a], self.x[b]
        s = xa + xb
        q = np.divide(xa - xb, s, out=np.zeros_like(s), where=s != 0)
        return q * q

    def expected_sum(self) -> float:
        # No closed form; V is small for real ratio scales, and the generic sum
        # works in row blocks without storing a V x V matrix.
        return self._dense_expected_sum()


class CallableMetric(Metric):
    """A user-supplied ``d(a, b) -> float``, assumed symmetric with ``d(a, a) == 0``.

    ``d`` is called once per distinct unordered pair of distinct values that
    is needed (never on identical values). For up to MAX_DENSE_VALUES values
    the full matrix is built once (V (V - 1) / 2 calls); beyond that, pair
    distances are memoised and the expected sum streams over rows.
    """

    def __init__(self, n_v: np.ndarray, values: Sequence[Any], func: Callable[[Any, Any], float]):
        super().__init__(n_v)
        self.values = list(values)
        self.func = func
        self.name = distance_name(func)
        self._dense: np.ndarray | None = None
        self._cache: dict[int, float] = {}

    def _row(self, i: int, js: range) -> np.ndarray:
        f, vals, vi = self.func, self.values, self.values[i]
        return np.fromiter((float(f(vi, vals[j])) for j in js), np.float64, len(js))

    def dense_matrix(self) -> np.ndarray | None:
        v = self.n_values
        if v > MAX_DENSE_VALUES:
            return None
        if self._dense is None:
            dense = np.zeros((v, v))
            for i in range(v - 1):
                row = self._row(i, range(i + 1, v))
                dense[i, i + 1 :] = row
                dense[i + 1 :, i] = row
            self._dense = dense
        return self._dense

    def pair_distances(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        dense = self.dense_matrix()
        if dense is not None:
            return dense[a, b]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        keys, inverse = np.unique(lo * self.n_values + hi, return_inverse=True)
        cache, f, vals, v = self._cache, self.func, self.values, self.n_values
        out = np.empty(len(keys))
        for k, key in enumerate(keys.tolist()):
            d = cache.get(key)
            if d is None:
                i, j = divmod(key, v)
                d = 0.0 if i == j else float(f(vals[i], vals[j]))
                cache[key] = d
            out[k] = d
        return out[inverse]

    def expected_sum(self) -> float:
        dense = self.dense_matrix()
        if dense is not None:
            return float(self.n_v @ (dense @ self.n_v))
        total = 0.0
        n_v = self.n_v
        for i in range(self.n_values - 1):
            row = self._row(i, range(i + 1, self.n_values))
            total += 2.0 * n_v[i] * float(row @ n_v[i + 1 :])
        return total


class SetMetric(Metric):
    """Jaccard or MASI distance between frozensets, computed on bitmasks.

    Each distinct set becomes a row of uint64 words. Only elements that occur
    in at least two distinct sets get a bit: an element private to one set can
    never be in an intersection, and set sizes are stored separately, so the
    bitmask usually fits one word even when the label universe is large.
    Intersections are popcounts of ANDs (``np.bitwise_count``).

    The expected sum groups sets by size: within a block of sets of sizes
    (a, b), Jaccard is ``i / (a + b - i)`` with ``i`` the intersection size,
    and MASI's weight depends only on whether ``i == min(a, b)``. So a block
    needs one AND, one popcount and a few float operations per pair, then a
    matrix-vector product with the value counts; nothing V x V is ever stored.
    The cost per pair grows with the number of 64-bit words, i.e. with the
    number of labels shared between distinct sets divided by 64.
    """

    def __init__(self, n_v: np.ndarray, values: Sequence[frozenset], kind: str) -> None:
        super().__init__(n_v)
        if kind not in SET_DISTANCES:
            raise ValueError(kind)
        self.name = kind
        v = len(values)
        sizes = np.fromiter(map(len, values), np.int64, v)
        flat = list(chain.from_iterable(values))
        elem_index = dict.fromkeys(flat)
        for i, key in enumerate(elem_index):
            elem_index[key] = i
        elem = np.fromiter(map(elem_index.__getitem__, flat), np.int64, len(flat))
        owner = np.repeat(np.arange(v), sizes)
        shared = np.bincount(elem, minlength=len(elem_index)) >= 2
        bit_of = np.cumsum(shared) - 1  # compact bit positions of shared elements
        keep = shared[elem]
        pos = bit_of[elem[keep]]
        n_words = max(1, -(-int(shared.sum()) // 64))
        bm = np.zeros((v, n_words), dtype=np.uint64)
        np.bitwise_or.at(
            bm,
            (owner[keep], pos // 64),
            np.left_shift(np.uint64(1), (pos % 64).astype(np.uint64)),
        )
        self.words = bm
        self.sizes = sizes
        self._pairs_asked = 0
        self._lookup: np.ndarray | None = None

    # -- per-pair ----------------------------------------------------------

    def _intersections(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        w = self.words
        inter = np.bitwise_count(w[a, 0] & w[b, 0]).astype(np.int64)
        for k in range(1, w.shape[1]):
            inter += np.bitwise_count(w[a, k] & w[b, k])
        return inter

    def pair_distances(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Per pair from the bitmasks; once as many pairs were asked for as the V x V table of
        distinct values has entries (and V is at most :data:`_LOOKUP_VALUES`), from that table,
        computed once by this very code, so both ways give the same floats."""
        if self._lookup is None and self.n_values <= _LOOKUP_VALUES:
            self._pairs_asked += len(a)
            if self._pairs_asked >= self.n_values * self.n_values:
                codes = np.arange(self.n_values)
                v = self.n_values
                self._lookup = self._pair_distances(np.repeat(codes, v), np.tile(codes, v))
        if self._lookup is not None:
            return self._lookup[a * self.n_values + b]
        return self._pair_distances(a, b)

    def _pair_distances(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        sa, sb = self.sizes[a], self.sizes[b]
        # Bitmasks hold shared elements only: exact for two distinct sets,
        # but a set compared with itself needs its full size.
        inter = np.where(a == b, sa, self._intersections(a, b))
        union = sa + sb - inter
        # J(∅, ∅) = 1, i.e. d(∅, ∅) = 0: two empty answers agree.
        sim = np.divide(inter, union, out=np.ones(len(inter)), where=union > 0)
        if self.name == "masi":
            m = np.where(
                (sa == sb) & (inter == sa),
                1.0,
                np.where(inter == np.minimum(sa, sb), 2 / 3, np.where(inter > 0, 1 / 3, 0.0)),
            )
            sim = sim * m
        return 1.0 - sim

    # -- expected sum ------------------------------------------------------

    def expected_sum(self) -> float:
        n = float(self.n_v.sum())
        return max(0.0, n * n - self._similarity_sum())

    def _similarity_sum(self) -> float:
        """``sum over ordered pairs (v, v') of n_v n_v' sim(v, v')``, diagonal included."""
        order = np.argsort(self.sizes, kind="stable")
        sizes = self.sizes[order]
        words = np.ascontiguousarray(self.words[order])
        weights = self.n_v[order]
        bounds = np.flatnonzero(np.diff(sizes)) + 1
        starts = np.concatenate(([0], bounds))
        ends = np.concatenate((bounds, [len(sizes)]))
        groups = [(int(sizes[s]), s, e) for s, e in zip(starts, ends, strict=True)]

        total = 0.0
        buf = _Buffers(words.shape[1])
        masi = self.name == "masi"
        for gi, (a, ra, rb) in enumerate(groups):
            if a == 0:
                # The empty set: similar only to itself (sim = 1), disjoint from the rest.
                total += float(weights[ra:rb] @ weights[ra:rb])
                continue
            for b, ca, cb in groups[gi:]:
                block = _block_similarity(
                    words[ra:rb], words[ca:cb], weights[ra:rb], weights[ca:cb], a, b, masi, buf
                )
                # Blocks with a < b stand for both (a, b) and (b, a).
                total += block if a == b else 2.0 * block
        return total


class _Buffers:
    """Reusable work arrays for the set kernels (see _BLOCK)."""

    def __init__(self, n_words: int) -> None:
        self.anded = np.empty(_BLOCK, dtype=np.uint64)
        self.count8 = np.empty(_BLOCK, dtype=np.uint8)
        # Multi-word intersections can exceed 255; they reach at most 64 * n_words (the shared
        # labels), so the counter is the narrowest unsigned type that holds that: uint16 up to
        # 1023 words, wider beyond (a uint16 wrapped at 65,536 shared labels).
        self.count_wide = (
            np.empty(_BLOCK, dtype=np.min_scalar_type(64 * n_words)) if n_words > 1 else None
        )
        self.work = np.empty(_BLOCK, dtype=np.float64)
        self.n_words = n_words


def _block_similarity(
    rows: np.ndarray,
    cols: np.ndarray,
    w_rows: np.ndarray,
    w_cols: np.ndarray,
    a: int,
    b: int,
    masi: bool,
    buf: _Buffers,
) -> float:
    """``sum_{r,c} w_r w_c sim(r, c)`` for sets of size ``a`` (rows) and ``b`` (cols), a <= b, a >= 1."""
    n_cols = len(cols)
    chunk = max(1, _BLOCK // n_cols)
    s = float(a + b)
    total = 0.0
    for start in range(0, len(rows), chunk):
        r = rows[start : start + chunk]
        shape = (len(r), n_cols)
        size = shape[0] * shape[1]
        anded = buf.anded[:size].reshape(shape)
        count8 = buf.count8[:size].reshape(shape)
        work = buf.work[:size].reshape(shape)
        np.bitwise_and(r[:, 0, None], cols[None, :, 0], out=anded)
        np.bitwise_count(anded, out=count8)
        inter: np.ndarray = count8
        if buf.count_wide is not None:
            inter = buf.count_wide[:size].reshape(shape)
            inter[...] = count8
            for k in range(1, buf.n_words):
                np.bitwise_and(r[:, k, None], cols[None, :, k], out=anded)
                np.bitwise_count(anded, out=count8)
                inter += count8
        # Jaccard within the block: i / (a + b - i); the denominator is >= b >= 1.
        # The ufuncs read the small integer counts directly (no float copy).
        np.subtract(s, inter, out=work)
        np.divide(inter, work, out=work)
        wr = w_rows[start : start + chunk]
        jac = float(wr @ (work @ w_cols))
        if not masi:
            total += jac
            continue
        # MASI = J * M. M = 1/3 for intersecting pairs, except: equal sets
        # (M = 1, J = 1; only the diagonal of an a == b block) and proper
        # subsets (M = 2/3, i == a < b, where J = a / b).
        total += jac / 3.0
        if a == b:
            continue  # equal sizes: i == a only on the diagonal, handled below
        np.equal(inter, a, out=work)
        total += (a / b) / 3.0 * float(wr @ (work @ w_cols))
    if a == b:
        # Rows and cols are the same group, so the diagonal pairs a set with
        # itself: sim = 1. The kernel above undercounted it, because private
        # elements have no bit (i = shared bits < a) and because MASI's
        # equal-set weight was not applied. Swap in the right value.
        own = np.bitwise_count(rows).sum(axis=1, dtype=np.int64).astype(np.float64)
        counted = own / (s - own)
        if masi:
            counted /= 3.0
        total += float((w_rows * w_rows) @ (1.0 - counted))
    return total


# --------------------------------------------------------------------------
# Construction
# --------------------------------------------------------------------------


def numeric_key(value: Any) -> Any:
    """The number a numeric string spells (``"2"`` → 2.0, ``" 2.5 "`` → 2.5), so that a CSV
    import's ``"2"`` and a JSON import's ``2`` are one value of an ordinal, interval or ratio
    scale; anything else unchanged (text is refused later, naming the value)."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return number if math.isfinite(number) else value
    return value


def _numeric(values: Sequence[Any], name: str) -> np.ndarray:
    try:
        x = np.array([float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        bad = next((v for v in values if not _is_number(v)), None)
        raise AgreementError(
            f'distance "{name}" needs numeric values, got {bad!r}; '
            "map labels to numbers first, or use distance='nominal'"
        ) from exc
    if not np.all(np.isfinite(x)):
        raise AgreementError(f'distance "{name}" needs finite values (use None or NaN for missing)')
    return x


def _is_number(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def build_metric(distance: DistanceSpec, values: Sequence[Any], n_v: np.ndarray) -> Metric:
    """Build the vectorised metric for ``distance`` over distinct ``values``.

    ``values`` must already be canonical (frozensets for set distances) and
    distinct; ``n_v`` are their pairable frequencies (needed by "ordinal").
    """
    if callable(distance) and not isinstance(distance, str):
        return CallableMetric(n_v, values, distance)
    if distance == "nominal":
        return NominalMetric(n_v)
    if distance in ("interval", "ordinal"):
        x = _numeric(values, distance)
        if distance == "ordinal":
            x = ordinal_positions(x, np.asarray(n_v, dtype=np.float64))
        return SquaredDifferenceMetric(n_v, x, distance)
    if distance == "ratio":
        x = _numeric(values, distance)
        if np.any(x < 0):
            raise AgreementError(
                'distance "ratio" needs non-negative values (a ratio scale has an absolute zero); '
                f"got {x.min():g}"
            )
        return RatioMetric(n_v, x)
    if distance in SET_DISTANCES:
        return SetMetric(n_v, values, distance)
    raise _unknown_distance(distance)


def _unknown_distance(distance: object) -> AgreementError:
    return AgreementError(
        f"unknown distance {distance!r}; use one of "
        '"nominal", "ordinal", "interval", "ratio", "jaccard", "masi" or a callable d(a, b)'
    )


def check_distance(distance: object) -> None:
    """Raise AgreementError early for an unknown distance name."""
    if isinstance(distance, str):
        if distance not in CLASSIC_DISTANCES | SET_DISTANCES:
            raise _unknown_distance(distance)
    elif not callable(distance):
        raise AgreementError(f"distance must be a name or a callable d(a, b), got {distance!r}")


def is_missing(value: Any) -> bool:
    """None and float NaN mark a missing value."""
    if value is None:
        return True
    return isinstance(value, (float, np.floating)) and math.isnan(value)
