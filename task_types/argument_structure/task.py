"""The argument-structure task type (see the package docstring)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from django.utils.translation import gettext_noop

from annotation.task_types import PayloadError, PreparedItem, TaskType, register
from metrics.argument_structure import edge_sentences, scorer_name
from studies.services.export_columns import export_writer_lock

from .formats import decode_csv_row, read_checkwhy
from .graph import structure_metrics, to_compact
from .models import METRICS_VERSION
from .scoring import answer_texts, edge_scorer, evidence_texts, fresh_edge_scorer
from .serializers import (
    CRITERIA,
    METRIC_KEYS,
    ArgumentStructureAnswerSerializer,
    ArgumentStructureConfigSerializer,
    ArgumentStructurePayloadSerializer,
)
from .stored import Metrics, item_basis, metrics_key, read_metrics, write_metrics


@register
class ArgumentStructure(TaskType):
    slug = "argument_structure"
    name = gettext_noop("Argument structure")  # translated where annotators read it
    payload_serializer = ArgumentStructurePayloadSerializer
    answer_serializer = ArgumentStructureAnswerSerializer
    config_serializer = ArgumentStructureConfigSerializer
    readers = {"checkwhy": read_checkwhy}
    measures = {
        "edges": "jaccard",
        "decision": "nominal",
        "faithfulness": "nominal",
        "fluency": "nominal",
        "validity": "nominal",
        "outcome": "nominal",
    }
    # The A/B order of compared structures is drawn from the seed: an annotator who knew it could
    # tell which structure is the reference. The page's config omits it (``annotator_config``).
    private_config = frozenset({"seed"})
    # A human answer's columns (its structure, texts and CheckWhy metrics: ~80 µs of Python a
    # row) are stored as the export writes them and passed through while current (issue 34).
    # Their version moves with the stored metrics' (a new METRICS_VERSION makes them stale too).
    export_columns_stored = True
    export_columns_version = f"1+metrics{METRICS_VERSION}"

    def measures_for(self, config: Mapping[str, Any]) -> Mapping[str, str]:
        """Edit projects answer structures (edges); review projects answer decisions,
        criteria and A/B outcomes."""
        if config.get("mode", "edit") == "edit":
            return {"edges": self.measures["edges"]}
        return {field: d for field, d in self.measures.items() if field != "edges"}

    def prepare(self, payload: dict, *, config: dict) -> list[PreparedItem]:
        mode = config.get("mode", "edit")
        draft = payload.get("structure") or []
        reference = payload.get("reference_structure") or []
        gold = None
        if mode == "edit":
            prepared: dict[str, Any] = {"mode": "edit", "draft": draft}
            if reference:
                gold = {"structure": reference, "texts": evidence_texts(payload["evidence"])}
        elif draft and reference:
            comparison = config.get("comparison", "blind")
            order = ["generated", "reference"]  # shown as such: A generated, B the reference
            if comparison == "blind":
                # Seeded per item, so the order does not depend on import order or file position.
                random.Random(f"{config.get('seed', 13)}:{payload['id']}").shuffle(order)
            by_role = {"generated": draft, "reference": reference}
            prepared = {
                "mode": "review",
                "review": "compare",
                "comparison": comparison,
                "order": order,
                "structures": {"A": by_role[order[0]], "B": by_role[order[1]]},
            }
        elif draft or reference:
            prepared = {"mode": "review", "review": "filter", "structure": draft or reference}
            if payload.get("expected_decision"):
                gold = {"decision": payload["expected_decision"]}
        else:
            raise PayloadError("Review mode needs a structure to review.", field="structure")
        return [
            PreparedItem(
                external_id=payload["id"],
                payload=payload,
                prepared=prepared,
                gold=gold,
                group=payload.get("structure_source") or "",
                kind=payload.get("kind", "regular"),
            )
        ]

    def display(self, item: Any, *, assignment: Any = None) -> dict:
        """Claim, cause, effect, label and evidence; the draft (edit), the structure to review, or
        structures A and B (compare) — never which of A and B is the reference in a blind
        comparison, never gold."""
        payload, prepared = item.payload, item.prepared
        shown = {
            "mode": prepared["mode"],
            "claim": payload["claim"],
            "cause": payload.get("cause", ""),
            "effect": payload.get("effect", ""),
            "label": payload["label"],
            "evidence": [
                {"id": e["id"], "text": e["text"], "leaf": e.get("leaf")}
                for e in payload["evidence"]
            ],
        }
        if prepared["mode"] == "edit":
            shown["draft"] = prepared["draft"]
        elif prepared["review"] == "compare":
            shown["review"] = "compare"
            shown["comparison"] = prepared.get("comparison", "blind")
            shown["structures"] = prepared["structures"]
        else:
            shown["review"] = "filter"
            shown["structure"] = prepared["structure"]
        return shown

    def score(self, answer: dict, gold: dict | None) -> dict:
        """Metrics of the submitted structure against the reference (edit mode with a reference),
        nodes read as text; ``correct`` (quality control) when every step matches the reference
        (Steps AllCorrect). Exact measures only: no embedding model is loaded on a submit. A
        review control's gold is its expected decision."""
        if gold and gold.get("decision") and "decision" in answer:
            return {"correct": answer["decision"] == gold["decision"]}
        if not gold or not gold.get("structure") or "steps" not in answer:
            return {}
        if answer.get("invalid_causal_relation"):
            return {"correct": False}  # the reference says it is a causal relation
        texts = gold.get("texts") or {}
        metrics = structure_metrics(
            answer["steps"],
            gold["structure"],
            predicted_texts=answer_texts(_evidence_list(texts), answer),
            reference_texts=texts,
        )
        return {**metrics, "correct": bool(metrics["step_all_correct"])}

    def answer_text(self, answer: dict, *, item: Any = None) -> str:
        """An edited structure in its compact form; a review answer as its choices."""
        if answer.get("invalid_causal_relation"):
            return "discarded: not a valid causal relation"
        if "steps" in answer:
            return to_compact(answer["steps"]) or "(no steps)"
        fields = ("decision", "faithfulness", "fluency", "validity", "validity_a", "validity_b")
        shown = [f"{f} {answer[f]}" for f in (*fields, "preference") if f in answer]
        return " · ".join(shown)

    def export_row(self, item: Any, annotation: Any) -> dict:
        """The same columns for every mode (empty where they do not apply): the final structure as
        JSON steps and compact text, text edits, review decisions, and metrics against the reference
        for the final and the draft structure."""
        scorer = edge_scorer(_config(item).get("similarity_scorer"))
        return _export_row(item, annotation.answer, _StructureMetrics(scorer))

    def exporter(self, project: Any) -> Callable[[Any, Any], list[dict]]:
        """The rows of one export (:meth:`export_row`'s): the scorer is chosen once; a human
        answer's metrics (and its item's draft's) are read from :class:`StoredMetrics`, a batch
        of items in one query (``prepare_rows``), and those missing or stale are computed and
        stored: the draft's metrics once per item, an answer's once per distinct answer of the
        item, the edge sentences of the batch embedded in one model call, never one per row.
        Judges' and external coders' answers are computed as before (not stored). The model's
        float32 vectors depend in their last bits on the sentences encoded with them (padding),
        so a Structure Similarity may differ from one computed row by row (or by an export
        before issue 34) by ~1e-7; once stored, every export writes the stored value."""
        config = getattr(project, "config", None) or {}
        return _StructureExporter(
            fresh_edge_scorer(config.get("similarity_scorer")), project_id=project.pk
        )

    def demo_payload(self) -> dict:
        return {
            "id": "demo-why-1",
            "claim": "The factory closure raised unemployment in the town because most jobs there "
            "depended on the plant.",
            "cause": "the factory closure",
            "effect": "higher unemployment in the town",
            "label": "supports",
            "evidence": [
                {"id": "E1", "text": "The plant employed 2,400 of the town's 5,000 workers."},
                {"id": "E2", "text": "The plant closed in March."},
                {"id": "E3", "text": "About 2,400 people lost their jobs in March."},
                {"id": "E4", "text": "No other employer in the area was hiring."},
                {"id": "E5", "text": "The laid-off workers could not find new jobs nearby."},
            ],
            "structure": "(E1, E2) -> E3; (E3, E4) -> E5 -> claim",
            "reference_structure": "(E1, E2) -> E3; (E3, E4) -> E5 -> claim",
        }

    def csv_to_payload(self, row: dict) -> dict:
        return decode_csv_row(row)

    def example_files(self) -> dict[str, str]:
        """Beside JSON Lines and CSV, the demo record as a CheckWhy release record."""
        payload = self.demo_payload()
        record = {
            "checkwhy-id": payload["id"],
            "claim": payload["claim"],
            "cause": payload["cause"],
            "effect": payload["effect"],
            "label": payload["label"].upper(),
            "evidences": [
                {"evidence_id": e["id"], "evidence": e["text"], "useful": True}
                for e in payload["evidence"]
            ],
            "argument_structure": payload["reference_structure"],
            "structure": payload["structure"],
        }
        return {**super().example_files(), "checkwhy": json.dumps([record], indent=1) + "\n"}


def _evidence_list(texts: Mapping[str, str]) -> list[dict]:
    return [{"id": node, "text": text} for node, text in texts.items()]


def _config(item: Any) -> Mapping[str, Any]:
    """The item's project config (an unsaved item in a test has none)."""
    project = getattr(item, "project", None)
    return getattr(project, "config", None) or {}


def _evidence_changes(original: list[dict], final: list[dict]) -> dict:
    before = {e["id"]: e["text"] for e in original}
    after = {e["id"]: e["text"] for e in final}
    return {
        "evidence_added": [i for i in after if i not in before],
        "evidence_deleted": [i for i in before if i not in after],
        "evidence_revised": [i for i in after if i in before and after[i] != before[i].strip()],
    }


def _export_row(
    item: Any, answer: dict, metrics: _StructureMetrics, stored: Metrics | None = None
) -> dict:
    payload, prepared = item.payload, item.prepared
    review = prepared.get("review") if prepared.get("mode") == "review" else None
    draft_text, reference_text = metrics.compact_texts(item)
    row: dict[str, Any] = {
        "mode": prepared.get("mode"),
        "review": review,
        "label": payload.get("label"),
        "claim": answer.get("claim", payload["claim"]),
        "claim_revised": "claim" in answer and answer["claim"] != payload["claim"].strip(),
        "evidence": answer.get("evidence"),
        "evidence_added": None,
        "evidence_deleted": None,
        "evidence_revised": None,
        "structure": None,
        "structure_text": None,
        "draft_structure_text": draft_text,
        "reference_structure_text": reference_text,
        "invalid_causal_relation": answer.get("invalid_causal_relation")
        if "steps" in answer
        else None,
        "decision": answer.get("decision"),
        **{criterion: answer.get(criterion) for criterion in CRITERIA},
        "reference_validity": answer.get("reference_validity"),
        "preference": answer.get("preference"),
        "outcome": answer.get("outcome"),
        "ab_order": prepared.get("order"),
        **{key: None for key in METRIC_KEYS},
        "draft_metrics": None,
    }
    if "steps" in answer:
        row.update(_evidence_changes(payload["evidence"], answer["evidence"]))
        row["structure"] = answer["steps"]
        row["structure_text"] = answer.get("structure_text") or to_compact(answer["steps"])
    elif review == "filter":
        row["structure"] = prepared["structure"]
        row["structure_text"] = to_compact(prepared["structure"])
    elif review == "compare":
        row["structure"] = payload.get("structure")
        row["structure_text"] = row["draft_structure_text"]
    if stored is not None:  # read from StoredMetrics (only for an answer _measured)
        row.update(stored[0])
        if payload.get("structure"):
            row["draft_metrics"] = stored[1]
    elif _measured(item, answer):
        row.update(metrics.of_answer(item, answer))
        if payload.get("structure"):
            row["draft_metrics"] = metrics.of_draft(item)
    return row


def _measured(item: Any, answer: dict) -> bool:
    """Whether the answer's row carries metrics: an edited structure, the item with a reference."""
    return (
        bool(_reference(item)) and "steps" in answer and not answer.get("invalid_causal_relation")
    )


def _reference(item: Any) -> list:
    return (item.gold or {}).get("structure") or item.payload.get("reference_structure") or []


class _StructureMetrics:
    """CheckWhy's metrics of the rows of one item at a time: what depends only on the item (the
    draft's metrics, compact texts) is computed once per item, an answer's metrics once per
    distinct answer of the item. Items are told apart by identity (an export hands every answer
    of an item the same item object)."""

    def __init__(self, scorer: Any) -> None:
        self.scorer = scorer
        self._item: Any = None
        self._memo: dict[Any, Any] = {}

    def _for(self, item: Any) -> dict[Any, Any]:
        if item is not self._item:
            self._item, self._memo = item, {}
        return self._memo

    def compact_texts(self, item: Any) -> tuple[str | None, str | None]:
        """The draft's and the reference's compact text (None where there is none)."""
        memo = self._for(item)
        if "texts" not in memo:
            draft, reference = item.payload.get("structure"), _reference(item)
            memo["texts"] = (
                to_compact(draft) if draft else None,
                to_compact(reference) if reference else None,
            )
        return memo["texts"]

    def of_draft(self, item: Any) -> dict:
        memo = self._for(item)
        if "draft" not in memo:
            texts = evidence_texts(item.payload["evidence"])
            memo["draft"] = structure_metrics(
                item.payload["structure"],
                _reference(item),
                predicted_texts=texts,
                reference_texts=texts,
                scorer=self.scorer,
            )
        return memo["draft"]

    def of_answer(self, item: Any, answer: dict) -> dict:
        memo = self._for(item)
        key = orjson.dumps([answer["steps"], answer.get("evidence")])
        if key not in memo:
            memo[key] = structure_metrics(
                answer["steps"],
                _reference(item),
                predicted_texts=answer_texts(item.payload["evidence"], answer),
                reference_texts=evidence_texts(item.payload["evidence"]),
                scorer=self.scorer,
            )
        return memo[key]

    def sentences(self, item: Any, answers: list[dict]) -> list[str]:
        """The edge sentences the scorer will be asked about for this item's rows (to embed
        them in advance, with a batch's others)."""
        measured = [a for a in answers if "steps" in a and not a.get("invalid_causal_relation")]
        reference = _reference(item)
        if not reference or not measured:
            return []
        texts = evidence_texts(item.payload["evidence"])
        found = edge_sentences(reference, texts)
        if item.payload.get("structure"):
            found += edge_sentences(item.payload["structure"], texts)
        for answer in measured:
            found += edge_sentences(answer["steps"], answer_texts(item.payload["evidence"], answer))
        return found


class _StructureExporter:
    """:meth:`ArgumentStructure.exporter`'s rows: the human answers' metrics read from
    :class:`StoredMetrics` per batch of items (``prepare_rows``, called by the export before the
    batch's rows), the missing ones computed with the scorer's model calls made per batch, and
    stored."""

    def __init__(self, scorer: Any, *, project_id: int) -> None:
        self.project_id = project_id
        self.metrics = _StructureMetrics(scorer)
        self.scorer_name = "none" if scorer is None else scorer_name(scorer)
        self.stored: dict[int, Metrics] = {}  # this batch's, by answer id

    def __call__(self, item: Any, annotation: Any) -> list[dict]:
        stored = self.stored.get(getattr(annotation, "id", None))  # type: ignore[arg-type]
        return [_export_row(item, annotation.answer, self.metrics, stored)]

    def prepare_rows(self, answered: list[tuple[Any, list[Any]]]) -> None:
        """Read the stored metrics of these items' human answers (``(item, answers)``, each
        answer with its ``id``); compute the missing ones (every edge sentence they need
        embedded in one call) and store them. The batch before's are dropped (memory stays flat
        in rows)."""
        keys: dict[int, str] = {}
        measured: list[tuple[Any, Any]] = []
        for item, answers in answered:
            basis = None
            for annotation in answers:
                if getattr(annotation, "id", None) is None or not _measured(
                    item, annotation.answer
                ):
                    continue
                basis = basis or item_basis(item, _reference(item), self.scorer_name)
                keys[annotation.id] = metrics_key(basis, annotation.answer)
                measured.append((item, annotation))
        self.stored = read_metrics(keys) if keys else {}
        missing = [(item, a) for item, a in measured if a.id not in self.stored]
        if not missing:
            return
        self._warm(missing)
        computed: dict[int, tuple[str, Metrics]] = {}
        for item, annotation in missing:
            draft = self.metrics.of_draft(item) if item.payload.get("structure") else None
            metrics = (self.metrics.of_answer(item, annotation.answer), draft)
            computed[annotation.id] = (keys[annotation.id], metrics)
            self.stored[annotation.id] = metrics
        # Only the project's writer stores them: another export (or a worker's preparation)
        # storing the same answers' would hold this one's INSERT until it ends.
        if export_writer_lock(project_id=self.project_id):
            write_metrics(computed)

    def _warm(self, missing: list[tuple[Any, Any]]) -> None:
        """Embed the edge sentences of the ``(item, answer)`` pairs to measure in one call."""
        scorer = self.metrics.scorer
        if scorer is None or not hasattr(scorer, "warm"):
            return
        by_item: dict[int, tuple[Any, list[dict]]] = {}
        for item, annotation in missing:
            by_item.setdefault(id(item), (item, []))[1].append(annotation.answer)
        scorer.warm(
            (
                sentence
                for item, answers in by_item.values()
                for sentence in self.metrics.sentences(item, answers)
            ),
            keep_only=True,
        )
