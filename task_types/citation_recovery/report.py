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
from collections.abc import Mapping
from statistics import fmean
from typing import Any

from agreement.reports import sections
from agreement.reports.generic import alpha_with_ci, reliability_data
from agreement.reports.inputs import HUMAN, JUDGE, ReportInput
from agreement.reports.tables import column, table
from metrics.alpha import krippendorff_alpha
from metrics.calibration import calibrate_utility
from metrics.distances import AgreementError
from metrics.sets import (
    HUMANS,
    SetScores,
    aggregate_claims,
    judge_human_reliability_data,
    mean_sd,
    set_scores,
    transparency_proportion,
)
from metrics.sets import (
    JUDGE as JUDGE_CODER,
)

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

    def subset(self, units: set[str]) -> _Scored:
        return _Scored([r for r in self.rows if r[0] in units], self.claims, self.setting)

    def summary(self, threshold: float) -> dict:
        summary = aggregate_claims(
            [(self.claims[unit], s) for unit, _, s, _ in self.rows], self.setting
        )
        f1_by_unit: dict[str, list[float]] = defaultdict(list)
        for unit, _, s, _ in self.rows:
            f1_by_unit[unit].append(s.f1)
        by_claim: dict[str, list[float]] = defaultdict(list)
        for unit, values in f1_by_unit.items():
            by_claim[self.claims[unit]].append(fmean(values))
        helpful = mean_sd([h for *_, h in self.rows if h is not None])
        return {
            "answers": len(self.rows),
            "items": len(f1_by_unit),
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


def _score(inp: ReportInput, coders: list[str], claims: dict, setting: str) -> _Scored:
    rows = []
    for coder in coders:
        for unit, answer in inp.answers.get(coder, {}).items():
            item = inp.items.get(unit)
            gold = _gold_sentences(item.gold) if item is not None else None
            if gold is None or not isinstance(answer, Mapping):
                continue
            rows.append(
                (unit, coder, set_scores(answer.get("sentences") or [], gold), _helpfulness(answer))
            )
    return _Scored(rows, claims, setting)


def _histogram(values: list[float]) -> list[int]:
    counts = [0] * BINS
    for v in values:
        counts[min(int(round(v * BINS, 9)), BINS - 1)] += 1
    return counts


def section(inp: ReportInput) -> dict:
    setting = "full" if inp.config.get("masking") == "full" else "sample"
    threshold = inp.options.transparency_threshold
    n_boot, confidence = inp.options.n_boot, inp.options.confidence
    distance = inp.measures.get("sentences", "jaccard")
    claims = {key: claim_of(key, item.gold) for key, item in inp.items.items()}
    humans = inp.coder_ids(HUMAN)
    judges = [c for c in inp.coders if c.kind == JUDGE]
    human_scores = _score(inp, humans, claims, setting)
    judge_scores = {j.id: _score(inp, [j.id], claims, setting) for j in judges}
    labels = {c.id: c.label or c.id for c in inp.coders}
    tables: dict[str, dict] = {}
    notes: list[str] = []

    # --- headline scores per source --------------------------------------------------------
    human_summary = human_scores.summary(threshold)
    score_rows = [{"source": "Humans", "coders": len(humans), **human_summary}]
    for judge in judges:
        score_rows.append(
            {"source": labels[judge.id], "coders": 1, **judge_scores[judge.id].summary(threshold)}
        )
    unit_label = "Claims" if setting == "full" else "Rows"
    tables["scores"] = table(
        f"Attribution scores against gold ({setting} setting)",
        [
            column("source", "Source", "text"),
            column("coders", "Coders", "int"),
            column("answers", "Answers", "int"),
            column("n", unit_label, "int"),
            column("precision", "Precision", "mean_sd"),
            column("recall", "Recall", "mean_sd"),
            column("f1", "F1", "mean_sd"),
            column("transparency", f"Transparency (F1 ≥ {threshold:g})", "pct"),
            column("helpfulness", "Helpfulness", "mean_sd"),
        ],
        score_rows,
        note=(
            "Mean ± SD (population SD). "
            + (
                "Full setting: rows of one claim (each masked evidence, each coder) are averaged "
                "first, then over claims."
                if setting == "full"
                else "Sample setting: every answer is one row."
            )
            + f" Transparency: share of explanations whose every masked evidence reaches mean "
            f"F1 ≥ {threshold:g}."
        ),
    )

    # --- calibration of helpfulness --------------------------------------------------------
    ratings = [(coder, unit, h) for unit, coder, _, h in human_scores.rows if h is not None]
    calibration = None
    if ratings:
        calibration = calibrate_utility(ratings)
        if calibration.excluded_annotators:
            notes.append(
                "Helpfulness calibration left out annotators whose ratings have no spread: "
                + ", ".join(labels.get(a, str(a)) for a in calibration.excluded_annotators)
                + "."
            )
        if not calibration.converged:
            notes.append(
                f"Helpfulness calibration stopped after {calibration.iterations} sweeps "
                "without converging."
            )

    # --- per group (Table 3) ---------------------------------------------------------------
    human_data = reliability_data(inp.answers_of(HUMAN), "sentences", distance, set(inp.items))
    by_group: dict[str, set[str]] = defaultdict(set)
    for key, item in inp.items.items():
        by_group[item.group or NO_GROUP].add(key)
    group_rows = []
    for group in sorted(by_group):
        units = by_group[group]
        row: dict[str, Any] = {"group": group}
        scored = human_scores.subset(units)
        row.update(scored.summary(threshold))
        row.update(
            alpha_with_ci(
                {u: human_data[u] for u in units if u in human_data},
                distance,
                n_boot=n_boot,
                confidence=confidence,
            )
        )
        if calibration is not None:
            means = [
                calibration.items[u].mean
                for u in units
                if u in calibration.items and calibration.items[u].n > 0
            ]
            row["utility"] = fmean(means) if means else None
        else:
            row["utility"] = None
        if not row["answers"]:
            continue
        group_rows.append(row)
    tables["groups"] = table(
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
            column("utility", "Calibrated utility", "num"),
            column("alpha", f"α sentences ({distance})", "ci"),
        ],
        group_rows,
        note="Humans only. Calibrated utility: mean posterior item utility (z-scale) of the group.",
    )

    # --- F1 distribution ---------------------------------------------------------------------
    series = {"Humans": _histogram([s.f1 for _, _, s, _ in human_scores.rows])}
    for judge in judges:
        series[labels[judge.id]] = _histogram([s.f1 for _, _, s, _ in judge_scores[judge.id].rows])
    dist_rows = []
    for b in range(BINS):
        row = {
            "bin": f"{b / BINS:.1f}–{(b + 1) / BINS:.1f}",
            "lower": b / BINS,
            "upper": (b + 1) / BINS,
        }
        for name, counts in series.items():
            row[name] = counts[b]
        dist_rows.append(row)
    tables["f1_distribution"] = table(
        "F1 distribution (answers per bin)",
        [column("bin", "F1", "text")] + [column(name, name, "int") for name in series],
        dist_rows,
        note="Bins are [lower, upper); the last bin includes 1.0.",
    )

    # --- per annotator -----------------------------------------------------------------------
    by_coder: dict[str, list] = defaultdict(list)
    for row in human_scores.rows:
        by_coder[row[1]].append(row)
    for judge in judges:
        by_coder[judge.id] = judge_scores[judge.id].rows
    annotator_rows = []
    for coder in inp.coders:
        rows = by_coder.get(coder.id, [])
        f1 = mean_sd([s.f1 for _, _, s, _ in rows])
        helpful = mean_sd([h for *_, h in rows if h is not None])
        row = {
            "coder": labels[coder.id],
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
        if calibration is not None and coder.id in calibration.annotators:
            row["reliability"] = calibration.annotators[coder.id].mean
        if coder.kind == HUMAN and len(humans) >= 3:
            rest = {
                u: {c: v for c, v in vals.items() if c != coder.id}
                for u, vals in human_data.items()
            }
            row["alpha_without"] = _alpha_or_none(rest, distance)
        annotator_rows.append(row)
    tables["annotators"] = table(
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
        annotator_rows,
        note=(
            "Rating precision: posterior mean of the annotator's precision τ in the helpfulness "
            "calibration (higher = more consistent with the others). α without this coder: the "
            "humans' sentence agreement when this annotator is left out (higher than the "
            "overall α means this annotator lowers agreement)."
        ),
    )

    # --- calibrated item utilities -----------------------------------------------------------
    if calibration is not None:
        raw: dict[str, list[float]] = defaultdict(list)
        for _, unit, h in ratings:
            raw[unit].append(h)
        utility_rows = [
            {
                "item": unit,
                "group": inp.items[unit].group if unit in inp.items else "",
                "ratings": post.n,
                "raw_mean": fmean(raw[unit]) if raw.get(unit) else None,
                "utility_mean": post.mean,
                "utility_sd": post.sd,
            }
            for unit, post in calibration.items.items()
        ]
        utility_rows.sort(key=lambda r: -r["utility_mean"])
        tables["utility"] = table(
            "Calibrated helpfulness per item",
            [
                column("item", "Item", "text"),
                column("group", "Group", "text"),
                column("ratings", "Ratings", "int"),
                column("raw_mean", "Mean rating (0–100)", "num"),
                column("utility", "Posterior utility", "mean_sd"),
            ],
            utility_rows,
            note=(
                "Posterior mean ± SD of each item's utility μ (z-scale) under the Bayesian model "
                "μ ~ N(0, 1), τ ~ Gamma(1.5, rate 0.5), fitted by mean-field variational Bayes."
            ),
        )

    # --- judges versus humans ----------------------------------------------------------------
    if judges:
        judge_rows = []
        human_answers = inp.answers_of(HUMAN)
        for judge in judges:
            mine = inp.answers.get(judge.id, {})
            entries = []
            for unit, item in inp.items.items():
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
            row = {"judge": labels[judge.id], "items": len(data)}
            row.update(alpha_with_ci(data, distance, n_boot=n_boot, confidence=confidence))
            summary = judge_scores[judge.id].summary(threshold)
            row.update({k: summary[k] for k in ("f1_mean", "f1_sd", "transparency")})
            judge_rows.append(row)
        tables["judges"] = table(
            "Judges versus humans",
            [
                column("judge", "Judge", "text"),
                column("items", "Items with both", "int"),
                column("alpha", f"α judge vs merged humans ({distance})", "ci"),
                column("f1", "Judge F1", "mean_sd"),
                column("transparency", "Judge transparency", "pct"),
            ],
            judge_rows,
            note=(
                "The humans' selections are merged by union; in both the judge's and the merged "
                "set every sentence outside gold becomes one common label (paper §4.1)."
            ),
        )
    elif inp.available_judges:
        notes.append(
            "Judge answers exist for this project: select judges above to compare them with "
            "the humans."
        )

    summary_items = [
        {"label": "Setting", "value": setting},
        {"label": "F1 (humans)", "value": _mean_sd_text(human_summary, "f1")},
        {
            "label": f"Transparency at {threshold:g}",
            "value": _pct_text(human_summary["transparency"]),
        },
        {"label": "Helpfulness", "value": _mean_sd_text(human_summary, "helpfulness")},
    ]
    confidence_pct = round(100 * confidence)
    plots = [
        {
            "kind": "bars",
            "table": "groups",
            "label": "group",
            "value": "alpha",
            "lower": "alpha_lower",
            "upper": "alpha_upper",
            "title": f"Agreement on sentences by group: α ({distance}) with {confidence_pct} % CI",
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
            "series": list(series),
            "title": "F1 distribution (answers per bin)",
        },
    ]
    comparison = {
        "scalars": {
            "Precision (humans)": human_summary["precision_mean"],
            "Recall (humans)": human_summary["recall_mean"],
            "F1 (humans)": human_summary["f1_mean"],
            "Transparency (humans)": human_summary["transparency"],
            "Helpfulness (humans)": human_summary["helpfulness_mean"],
        },
        "vectors": {
            "Humans' mean F1 by group": {row["group"]: row["f1_mean"] for row in group_rows}
        },
        "domains": {"Humans' mean F1 by group": [0.0, 1.0]},
    }
    return {
        "title": "Citation recovery",
        "summary": summary_items,
        "tables": tables,
        "plots": plots,
        "notes": notes,
        "comparison": comparison,
    }


def _alpha_or_none(data: Mapping, distance: str) -> float | None:
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


sections.register("citation_recovery", section=section)
