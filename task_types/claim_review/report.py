"""Claim-review report (FaStfact protocol): operations on the pipeline's claims, agreement with
its labels and the annotators' final labels, overall and by model and prompt source (the shape of
FaStfact's ``annotation_stats.json``, via :func:`metrics.claim_review.claim_review_stats`), and
agreement between annotators on what to do with each claim and on its final label.

Rules:

* every counted answer is one sample (humans only; judges count in the generic table);
* each answer becomes per-claim rows with the task type's own ``claim_rows`` (FaStfact's terms:
  unchanged / revised / removed / added; agreed / disagreed_corrected / verification_pending; the
  final label of a removed claim is its removal reason), so the figures match the export;
* annotator agreement: units are the pipeline's claims (added claims have annotator-specific ids
  and never pair); "operation" compares unchanged / revised / removed, "final label" the labels
  after review; alpha is nominal, with the raw rates beside it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
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
from metrics.claim_review import (
    AGREEMENTS,
    OPERATIONS,
    claim_review_stats,
    factuality,
    response_factuality,
)
from metrics.kappa import all_agree_rate, at_least_two_agree_rate, pairwise_agreement

from .labels import EVIDENCE_LABELS, REDUCED_LABELS
from .rows import claim_rows
from .task import ClaimReview


def item_extra(payload: dict, prepared: dict) -> dict:
    """Model, prompt source and the pipeline's claims (ids, labels, whether evidence was shown;
    not the evidence itself), which ``claim_rows`` needs."""
    return {
        "model": payload.get("model") or "",
        "prompt_source": payload.get("prompt_source") or "",
        "claims": [
            {
                "id": c.get("id"),
                "text": c.get("text", ""),
                "system_label": c.get("system_label"),
                "evidence": [True] if c.get("evidence") else [],
            }
            for c in payload.get("claims") or []
            if isinstance(c, Mapping)
        ],
    }


def _claim_rows(extra: Mapping, answer: Mapping) -> list[dict]:
    return claim_rows(SimpleNamespace(payload={"claims": extra.get("claims", [])}), answer)


def _block_row(group: str, block: Mapping) -> dict:
    return {
        "group": group,
        "samples": block["count"],
        **{op: block["operations"][op] for op in OPERATIONS},
        **{a: block["agreements"][a] for a in AGREEMENTS},
    }


@dataclass
class _Reviews:
    """The humans' reviews: samples in FaStfact's shape, and per pipeline claim
    (``unit::claim id``) each coder's operation and final label."""

    samples: list[dict] = field(default_factory=list)
    operations: dict[str, dict[str, str]] = field(default_factory=dict)
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    after: dict[str, list[float]] = field(default_factory=dict)  # unit -> each review's score


def _reviews(inp: ReportInput) -> _Reviews:
    found = _Reviews()
    for coder, answers in inp.answers_of(HUMAN).items():
        for unit, answer in answers.items():
            item = inp.items.get(unit)
            if item is None or not isinstance(answer, Mapping):
                continue
            rows = _claim_rows(item.extra, answer)
            found.samples.append(
                {
                    "model": item.extra.get("model"),
                    "prompt_source": item.extra.get("prompt_source"),
                    "claims": rows,
                }
            )
            score = response_factuality(rows)["after"]
            if score is not None:
                found.after.setdefault(unit, []).append(score)
            for row in rows:
                if row["action"] == "added":
                    continue
                key = f"{unit}::{row['claim_id']}"
                found.operations.setdefault(key, {})[coder] = row["action"]
                if row["annotator_label"] is not None:
                    found.labels.setdefault(key, {})[coder] = row["annotator_label"]
    return found


def _operations_table(stats: dict, samples: list[dict]) -> Table:
    group_rows = [_block_row("All", stats["overall"])]
    names = {
        f"{s['model'] or 'unknown'}_{s['prompt_source'] or 'unknown'}": f"{s['model'] or 'unknown'} · {s['prompt_source'] or 'unknown'}"
        for s in samples
    }
    for key, block in stats["grouped"]["by_model_prompt_source"].items():
        group_rows.append(_block_row(names.get(key, key), block))
    return table(
        "Claim operations and agreement with the pipeline",
        [
            column("group", "Model · prompt source", "text"),
            column("samples", "Reviews", "int"),
            *[column(op, op.capitalize(), "int") for op in OPERATIONS],
            column("agreed", "Agreed", "int"),
            column("disagreed_corrected", "Disagreed (corrected)", "int"),
            column("verification_pending", "Pending", "int"),
        ],
        group_rows,
        note="Counts of claims over all counted reviews. Agreement counts only kept or revised "
        "claims (added claims have no pipeline label, removed ones are not verified).",
    )


def _labels_table(labels: Mapping[str, int]) -> Table:
    total = sum(labels.values())
    return table(
        "Final annotator labels",
        [
            column("label", "Label", "text"),
            column("claims", "Claims", "int"),
            column("share", "Share", "pct"),
        ],
        [{"label": k, "claims": v, "share": v / total} for k, v in labels.items()],
        note="A removed claim counts under its removal reason; an agreed claim under the "
        "pipeline's label.",
    )


def _claim_agreement_table(inp: ReportInput, reviews: _Reviews) -> Table:
    rows = []
    for name, data in (("Operation", reviews.operations), ("Final label", reviews.labels)):
        if not data:
            continue
        values = [list(v.values()) for v in data.values()]
        row = {"attribute": name, "units": len(data)}
        row.update(
            alpha_with_ci(
                data, "nominal", n_boot=inp.options.n_boot, confidence=inp.options.confidence
            )
        )
        row.update(
            pairwise=pairwise_agreement(values),
            all_agree=all_agree_rate(values),
            at_least_two=at_least_two_agree_rate(values),
        )
        rows.append(row)
    return table(
        "Agreement between annotators per pipeline claim",
        [
            column("attribute", "Attribute", "text"),
            column("units", "Claims", "int"),
            column("alpha", "α (nominal)", "ci"),
            column("pairwise", "Pairwise agreement", "pct"),
            column("all_agree", "All agree", "pct"),
            column("at_least_two", "At least two agree", "pct"),
        ],
        rows,
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _factuality_table(inp: ReportInput, reviews: _Reviews) -> Table:
    """Per response: the pipeline's factuality, the mean over its human reviews of the factuality
    after revision, and the change; then the mean per model · prompt source and overall (each
    response weighs the same)."""
    per_response = []
    for unit in sorted(reviews.after, key=lambda u: inp.items[u].key):
        item = inp.items[unit]
        before = factuality(c.get("system_label") for c in item.extra.get("claims", []))
        after = _mean(reviews.after[unit])
        per_response.append(
            {
                "response": item.key,
                "group": f"{item.extra.get('model') or 'unknown'} · "
                f"{item.extra.get('prompt_source') or 'unknown'}",
                "reviews": len(reviews.after[unit]),
                "before": before,
                "after": after,
                "change": None if before is None or after is None else after - before,
            }
        )
    summary = []
    groups = ["All"] + sorted({row["group"] for row in per_response})
    for group in groups if per_response else []:
        rows = [r for r in per_response if group == "All" or r["group"] == group]
        befores = [r["before"] for r in rows if r["before"] is not None]
        afters = [r["after"] for r in rows if r["after"] is not None]
        summary.append(
            {
                "response": f"Mean ({len(rows)} responses)",
                "group": group,
                "reviews": sum(r["reviews"] for r in rows),
                "before": _mean(befores),
                "after": _mean(afters),
                "change": None
                if _mean(befores) is None or _mean(afters) is None
                else _mean(afters) - _mean(befores),
            }
        )
    return table(
        "Factuality per response, before and after human revision",
        [
            column("response", "Response", "text"),
            column("group", "Model · prompt source", "text"),
            column("reviews", "Reviews", "int"),
            column("before", "Pipeline", "pct"),
            column("after", "After revision", "pct"),
            column("change", "Change", "pct"),
        ],
        summary + per_response,
        note="Factuality = share of supported among a response's factual verdicts (supported, "
        "refuted, conflicting evidence, not enough evidence, unsupported); irrelevant claims and "
        "pre-labels that are no verdict (unsure) do not count. Pipeline: the system's labels of "
        "the extracted claims. After revision: each review's final labels (removed claims drop "
        "out, added claims count), averaged over the response's reviews.",
    )


def _judges_table(inp: ReportInput, reviews: _Reviews) -> Table:
    """Each selected judge: how often it agreed with the pipeline's labels, and its final labels
    against the humans' majority per pipeline claim (agreement rate and nominal alpha)."""
    majority: dict[str, str] = {}
    for key, by_coder in reviews.labels.items():
        counts = Counter(by_coder.values()).most_common()
        if counts and (len(counts) == 1 or counts[0][1] > counts[1][1]):
            majority[key] = counts[0][0]
    rows = []
    for coder in inp.coders:
        if coder.kind != JUDGE:
            continue
        agreed = kept = 0
        labels: dict[str, Any] = {}
        for unit, answer in inp.answers.get(coder.id, {}).items():
            item = inp.items.get(unit)
            if item is None or not isinstance(answer, Mapping):
                continue
            for row in _claim_rows(item.extra, answer):
                if row["action"] in ("unchanged", "revised"):
                    kept += 1
                    agreed += row["agreement"] == "agreed"
                if row["action"] != "added" and row["annotator_label"] is not None:
                    labels[f"{unit}::{row['claim_id']}"] = row["annotator_label"]
        shared = [key for key in labels if key in majority]
        data = {key: {"judge": labels[key], "humans": majority[key]} for key in shared}
        row = {
            "judge": coder.label or coder.id,
            "claims": kept,
            "agreed_with_pipeline": agreed / kept if kept else None,
            "compared": len(shared),
            "same_as_humans": sum(labels[k] == majority[k] for k in shared) / len(shared)
            if shared
            else None,
        }
        row.update(
            alpha_with_ci(
                data, "nominal", n_boot=inp.options.n_boot, confidence=inp.options.confidence
            )
            if data
            else {"alpha": None}
        )
        rows.append(row)
    return table(
        "Judges against the pipeline and the humans",
        [
            column("judge", "Judge", "text"),
            column("claims", "Claims kept", "int"),
            column("agreed_with_pipeline", "Agreed with pipeline", "pct"),
            column("compared", "Claims with a human majority", "int"),
            column("same_as_humans", "Same final label as the humans", "pct"),
            column("alpha", "α judge vs human majority (nominal)", "ci"),
        ],
        rows,
        note="Final label: the removal reason of a removed claim, the pipeline's label when "
        "agreeing, otherwise the chosen label. Claims whose human labels tie have no majority.",
    )


def _after_scores(inp: ReportInput, coders: list[str]) -> dict[str, float]:
    """Per response, the factuality after revision averaged over the reviews of ``coders``."""
    scores: dict[str, list[float]] = {}
    for coder in coders:
        for unit, answer in inp.answers.get(coder, {}).items():
            item = inp.items.get(unit)
            if item is None or not isinstance(answer, Mapping):
                continue
            score = response_factuality(_claim_rows(item.extra, answer))["after"]
            if score is not None:
                scores.setdefault(unit, []).append(score)
    return {unit: sum(values) / len(values) for unit, values in scores.items()}


def estimands(inp: ReportInput) -> list[Estimand]:
    """Factuality after revision, per model · prompt source and overall (units: responses; the
    humans' value is the mean over the response's human reviews, a judge's its own review)."""
    humans = _after_scores(inp, inp.coder_ids(HUMAN))
    judges = {c.label or c.id: _after_scores(inp, [c.id]) for c in inp.coders if c.kind == JUDGE}

    def group(unit: str) -> str:
        extra = inp.items[unit].extra
        return f"{extra.get('model') or 'unknown'} · {extra.get('prompt_source') or 'unknown'}"

    groups = sorted({group(u) for u in humans} | {group(u) for j in judges.values() for u in j})
    found = []
    for name in ["All", *groups]:

        def keep(values: Mapping[str, float], name: str = name) -> dict[str, float]:
            return {u: v for u, v in values.items() if name == "All" or group(u) == name}

        found.append(
            Estimand(
                figure=f"Factuality after revision, {name}",
                humans=keep(humans),
                judges={label: keep(values) for label, values in judges.items()},
                unit="responses",
                bounds=(0.0, 1.0),  # a response's factuality is a share of its claims
            )
        )
    return found


PLOTS = [
    {
        "kind": "stacked",
        "table": "operations",
        "label": "group",
        "series": list(OPERATIONS),
        "series_labels": {op: op.capitalize() for op in OPERATIONS},
        "title": "Claim operations by model and prompt source",
    },
    {
        "kind": "stacked",
        "table": "operations",
        "label": "group",
        "series": list(AGREEMENTS),
        "series_labels": {
            "agreed": "Agreed",
            "disagreed_corrected": "Disagreed",
            "verification_pending": "Pending",
        },
        "title": "Agreement with the pipeline's labels",
    },
]


def section(inp: ReportInput) -> SectionResult:
    reviews = _reviews(inp)
    stats = claim_review_stats(reviews.samples)
    overall = stats["overall"]
    labels = overall["annotator_labels"]
    total = sum(labels.values())
    kept = sum(overall["agreements"].values())
    agreed_share = overall["agreements"]["agreed"] / kept if kept else None
    factuality_table = _factuality_table(inp, reviews)
    everything = next((r for r in factuality_table["rows"] if r["group"] == "All"), {})

    def pct(value: float | None) -> str:
        return "—" if value is None else f"{100 * value:.1f} %"

    tables = {
        "operations": _operations_table(stats, reviews.samples),
        "labels": _labels_table(labels),
        "claim_agreement": _claim_agreement_table(inp, reviews),
        "factuality": factuality_table,
    }
    if any(c.kind == JUDGE for c in inp.coders):
        tables["judges"] = _judges_table(inp, reviews)
    return SectionResult(
        title="Claim review",
        summary=[
            Figure("Reviews", str(stats["metadata"]["total_samples"])),
            Figure("Claims reviewed", str(stats["metadata"]["total_claims"])),
            Figure(
                "Agreed with pipeline",
                "—" if agreed_share is None else f"{100 * agreed_share:.1f} %",
            ),
            Figure("Factuality, pipeline", pct(everything.get("before"))),
            Figure("Factuality after revision", pct(everything.get("after"))),
        ],
        tables=tables,
        plots=[dict(plot) for plot in PLOTS],
        scalars={
            "Agreed with the pipeline": agreed_share,
            "Factuality, pipeline": everything.get("before"),
            "Factuality after revision": everything.get("after"),
        },
        vectors={"Final label shares": {k: v / total for k, v in labels.items()}} if total else {},
    )


def validation_labels(item: ItemInfo, answer: Mapping) -> dict[str, ValidationLabel]:
    """Judge validation: the final label of each extracted claim that was kept or revised
    (removed and added claims have no judge counterpart), keyed by claim id."""
    return {
        str(row["claim_id"]): ValidationLabel(row["annotator_label"])
        for row in _claim_rows(item.extra, answer)
        if row["action"] in ("unchanged", "revised") and row["annotator_label"]
    }


JUDGE_VALIDATION = JudgeValidationHooks(
    labels=validation_labels,
    label_order=(*EVIDENCE_LABELS, *(x for x in REDUCED_LABELS if x not in EVIDENCE_LABELS)),
    rule="Unit: one extracted claim of a response; its label is the final label (the "
    "pipeline's label when the coder agreed with it, otherwise the label chosen).",
)

sections.register(
    ClaimReview.slug,
    section=section,
    item_extra=item_extra,
    judge_validation=JUDGE_VALIDATION,
    estimands=estimands,
)
