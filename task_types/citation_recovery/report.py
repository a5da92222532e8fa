"""Citation recovery report (Xing, Baldwin & Lau): attribution scores against gold, transparency,
the per-group table of the paper's Table 3, F1 distribution, helpfulness with its Bayesian
calibration, and judge-versus-humans agreement.

Rules (beyond those documented in :mod:`metrics.sets`):

* scores: every answer is scored against its item's gold sentences (set P/R/F1); answers on items
  without gold are not scored. "Humans" pools the answers of every human coder that counts;
  each judge is scored on its own;
* setting: the project's ``masking`` config. In the "full" setting each cited evidence of an
  explanation is its own item with external id ``"<claim>#<evidence>"``; the rows of one claim
  (all its evidences, all coders) are averaged first, then mean ± SD is taken over claims. In the
  "sample" setting every answer is one row;
* transparency proportion: per item the F1 is averaged over the source's coders; an explanation
  (claim) is transparent when every one of its items reaches the threshold (default 0.6);
* groups: the item group (``"generator / evidence source"``), as in Table 3;
* helpfulness calibration: :func:`agreement.calibrate_utility` over the humans' 0–100 ratings
  (z-scored per annotator; annotators without spread are left out and listed).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from statistics import fmean
from typing import Any

import numpy as np

from agreement.reports import sections
from agreement.reports.generic import alpha_with_ci, columns_of
from agreement.reports.inputs import (
    HUMAN,
    JUDGE,
    CoderInfo,
    ItemInfo,
    ReportInput,
    ReportParameter,
)
from agreement.reports.sections import Estimand, Figure, JudgeValidationHooks, SectionResult
from agreement.reports.tables import Table, column, table
from metrics.alpha import ReliabilityColumns, ReliabilityData, krippendorff_alpha
from metrics.calibration import ESTIMATOR_NOTE, CalibrationResult, calibrate_utility
from metrics.distances import AgreementError
from metrics.sets import (
    HUMANS,
    MeanSD,
    SetScores,
    aggregate_claims,
    annotation_entropy,
    judge_human_reliability_data,
    mean_sd,
    set_scores,
    transparency_proportion,
)
from metrics.sets import (
    JUDGE as JUDGE_CODER,
)

from .task import CitationRecovery

NO_GROUP = "(no group)"
BINS = 10


def claim_of(key: str, gold: Any) -> str:
    """The explanation (claim) an item belongs to: ``"<claim>#<evidence>"`` → ``"<claim>"``."""
    evidence = gold.get("evidence_id") if isinstance(gold, Mapping) else None
    suffix = f"#{evidence}"
    if evidence is not None and key.endswith(suffix):
        return key[: -len(suffix)]
    return key


def _gold_sentences(gold: Any) -> list | None:
    if isinstance(gold, Mapping) and isinstance(gold.get("sentences"), list):
        return gold["sentences"]
    return None


def _helpfulness(answer: Mapping) -> float | None:
    value = answer.get("helpfulness")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


class _Scored:
    """Per-answer scores of one set of coders, with the aggregations the tables need."""

    def __init__(self, rows: list[tuple[str, str, SetScores, float | None]], claims, setting):
        self.rows = rows  # (unit, coder, scores, helpfulness)
        self.claims = claims
        self.setting = setting
        self._unit_f1: dict[str, float] | None = None

    def subset(self, units: set[str]) -> _Scored:
        part = _Scored([r for r in self.rows if r[0] in units], self.claims, self.setting)
        # A subset has every row of its units: their mean F1 is the same.
        part._unit_f1 = self._unit_f1
        return part

    def unit_f1(self) -> dict[str, float]:
        """Mean F1 of each unit over its rows (``fmean``: exactly rounded, so the order of the
        rows does not matter), units in order of first appearance; shared with subsets."""
        if self._unit_f1 is None:
            f1_by_unit: dict[str, list[float]] = defaultdict(list)
            for unit, _, s, _ in self.rows:
                f1_by_unit[unit].append(s.f1)
            means: dict[tuple, float] = {}  # F1s repeat: one fmean per distinct tuple
            unit_f1 = {}
            for unit, values in f1_by_unit.items():
                key = tuple(values)
                mean = means.get(key)
                if mean is None:
                    mean = means[key] = fmean(key)
                unit_f1[unit] = mean
            self._unit_f1 = unit_f1
        return self._unit_f1

    def summary(self, threshold: float) -> dict:
        claims = self.claims
        rows = self.rows
        summary = aggregate_claims(
            zip(
                map(claims.__getitem__, map(itemgetter(0), rows)),
                map(itemgetter(2), rows),
                strict=True,
            ),
            self.setting,
        )
        unit_f1 = self.unit_f1()
        units = dict.fromkeys(map(itemgetter(0), rows))
        by_claim: dict[str, list[float]] = defaultdict(list)
        for unit in units:
            by_claim[claims[unit]].append(unit_f1[unit])
        helpful = helpfulness_over_items((row[0], row[3]) for row in rows)
        return {
            "answers": len(rows),
            "items": len(units),
            "claims": len(by_claim),
            "n": summary.n,
            "precision_mean": summary.precision.mean,
            "precision_sd": summary.precision.sd,
            "recall_mean": summary.recall.mean,
            "recall_sd": summary.recall.sd,
            "f1_mean": summary.f1.mean,
            "f1_sd": summary.f1.sd,
            "transparency": transparency_proportion(by_claim, threshold),
            "helpfulness_mean": helpful.mean,
            "helpfulness_sd": helpful.sd,
        }


def helpfulness_over_items(ratings: Iterable[tuple[str, float | None]]) -> MeanSD:
    """Mean ± SD of helpfulness over items, as the paper reports it: each item's ratings
    averaged first, then the mean and the sample SD (n - 1) of those item means; ``(unit,
    rating)`` pairs, None ratings left out. (Over all ratings instead, the SD mixes the spread
    between annotators into the spread between explanations: on the release's GPT-4 ratings
    29.89 against the paper's 19.40, which the item means give exactly, 66.87 ± 19.40.)"""
    by_unit: dict[str, list[float]] = defaultdict(list)
    for unit, rating in ratings:
        if rating is not None:
            by_unit[unit].append(rating)
    return mean_sd([fmean(values) for values in by_unit.values()], ddof=1)


def _score(inp: ReportInput, coders: list[str], claims: dict, setting: str) -> _Scored:
    """Every scorable answer of ``coders`` as a row ``(unit, coder, scores, helpfulness)``.

    Answers parsed once per distinct JSON text are shared objects, and golds repeat: each
    answer object is read once and :func:`set_scores` runs once per distinct (selection, gold)
    pair, its (immutable) result shared by the rows that have it."""
    rows = []
    golds: dict[str, tuple | None] = {}  # unit -> its gold as an interned tuple (or None)
    interned: dict[tuple, tuple] = {}
    read: dict[int, tuple | None] = {}  # id(answer) -> (selection, helpfulness) or None
    scored: dict[tuple[tuple, tuple], SetScores] = {}
    items = inp.items
    for coder in coders:
        for unit, answer in inp.answers.get(coder, {}).items():
            gold = golds.get(unit, golds)
            if gold is golds:
                item = items.get(unit)
                found = _gold_sentences(item.gold) if item is not None else None
                gold = None
                if found is not None:
                    key = tuple(found)
                    gold = interned.setdefault(key, key)
                golds[unit] = gold
            if gold is None:
                continue
            facts = read.get(id(answer), read)
            if facts is read:
                if not isinstance(answer, Mapping) or "sentences" not in answer:
                    facts = None  # answers collected elsewhere may hold only a helpfulness rating
                else:
                    selection = tuple(answer.get("sentences") or ())
                    facts = (interned.setdefault(selection, selection), _helpfulness(answer))
                read[id(answer)] = facts
            if facts is None:
                continue
            selection, helpfulness = facts
            scores = scored.get((selection, gold))
            if scores is None:
                scores = scored[(selection, gold)] = set_scores(selection, gold)
            rows.append((unit, coder, scores, helpfulness))
    return _Scored(rows, claims, setting)


def _ratings(inp: ReportInput, coders: list[str]) -> list[tuple[str, str, float]]:
    """``(coder, unit, helpfulness)`` of every rated answer of ``coders`` on the units; each
    (shared) answer object is read once."""
    ratings = []
    items = inp.items
    helpfulness_of: dict[int, float | None] = {}
    for coder in coders:
        for unit, answer in inp.answers.get(coder, {}).items():
            if unit not in items:
                continue
            h = helpfulness_of.get(id(answer), helpfulness_of)
            if h is helpfulness_of:
                h = _helpfulness(answer) if isinstance(answer, Mapping) else None
                helpfulness_of[id(answer)] = h
            if h is not None:
                ratings.append((coder, unit, h))
    return ratings


def _histogram(values: list[float]) -> list[int]:
    counts = [0] * BINS
    for v in values:
        counts[min(int(round(v * BINS, 9)), BINS - 1)] += 1
    return counts


TRANSPARENCY_THRESHOLD = ReportParameter(
    name="transparency_threshold",
    label="Transparency threshold",
    default=0.6,
    minimum=0.0,
    maximum=1.0,
    step=0.05,
)


@dataclass
class _Context:
    """What every table of the section shares, computed once."""

    inp: ReportInput
    setting: str  # "sample" or "full"
    threshold: float
    distance: str
    humans: list[str]
    judges: list[CoderInfo]
    labels: dict[str, str]
    human_scores: _Scored
    judge_scores: dict[str, _Scored]
    human_data: ReliabilityColumns  # the humans' sentence selections as reliability data
    ratings: list[tuple[str, str, float]]  # (coder, unit, helpfulness)
    calibration: CalibrationResult | None

    @classmethod
    def of(cls, inp: ReportInput) -> _Context:
        setting = "full" if inp.config.get("masking") == "full" else "sample"
        distance = inp.measures.get("sentences", "jaccard")
        claims = {key: claim_of(key, item.gold) for key, item in inp.items.items()}
        humans = inp.coder_ids(HUMAN)
        judges = [c for c in inp.coders if c.kind == JUDGE]
        human_scores = _score(inp, humans, claims, setting)
        ratings = _ratings(inp, humans)
        return cls(
            inp=inp,
            setting=setting,
            threshold=inp.options.parameter(TRANSPARENCY_THRESHOLD),
            distance=distance,
            humans=humans,
            judges=judges,
            labels={c.id: c.label or c.id for c in inp.coders},
            human_scores=human_scores,
            judge_scores={j.id: _score(inp, [j.id], claims, setting) for j in judges},
            # Grouped by unit once: the alphas on its selections (per group, without each
            # coder) do not sort a million values each.
            human_data=columns_of(inp, "sentences", distance, HUMAN).grouped(),
            ratings=ratings,
            calibration=calibrate_utility(ratings) if ratings else None,
        )

    def units_in(self, units: set[str]) -> ReliabilityColumns:
        """The humans' selections on ``units`` only."""
        data = self.human_data
        chosen = np.fromiter(
            (key in units for key in data.unit_keys), dtype=bool, count=data.n_units
        )
        return data.select(chosen[data.units])

    def without(self, coder: str) -> ReliabilityColumns:
        """The humans' selections without ``coder``'s."""
        data = self.human_data
        codes = [n for n, key in enumerate(data.coder_keys) if key == coder]
        return data.select(~np.isin(data.coders, codes))

    def helpfulness(self, units: set[str] | None = None) -> dict:
        """Helpfulness over items (:func:`helpfulness_over_items`) from every rating of the
        humans, on ``units`` (default: all): rating-only items (explanations that cite no
        evidence) and ratings collected without a selection count too. ``helpfulness_items``:
        the rated items."""
        ratings = self.ratings if units is None else [r for r in self.ratings if r[1] in units]
        helpful = helpfulness_over_items((unit, h) for _, unit, h in ratings)
        return {
            "helpfulness_mean": helpful.mean if helpful.n else None,
            "helpfulness_sd": helpful.sd if helpful.n else None,
            "helpfulness_items": helpful.n,
        }

    def alpha(self, data: ReliabilityData) -> dict:
        options = self.inp.options
        return alpha_with_ci(
            data, self.distance, n_boot=options.n_boot, confidence=options.confidence
        )


def _scores_table(ctx: _Context, human_summary: dict) -> Table:
    """Headline scores per source: the humans, then each judge."""
    threshold = ctx.threshold
    rows = [{"source": "Humans", "coders": len(ctx.humans), **human_summary}]
    for judge in ctx.judges:
        summary = ctx.judge_scores[judge.id].summary(threshold)
        rows.append({"source": ctx.labels[judge.id], "coders": 1, **summary})
    if ctx.setting == "full":
        how = (
            "Full setting: rows of one claim (each masked evidence, each coder) are averaged "
            "first, then over claims."
        )
    else:
        how = "Sample setting: every answer is one row."
    return table(
        f"Attribution scores against gold ({ctx.setting} setting)",
        [
            column("source", "Source", "text"),
            column("coders", "Coders", "int"),
            column("answers", "Answers", "int"),
            column("n", "Claims" if ctx.setting == "full" else "Rows", "int"),
            column("precision", "Precision", "mean_sd"),
            column("recall", "Recall", "mean_sd"),
            column("f1", "F1", "mean_sd"),
            column("transparency", f"Transparency (F1 ≥ {threshold:g})", "pct"),
            column("helpfulness", "Helpfulness", "mean_sd"),
        ],
        rows,
        note=f"Mean ± SD (population SD). {how} Transparency: share of explanations whose every "
        f"masked evidence reaches mean F1 ≥ {threshold:g}. Helpfulness: mean ± sample SD over "
        "items of each item's mean rating, as the paper reports it.",
    )


def _calibration_notes(ctx: _Context) -> list[str]:
    calibration, notes = ctx.calibration, []
    if calibration is None:
        return notes
    if calibration.excluded_annotators:
        notes.append(
            "Helpfulness calibration left out annotators whose ratings have no spread: "
            + ", ".join(ctx.labels.get(a, str(a)) for a in calibration.excluded_annotators)
            + "."
        )
    if not calibration.converged:
        notes.append(
            f"Helpfulness calibration stopped after {calibration.iterations} sweeps "
            "without converging."
        )
    return notes


NONE_OPTION = "none"


def _item_entropies(ctx: _Context) -> dict[str, float]:
    """Per item, the entropy (bits) of how often the humans chose each option: each sentence, or
    "none" for an empty selection (Xing et al., Appendix B)."""
    counts: dict[str, dict] = {}
    options_of: dict[int, tuple] = {}  # id(answer) -> the options it chose (answers are shared)
    items = ctx.inp.items
    for answers in ctx.inp.answers_of(HUMAN).values():
        for unit, answer in answers.items():
            if unit not in items:
                continue
            options = options_of.get(id(answer))
            if options is None:
                if not isinstance(answer, Mapping):
                    options = options_of[id(answer)] = ()
                else:
                    chosen = answer.get("sentences") or []
                    options = options_of[id(answer)] = tuple(chosen) if chosen else (NONE_OPTION,)
            if not options:
                continue
            unit_counts = counts.get(unit)
            if unit_counts is None:
                unit_counts = counts[unit] = {}
            for option in options:
                unit_counts[option] = unit_counts.get(option, 0) + 1
    # The entropy depends only on the counts in order: computed once per distinct pattern.
    entropy_of: dict[tuple, float] = {}
    entropies = {}
    for unit, unit_counts in counts.items():
        pattern = tuple(unit_counts.values())
        entropy = entropy_of.get(pattern)
        if entropy is None:
            entropy = entropy_of[pattern] = annotation_entropy(pattern)
        entropies[unit] = entropy
    return entropies


def _group_row(
    ctx: _Context, group: str, units: set[str], entropies: Mapping[str, float]
) -> dict[str, Any]:
    row: dict[str, Any] = {"group": group}
    row.update(ctx.human_scores.subset(units).summary(ctx.threshold))
    row.update(ctx.helpfulness(units))
    row.update(ctx.alpha(ctx.units_in(units)))
    values = [entropies[u] for u in units if u in entropies]
    row["entropy"] = fmean(values) if values else None
    row["utility"] = None
    if ctx.calibration is not None:
        items = ctx.calibration.items
        means = [items[u].mean for u in units if u in items and items[u].n > 0]
        row["utility"] = fmean(means) if means else None
    return row


def _groups_table(ctx: _Context) -> Table:
    """Table 3 of the paper: the humans' figures per item group (generator / evidence source)."""
    by_group: dict[str, set[str]] = defaultdict(set)
    for key, item in ctx.inp.items.items():
        by_group[item.group or NO_GROUP].add(key)
    entropies = _item_entropies(ctx)
    rows = [_group_row(ctx, group, by_group[group], entropies) for group in sorted(by_group)]
    return table(
        "By item group (generator / evidence source)",
        [
            column("group", "Group", "text"),
            column("items", "Items", "int"),
            column("answers", "Answers", "int"),
            column("precision", "Precision", "mean_sd"),
            column("recall", "Recall", "mean_sd"),
            column("f1", "F1", "mean_sd"),
            column("transparency", "Transparency", "pct"),
            column("helpfulness", "Helpfulness", "mean_sd"),
            column("helpfulness_items", "Rated items", "int"),
            column("utility", "Calibrated utility", "num"),
            column("entropy", "Annotation entropy (bits)", "num"),
            column("alpha", f"α sentences ({ctx.distance})", "ci"),
        ],
        [row for row in rows if row["answers"] or row["helpfulness_items"]],
        note="Humans only. Helpfulness: mean ± sample SD over the group's rated items of each "
        "item's mean rating (rating-only items, whose explanation cites no evidence, included). "
        "Calibrated utility: mean posterior item utility (z-scale) of the group. "
        "Annotation entropy: per item, the entropy of how often each sentence (or none) was "
        "chosen, averaged over the group's items (0 when everyone chose the same).",
    )


ATTRIBUTION_FILTERS = (
    ("All explanations", lambda f1: True),
    ("F1 = 1.0", lambda f1: f1 >= 1.0 - 1e-12),
    ("F1 ≥ 0.9", lambda f1: f1 >= 0.9 - 1e-12),
)


def _utility_filters_table(ctx: _Context) -> Table:
    """Table 10 of the paper: helpfulness and calibrated utility of the explanations that pass
    an attribution filter (the humans' mean F1 of the explanation: per item over annotators,
    then over the claim's items in the full setting)."""
    f1_by_unit = ctx.human_scores.unit_f1()
    helpful_by_unit: dict[str, list[float]] = defaultdict(list)
    for unit, _, _, helpfulness in ctx.human_scores.rows:
        if helpfulness is not None:
            helpful_by_unit[unit].append(helpfulness)
    by_claim: dict[str, list[float]] = defaultdict(list)
    for unit, mean in f1_by_unit.items():
        by_claim[ctx.human_scores.claims[unit]].append(mean)
    # fmean of one value is that value (fsum is exact): most claims have one item.
    claim_f1 = {
        claim: values[0] if len(values) == 1 else fmean(values)
        for claim, values in by_claim.items()
    }
    posteriors = ctx.calibration.items if ctx.calibration is not None else {}
    rows = []
    for name, passes in ATTRIBUTION_FILTERS:
        units = [u for u in f1_by_unit if passes(claim_f1[ctx.human_scores.claims[u]])]
        ratings = [(u, h) for u in units for h in helpful_by_unit[u]]
        utilities = [posteriors[u].mean for u in units if u in posteriors and posteriors[u].n]
        helpful = helpfulness_over_items(ratings)
        rows.append(
            {
                "filter": name,
                "explanations": len({ctx.human_scores.claims[u] for u in units}),
                "items": len(units),
                "helpfulness_mean": helpful.mean if ratings else None,
                "helpfulness_sd": helpful.sd if ratings else None,
                "utility": fmean(utilities) if utilities else None,
            }
        )
    return table(
        "Helpfulness after filtering explanations by attribution",
        [
            column("filter", "Explanations", "text"),
            column("explanations", "Count", "int"),
            column("items", "Items", "int"),
            column("helpfulness", "Helpfulness (0–100)", "mean_sd"),
            column("utility", "Calibrated utility", "num"),
        ],
        rows,
        note="Humans only. An explanation passes a filter when the humans' mean attribution F1 "
        "(per item over annotators, then over its masked evidences) reaches it; helpfulness is "
        "the mean ± SD over the passing items of each item's mean rating, calibrated utility "
        "the mean posterior (z-scale).",
    )


def _f1_series(ctx: _Context) -> dict[str, list[int]]:
    series = {"Humans": _histogram([s.f1 for _, _, s, _ in ctx.human_scores.rows])}
    for judge in ctx.judges:
        scores = ctx.judge_scores[judge.id].rows
        series[ctx.labels[judge.id]] = _histogram([s.f1 for _, _, s, _ in scores])
    return series


def _f1_distribution_table(series: dict[str, list[int]]) -> Table:
    rows = []
    for b in range(BINS):
        row = {
            "bin": f"{b / BINS:.1f}–{(b + 1) / BINS:.1f}",
            "lower": b / BINS,
            "upper": (b + 1) / BINS,
        }
        for name, counts in series.items():
            row[name] = counts[b]
        rows.append(row)
    return table(
        "F1 distribution (answers per bin)",
        [column("bin", "F1", "text")] + [column(name, name, "int") for name in series],
        rows,
        note="Bins are [lower, upper); the last bin includes 1.0.",
    )


def _coder_row(ctx: _Context, coder: CoderInfo, rows: list) -> dict[str, Any]:
    f1 = mean_sd([s.f1 for _, _, s, _ in rows])
    helpful = mean_sd([h for *_, h in rows if h is not None])
    row = {
        "coder": ctx.labels[coder.id],
        "kind": coder.kind,
        "answers": len(rows),
        "precision": fmean([s.precision for _, _, s, _ in rows]) if rows else None,
        "recall": fmean([s.recall for _, _, s, _ in rows]) if rows else None,
        "f1_mean": f1.mean,
        "f1_sd": f1.sd,
        "helpfulness_mean": helpful.mean,
        "helpfulness_sd": helpful.sd,
        "reliability": None,
        "alpha_without": None,
    }
    if ctx.calibration is not None and coder.id in ctx.calibration.annotators:
        row["reliability"] = ctx.calibration.annotators[coder.id].mean
    if coder.kind == HUMAN and len(ctx.humans) >= 3:
        row["alpha_without"] = _alpha_or_none(ctx.without(coder.id), ctx.distance)
    return row


def _annotators_table(ctx: _Context) -> Table:
    by_coder: dict[str, list] = defaultdict(list)
    for row in ctx.human_scores.rows:
        by_coder[row[1]].append(row)
    for judge in ctx.judges:
        by_coder[judge.id] = ctx.judge_scores[judge.id].rows
    return table(
        "Per coder",
        [
            column("coder", "Coder", "text"),
            column("kind", "Kind", "text"),
            column("answers", "Scored answers", "int"),
            column("precision", "Precision", "num"),
            column("recall", "Recall", "num"),
            column("f1", "F1", "mean_sd"),
            column("helpfulness", "Helpfulness", "mean_sd"),
            column("reliability", "Rating precision τ", "num"),
            column("alpha_without", "α sentences without this coder", "num"),
        ],
        [_coder_row(ctx, coder, by_coder.get(coder.id, [])) for coder in ctx.inp.coders],
        note=(
            "Rating precision: posterior mean of the annotator's precision τ in the helpfulness "
            "calibration (higher = more consistent with the others; variational Bayes puts it "
            "a few per cent below the exact posterior mean, see the calibrated helpfulness "
            "table). α without this coder: the "
            "humans' sentence agreement when this annotator is left out (higher than the "
            "overall α means this annotator lowers agreement)."
        ),
    )


def _utility_table(ctx: _Context, calibration: CalibrationResult) -> Table:
    """Calibrated helpfulness per item."""
    raw: dict[str, list[float]] = defaultdict(list)
    for _, unit, h in ctx.ratings:
        raw[unit].append(h)
    items = ctx.inp.items
    rows = [
        {
            "item": unit,
            "group": items[unit].group if unit in items else "",
            "ratings": post.n,
            "raw_mean": fmean(raw[unit]) if raw.get(unit) else None,
            "utility_mean": post.mean,
            "utility_sd": post.sd,
        }
        for unit, post in calibration.items.items()
    ]
    rows.sort(key=lambda r: -r["utility_mean"])
    return table(
        "Calibrated helpfulness per item",
        [
            column("item", "Item", "text"),
            column("group", "Group", "text"),
            column("ratings", "Ratings", "int"),
            column("raw_mean", "Mean rating (0–100)", "num"),
            column("utility", "Posterior utility", "mean_sd"),
        ],
        rows,
        note=(
            "Posterior mean ± SD of each item's utility μ (z-scale) under the Bayesian model "
            "μ ~ N(0, 1), τ ~ Gamma(1.5, rate 0.5). " + ESTIMATOR_NOTE
        ),
    )


def _judge_row(ctx: _Context, judge: CoderInfo) -> dict[str, Any]:
    """One judge against the merged humans (paper §4.1), with its own F1 and transparency."""
    mine = ctx.inp.answers.get(judge.id, {})
    human_answers = ctx.inp.answers_of(HUMAN)
    entries = []
    for unit, item in ctx.inp.items.items():
        gold = _gold_sentences(item.gold)
        if gold is None:
            continue
        answer = mine.get(unit)
        selection = answer.get("sentences") if isinstance(answer, Mapping) else None
        people = [
            a[unit].get("sentences") or []
            for a in human_answers.values()
            if isinstance(a.get(unit), Mapping)
        ]
        entries.append((unit, gold, selection, people))
    data = {
        unit: values
        for unit, values in judge_human_reliability_data(entries).items()
        if JUDGE_CODER in values and HUMANS in values
    }
    row = {"judge": ctx.labels[judge.id], "items": len(data), **ctx.alpha(data)}
    summary = ctx.judge_scores[judge.id].summary(ctx.threshold)
    row.update({k: summary[k] for k in ("f1_mean", "f1_sd", "transparency")})
    return row


def _judges_table(ctx: _Context) -> Table:
    return table(
        "Judges versus humans",
        [
            column("judge", "Judge", "text"),
            column("items", "Items with both", "int"),
            column("alpha", f"α judge vs merged humans ({ctx.distance})", "ci"),
            column("f1", "Judge F1", "mean_sd"),
            column("transparency", "Judge transparency", "pct"),
        ],
        [_judge_row(ctx, judge) for judge in ctx.judges],
        note=(
            "The humans' selections are merged by union, a “none” answer counting as the "
            "label −1; in both the judge's and the merged set every label outside gold (−1 "
            "included) becomes one common label (paper §4.1)."
        ),
    )


def _judges_by_group_table(ctx: _Context) -> Table:
    """The paper's tables of automatic annotators: each judge's attribution scores per item
    group (generator / evidence source), beside the humans' on the same items."""
    by_group: dict[str, set[str]] = defaultdict(set)
    for key, item in ctx.inp.items.items():
        by_group[item.group or NO_GROUP].add(key)
    rows = []
    for group in sorted(by_group):
        units = by_group[group]
        sources = [("Humans", ctx.human_scores)] + [
            (ctx.labels[j.id], ctx.judge_scores[j.id]) for j in ctx.judges
        ]
        for source, scored in sources:
            summary = scored.subset(units).summary(ctx.threshold)
            if summary["answers"]:
                rows.append({"group": group, "source": source, **summary})
    return table(
        "Judges and humans per item group (generator / evidence source)",
        [
            column("group", "Group", "text"),
            column("source", "Source", "text"),
            column("answers", "Answers", "int"),
            column("precision", "Precision", "mean_sd"),
            column("recall", "Recall", "mean_sd"),
            column("f1", "F1", "mean_sd"),
            column("transparency", "Transparency", "pct"),
        ],
        rows,
        note="Attribution scores against gold of each selected judge and of the humans, on the "
        "same items of each group.",
    )


def _plots(ctx: _Context, series: list[str]) -> list[dict]:
    confidence_pct = round(100 * ctx.inp.options.confidence)
    return [
        {
            "kind": "bars",
            "table": "groups",
            "label": "group",
            "value": "alpha",
            "lower": "alpha_lower",
            "upper": "alpha_upper",
            "title": f"Agreement on sentences by group: α ({ctx.distance}) with "
            f"{confidence_pct} % CI",
            "domain": [0.0, 1.0],
        },
        {
            "kind": "bars",
            "table": "groups",
            "label": "group",
            "value": "f1_mean",
            "sd": "f1_sd",
            "title": "Humans' F1 against gold by group (mean ± SD)",
            "domain": [0.0, 1.0],
        },
        {
            "kind": "histogram",
            "table": "f1_distribution",
            "label": "bin",
            "series": series,
            "title": "F1 distribution (answers per bin)",
        },
    ]


def section(inp: ReportInput) -> SectionResult:
    ctx = _Context.of(inp)
    human_summary = ctx.human_scores.summary(ctx.threshold) | ctx.helpfulness()
    series = _f1_series(ctx)
    groups = _groups_table(ctx)
    result = SectionResult(
        title="Citation recovery",
        tables={
            "scores": _scores_table(ctx, human_summary),
            "groups": groups,
            "f1_distribution": _f1_distribution_table(series),
            "annotators": _annotators_table(ctx),
            "utility_filters": _utility_filters_table(ctx),
        },
        summary=[
            Figure("Setting", ctx.setting),
            Figure("F1 (humans)", _mean_sd_text(human_summary, "f1")),
            Figure(f"Transparency at {ctx.threshold:g}", _pct_text(human_summary["transparency"])),
            Figure("Helpfulness", _mean_sd_text(human_summary, "helpfulness")),
        ],
        plots=_plots(ctx, list(series)),
        notes=_calibration_notes(ctx),
        scalars={
            "Precision (humans)": human_summary["precision_mean"],
            "Recall (humans)": human_summary["recall_mean"],
            "F1 (humans)": human_summary["f1_mean"],
            "Transparency (humans)": human_summary["transparency"],
            "Helpfulness (humans)": human_summary["helpfulness_mean"],
        },
        vectors={
            "Humans' mean F1 by group": {row["group"]: row["f1_mean"] for row in groups["rows"]}
        },
        domains={"Humans' mean F1 by group": (0.0, 1.0)},
    )
    if ctx.calibration is not None:
        result.tables["utility"] = _utility_table(ctx, ctx.calibration)
    if ctx.judges:
        result.tables["judges"] = _judges_table(ctx)
        result.tables["judges_by_group"] = _judges_by_group_table(ctx)
    elif inp.available_judges:
        result.notes.append(
            "Judge answers exist for this project: select judges above to compare them with "
            "the humans."
        )
    return result


# --- prediction-powered estimates (agreement.reports.estimates) ---------------------------------


def _claim_values(
    unit_f1: Mapping[str, float], items_of: Mapping[str, list[str]], threshold: float
) -> tuple[dict[str, float], dict[str, float]]:
    """Per claim whose every gold item has an F1 from this source: its mean F1 (over its
    items) and whether it is transparent (1: every item reaches ``threshold``)."""
    f1, transparent = {}, {}
    for claim, units in items_of.items():
        if any(unit not in unit_f1 for unit in units):
            continue
        values = [unit_f1[unit] for unit in units]
        f1[claim] = fmean(values)
        transparent[claim] = float(all(v >= threshold for v in values))
    return f1, transparent


def estimands(inp: ReportInput) -> list[Estimand]:
    """Mean F1 and transparency per item group and over all groups. Units: explanations
    (claims); a claim's value is the mean over its items of each item's F1 (averaged over the
    item's human coders for the humans), transparency 1 when every item reaches the threshold;
    a claim counts as human-labelled when humans answered every one of its items."""
    setting = "full" if inp.config.get("masking") == "full" else "sample"
    threshold = inp.options.parameter(TRANSPARENCY_THRESHOLD)
    claims = {key: claim_of(key, item.gold) for key, item in inp.items.items()}
    items_of: dict[str, list[str]] = defaultdict(list)
    group_of: dict[str, str] = {}
    for key, item in inp.items.items():
        if _gold_sentences(item.gold) is not None:
            items_of[claims[key]].append(key)
            group_of.setdefault(claims[key], item.group or NO_GROUP)
    sources = {"humans": _score(inp, inp.coder_ids(HUMAN), claims, setting)}
    judges = [c for c in inp.coders if c.kind == JUDGE]
    for judge in judges:
        sources[judge.label or judge.id] = _score(inp, [judge.id], claims, setting)
    values = {
        name: _claim_values(scored.unit_f1(), items_of, threshold)
        for name, scored in sources.items()
    }
    found = []
    for group in [None, *sorted(set(group_of.values()))]:
        keep = {c for c, g in group_of.items() if group is None or g == group}
        where = "all groups" if group is None else group
        for index, name in ((0, "Mean F1"), (1, f"Transparency (F1 ≥ {threshold:g})")):
            per = {
                source: {c: v for c, v in pair[index].items() if c in keep}
                for source, pair in values.items()
            }
            found.append(
                Estimand(
                    figure=f"{name}, {where}",
                    humans=per["humans"],
                    judges={j.label or j.id: per[j.label or j.id] for j in judges},
                    unit="explanations",
                    bounds=(0.0, 1.0),  # F1 and transparency (a share) of one explanation
                    items_of={c: tuple(items_of[c]) for c in keep},
                    labelled_items=frozenset(sources["humans"].unit_f1()),
                )
            )
    return found


def _alpha_or_none(data: ReliabilityData, distance: str) -> float | None:
    try:
        return krippendorff_alpha(data, distance)
    except AgreementError:
        return None


def _mean_sd_text(summary: Mapping, key: str) -> str:
    mean, sd = summary.get(f"{key}_mean"), summary.get(f"{key}_sd")
    if mean is None or mean != mean:
        return "—"
    return f"{mean:.2f} ± {sd:.2f}" if sd == sd and sd is not None else f"{mean:.2f}"


def _pct_text(value: float | None) -> str:
    if value is None or value != value:
        return "—"
    return f"{100 * value:.1f} %"


def judge_human_values(
    item: ItemInfo, judge: Mapping, humans: Sequence[Mapping]
) -> tuple[frozenset, frozenset] | None:
    """Judge validation: the judge's and the merged humans' standardised selections of one item
    (:func:`metrics.sets.judge_human_reliability_data`); None without gold."""
    gold = _gold_sentences(item.gold)
    if gold is None:
        return None
    people = [h.get("sentences") or [] for h in humans]
    row = judge_human_reliability_data([(item.key, gold, judge.get("sentences") or [], people)])[
        item.key
    ]
    return row[JUDGE_CODER], row[HUMANS]


JUDGE_VALIDATION = JudgeValidationHooks(
    values=judge_human_values,
    distance="jaccard",
    rule="The humans' selections are merged by union; “none” is the label −1; in both the "
    "judge's and the merged set every label outside gold (−1 included) becomes one common "
    "label (paper §4.1, footnote 11); alpha with Jaccard distance.",
)

sections.register(
    CitationRecovery.slug,
    section=section,
    parameters=(TRANSPARENCY_THRESHOLD,),
    judge_validation=JUDGE_VALIDATION,
    estimands=estimands,
)
