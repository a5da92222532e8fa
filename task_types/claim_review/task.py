"""Claim review (FaStfact protocol): annotators audit a factuality pipeline that split a long-form
answer into atomic claims and verified each claim against searched evidence.

Screen 1, revise: keep, remove (reason: redundant / not a claim) or revise each extracted claim, and
add missing claims at their place in response order. Screen 2, verify: agree or disagree with the
pipeline's label of every kept, revised or added claim; on disagreement give the correct label.

The stored answer lists every claim in response order::

    {"claims": [
        {"id": "43b2b7-0", "action": "keep", "agreement": "agree"},
        {"id": "c2afab-1", "action": "revise", "text": "…", "agreement": "disagree", "label": "refuted"},
        {"id": "e8845f-2", "action": "remove", "reason": "redundant"},
        {"id": "new-1", "action": "add", "text": "…", "label": "supported"}
    ]}

Original claims keep their relative order and appear exactly once; added claims (any id that is not
an original one) may stand anywhere. Labels: claims shown with evidence use ``EVIDENCE_LABELS``;
claims without evidence and added claims use the reduced ``REDUCED_LABELS``. Agreeing is possible
only when the pipeline's label belongs to the claim's scheme (an ``unsure`` pre-label is no verdict
to agree with). Exports and statistics follow the FaStfact tool: the annotator label of a removed
claim is its removal reason, of an agreed claim the pipeline's label.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator
from typing import IO, Any

from rest_framework import serializers

from .base import PayloadError, PreparedItem, TaskType, jsonl_records
from .registry import register

EVIDENCE_LABELS = ["supported", "refuted", "conflicting evidence", "not enough evidence", "irrelevant"]
REDUCED_LABELS = ["supported", "unsupported", "irrelevant"]
REMOVAL_REASONS = ["redundant", "not a claim"]
ACTIONS = ["keep", "revise", "remove", "add"]
# Export vocabulary (FaStfact's tool): the operation applied to a claim and the agreement outcome.
OPERATION_OF_ACTION = {"keep": "unchanged", "revise": "revised", "remove": "removed", "add": "added"}
AGREED, DISAGREED, PENDING = "agreed", "disagreed_corrected", "verification_pending"
DEFAULT_SEARCH_URL = "https://www.google.com/search?q={query}"
MAX_TEXT = 2000


# --- payload -------------------------------------------------------------------------------------


class EvidencePassageSerializer(serializers.Serializer):
    title = serializers.CharField(allow_blank=True, max_length=500)
    content = serializers.CharField(trim_whitespace=False)


class ClaimSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=200)
    text = serializers.CharField(max_length=MAX_TEXT)
    system_label = serializers.CharField(
        allow_blank=True, max_length=50, help_text="The pipeline's label (verification label, else pre-label)."
    )
    evidence = EvidencePassageSerializer(many=True, default=list)
    reasoning = serializers.CharField(allow_blank=True, default="", trim_whitespace=False)
    pre_label = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=50)
    prelabel_confidence = serializers.FloatField(required=False, allow_null=True)

    def validate_system_label(self, value: str) -> str:
        return value.strip().lower()


class ClaimReviewPayloadSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=200)
    question = serializers.CharField()
    response = serializers.CharField(trim_whitespace=False)
    model = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
    prompt_source = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
    claims = ClaimSerializer(many=True, allow_empty=True)
    kind = serializers.ChoiceField(
        choices=["regular", "control", "qualification"], required=False, default="regular"
    )
    gold_labels = serializers.DictField(
        child=serializers.CharField(),
        required=False,
        help_text="Only for control/qualification items: claim id -> expected annotator label "
        "(a verification label, or a removal reason for claims that should be removed).",
    )

    def validate_claims(self, value: list[dict]) -> list[dict]:
        seen: set[str] = set()
        for claim in value:
            if claim["id"] in seen:
                raise serializers.ValidationError(f"Claim id {claim['id']!r} appears twice.")
            seen.add(claim["id"])
        return value

    def validate(self, attrs: dict) -> dict:
        gold = attrs.get("gold_labels")
        if gold:
            ids = {c["id"] for c in attrs["claims"]}
            allowed = set(EVIDENCE_LABELS) | set(REDUCED_LABELS) | set(REMOVAL_REASONS)
            for claim_id, label in gold.items():
                if claim_id not in ids:
                    raise serializers.ValidationError({"gold_labels": f"Unknown claim id {claim_id!r}."})
                if label not in allowed:
                    raise serializers.ValidationError(
                        {"gold_labels": f"Unknown label {label!r} for claim {claim_id!r}."}
                    )
        return attrs


class ClaimReviewConfigSerializer(serializers.Serializer):
    search_url = serializers.CharField(
        default=DEFAULT_SEARCH_URL,
        allow_blank=True,
        allow_null=True,
        help_text="Web search opened for a claim; {query} is replaced by the claim. Empty: no search button.",
    )

    def validate_search_url(self, value: str | None) -> str:
        value = (value or "").strip()
        if value and (not re.match(r"^https?://", value) or "{query}" not in value):
            raise serializers.ValidationError("Must be an http(s) URL containing {query}, or empty.")
        return value


# --- answer --------------------------------------------------------------------------------------


def scheme_of(claim: dict | None) -> list[str]:
    """The labels an annotator chooses from for a claim: the full scheme when the claim is shown
    with evidence, the reduced one without evidence and for added claims (``None``)."""
    return EVIDENCE_LABELS if claim and claim.get("evidence") else REDUCED_LABELS


def can_agree(claim: dict) -> bool:
    return claim.get("system_label", "") in scheme_of(claim)


class ClaimDecisionSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=64)
    action = serializers.ChoiceField(choices=ACTIONS)
    text = serializers.CharField(required=False, allow_blank=True, max_length=MAX_TEXT)
    reason = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    agreement = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    label = serializers.CharField(required=False, allow_blank=True, allow_null=True)


def _decision_problem(decision: dict, claim: dict | None) -> str | None:
    """What is missing or wrong in one claim's decision, or None. ``claim`` is the original claim
    (None for an added one)."""
    action = decision["action"]
    text = (decision.get("text") or "").strip()
    if claim is None and action != "add":
        return "is not a claim of this item; added claims have the action 'add'"
    if claim is not None and action == "add":
        return "is an extracted claim; choose keep, revise or remove"
    if action == "remove":
        if decision.get("reason") not in REMOVAL_REASONS:
            return f"choose why it is removed ({' or '.join(REMOVAL_REASONS)})"
        return None
    if action in ("revise", "add") and not text:
        return "the claim text is empty"
    if action == "revise" and text == claim["text"].strip():
        return "the revised text is the same as the original; keep the claim instead"
    if action == "add":
        if decision.get("label") not in REDUCED_LABELS:
            return f"choose its label ({', '.join(REDUCED_LABELS)})"
        return None
    agreement = decision.get("agreement")
    if agreement not in ("agree", "disagree"):
        return "choose agree or disagree with the system's label"
    if agreement == "agree" and not can_agree(claim):
        label = claim.get("system_label") or "none"
        return f"the system's label ({label}) is not a verdict to agree with; disagree and choose the label"
    if agreement == "disagree" and decision.get("label") not in scheme_of(claim):
        return f"choose the correct label ({', '.join(scheme_of(claim))})"
    return None


class ClaimReviewAnswerSerializer(serializers.Serializer):
    """Validates a submitted answer; needs ``context={"item": item}``. Every claim must have a
    decision; errors are keyed by claim id so the page can mark the offending claims."""

    claims = ClaimDecisionSerializer(many=True, allow_empty=True)

    def validate(self, attrs: dict) -> dict:
        item = self.context.get("item")
        originals = item.payload["claims"] if item is not None else []
        by_id = {c["id"]: c for c in originals}
        decisions = attrs["claims"]
        errors: dict[str, str] = {}
        seen: set[str] = set()
        for position, decision in enumerate(decisions, start=1):
            claim_id = decision["id"]
            if claim_id in seen:
                errors[claim_id] = f"claim {position} ({claim_id}): appears twice"
                continue
            seen.add(claim_id)
            problem = _decision_problem(decision, by_id.get(claim_id))
            if problem:
                errors[claim_id] = f"claim {position} ({claim_id}): {problem}"
        missing = [c["id"] for c in originals if c["id"] not in seen]
        for claim_id in missing:
            errors[claim_id] = f"claim {claim_id}: has no decision"
        if errors:
            raise serializers.ValidationError({"claims": errors})
        order = [d["id"] for d in decisions if d["id"] in by_id]
        if order != [c["id"] for c in originals]:
            raise serializers.ValidationError(
                {"claims": "The extracted claims must stay in response order; only added claims move."}
            )
        return {"claims": [_clean(d) for d in decisions]}


def _clean(decision: dict) -> dict:
    """Only the fields that the action uses, so equal decisions store equal answers."""
    action = decision["action"]
    clean = {"id": decision["id"], "action": action}
    if action in ("revise", "add"):
        clean["text"] = decision["text"].strip()
    if action == "remove":
        clean["reason"] = decision["reason"]
    if action in ("keep", "revise"):
        clean["agreement"] = decision["agreement"]
        if decision["agreement"] == "disagree":
            clean["label"] = decision["label"]
    if action == "add":
        clean["label"] = decision["label"]
    return clean


# --- source highlighting (best effort) -----------------------------------------------------------

_STOPWORDS = frozenset(
    "a an the and or but of to in on at by for with from as is are was were be been being it its "
    "this that these those there their they them he she his her we our you your i not no so than "
    "then which who whom whose what when where while into onto over under about also more most "
    "such can could would should may might will has have had do does did".split()
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[ \t]+(?=\S)")


def _words(text: str) -> set[str]:
    words = set()
    for word in re.findall(r"\w+", text.lower()):
        if word in _STOPWORDS or len(word) < 2:
            continue
        # A crude plural fold so "planets" finds "planet"; enough for a highlight.
        words.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return words


def response_segments(response: str) -> list[tuple[int, int]]:
    """Character spans of the response's sentences (split at line breaks and sentence ends)."""
    spans = []
    offset = 0
    for line in response.splitlines(keepends=True):
        starts = [0] + [m.end() for m in _SENTENCE_END.finditer(line)]
        ends = [m.start() for m in _SENTENCE_END.finditer(line)] + [len(line.rstrip())]
        for start, end in zip(starts, ends, strict=True):
            piece = line[start:end]
            lead = len(piece) - len(piece.lstrip())
            if piece.strip():
                spans.append((offset + start + lead, offset + end))
        offset += len(line)
    return spans


def source_span(claim: str, response: str, segments: list[tuple[int, int]] | None = None) -> list[int] | None:
    """Best-effort [start, end) of the response sentence a claim was extracted from: the sentence
    covering the largest share of the claim's content words, each word weighted by how rare it is
    in the response (so "planet" in an answer about planets counts little); ties go to the earliest
    sentence. None when no sentence covers a third. Claims are paraphrases: this is a pointer for
    the annotator, not an alignment."""
    wanted = _words(claim)
    segments = segments if segments is not None else response_segments(response)
    if not wanted or not segments:
        return None
    words = [_words(response[start:end]) for start, end in segments]
    total = len(segments)

    def weight(word: str) -> float:
        return math.log(1 + total / (1 + sum(word in w for w in words)))

    weights = {word: weight(word) for word in wanted}
    norm = sum(weights.values())
    best, best_score = None, 0.0
    for (start, end), present in zip(segments, words, strict=True):
        score = sum(weights[w] for w in wanted & present) / norm
        if score > best_score:
            best, best_score = [start, end], score
    return best if best_score >= 1 / 3 else None


# --- hooks ---------------------------------------------------------------------------------------


def prepare(payload: dict, *, config: dict) -> list[PreparedItem]:
    """Locate each claim's source sentence in the response (for highlighting) and take the gold
    labels of control items."""
    segments = response_segments(payload["response"])
    spans = {c["id"]: source_span(c["text"], payload["response"], segments) for c in payload["claims"]}
    gold_labels = payload.get("gold_labels")
    group = " / ".join(p for p in (payload.get("model"), payload.get("prompt_source")) if p)
    return [
        PreparedItem(
            external_id=payload["id"],
            payload=payload,
            prepared={"spans": spans},
            gold=_gold(payload) if gold_labels else None,
            group=group,
            kind=payload.get("kind", "regular"),
        )
    ]


def _gold(payload: dict) -> dict:
    """Gold labels with the pipeline's labels of those claims, so ``score`` needs no item."""
    labels = dict(payload["gold_labels"])
    system = {c["id"]: c.get("system_label", "") for c in payload["claims"] if c["id"] in labels}
    return {"labels": labels, "system_labels": system}


def display(item: Any) -> dict:
    """What the annotator sees: the question, the response and the claims with the pipeline's
    labels, evidence and reasoning. Not the model, prompt source, gold or pre-label confidences."""
    spans = item.prepared.get("spans", {})
    return {
        "question": item.payload["question"],
        "response": item.payload["response"],
        "claims": [
            {
                "id": c["id"],
                "text": c["text"],
                "system_label": c.get("system_label", ""),
                "evidence": [{"title": e["title"], "content": e["content"]} for e in c.get("evidence", [])],
                "reasoning": c.get("reasoning", ""),
                "labels": scheme_of(c),
                "can_agree": can_agree(c),
                "span": spans.get(c["id"]),
            }
            for c in item.payload["claims"]
        ],
        "added_labels": REDUCED_LABELS,
        "removal_reasons": REMOVAL_REASONS,
    }


def claim_rows(item: Any, answer: dict) -> list[dict]:
    """One row per claim of an answer, in response order, in the FaStfact tool's terms: ``claim``
    is the extracted claim (an added claim's own text), ``revised_claim`` the revision or None,
    ``action`` unchanged / revised / removed / added, ``agreement`` agreed / disagreed_corrected /
    verification_pending (None for removed and added claims), ``annotator_label`` the final label
    (a removed claim's removal reason)."""
    originals = {c["id"]: c for c in item.payload["claims"]}
    rows = []
    for position, decision in enumerate(answer.get("claims", []), start=1):
        claim = originals.get(decision["id"])
        action = decision["action"]
        agreement = None
        if action in ("keep", "revise"):
            agreement = {"agree": AGREED, "disagree": DISAGREED}.get(decision.get("agreement"), PENDING)
        label = final_label(decision, claim.get("system_label") if claim else None)
        rows.append(
            {
                "position": position,
                "claim_id": decision["id"],
                "claim": claim["text"] if claim else decision.get("text"),
                "revised_claim": decision.get("text") if action == "revise" else None,
                "action": OPERATION_OF_ACTION[action],
                "removal_reason": decision.get("reason") if action == "remove" else None,
                "system_label": claim.get("system_label") if claim else None,
                "has_evidence": bool(claim and claim.get("evidence")),
                "agreement": agreement,
                "annotator_label": label,
            }
        )
    return rows


def final_label(decision: dict, system_label: str | None) -> str | None:
    """The annotator's label of one decision: the removal reason, the pipeline's label when they
    agree, otherwise the label they chose (None while undecided)."""
    if decision["action"] == "remove":
        return decision.get("reason")
    if decision["action"] != "add" and decision.get("agreement") == "agree":
        return system_label
    return decision.get("label")


def agreement_key(answer: dict) -> dict:
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


def score(answer: dict, gold: dict | None) -> dict:
    """Control items: share of the gold-labelled claims whose final annotator label equals the gold
    label (a claim that should be removed has its removal reason as gold)."""
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


def export_row(item: Any, annotation: Any) -> dict:
    """One summary row per annotation: counts of operations and agreements, and gold scores."""
    rows = claim_rows(item, annotation.answer)
    summary = {f"claims_{op}": sum(r["action"] == op for r in rows) for op in OPERATION_OF_ACTION.values()}
    summary.update({a: sum(r["agreement"] == a for r in rows) for a in (AGREED, DISAGREED)})
    summary.update(score(annotation.answer, item.gold))
    return summary


def export_rows(item: Any, annotation: Any) -> list[dict]:
    """One row per claim (FaStfact tool columns), with the item's model and prompt source."""
    context = {"model": item.payload.get("model", ""), "prompt_source": item.payload.get("prompt_source", "")}
    return [{**context, **row} for row in claim_rows(item, annotation.answer)]


def demo_payload() -> dict:
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
                    {"title": "Eiffel Tower", "content": "Construction began in 1887 and ended in 1889."}
                ],
                "reasoning": "The passage gives the construction years.",
            },
            {"id": "c2", "text": "It is 330 metres tall.", "system_label": "supported"},
            {"id": "c3", "text": "The Eiffel Tower is the most beautiful tower.", "system_label": "unsupported"},
        ],
    }


# --- import formats ------------------------------------------------------------------------------

_BLOCK_START = re.compile(r"\n[ \t]*\n(?=Evidence \d+[ \t]*\n)")
_BLOCK = re.compile(r"Evidence (\d+)[ \t]*\nSource Title:[ \t]*([^\n]*)\nContent:[ \t]*(.*)\Z", re.S)


def parse_verification_context(text: str) -> list[dict]:
    """FaStfact's ``verification_context``: blocks ``Evidence N`` / ``Source Title: …`` /
    ``Content: …`` separated by blank lines, numbered 1, 2, 3… in order. Raises ``ValueError``
    naming the first malformed block."""
    text = (text or "").strip()
    if not text or text.upper() == "N/A":
        return []
    passages = []
    for number, block in enumerate(_BLOCK_START.split(text), start=1):
        match = _BLOCK.match(block.strip())
        if match is None:
            raise ValueError(
                f"evidence block {number} is not 'Evidence N', 'Source Title: …', 'Content: …' "
                f"(it starts {block.strip()[:60]!r})"
            )
        if int(match[1]) != number:
            raise ValueError(f"evidence block {number} is numbered {match[1]}; expected Evidence {number}")
        passages.append({"title": match[2].strip(), "content": match[3].strip()})
    return passages


def _sample_id(record: dict) -> str:
    """FaStfact samples carry no id: derive a stable one from model, question and response, so a
    re-import with ``--update`` finds the same items."""
    key = "\n".join(str(record.get(k) or "") for k in ("model", "question", "response"))
    return "ff-" + hashlib.sha256(key.encode()).hexdigest()[:12]


_SAMPLE_EXTRAS = ("abstained", "question_id", "prelabel_stats", "token_stats", "response_stats")


def _fastfact_claim(claim: Any, index: int, location: str) -> dict:
    if not isinstance(claim, dict):
        raise PayloadError("is not an object", field=f"claims_lst.{index}", location=location)
    claim_id = claim.get("claim_id")
    if not isinstance(claim_id, str | int) or str(claim_id) == "":
        raise PayloadError("claim_id is missing", field=f"claims_lst.{index}", location=location)
    where = f"{location}, claim {claim_id}"
    result = claim.get("verification_result") or {}
    if not isinstance(result, dict):
        raise PayloadError("is not an object", field="verification_result", location=where)
    try:
        evidence = parse_verification_context(result.get("verification_context") or "")
    except ValueError as exc:
        raise PayloadError(str(exc), field="verification_context", location=where) from None
    label = result.get("verification_label") or claim.get("pre-label") or ""
    return {
        "id": str(claim_id),
        "text": claim.get("claim"),
        "system_label": str(label).strip().lower(),
        "evidence": evidence,
        "reasoning": result.get("reasoning_for_verification_label") or "",
        "pre_label": claim.get("pre-label"),
        "prelabel_confidence": claim.get("prelabel_confidence"),
    }


def read_fastfact(stream: IO[str]) -> Iterator[tuple[str, dict]]:
    """FaStfact JSONL (the file its annotation tool loads): one sample per line with ``question``,
    ``response``, ``model``, ``prompt_source`` and ``claims_lst``; each claim has ``claim_id``,
    ``claim``, ``pre-label`` and optionally ``verification_result`` (``verification_context``,
    ``reasoning_for_verification_label``, ``verification_label``). The pipeline's label is the
    verification label when the claim was verified, otherwise its pre-label."""
    for location, record in jsonl_records(stream):
        claims = record.get("claims_lst")
        if not isinstance(claims, list):
            raise PayloadError("must be a list of claims", field="claims_lst", location=location)
        payload = {
            "id": str(record.get("id") or _sample_id(record)),
            "question": record.get("question"),
            "response": record.get("response"),
            "model": record.get("model") or "",
            "prompt_source": record.get("prompt_source") or "",
            "claims": [_fastfact_claim(c, i, location) for i, c in enumerate(claims)],
        }
        payload.update({k: record[k] for k in _SAMPLE_EXTRAS if k in record})
        yield location, payload


def csv_to_payload(row: dict) -> dict:
    """CSV columns: id, question, response, model, prompt_source, claims (JSON list of
    ``{id, text, system_label, evidence: [{title, content}], reasoning}``)[, kind, gold_labels
    (JSON object)]."""
    payload: dict[str, Any] = {k: v for k, v in row.items() if v not in (None, "")}
    for key in ("claims", "gold_labels"):
        if isinstance(payload.get(key), str):
            payload[key] = json.loads(payload[key])
    return payload


CLAIM_REVIEW = register(
    TaskType(
        slug="claim_review",
        name="Claim review (revise and verify)",
        template_name="annotation/claim_review.html",
        script="js/task_types/claim_review.js",
        payload_serializer=ClaimReviewPayloadSerializer,
        answer_serializer=ClaimReviewAnswerSerializer,
        config_serializer=ClaimReviewConfigSerializer,
        # Agreement unit: (item, extracted claim); value: the final annotator label.
        measures={"claims": "nominal"},
        prepare=prepare,
        display=display,
        score=score,
        export_row=export_row,
        export_rows=export_rows,
        agreement_key=agreement_key,
        demo_payload=demo_payload,
        readers={"fastfact": read_fastfact},
        csv_to_payload=csv_to_payload,
    )
)
