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
from typing import Any

from agreement.reports import sections
from agreement.reports.generic import alpha_with_ci
from agreement.reports.inputs import HUMAN, ReportInput
from agreement.reports.tables import column, table
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


def section(inp: ReportInput) -> dict:
    humans = inp.answers_of(HUMAN)
    n_boot, confidence = inp.options.n_boot, inp.options.confidence
    tables: dict[str, dict] = {}
    notes: list[str] = []

    # --- shares by level ---------------------------------------------------------------------
    per_item: dict[str, list[str]] = defaultdict(list)
    shares: dict[Any, Counter] = defaultdict(Counter)
    not_sure: Counter = Counter()
    response_data: dict[str, dict[str, str]] = {}
    sentence_data: dict[str, dict[str, str]] = {}
    for coder, answers in humans.items():
        for unit, answer in answers.items():
            item = inp.items.get(unit)
            if item is None or not isinstance(answer, Mapping):
                continue
            label = _label(answer.get("label"))
            level = item.extra.get("level")
            if label is not None:
                per_item[unit].append(label)
                shares[level][label] += 1
                response_data.setdefault(unit, {})[coder] = label
                not_sure[level] += bool(answer.get("not_sure"))
            for sentence in answer.get("sentences") or []:
                if isinstance(sentence, Mapping) and _label(sentence.get("label")) is not None:
                    key = f"{unit}::{sentence.get('index')}"
                    sentence_data.setdefault(key, {})[coder] = _label(sentence["label"])
    share_rows = []
    for level in sorted(shares, key=lambda v: (v is None, v if v is not None else 0)):
        counts = shares[level]
        total = sum(counts.values())
        share_rows.append(
            {
                "level": "—" if level is None else str(level),
                "name": LEVEL_NAMES.get(level, "unknown level")
                if level is not None
                else "no level",
                "answers": total,
                **{label: counts[label] / total for label in LABELS},
                "other": sum(v for k, v in counts.items() if k not in LABELS) / total,
                "not_sure": not_sure[level] / total,
            }
        )
    tables["shares"] = table(
        "Stance shares by presupposition level (response labels)",
        [
            column("level", "Level", "text"),
            column("name", "Presupposition", "text"),
            column("answers", "Answers", "int"),
            *[column(label, label.capitalize(), "pct") for label in LABELS],
            column("not_sure", "Not sure", "pct"),
        ],
        share_rows,
        note='Every human answer counts once. "Not sure" is a flag next to the label.',
    )

    # --- factual accuracy and consistency ----------------------------------------------------
    by_model: dict[str, list[tuple]] = defaultdict(list)
    ties = unscored = 0
    for unit, labels in per_item.items():
        extra = inp.items[unit].extra
        majority = _majority(labels)
        if majority is None:
            ties += 1
            continue
        if extra.get("veracity") not in CORRECT_STANCE or extra.get("level") is None:
            unscored += 1
            continue
        row = (extra["claim_id"], extra["veracity"], extra["level"], majority)
        by_model[extra.get("model") or "(no model)"].append(row)
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
    groups = dict(sorted(by_model.items()))
    if len(groups) > 1:
        groups[ALL_MODELS] = [row for rows in by_model.values() for row in rows]
    levels = sorted({row[2] for rows in by_model.values() for row in rows})
    accuracy_rows = []
    for model, rows in groups.items():
        result = factual_accuracy(rows, levels=levels)
        model_levels = sorted({row[2] for row in rows})
        accuracy_rows.append(
            {
                "model": model,
                "responses": len(rows),
                **{f"level_{lvl}": result.per_level[lvl] for lvl in levels},
                "overall": result.overall,
                "consistency": consistency(rows, levels=model_levels) if model_levels else None,
            }
        )
    tables["accuracy"] = table(
        "Factual accuracy by presupposition level",
        [
            column("model", "Model", "text"),
            column("responses", "Responses", "int"),
            *[column(f"level_{lvl}", f"Level {lvl}", "pct") for lvl in levels],
            column("overall", "Overall", "pct"),
            column("consistency", "Consistency", "pct"),
        ],
        accuracy_rows,
        note="Majority stance per response. Overall: mean over levels. Consistency: share of "
        "claims with the same stance at every level present.",
    )

    # --- label agreement ---------------------------------------------------------------------
    pooled = {
        **{f"r::{k}": v for k, v in response_data.items()},
        **{f"s::{k}": v for k, v in sentence_data.items()},
    }
    agreement_rows = [
        _agreement_row(name, data, n_boot, confidence)
        for name, data in (
            ("Response", response_data),
            ("Sentences", sentence_data),
            ("Both", pooled),
        )
        if data
    ]
    tables["label_agreement"] = table(
        "Label agreement on responses and sentences",
        [
            column("labels", "Labels", "text"),
            column("units", "Units", "int"),
            column("alpha", "α (nominal)", "ci"),
            column("pairwise", "Pairwise agreement", "pct"),
            column("all_agree", "All agree", "pct"),
            column("at_least_two", "At least two agree", "pct"),
        ],
        agreement_rows,
        note='Units: responses, and (response, sentence) pairs. "At least two agree" needs '
        "three or more labels on a unit.",
    )

    plots = [
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
    everything = accuracy_rows[-1] if accuracy_rows else {}
    summary = [
        {"label": "Factual accuracy", "value": _pct(everything.get("overall", float("nan")))},
        {
            "label": "Consistency",
            "value": _pct(
                everything["consistency"]
                if everything.get("consistency") is not None
                else float("nan")
            ),
        },
        {"label": "Responses scored", "value": str(everything.get("responses", 0))},
    ]
    return {
        "title": "Stance",
        "summary": summary,
        "tables": tables,
        "plots": plots,
        "notes": notes,
        "comparison": {
            "scalars": {
                "Factual accuracy": everything.get("overall"),
                "Consistency": everything.get("consistency"),
            },
            "vectors": {
                "Factual accuracy by level": {
                    f"level {lvl}": everything.get(f"level_{lvl}") for lvl in levels
                }
            },
            "domains": {"Factual accuracy by level": [0.0, 1.0]},
        },
    }


sections.register(Stance.slug, section=section, item_extra=item_extra)
