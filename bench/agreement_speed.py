"""Speed and memory of Krippendorff's alpha in ``agreement``, against baselines run alongside.

Usage: ``.venv/bin/python bench/agreement_speed.py [--quick] [--columns]``

Synthetic citation-recovery data: each unit is a claim with k candidate
evidence sentences; a gold subset holds each sentence with probability 0.3;
each of 5 annotators answers the gold subset with every sentence flipped
with probability 0.15, answers nothing (the empty set) with probability 0.05
and skips the unit (missing) with probability 0.02. Equal answers share one
frozenset object (as when answers are parsed through a cache).

Sections (every ratio compares timings taken in this run, on this machine):

1. Jaccard alpha, k = 3-8, at 1k/10k/100k/1M units, against NLTK's
   ``AnnotationTask.alpha`` (run up to 100k units only; it is slow).
2. Wide label spaces, k = 10-40, 10k units (tens of thousands of distinct
   sets). NLTK refuses more than 10,000 distinct labels, so it runs on a
   smaller sample and is extrapolated as (distinct labels)^2 (its cost is
   quadratic in them); a plain pair-based numpy version (expected
   disagreement over all pairs of pairable values, bitmask popcount) runs on
   a sample and is extrapolated as n^2.
3. Bootstrap: 1,000 replicates on 100k units (Jaccard).
1c. Jaccard alpha at 100k units from :class:`metrics.ReliabilityColumns` (integer codes, as the
   report's gather step builds them from the database) and through the public API from the
   mapping: shared frozensets, and a distinct frozenset object per answer created unit by unit or
   in a shuffled arrival order (objects spread over memory); each against NLTK on the same input.
1b. The 1M-unit Jaccard case with other input forms: a distinct frozenset
   object per answer, ``(coder, unit, value)`` triples, lists instead of sets.
4. Classic levels: ``krippendorff.alpha`` on a prebuilt reliability matrix,
   and plus the time to build that matrix from the mapping, versus
   ``krippendorff_alpha`` on the mapping.

Timings are wall-clock seconds of one run; peak memory is tracemalloc's
peak over a second, separate run (tracemalloc slows Python code down).
Nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import gc
import math
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from itertools import chain
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from metrics import ReliabilityColumns, alpha_bootstrap, krippendorff_alpha  # noqa: E402

CODERS = ("ann1", "ann2", "ann3", "ann4", "ann5")


def citation_answers(n_units: int, sentences: tuple[int, int], seed: int = 0) -> dict:
    """``{unit: {annotator: frozenset of sentence indices or None}}``, see module docstring."""
    rng = np.random.default_rng(seed)
    lo, hi = sentences
    width = hi
    k = rng.integers(lo, hi + 1, n_units)
    in_range = np.arange(width)[None, :] < k[:, None]
    gold = (rng.random((n_units, width)) < 0.3) & in_range
    weights = np.left_shift(np.uint64(1), np.arange(width, dtype=np.uint64))
    coder_masks = []
    for _ in CODERS:
        flips = (rng.random((n_units, width)) < 0.15) & in_range
        bits = (gold ^ flips).astype(np.uint64)
        mask = (bits * weights).sum(axis=1, dtype=np.uint64)
        u = rng.random(n_units)
        mask[u < 0.05] = 0
        coder_masks.append(np.where(u > 0.98, -1, mask.astype(np.int64)))
    cache: dict[int, frozenset | None] = {-1: None}

    def as_set(mask: int) -> frozenset | None:
        value = cache.get(mask, ...)
        if value is ...:
            value = frozenset(i for i in range(width) if mask >> i & 1)
            cache[mask] = value
        return value

    columns = [list(map(as_set, m.tolist())) for m in coder_masks]
    return {
        u: dict(zip(CODERS, row, strict=True)) for u, row in enumerate(zip(*columns, strict=True))
    }


def ratings(n_units: int, seed: int = 0, levels: int = 5) -> tuple[dict, np.ndarray]:
    """Likert-style ratings for the classic levels, as a mapping and a coders x units matrix."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, levels + 1, n_units)
    noise = rng.integers(-1, 2, (len(CODERS), n_units)) * (rng.random((len(CODERS), n_units)) < 0.3)
    matrix = np.clip(truth + noise, 1, levels).astype(float)
    matrix[rng.random(matrix.shape) < 0.1] = np.nan
    rows = [[None if math.isnan(v) else int(v) for v in col] for col in matrix.T.tolist()]
    data = {u: dict(zip(CODERS, row, strict=True)) for u, row in enumerate(rows)}
    return data, matrix


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def peak_mib(fn: Callable[[], object]) -> float:
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def nltk_jaccard_alpha(data: dict) -> float:
    from nltk.metrics.agreement import AnnotationTask
    from nltk.metrics.distance import jaccard_distance

    def safe_jaccard(a: frozenset, b: frozenset) -> float:
        # NLTK's jaccard_distance divides by zero on two empty sets.
        return 0.0 if not a and not b else jaccard_distance(a, b)

    triples = [(c, u, v) for u, row in data.items() for c, v in row.items() if v is not None]
    return AnnotationTask(data=triples, distance=safe_jaccard).alpha()


def pair_based_jaccard_alpha(data: dict) -> float:
    """Straightforward numpy alpha: every pair of pairable values, no grouping of distinct values."""
    units = [[v for v in row.values() if v is not None] for row in data.values()]
    units = [u for u in units if len(u) >= 2]
    masks = np.array([sum(1 << i for i in s) for u in units for s in u], dtype=np.uint64)
    sizes = np.bitwise_count(masks).astype(np.float64)
    n = len(masks)

    def jac_dist(a: np.ndarray, b: np.ndarray, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
        inter = np.bitwise_count(a & b).astype(np.float64)
        union = sa + sb - inter
        return 1.0 - np.divide(inter, union, out=np.ones_like(union), where=union > 0)

    observed = 0.0
    offset = 0
    for u in units:
        m = len(u)
        a, s = masks[offset : offset + m], sizes[offset : offset + m]
        observed += jac_dist(a[:, None], a[None, :], s[:, None], s[None, :]).sum() / (m - 1)
        offset += m
    expected = 0.0
    for start in range(0, n, 1024):
        a, s = masks[start : start + 1024], sizes[start : start + 1024]
        expected += jac_dist(a[:, None], masks[None, :], s[:, None], sizes[None, :]).sum()
    return 1.0 - (n - 1) * observed / expected


def distinct_sets(data: dict) -> int:
    return len({v for row in data.values() for v in row.values() if v is not None})


def n_pairable_values(data: dict) -> int:
    counts = (sum(v is not None for v in row.values()) for row in data.values())
    return sum(c for c in counts if c >= 2)


def fmt_s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.3f}"


def print_table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))


def bench_narrow(sizes: list[int], nltk_max: int) -> None:
    rows = []
    for n_units in sizes:
        data = citation_answers(n_units, (3, 8), seed=n_units)
        ours_t, ours = timed(lambda data=data: krippendorff_alpha(data, "jaccard"))
        mem = peak_mib(lambda data=data: krippendorff_alpha(data, "jaccard"))
        nltk_t = theirs = None
        if n_units <= nltk_max:
            nltk_t, theirs = timed(lambda data=data: nltk_jaccard_alpha(data))
        rows.append(
            [
                f"{n_units:,}",
                f"{ours:.6f}",
                fmt_s(ours_t),
                f"{mem:.0f}",
                fmt_s(nltk_t),
                "-" if nltk_t is None else f"{nltk_t / ours_t:.1f}x",
                "-" if theirs is None else f"{abs(ours - theirs):.1e}",
            ]
        )
        del data
        gc.collect()
    print_table(
        "1. Jaccard alpha, citation recovery, 5 annotators, 3-8 sentences per unit",
        ["units", "alpha", "ours s", "peak MiB", "NLTK s", "speed-up", "|diff|"],
        rows,
    )


def citation_columns(data: dict) -> ReliabilityColumns:
    """The answers of ``citation_answers`` as the report's gather step hands them to the metrics
    core: integer unit, coder and value codes, with a table holding each distinct answer once
    (as read from the database, where each distinct JSON text is parsed once)."""
    table: dict = {}
    units, coders, values = [], [], []
    for u, row in enumerate(data.values()):
        for c, value in enumerate(row.values()):
            units.append(u)
            coders.append(c)
            values.append(-1 if value is None else table.setdefault(value, len(table)))
    return ReliabilityColumns(
        units=np.array(units, dtype=np.int64),
        coders=np.array(coders, dtype=np.int64),
        values=np.array(values, dtype=np.int64),
        table=[sorted(v) for v in table],  # lists, as parsed from JSON
        n_units=len(data),
        n_coders=len(CODERS),
    )


def best_of(fn: Callable[[], object], repeat: int = 5) -> tuple[float, object]:
    """Fastest of ``repeat`` timed runs (this machine is shared; the minimum is the steadiest)."""
    runs = [timed(fn) for _ in range(repeat)]
    return min(t for t, _ in runs), runs[0][1]


def distinct_copies(data: dict, arrival_order: bool, seed: int = 0) -> dict:
    """The same answers with a new frozenset object per answer (as when each answer row is parsed
    on its own), none shared and none with its hash computed yet. ``arrival_order`` creates them
    in a shuffled order (as answers arrive from annotators working on different items at once),
    so that the objects of one unit lie far apart in memory; otherwise unit by unit."""
    cells = [(u, c) for u, row in data.items() for c in row]
    if arrival_order:
        random.Random(seed).shuffle(cells)
    made = {}
    for u, c in cells:
        value = data[u][c]
        made[u, c] = None if value is None else frozenset(list(value))
    return {u: {c: made[u, c] for c in row} for u, row in data.items()}


def best_of_fresh(build: Callable[[], dict], fn: Callable[[dict], object], repeat: int = 5):
    """Fastest of ``repeat`` runs of ``fn`` on a newly built input each time (so no run profits
    from hashes an earlier run cached on the objects); the build is not timed."""
    best, result = math.inf, None
    for _ in range(repeat):
        data = build()
        t, result = timed(lambda data=data: fn(data))
        best = min(best, t)
        del data
    return best, result


def read_each_answer_once(data: dict) -> np.ndarray:
    """Each answer object's address, read straight from its row: no alpha can touch the answers
    fewer times (the dict iterator takes a reference to each), so this is the floor of the public
    API on objects spread over memory."""
    values = chain.from_iterable(map(dict.values, data.values()))
    return np.fromiter(map(id, values), np.int64, sum(map(len, data.values())))


def bench_columns(n_units: int, nltk: bool) -> None:
    """Issue 16's target: Jaccard alpha on 100k units >= 40x NLTK, from the columnar input; issue
    31's: >= 40x NLTK through the public API, on distinct answer objects."""
    data = citation_answers(n_units, (3, 8), seed=n_units)
    columns = citation_columns(data)
    cols_t, cols = best_of(lambda: krippendorff_alpha(columns, "jaccard"))
    mem = peak_mib(lambda: krippendorff_alpha(columns, "jaccard"))
    inputs = [
        ("mapping, shared frozensets", lambda: data),
        ("mapping, distinct frozensets (unit order)", lambda: distinct_copies(data, False)),
        ("mapping, distinct frozensets (arrival order)", lambda: distinct_copies(data, True)),
    ]
    rows = [["columns (integer codes)", fmt_s(cols_t), f"{mem:.0f}", "-", "-"]]
    nltk_times = []
    for label, build in inputs:
        t, alpha = best_of_fresh(build, lambda d: krippendorff_alpha(d, "jaccard"))
        assert alpha == cols, (label, alpha, cols)
        ratio = "-"
        if nltk:
            nltk_t, theirs = best_of_fresh(build, nltk_jaccard_alpha, repeat=2)
            assert abs(theirs - cols) < 1e-9, (theirs, cols)
            nltk_times.append(f"{nltk_t:.2f}")
            ratio = f"{nltk_t / t:.1f}x"
        rows.append([label, fmt_s(t), "-", f"{t / cols_t:.1f}x", ratio])
        if "distinct" in label:  # what merely reading each answer object once costs
            floor_t, _ = best_of_fresh(build, read_each_answer_once)
            rows.append(["  floor: read each answer once", fmt_s(floor_t), "-", "-", "-"])
    if nltk:
        nltk_t, _ = best_of(lambda: nltk_jaccard_alpha(data), repeat=2)
        rows.append(
            ["NLTK AnnotationTask (shared)", fmt_s(nltk_t), "-", f"{nltk_t / cols_t:.0f}x", "1x"]
        )
    print_table(
        f"1c. Jaccard alpha, {n_units:,} units x 5 coders, by input form "
        "(issue targets: columns and the public API on distinct objects >= 40x NLTK)",
        ["input", "seconds", "peak MiB", "x columns' time", "ours faster than NLTK"],
        rows,
    )
    print(
        "   ours: best of 5 runs, NLTK: best of 2 (it takes seconds), each on a newly built input "
        "(distinct objects: hashes not yet cached); 'ours faster than NLTK' = NLTK's time on the same "
        f"input / ours (NLTK s: {', '.join(nltk_times) or '-'}). alpha = {cols:.6f} everywhere."
    )


def bench_wide(n_units: int, nltk_units: int, pair_units: int) -> None:
    data = citation_answers(n_units, (10, 40), seed=7)
    distinct = distinct_sets(data)
    ours_t, ours = timed(lambda d=data: krippendorff_alpha(d, "jaccard"))
    mem = peak_mib(lambda: krippendorff_alpha(data, "jaccard"))
    ours_masi_t, _ = timed(lambda: krippendorff_alpha(data, "masi"))
    rows = [["ours (jaccard)", f"{n_units:,}", f"{distinct:,}", fmt_s(ours_t), "-", f"{mem:.0f}"]]
    rows.append(["ours (masi)", f"{n_units:,}", f"{distinct:,}", fmt_s(ours_masi_t), "-", "-"])

    small = citation_answers(nltk_units, (10, 40), seed=7)
    small_distinct = distinct_sets(small)
    nltk_t, theirs = timed(lambda: nltk_jaccard_alpha(small))
    ours_small_t, ours_small = timed(lambda: krippendorff_alpha(small, "jaccard"))
    nltk_extrap = nltk_t * (distinct / small_distinct) ** 2
    rows.append(
        ["NLTK", f"{nltk_units:,}", f"{small_distinct:,}", fmt_s(nltk_t), f"{nltk_extrap:.1f}", "-"]
    )
    rows.append(
        [
            "ours, same sample",
            f"{nltk_units:,}",
            f"{small_distinct:,}",
            fmt_s(ours_small_t),
            "-",
            "-",
        ]
    )

    sample = citation_answers(pair_units, (10, 40), seed=7)
    pair_t, pair_alpha = timed(lambda: pair_based_jaccard_alpha(sample))
    pair_extrap = pair_t * (n_pairable_values(data) / n_pairable_values(sample)) ** 2
    ours_sample = krippendorff_alpha(sample, "jaccard")
    rows.append(
        [
            "pair-based numpy",
            f"{pair_units:,}",
            f"{distinct_sets(sample):,}",
            fmt_s(pair_t),
            f"{pair_extrap:.1f}",
            "-",
        ]
    )
    print_table(
        "2. Wide label spaces: 10-40 sentences per unit, Jaccard (issue target: 10k units < 10 s)",
        ["method", "units", "distinct", "seconds", f"extrap. s @{n_units:,}", "peak MiB"],
        rows,
    )
    print(
        f"   speed-up at {n_units:,} units: {nltk_extrap / ours_t:.0f}x vs NLTK (extrapolated), "
        f"{pair_extrap / ours_t:.0f}x vs pair-based numpy (extrapolated); "
        f"|ours - NLTK| = {abs(ours_small - theirs):.1e} on the NLTK sample, "
        f"|ours - pair-based| = {abs(ours_sample - pair_alpha):.1e}"
    )


def bench_bootstrap(n_units: int, n_boot: int) -> None:
    data = citation_answers(n_units, (3, 8), seed=11)
    alpha_t, _ = timed(lambda d=data: krippendorff_alpha(d, "jaccard"))
    boot_t, result = timed(lambda: alpha_bootstrap(data, "jaccard", n_boot=n_boot, seed=0))
    mem = peak_mib(lambda: alpha_bootstrap(data, "jaccard", n_boot=n_boot, seed=0))
    print_table(
        f"3. Bootstrap, Jaccard, {n_units:,} units, {n_boot:,} replicates (issue target: 1,000 on 100k < 10 s)",
        ["alpha", "95% CI", "D_e", "seconds", "x one alpha", "peak MiB"],
        [
            [
                f"{result.alpha:.4f}",
                f"[{result.lower:.4f}, {result.upper:.4f}]",
                result.expected,
                fmt_s(boot_t),
                f"{boot_t / alpha_t:.1f}",
                f"{mem:.0f}",
            ]
        ],
    )


def mapping_to_matrix(data: dict) -> np.ndarray:
    """The coders x units matrix the krippendorff package wants, built from our mapping."""
    coders = {c: i for i, c in enumerate(sorted({c for row in data.values() for c in row}))}
    matrix = np.full((len(coders), len(data)), np.nan)
    for u, row in enumerate(data.values()):
        for c, v in row.items():
            if v is not None:
                matrix[coders[c], u] = v
    return matrix


def bench_classic(sizes: list[int]) -> None:
    import krippendorff

    rows = []
    for n_units in sizes:
        data, matrix = ratings(n_units, seed=n_units)
        build_t, _ = timed(lambda data=data: mapping_to_matrix(data))
        for level in ("nominal", "ordinal", "interval", "ratio"):
            ours_t, ours = timed(lambda data=data, level=level: krippendorff_alpha(data, level))
            pkg_t, pkg = timed(
                lambda matrix=matrix, level=level: krippendorff.alpha(
                    reliability_data=matrix, level_of_measurement=level
                )
            )
            rows.append(
                [
                    f"{n_units:,}",
                    level,
                    fmt_s(ours_t),
                    fmt_s(pkg_t),
                    fmt_s(pkg_t + build_t),
                    f"{(pkg_t + build_t) / ours_t:.1f}x",
                    f"{abs(ours - float(pkg)):.1e}",
                ]
            )
    print_table(
        "4. Classic levels, 5 coders, 5-point scale, 10% missing: ours (from the mapping) vs "
        "krippendorff package (from a prebuilt matrix; + time to build it from the mapping)",
        ["units", "level", "ours s", "package s", "pkg+build s", "speed-up", "|diff|"],
        rows,
    )


def bench_input_forms(n_units: int) -> None:
    """Same answers as distinct frozenset objects (no shared objects), as triples, as lists."""
    data = citation_answers(n_units, (3, 8), seed=3)
    shared_t, shared = timed(lambda d=data: krippendorff_alpha(d, "jaccard"))
    fresh = {
        u: {c: None if v is None else frozenset(list(v)) for c, v in row.items()}
        for u, row in data.items()
    }
    del data
    fresh_t, _ = timed(lambda d=fresh: krippendorff_alpha(d, "jaccard"))
    triples = [(c, u, v) for u, row in fresh.items() for c, v in row.items()]
    triples_t, _ = timed(lambda d=triples: krippendorff_alpha(d, "jaccard"))
    del triples
    lists = {
        u: {c: None if v is None else sorted(v) for c, v in row.items()} for u, row in fresh.items()
    }
    del fresh
    lists_t, lists_alpha = timed(lambda: krippendorff_alpha(lists, "jaccard"))
    assert abs(lists_alpha - shared) < 1e-12
    print_table(
        f"1b. Input forms, Jaccard, {n_units:,} units (same answers)",
        ["shared frozensets s", "distinct frozensets s", "triples s", "lists s"],
        [[fmt_s(shared_t), fmt_s(fresh_t), fmt_s(triples_t), fmt_s(lists_t)]],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke test)")
    parser.add_argument("--columns", action="store_true", help="section 1c at 100k units only")
    args = parser.parse_args()
    print(f"numpy {np.__version__}, Python {sys.version.split()[0]}")
    if args.columns:
        bench_columns(100_000, nltk=True)
        return
    if args.quick:
        bench_narrow([1_000, 10_000], nltk_max=10_000)
        bench_columns(10_000, nltk=True)
        bench_input_forms(10_000)
        bench_wide(1_000, nltk_units=200, pair_units=200)
        bench_bootstrap(10_000, 100)
        bench_classic([10_000])
    else:
        bench_narrow([1_000, 10_000, 100_000, 1_000_000], nltk_max=100_000)
        bench_columns(100_000, nltk=True)
        bench_input_forms(1_000_000)
        bench_wide(10_000, nltk_units=500, pair_units=2_000)
        bench_bootstrap(100_000, 1_000)
        bench_classic([10_000, 100_000])


if __name__ == "__main__":
    main()
