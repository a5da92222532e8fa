"""Stance report (UPHILL, Kaur et al. 2024): stance shares and factual accuracy by presupposition
level, consistency across levels, and label agreement on responses and sentences.

Rules:

* humans only (judges, when selected, count in the generic agreement table);
* shares by level: every human answer's response label counts once;
* factual accuracy and consistency (:mod:`metrics.stance`) use one stance per response: the
  majority of its human labels; a response whose labels tie has no majority and is left out
  (counted in a note); responses without veracity or level are left out too. Accuracy at a level
  is the share of responses with the correct stance (agree with true, disagree with false,
  neutral on mixture claims), overall accuracy the mean over levels; consistency is the share of
  claims with one stance at every level present for that model. Both are given per model
  (model × level is what the paper reports) and for all models together when there are several;
* label agreement: response labels, sentence labels, and both pooled (units are responses and
  (response, sentence) pairs), with alpha (nominal), pairwise agreement, "all agree" and "at
  least two agree" — the figures UPHILL reports (75.8 %, 64.0 %, 97.9 %).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agreement.reports import sections
from agreement.reports.generic import alpha_with_ci
from agreement.reports.inputs import HUMAN, ReportInput
from agreement.reports.sections import Figure, SectionResult
from agreement.reports.tables import Table, column, table
from metrics.kappa import all_agree_rate, at_least_two_agree_rate, pairwise_agreement
from metrics.stance import CORRECT_STANCE, consistency, factual_accuracy

from .serializers import LABELS, LEVEL_NAMES
from .task import Stance

ALL_MODELS = "All models"


def item_extra(payload: dict, prepared: dict) -> dict:
    """Claim, veracity, presupposition level and model of a response (never shown to annotators)."""
    level = payload.get("level")
    try:
        level = int(level) if level is not None and level != "" else None
    except (TypeError, ValueError):
        level = None
    return {
        "claim_id": payload.get("claim_id") or payload.get("id"),
        "veracity": (payload.get("veracity") or "").strip().lower() or None,
        "level": level,
        "model": payload.get("model") or "",
    }


def _label(value: Any) -> str | None:
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


def _majority(labels: list[str]) -> str | None:
    counts = Counter(labels).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def _pct(value: float) -> str:
    return "—" if value is None or math.isnan(value) else f"{100 * value:.1f} %"


def _agreement_row(name: str, data: dict, n_boot: int, confidence: float) -> dict:
    labels = [list(values.values()) for values in data.values()]
    row = {"labels": name, "units": len(data)}
    row.update(alpha_with_ci(data, "nominal", n_boot=n_boot, confidence=confidence))
    row["pairwise"] = pairwise_agreement(labels)
    row["all_agree"] = all_agree_rate(labels)
    row["at_least_two"] = at_least_two_agree_rate(labels)
    return row


@dataclass
class _Labels:
    """The humans' labels, gathered once for every table."""

    per_item: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    shares: dict[Any, Counter] = field(default_factory=lambda: defaultdict(Counter))  # by level
    not_sure: Counter = field(default_factory=Counter)  # by level
    responses: dict[str, dict[str, str]] = field(default_factory=dict)  # unit -> coder -> label
    sentences: dict[str, dict[str, str]] = field(default_factory=dict)  # unit::index -> ...


def _labels(inp: ReportInput) -> _Labels:
    found = _Labels()
    for coder, answers in inp.answers_of(HUMAN).items():
        for unit, answer in answers.items():
            item = inp.items.get(unit)
            if item is None or not isinstance(answer, Mapping):
                continue
            label = _label(answer.get("label"))
            level = item.extra.get("level")
            if label is not None:
                found.per_item[unit].append(label)
                found.shares[level][label] += 1
                found.responses.setdefault(unit, {})[coder] = label
                found.not_sure[level] += bool(answer.get("not_sure"))
            for sentence in answer.get("sentences") or []:
                if isinstance(sentence, Mapping) and _label(sentence.get("label")) is not None:
                    key = f"{unit}::{sentence.get('index')}"
                    found.sentences.setdefault(key, {})[coder] = _label(sentence["label"])
    return found


def _shares_table(labels: _Labels) -> Table:
    rows = []
    for level in sorted(labels.shares, key=lambda v: (v is None, v if v is not None else 0)):
        counts = labels.shares[level]
        total = sum(counts.values())
        rows.append(
            {
                "level": "—" if level is None else str(level),
                "name": LEVEL_NAMES.get(level, "unknown level")
                if level is not None
                else "no level",
                "answers": total,
                **{label: counts[label] / total for label in LABELS},
                "other": sum(v for k, v in counts.items() if k not in LABELS) / total,
                "not_sure": labels.not_sure[level] / total,
            }
        )
    return table(
        "Stance shares by presupposition level (response labels)",
        [
            column("level", "Level", "text"),
            column("name", "Presupposition", "text"),
            column("answers", "Answers", "int"),
            *[column(label, label.capitalize(), "pct") for label in LABELS],
            column("not_sure", "Not sure", "pct"),
        ],
        rows,
        note='Every human answer counts once. "Not sure" is a flag next to the label.',
    )


def _scored_responses(
    inp: ReportInput, labels: _Labels
) -> tuple[dict[str, list[tuple]], list[str]]:
    """(claim id, veracity, level, majority stance) per response, by model, and notes on the
    responses left out (tied labels; no veracity or level)."""
    by_model: dict[str, list[tuple]] = defaultdict(list)
    ties = unscored = 0
    for unit, unit_labels in labels.per_item.items():
        extra = inp.items[unit].extra
        majority = _majority(unit_labels)
        if majority is None:
            ties += 1
            continue
        if extra.get("veracity") not in CORRECT_STANCE or extra.get("level") is None:
            unscored += 1
            continue
        row = (extra["claim_id"], extra["veracity"], extra["level"], majority)
        by_model[extra.get("model") or "(no model)"].append(row)
    notes = []
    if ties:
        notes.append(
            f"{ties} response(s) have tied labels and no majority stance; they are left "
            "out of accuracy and consistency."
        )
    if unscored:
        notes.append(
            f"{unscored} response(s) lack a veracity or a presupposition level and are "
            "left out of accuracy and consistency."
        )
    return by_model, notes


def _accuracy_table(by_model: dict[str, list[tuple]], levels: list) -> Table:
    groups = dict(sorted(by_model.items()))
    if len(groups) > 1:
        groups[ALL_MODELS] = [row for rows in by_model.values() for row in rows]
    rows = []
    for model, model_rows in groups.items():
        result = factual_accuracy(model_rows, levels=levels)
        model_levels = sorted({row[2] for row in model_rows})
        rows.append(
            {
                "model": model,
                "responses": len(model_rows),
                **{f"level_{lvl}": result.per_level[lvl] for lvl in levels},
                "overall": result.overall,
                "consistency": consistency(model_rows, levels=model_levels)
                if model_levels
                else None,
            }
        )
    return table(
        "Factual accuracy by presupposition level",
        [
            column("model", "Model", "text"),
            column("responses", "Responses", "int"),
            *[column(f"level_{lvl}", f"Level {lvl}", "pct") for lvl in levels],
            column("overall", "Overall", "pct"),
            column("consistency", "Consistency", "pct"),
        ],
        rows,
        note="Majority stance per response. Overall: mean over levels. Consistency: share of "
        "claims with the same stance at every level present.",
    )


def _label_agreement_table(inp: ReportInput, labels: _Labels) -> Table:
    pooled = {
        **{f"r::{k}": v for k, v in labels.responses.items()},
        **{f"s::{k}": v for k, v in labels.sentences.items()},
    }
    n_boot, confidence = inp.options.n_boot, inp.options.confidence
    rows = [
        _agreement_row(name, data, n_boot, confidence)
        for name, data in (
            ("Response", labels.responses),
            ("Sentences", labels.sentences),
            ("Both", pooled),
        )
        if data
    ]
    return table(
        "Label agreement on responses and sentences",
        [
            column("labels", "Labels", "text"),
            column("units", "Units", "int"),
            column("alpha", "α (nominal)", "ci"),
            column("pairwise", "Pairwise agreement", "pct"),
            column("all_agree", "All agree", "pct"),
            column("at_least_two", "At least two agree", "pct"),
        ],
        rows,
        note='Units: responses, and (response, sentence) pairs. "At least two agree" needs '
        "three or more labels on a unit.",
    )


def _plots(levels: list) -> list[dict]:
    return [
        {
            "kind": "stacked",
            "table": "shares",
            "label": "name",
            "series": list(LABELS),
            "series_labels": {label: label.capitalize() for label in LABELS},
            "title": "Stance shares by presupposition level",
        },
        {
            "kind": "grouped",
            "table": "accuracy",
            "label": "model",
            "series": [f"level_{lvl}" for lvl in levels],
            "series_labels": {f"level_{lvl}": f"Level {lvl}" for lvl in levels},
            "title": "Factual accuracy by model and presupposition level",
            "domain": [0.0, 1.0],
        },
    ]


def section(inp: ReportInput) -> SectionResult:
    labels = _labels(inp)
    by_model, notes = _scored_responses(inp, labels)
    levels = sorted({row[2] for rows in by_model.values() for row in rows})
    accuracy = _accuracy_table(by_model, levels)
    everything = accuracy["rows"][-1] if accuracy["rows"] else {}
    consistency_value = everything.get("consistency")
    return SectionResult(
        title="Stance",
        summary=[
            Figure("Factual accuracy", _pct(everything.get("overall", float("nan")))),
            Figure(
                "Consistency",
                _pct(consistency_value if consistency_value is not None else float("nan")),
            ),
            Figure("Responses scored", str(everything.get("responses", 0))),
        ],
        tables={
            "shares": _shares_table(labels),
            "accuracy": accuracy,
            "label_agreement": _label_agreement_table(inp, labels),
        },
        plots=_plots(levels),
        notes=notes,
        scalars={
            "Factual accuracy": everything.get("overall"),
            "Consistency": everything.get("consistency"),
        },
        vectors={
            "Factual accuracy by level": {
                f"level {lvl}": everything.get(f"level_{lvl}") for lvl in levels
            }
        },
        domains={"Factual accuracy by level": (0.0, 1.0)},
    )


sections.register(Stance.slug, section=section, item_extra=item_extra)
