"""The claim-review task type (see the package docstring for the protocol and answer shape)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.translation import gettext_noop

from annotation.task_types import PreparedItem, TaskType, register

from .formats import decode_csv_row, read_fastfact
from .labels import REMOVAL_REASONS, can_agree, choice_labels
from .rows import AGREED, DISAGREED, OPERATION_OF_ACTION, claim_rows, final_label
from .serializers import (
    ClaimReviewAnswerSerializer,
    ClaimReviewConfigSerializer,
    ClaimReviewPayloadSerializer,
    item_group,
)
from .spans import response_segments, source_span

# Example import files of this task type's own formats come from its data (data/fastfact/).
EXAMPLE_DATA = Path(settings.BASE_DIR) / "data" / "fastfact"


@register
class ClaimReview(TaskType):
    slug = "claim_review"
    name = gettext_noop("Claim review (revise and verify)")  # translated where annotators read it
    payload_serializer = ClaimReviewPayloadSerializer
    answer_serializer = ClaimReviewAnswerSerializer
    config_serializer = ClaimReviewConfigSerializer
    # Agreement unit: (item, extracted claim); value: the final annotator label.
    measures = {"claims": "nominal"}
    agreement_basis = gettext_noop(
        "the decision on every extracted claim; the wording of revisions and added claims does not count"
    )
    readers = {"fastfact": read_fastfact}

    # --- import -------------------------------------------------------------------------------

    def prepare(self, payload: dict, *, config: dict) -> list[PreparedItem]:
        """Locate each claim's source sentence in the response (for highlighting) and take the
        gold labels of control items."""
        segments = response_segments(payload["response"])
        spans = {
            c["id"]: source_span(c["text"], payload["response"], segments)
            for c in payload["claims"]
        }
        group = item_group(payload)
        return [
            PreparedItem(
                external_id=payload["id"],
                payload=payload,
                prepared={"spans": spans},
                gold=self._gold(payload) if payload.get("gold_labels") else None,
                group=group,
                kind=payload.get("kind", "regular"),
            )
        ]

    @staticmethod
    def _gold(payload: dict) -> dict:
        """Gold labels with the pipeline's labels of those claims, so ``score`` needs no item."""
        labels = dict(payload["gold_labels"])
        system = {
            c["id"]: c.get("system_label", "") for c in payload["claims"] if c["id"] in labels
        }
        return {"labels": labels, "system_labels": system}

    def csv_to_payload(self, row: dict) -> dict:
        return decode_csv_row(row)

    def example_files(self) -> dict[str, str]:
        """Beside JSON Lines and CSV, the first sample of the FaStfact trial file in data/."""
        with (EXAMPLE_DATA / "trial.jsonl").open(encoding="utf-8") as lines:
            first = next(line for line in lines if line.strip())
        return {**super().example_files(), "fastfact": first}

    # --- annotation ---------------------------------------------------------------------------

    def display(self, item: Any, *, assignment: Any = None) -> dict:
        """What the annotator sees: the question, the response and the claims with the pipeline's
        labels, evidence and reasoning. Not the model, prompt source, gold or pre-label
        confidences. The same for every annotator."""
        spans = item.prepared.get("spans", {})
        return {
            "question": item.payload["question"],
            "response": item.payload["response"],
            "claims": [
                {
                    "id": c["id"],
                    "text": c["text"],
                    "system_label": c.get("system_label", ""),
                    "evidence": [
                        {"title": e["title"], "content": e["content"]}
                        for e in c.get("evidence", [])
                    ],
                    "reasoning": c.get("reasoning", ""),
                    "labels": choice_labels(c),
                    "can_agree": can_agree(c),
                    "span": spans.get(c["id"]),
                }
                for c in item.payload["claims"]
            ],
            "added_labels": choice_labels(None),
            "removal_reasons": REMOVAL_REASONS,
        }

    def headline(self, payload: Mapping[str, Any]) -> str:
        return str(payload.get("question") or "")

    def answer_text(self, answer: dict, *, item: Any = None) -> str:
        parts = []
        for d in answer.get("claims", []):
            if d["action"] == "add":
                parts.append(f"added “{d.get('text', '')}” ({d.get('label')})")
            elif d["action"] == "remove":
                parts.append(f"{d['id']} removed ({d.get('reason')})")
            else:
                revised = f" revised to “{d.get('text', '')}”" if d["action"] == "revise" else ""
                verdict = "agree" if d.get("agreement") == "agree" else f"→ {d.get('label')}"
                parts.append(f"{d['id']}{revised} {verdict}")
        return " · ".join(parts)

    def agreement_key(self, answer: dict) -> dict:
        """Annotators agree on an item when they took the same decision on every extracted claim:
        agreeing with the pipeline, the same corrected label, or removal for the same reason. The
        wording of revisions and added claims is free text and does not count."""
        verdicts = {}
        for decision in answer.get("claims", []):
            if decision["action"] == "add":
                continue
            if decision["action"] == "remove":
                verdicts[decision["id"]] = f"removed: {decision.get('reason')}"
            elif decision.get("agreement") == "agree":
                verdicts[decision["id"]] = "agree"
            else:
                verdicts[decision["id"]] = f"label: {decision.get('label')}"
        return verdicts

    def score(self, answer: dict, gold: dict | None) -> dict:
        """Control items: share of the gold-labelled claims whose final annotator label equals the
        gold label (a claim that should be removed has its removal reason as gold)."""
        if not gold or not gold.get("labels"):
            return {}
        given = {d["id"]: d for d in answer.get("claims", [])}
        system = gold.get("system_labels", {})
        correct = sum(
            1
            for claim_id, expected in gold["labels"].items()
            if claim_id in given and final_label(given[claim_id], system.get(claim_id)) == expected
        )
        checked = len(gold["labels"])
        return {
            "labels_checked": checked,
            "labels_correct": correct,
            "label_accuracy": correct / checked,
            "correct": correct == checked,
        }

    # --- export and demo ----------------------------------------------------------------------

    def export_row(self, item: Any, annotation: Any) -> dict:
        """One summary row per annotation: counts of operations and agreements, and gold scores."""
        rows = claim_rows(item, annotation.answer)
        summary = {
            f"claims_{op}": sum(r["action"] == op for r in rows)
            for op in OPERATION_OF_ACTION.values()
        }
        summary.update({a: sum(r["agreement"] == a for r in rows) for a in (AGREED, DISAGREED)})
        summary.update(self.score(annotation.answer, item.gold))
        return summary

    def export_rows(self, item: Any, annotation: Any) -> list[dict]:
        """One row per claim (FaStfact tool columns), with the item's model and prompt source."""
        context = {
            "model": item.payload.get("model", ""),
            "prompt_source": item.payload.get("prompt_source", ""),
        }
        return [{**context, **row} for row in claim_rows(item, annotation.answer)]

    def demo_payload(self) -> dict:
        return {
            "id": "demo-1",
            "question": "When was the Eiffel Tower built and how tall is it?",
            "response": "The Eiffel Tower was built between 1887 and 1889 for the World's Fair. "
            "It is about 330 metres tall. It is the most beautiful tower in the world.",
            "model": "demo-model",
            "prompt_source": "demo",
            "claims": [
                {
                    "id": "c1",
                    "text": "The Eiffel Tower was built between 1887 and 1889.",
                    "system_label": "supported",
                    "evidence": [
                        {
                            "title": "Eiffel Tower",
                            "content": "Construction began in 1887 and ended in 1889.",
                        }
                    ],
                    "reasoning": "The passage gives the construction years.",
                },
                {"id": "c2", "text": "It is 330 metres tall.", "system_label": "supported"},
                {
                    "id": "c3",
                    "text": "The Eiffel Tower is the most beautiful tower.",
                    "system_label": "unsupported",
                },
            ],
        }
