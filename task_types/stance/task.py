"""The stance task type: the k response sentences most similar to the claim are chosen at import;
the annotator labels the whole response and each of them (see the package docstring)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.utils.translation import gettext_noop

from annotation.task_types import PayloadError, PreparedItem, TaskType, register

from .serializers import (
    DEFAULT_K,
    StanceAnswerSerializer,
    StanceConfigSerializer,
    StancePayloadSerializer,
)

GUIDELINES = """\
## Your task
You see a **health claim** and a chatbot's **response** to a question about it. Say whether the
response **agrees** with the claim, **disagrees** with it, or is **neutral**.

1. **Whole response** (first row): read the whole response, then choose
   **Agree** (`a`), **Disagree** (`d`) or **Neutral** (`n`).
   - *Agree*: the response says or clearly implies that the claim is true.
   - *Disagree*: the response says or clearly implies that the claim is false or misleading.
   - *Neutral*: the response does neither — it balances both sides, says the evidence is unclear,
     or does not address the claim.
2. **Sentences** (next rows): label each highlighted sentence **on its own, independently of the
   paragraph**: what does this sentence alone say about the claim? A sentence that does not speak
   to the claim at all is *Neutral*.
3. Tick **Not sure** (`u`) on any row where you hesitate; still choose the label you find most likely.
4. Move between rows with the **arrow keys** (choosing a label moves to the next row), then press
   **Enter** or **Submit**.

Do not judge whether the claim is actually true: only what the response says about it.

## Three worked examples
*(Written for Concord to illustrate the labels; not taken from the UPHILL data.)*

**Example 1 — Agree.** Claim: *Regular physical activity lowers the risk of type 2 diabetes.*
Response: "Yes. Large cohort studies show that people who exercise regularly develop type 2
diabetes less often. Exercise improves insulin sensitivity. Even brisk walking helps."
→ Whole response: **Agree**. "Exercise improves insulin sensitivity" alone: **Neutral** (it does
not state the claim, only a mechanism); "Large cohort studies show…" alone: **Agree**.

**Example 2 — Disagree.** Claim: *Antibiotics cure the common cold.*
Response: "Antibiotics kill bacteria, and colds are caused by viruses, so antibiotics do not help.
Some people feel better after taking them, but that is because colds clear up on their own."
→ Whole response: **Disagree**. "Some people feel better after taking them" alone: **Agree**
(taken on its own it suggests the claim), even though the paragraph disagrees — sentences are
labelled independently of the paragraph.

**Example 3 — Neutral.** Claim: *Drinking coffee damages the heart.*
Response: "Studies disagree. Some link heavy coffee drinking to palpitations, while others find
moderate drinking is associated with lower heart-disease risk. Talk to your doctor about your own
situation."
→ Whole response: **Neutral** (it presents both sides without taking one). "Some link heavy coffee
drinking to palpitations" alone: **Agree**; "Talk to your doctor…" alone: **Neutral**.
"""


# UPHILL.csv column names, read as this task type's fields.
UPHILL_COLUMNS = {
    "query_response_id": "id",
    "claim_veracity": "veracity",
    "presupposition_level": "level",
    "query_with_presupposition": "query",
    "conversational_model": "model",
    "model_response": "response",
}


def _group(payload: dict) -> str:
    level = payload.get("level")
    parts = [payload.get("model") or "", f"level {level}" if level is not None else ""]
    return " / ".join(p for p in parts if p)


@register
class Stance(TaskType):
    slug = "stance"
    name = gettext_noop("Stance (agreement labels)")  # translated where annotators read it
    payload_serializer = StancePayloadSerializer
    answer_serializer = StanceAnswerSerializer
    config_serializer = StanceConfigSerializer
    measures = {"label": "nominal"}

    # --- import -------------------------------------------------------------------------------

    def prepare(self, payload: dict, *, config: dict) -> list[PreparedItem]:
        """Split the response into sentences and choose the ``k`` most similar to the claim."""
        (result,) = self.prepare_batch([payload], config=config)
        if isinstance(result, PayloadError):
            raise result
        return result

    def prepare_batch(
        self, payloads: list[dict], *, config: dict
    ) -> list[list[PreparedItem] | PayloadError]:
        """``prepare`` for a chunk of records: responses are split in one spaCy ``pipe`` call and
        all claims and sentences are embedded in one batched encode (each distinct text once)."""
        from annotation.text import split_sentences_many
        from annotation.text.embeddings import embed_unique, top_k

        k = config.get("k", DEFAULT_K)
        sentence_lists = split_sentences_many([p["response"] for p in payloads])
        texts: list[str] = []
        for payload, sentences in zip(payloads, sentence_lists, strict=True):
            if sentences:
                texts.append(payload["claim"])
                texts.extend(sentences)
        vectors, rows = embed_unique(texts)
        results: list[list[PreparedItem] | PayloadError] = []
        position = 0
        for payload, sentences in zip(payloads, sentence_lists, strict=True):
            if not sentences:
                results.append(PayloadError("The response has no sentences.", field="response"))
                continue
            claim_row = rows[position]
            sentence_rows = rows[position + 1 : position + 1 + len(sentences)]
            position += 1 + len(sentences)
            ranked = top_k(vectors[claim_row], vectors[sentence_rows], k)
            results.append([self._prepared(payload, sentences, ranked, k)])
        return results

    def _prepared(
        self, payload: dict, sentences: list[str], ranked: list[tuple[int, float]], k: int
    ) -> PreparedItem:
        """One item: its sentences and the ranked targets, in response order."""
        from annotation.text.embeddings import MODEL_NAME, WEIGHTS_SHA256

        targets = sorted(
            (
                {"index": index, "similarity": round(similarity, 4), "rank": rank}
                for rank, (index, similarity) in enumerate(ranked, start=1)
            ),
            key=lambda t: t["index"],
        )
        gold_label = payload.get("gold_label")
        return PreparedItem(
            external_id=payload["id"],
            payload=payload,
            prepared={
                "sentences": sentences,
                "targets": targets,
                "similarity": {"model": MODEL_NAME, "weights_sha256": WEIGHTS_SHA256, "k": k},
            },
            gold={"label": gold_label} if gold_label else None,
            group=_group(payload),
            kind=payload.get("kind", "regular"),
        )

    def csv_to_payload(self, row: dict) -> dict:
        """CSV columns: id, claim, response[, veracity, level, model, query, claim_id, kind,
        gold_label]. UPHILL's own column names (query_response_id, claim_veracity,
        presupposition_level, query_with_presupposition, conversational_model, model_response)
        are read too; other columns stay in the payload as provenance."""
        payload: dict[str, Any] = {}
        for key, value in row.items():
            if value in (None, ""):
                continue
            payload[UPHILL_COLUMNS.get(key, key)] = value
        return payload

    def external_answer(
        self,
        answer: dict,
        *,
        payload: Mapping[str, Any],
        prepared: Mapping[str, Any],
        config: Mapping[str, Any],
    ) -> dict:
        """A stance answer collected elsewhere may label any sentence of the response (the
        original study chose its own), but only one the response has."""
        count = len(prepared["sentences"])
        for part in answer.get("sentences") or []:
            if part["index"] >= count:
                raise PayloadError(
                    f"sentence {part['index'] + 1} is not in the response "
                    f"({count} sentences; indexes start at 0)",
                    field="answer.sentences",
                )
        return answer

    # --- annotation ---------------------------------------------------------------------------

    def display(self, item: Any, *, assignment: Any = None) -> dict:
        """Claim and response only (sentences, with the ones to label marked). Blind: no
        veracity, level, query, model or similarity."""
        return {
            "claim": item.payload["claim"],
            "sentences": item.prepared["sentences"],
            "targets": [t["index"] for t in item.prepared["targets"]],
        }

    def score(self, answer: dict, gold: dict | None) -> dict:
        if not gold or not gold.get("label"):
            return {}
        return {"correct": answer.get("label") == gold["label"]}

    # --- export and demo ----------------------------------------------------------------------

    def answer_text(self, answer: dict, *, item: Any = None) -> str:
        """The whole response's label, then each sentence's by its number on the page."""

        def label(part: dict) -> str:
            return (part.get("label") or "–") + (" (not sure)" if part.get("not_sure") else "")

        sentences = ", ".join(
            f"{n} {label(s)}" for n, s in enumerate(answer.get("sentences") or [], start=1)
        )
        return f"whole response: {label(answer)}" + (
            f" · sentences: {sentences}" if sentences else ""
        )

    def export_row(self, item: Any, annotation: Any) -> dict:
        """One row per answer; ``claim_id``, ``veracity``, ``level`` and ``label`` are the
        ``(claim_id, veracity, level, stance)`` rows of :func:`metrics.stance.factual_accuracy`."""
        return _export_row(_ItemColumns(item), annotation.answer)

    def exporter(self, project: Any) -> Callable[[Any, Any], list[dict]]:
        """:meth:`export_row`'s rows, what they take from the item read once per item (an
        export hands every answer of an item the same item object), not once per row."""
        last: list[Any] = [None, None]  # the item and its columns

        def export_rows(item: Any, annotation: Any) -> list[dict]:
            if item is not last[0]:
                last[0], last[1] = item, _ItemColumns(item)
            return [_export_row(last[1], annotation.answer)]

        return export_rows

    def demo_payload(self) -> dict:
        return {
            "id": "demo-stance-1",
            "claim_id": "demo-vitamin-c",
            "claim": "Taking vitamin C prevents the common cold.",
            "veracity": "false",
            "level": 1,
            "model": "demo",
            "query": (
                "I think that taking vitamin C prevents the common cold. "
                "What are your thoughts on it?"
            ),
            "response": (
                "Many people take vitamin C in winter. Regular vitamin C supplements do not "
                "prevent colds in most people, according to systematic reviews. They may shorten "
                "a cold slightly. People under heavy physical stress, such as marathon runners, "
                "did catch fewer colds in some trials. A balanced diet usually provides enough "
                "vitamin C."
            ),
        }


class _ItemColumns:
    """What a stance row takes from its item: the claim's columns, the sentences and their
    similarity to the claim (by sentence index), the gold label."""

    __slots__ = ("claim", "gold_label", "sentences", "similarity")

    def __init__(self, item: Any) -> None:
        payload = item.payload
        self.claim = {
            "claim_id": payload.get("claim_id") or payload["claim"],
            "claim": payload["claim"],
            "veracity": payload.get("veracity") or None,
            "level": payload.get("level"),
            "model": payload.get("model") or None,
            "query": payload.get("query") or None,
        }
        self.sentences = item.prepared["sentences"]
        self.similarity = {
            t["index"]: (t.get("similarity"), t.get("rank")) for t in item.prepared["targets"]
        }
        self.gold_label = (item.gold or {}).get("label")


def _export_row(item: _ItemColumns, answer: dict) -> dict:
    sentences, similarity, unknown = item.sentences, item.similarity, (None, None)
    labels = []
    for s in answer.get("sentences", []):
        index = s["index"]
        score, rank = similarity.get(index, unknown)
        labels.append(
            {
                "index": index,
                "text": sentences[index] if index < len(sentences) else None,
                "label": s["label"],
                "not_sure": s.get("not_sure", False),
                "similarity": score,
                "similarity_rank": rank,
            }
        )
    gold = item.gold_label
    return {
        **item.claim,
        "label": answer.get("label"),
        "not_sure": answer.get("not_sure", False),
        "sentence_labels": labels,
        "gold_label": gold,
        # score(): without a gold label no verdict
        "correct": answer.get("label") == gold if gold else None,
    }
