"""Stance report (UPHILL, Kaur et al. 2024): stance shares and factual accuracy by presupposition
level, consistency across levels, and label agreement on responses and sentences.

Rules:

* humans only (judges, when selected, count in the generic agreement table);
* shares by level: every human answer's response label counts once;
* factual accuracy and consistency (:mod:`metrics.stance`) use one stance per response, from a
  labeller: the humans (the majority of their labels) and, when judges are selected under "who
  counts", each judge on its own (its label) — UPHILL's headline figures are judge-labelled; a response whose labels tie has no majority and is left out
  (counted in a note); responses without veracity or level are left out too. Accuracy at a level
  is the share of responses with the correct stance (agree with true, disagree with false,
  neutral on mixture claims), overall accuracy the mean over levels; consistency is the share of
  claims with one stance at every level present for that model. Both are given per model
  (model × level is what the paper reports) and for all models together when there are several;
* accuracy and consistency are also given per claim veracity (true / mixture / false) × level,
  and consistency per level as the share of claims whose stance at that level equals their stance
  at the neutral level 0 (at level 0 itself: the same stance over its templates);
* stance shares are also given per model × veracity × level (every human answer counts once);
* label agreement: response labels, sentence labels, and both pooled (units are responses and
  (response, sentence) pairs), with alpha (nominal), pairwise agreement, "all agree" and "at
  least two agree" — the figures UPHILL reports (75.8 %, 64.0 %, 97.9 %), which count only the
  units where every annotator is certain: the "(all certain)" rows leave out every unit with a
  "not sure" answer (how many is said), the plain rows count all answers. Sentence agreement is
  also given per similarity rank of the sentence (rank 1 = most similar to the claim), certain
  units only, as UPHILL's Table 3.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from agreement.reports import sections
from agreement.reports.generic import alpha_with_ci
from agreement.reports.inputs import HUMAN, JUDGE, ItemInfo, ReportInput
from agreement.reports.sections import (
    Estimand,
    Figure,
    JudgeValidationHooks,
    SectionResult,
    ValidationLabel,
)
from agreement.reports.tables import Table, column, table
from metrics.classification import plurality_label
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
    targets = (prepared or {}).get("targets") or []
    return {
        "claim_id": payload.get("claim_id") or payload.get("id"),
        "veracity": (payload.get("veracity") or "").strip().lower() or None,
        "level": level,
        "model": payload.get("model") or "",
        # similarity rank (1 = most similar to the claim) of each labelled sentence, by index
        "ranks": {
            str(t["index"]): t["rank"]
            for t in targets
            if isinstance(t, Mapping) and "index" in t and "rank" in t
        },
    }


def _label(value: Any) -> str | None:
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


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
    unsure: set[str] = field(default_factory=set)  # response units and unit::index keys
    # (model, veracity, level) -> label counts
    shares_by: dict[tuple, Counter] = field(default_factory=lambda: defaultdict(Counter))


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
                model = item.extra.get("model") or "(no model)"
                found.shares_by[(model, item.extra.get("veracity"), level)][label] += 1
                found.responses.setdefault(unit, {})[coder] = label
                found.not_sure[level] += bool(answer.get("not_sure"))
                if answer.get("not_sure"):
                    found.unsure.add(unit)
            for sentence in answer.get("sentences") or []:
                if isinstance(sentence, Mapping) and _label(sentence.get("label")) is not None:
                    key = f"{unit}::{sentence.get('index')}"
                    found.sentences.setdefault(key, {})[coder] = _label(sentence["label"])
                    if sentence.get("not_sure"):
                        found.unsure.add(key)
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
    inp: ReportInput, per_item: Mapping[str, list[str]]
) -> tuple[dict[str, list[tuple]], list[str]]:
    """(claim id, veracity, level, majority stance) per response, by model, and notes on the
    responses left out (tied labels; no veracity or level)."""
    by_model: dict[str, list[tuple]] = defaultdict(list)
    ties = unscored = 0
    for unit, unit_labels in per_item.items():
        extra = inp.items[unit].extra
        majority = plurality_label(unit_labels)
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


HUMANS_LABELLER = "Humans (majority)"


def _judge_labels(inp: ReportInput) -> dict[str, dict[str, list[str]]]:
    """Per selected judge (by its label), its response label per unit."""
    found: dict[str, dict[str, list[str]]] = {}
    for coder in inp.coders:
        if coder.kind != JUDGE:
            continue
        labels = {}
        for unit, answer in inp.answers.get(coder.id, {}).items():
            label = _label(answer.get("label")) if isinstance(answer, Mapping) else None
            if label is not None and unit in inp.items:
                labels[unit] = [label]
        found[coder.label or coder.id] = labels
    return found


def _accuracy_table(labellers: dict[str, dict[str, list[tuple]]], levels: list) -> Table:
    rows = []
    for labeller, by_model in labellers.items():
        rows += _accuracy_rows(labeller, by_model, levels)
    return table(
        "Factual accuracy by presupposition level",
        [
            column("labeller", "Labelled by", "text"),
            column("model", "Model", "text"),
            column("responses", "Responses", "int"),
            *[column(f"level_{lvl}", f"Level {lvl}", "pct") for lvl in levels],
            column("overall", "Overall", "pct"),
            column("consistency", "Consistency", "pct"),
        ],
        rows,
        note="One stance per response: the humans' majority label, or a judge's label (judges "
        "appear when selected under who counts). Overall: mean over levels. Consistency: share "
        "of claims with the same stance at every level present, per model (all models: each "
        "model's claims counted apart).",
    )


def _accuracy_rows(labeller: str, by_model: dict[str, list[tuple]], levels: list) -> list[dict]:
    rows = []
    for model, model_rows in _with_all_models(by_model).items():
        result = factual_accuracy(model_rows, levels=levels)
        model_levels = sorted({row[2] for row in model_rows})
        rows.append(
            {
                "labeller": labeller,
                "model": model,
                "responses": len(model_rows),
                **{f"level_{lvl}": result.per_level[lvl] for lvl in levels},
                "overall": result.overall,
                "consistency": consistency(model_rows, levels=model_levels)
                if model_levels
                else None,
            }
        )
    return rows


def _certain(data: dict[str, dict], unsure: set[str]) -> dict[str, dict]:
    return {key: value for key, value in data.items() if key not in unsure}


def _label_agreement_table(inp: ReportInput, labels: _Labels) -> Table:
    pooled = {
        **{f"r::{k}": v for k, v in labels.responses.items()},
        **{f"s::{k}": v for k, v in labels.sentences.items()},
    }
    unsure_pooled = {f"r::{k}" for k in labels.unsure} | {f"s::{k}" for k in labels.unsure}
    n_boot, confidence = inp.options.n_boot, inp.options.confidence
    rows = []
    for name, data, unsure in (
        ("Response", labels.responses, labels.unsure),
        ("Sentences", labels.sentences, labels.unsure),
        ("Both", pooled, unsure_pooled),
    ):
        if not data:
            continue
        certain = _certain(data, unsure)
        rows.append(
            {
                **_agreement_row(f"{name} (all certain)", certain, n_boot, confidence),
                "left_out": len(data) - len(certain),
            }
        )
        rows.append(_agreement_row(name, data, n_boot, confidence))
    return table(
        "Label agreement on responses and sentences",
        [
            column("labels", "Labels", "text"),
            column("units", "Units", "int"),
            column("left_out", "Left out (not sure)", "int"),
            column("alpha", "α (nominal)", "ci"),
            column("pairwise", "Pairwise agreement", "pct"),
            column("all_agree", "All agree", "pct"),
            column("at_least_two", "At least two agree", "pct"),
        ],
        rows,
        note='Units: responses, and (response, sentence) pairs. "All certain" rows count only '
        'units where no annotator was "not sure" (as UPHILL reports); the other rows count every '
        'answer. "At least two agree" needs three or more labels on a unit.',
    )


def _sentence_rank_table(inp: ReportInput, labels: _Labels) -> Table:
    by_rank: dict[int, dict[str, dict]] = defaultdict(dict)
    for key, values in labels.sentences.items():
        unit, _, index = key.rpartition("::")
        rank = inp.items[unit].extra.get("ranks", {}).get(index)
        if rank is not None:
            by_rank[rank][key] = values
    rows = []
    for rank in sorted(by_rank):
        data = by_rank[rank]
        certain = _certain(data, labels.unsure)
        row = {"rank": str(rank), "left_out": len(data) - len(certain), "units": len(certain)}
        if certain:
            row.update(
                _agreement_row(str(rank), certain, inp.options.n_boot, inp.options.confidence)
            )
            row["rank"] = str(rank)
        rows.append(row)
    return table(
        "Sentence label agreement by similarity rank",
        [
            column("rank", "Similarity rank", "text"),
            column("units", "Sentences", "int"),
            column("left_out", "Left out (not sure)", "int"),
            column("alpha", "α (nominal)", "ci"),
            column("pairwise", "Pairwise agreement", "pct"),
            column("all_agree", "All agree", "pct"),
            column("at_least_two", "At least two agree", "pct"),
        ],
        rows,
        note="Rank 1 is the response sentence most similar to the claim (all-MiniLM-L6-v2). "
        'Only sentences where no annotator was "not sure".',
    )


def _with_all_models(by_model: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
    """Each model's rows, and with several models, all of them as ``ALL_MODELS``: there a
    claim is keyed with its model, so consistency counts each model's claims apart (the share of
    (model, claim) pairs that keep one stance, as the paper computes it per model), never one
    model's stance against another's; accuracy does not depend on the key."""
    groups = dict(sorted(by_model.items()))
    if len(groups) > 1:
        groups[ALL_MODELS] = [
            ((model, row[0]), *row[1:]) for model, rows in groups.items() for row in rows
        ]
    return groups


def _accuracy_veracity_table(labellers: dict[str, dict[str, list[tuple]]], levels: list) -> Table:
    rows = []
    for labeller, by_model in labellers.items():
        rows += [{"labeller": labeller, **row} for row in _accuracy_veracity_rows(by_model, levels)]
    return table(
        "Factual accuracy and consistency by claim veracity and presupposition level",
        [
            column("labeller", "Labelled by", "text"),
            column("model", "Model", "text"),
            column("veracity", "Veracity", "text"),
            column("responses", "Responses", "int"),
            *[column(f"level_{lvl}", f"Level {lvl}", "pct") for lvl in levels],
            column("overall", "Overall", "pct"),
            column("consistency", "Consistency", "pct"),
        ],
        rows,
        note="As the table above, for the claims of one veracity (mixture includes mixed).",
    )


def _accuracy_veracity_rows(by_model: dict[str, list[tuple]], levels: list) -> list[dict]:
    rows = []
    for model, model_rows in _with_all_models(by_model).items():
        present = sorted({r[2] for r in model_rows})  # a claim must show every level the model has
        for veracity in ("true", "mixture", "false"):
            subset = [r for r in model_rows if CORRECT_STANCE[r[1]] == CORRECT_STANCE[veracity]]
            if not subset:
                continue
            result = factual_accuracy(subset, levels=levels)
            rows.append(
                {
                    "model": model,
                    "veracity": veracity,
                    "responses": len(subset),
                    **{f"level_{lvl}": result.per_level[lvl] for lvl in levels},
                    "overall": result.overall,
                    "consistency": consistency(subset, levels=present) if present else None,
                }
            )
    return rows


def _consistency_levels_table(labellers: dict[str, dict[str, list[tuple]]], levels: list) -> Table:
    rows = []
    for labeller, by_model in labellers.items():
        rows += [{"labeller": labeller, **row} for row in _consistency_level_rows(by_model, levels)]
    return table(
        "Consistency by presupposition level",
        [
            column("labeller", "Labelled by", "text"),
            column("model", "Model", "text"),
            column("level", "Level", "text"),
            column("name", "Presupposition", "text"),
            column("claims", "Claims", "int"),
            column("consistency", "Consistency", "pct"),
        ],
        rows,
        note="Share of claims whose stance at this level equals their stance at the neutral "
        "level 0 (one stance per response from the labeller; every response of the claim at both "
        "levels must agree). At level 0: the same stance over all its templates.",
    )


def _consistency_level_rows(by_model: dict[str, list[tuple]], levels: list) -> list[dict]:
    rows = []
    for model, model_rows in _with_all_models(by_model).items():
        for level in levels:
            pair = (0, level) if level != 0 else (0,)
            claims = {r[0] for r in model_rows if r[2] == level} & {
                r[0] for r in model_rows if r[2] == 0
            }
            rows.append(
                {
                    "model": model,
                    "level": str(level),
                    "name": LEVEL_NAMES.get(level, "unknown level"),
                    "claims": len(claims),
                    "consistency": consistency(model_rows, levels=pair) if claims else None,
                }
            )
    return rows


def _shares_veracity_table(labels: _Labels) -> Table:
    def order(key: tuple) -> tuple:
        model, veracity, level = key
        return (str(model), str(veracity), level is None, level if level is not None else 0)

    rows = []
    for key in sorted(labels.shares_by, key=order):
        model, veracity, level = key
        counts = labels.shares_by[key]
        total = sum(counts.values())
        rows.append(
            {
                "model": model,
                "veracity": veracity or "—",
                "level": "—" if level is None else str(level),
                "answers": total,
                **{label: counts[label] / total for label in LABELS},
            }
        )
    return table(
        "Stance shares by model, claim veracity and presupposition level",
        [
            column("model", "Model", "text"),
            column("veracity", "Veracity", "text"),
            column("level", "Level", "text"),
            column("answers", "Answers", "int"),
            *[column(label, label.capitalize(), "pct") for label in LABELS],
        ],
        rows,
        note="Every human answer's response label counts once.",
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
    by_model, notes = _scored_responses(inp, labels.per_item)
    labellers = {HUMANS_LABELLER: by_model}
    for judge, judged in _judge_labels(inp).items():
        labellers[judge] = _scored_responses(inp, judged)[0]
    unsure_responses = sum(1 for key in labels.unsure if "::" not in key)
    unsure_sentences = len(labels.unsure) - unsure_responses
    if labels.unsure:
        notes.append(
            f"{unsure_responses} response(s) and {unsure_sentences} sentence(s) have a "
            '"not sure" answer and are left out of the certain-only agreement rates.'
        )
    levels = sorted(
        {row[2] for scored in labellers.values() for rows in scored.values() for row in rows}
    )
    accuracy = _accuracy_table(labellers, levels)
    human_rows = [r for r in accuracy["rows"] if r["labeller"] == HUMANS_LABELLER]
    everything = human_rows[-1] if human_rows else {}
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
            "shares_veracity": _shares_veracity_table(labels),
            "accuracy": accuracy,
            "accuracy_veracity": _accuracy_veracity_table(labellers, levels),
            "consistency_levels": _consistency_levels_table(labellers, levels),
            "label_agreement": _label_agreement_table(inp, labels),
            "sentence_ranks": _sentence_rank_table(inp, labels),
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


# --- prediction-powered estimates (agreement.reports.estimates) ---------------------------------


def _stances(inp: ReportInput) -> dict[str, dict[str, str]]:
    """One stance per response from each labeller: ``HUMANS_LABELLER`` (the humans' majority;
    ties left out) and each selected judge (its label), by response unit."""
    labels = _labels(inp)
    found = {
        HUMANS_LABELLER: {
            unit: majority
            for unit, values in labels.per_item.items()
            if (majority := plurality_label(values)) is not None
        }
    }
    for judge, judged in _judge_labels(inp).items():
        found[judge] = {unit: values[0] for unit, values in judged.items()}
    return found


def _claims(inp: ReportInput) -> dict[tuple, dict[int, list[str]]]:
    """Every scorable response unit by (model, claim) and level."""
    claims: dict[tuple, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for unit, item in inp.items.items():
        extra = item.extra
        if extra.get("veracity") in CORRECT_STANCE and extra.get("level") is not None:
            claims[(extra.get("model") or "(no model)", extra["claim_id"])][extra["level"]].append(
                unit
            )
    return claims


def _consistent(stances: Mapping[str, str], units: list[str]) -> float | None:
    """1 when every response of ``units`` has one stance, 0 when not; None when one of them
    has no stance from this labeller (the claim is not labelled at these levels)."""
    if not units or any(unit not in stances for unit in units):
        return None
    return 1.0 if len({stances[unit] for unit in units}) == 1 else 0.0


def estimands(inp: ReportInput) -> list[Estimand]:
    """Factual accuracy per level (units: responses; 1 when the stance is the correct one) and
    consistency with level 0 per level (units: (model, claim) pairs; 1 when every response of
    the claim at this level and at level 0 has one stance; at level 0: over its templates)."""
    stances = _stances(inp)
    judges = [name for name in stances if name != HUMANS_LABELLER]
    claims = _claims(inp)
    levels = sorted({level for by_level in claims.values() for level in by_level})
    found = []
    for level in levels:
        values: dict[str, dict[str, float]] = {}
        for labeller, by_unit in stances.items():
            values[labeller] = {
                unit: float(by_unit[unit] == CORRECT_STANCE[inp.items[unit].extra["veracity"]])
                for by_level in claims.values()
                for unit in by_level.get(level, [])
                if unit in by_unit
            }
        found.append(_estimand(f"Factual accuracy, level {level}", values, judges, "responses"))
    for level in levels:
        values = {}
        items_of = {
            f"{model} · {claim}": tuple(sorted(set(by_level[level]) | set(by_level[0])))
            for (model, claim), by_level in claims.items()
            if level in by_level and 0 in by_level
        }
        for labeller, by_unit in stances.items():
            values[labeller] = {}
            for pair, units in items_of.items():
                value = _consistent(by_unit, list(units))
                if value is not None:
                    values[labeller][pair] = value
        found.append(
            _estimand(
                f"Consistency with level 0, level {level}",
                values,
                judges,
                "claims",
                items_of,
                stances[HUMANS_LABELLER],
            )
        )
    return found


def _estimand(
    figure: str,
    values: dict,
    judges: list[str],
    unit: str,
    items_of: Mapping[str, tuple[str, ...]] | None = None,
    values_labelled: Collection[str] = (),
) -> Estimand:
    return Estimand(
        figure=figure,
        humans=values[HUMANS_LABELLER],
        judges={judge: values[judge] for judge in judges},
        unit=unit,
        bounds=(0.0, 1.0),  # accuracy and consistency: shares
        items_of=items_of,  # consistency: a (model, claim) pair's responses
        labelled_items=frozenset(values_labelled) if items_of is not None else None,
    )


def validation_labels(item: ItemInfo, answer: Mapping) -> dict[str, ValidationLabel]:
    """Judge validation (UPHILL): the whole response's label, certain unless "not sure"."""
    label = _label(answer.get("label"))
    if label is None:
        return {}
    return {"": ValidationLabel(label, certain=not answer.get("not_sure"))}


JUDGE_VALIDATION = JudgeValidationHooks(
    labels=validation_labels,
    label_order=tuple(LABELS),
    records_certainty=True,
    rule="Unit: a claim–response pair (the whole response's label). UPHILL validates its "
    "entailment judges on the pairs where the humans agree perfectly.",
)

sections.register(
    Stance.slug,
    section=section,
    item_extra=item_extra,
    judge_validation=JUDGE_VALIDATION,
    estimands=estimands,
)
