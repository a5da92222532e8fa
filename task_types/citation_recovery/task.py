"""Citation recovery (Xing, Baldwin & Lau): find the explanation sentences that should cite a
highlighted evidence passage whose citation markers were masked, or say that none should; rate the
explanation's helpfulness 0–100.

Sentence indices are 0-based everywhere in storage and exports (the file format's ``ans_sens`` is
0-based too); the UI shows them 1-based.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import IO, Any

from rest_framework import serializers

from .base import PayloadError, PreparedItem, TaskType
from .registry import register

HELPFULNESS_QUESTION = "How helpful is the explanation in clarifying the truthfulness of the claim?"


# --- payload -------------------------------------------------------------------------------------


class ExplanationField(serializers.Field):
    """Either raw text (split into sentences at import) or an already split list of sentences."""

    default_error_messages = {"invalid": "Must be a non-empty string or a non-empty list of strings."}

    def to_internal_value(self, data: Any) -> str | list[str]:
        if isinstance(data, str) and data.strip():
            _check_text(data)
            return data
        if isinstance(data, list) and data and all(isinstance(s, str) and s.strip() for s in data):
            for sentence in data:
                _check_text(sentence)
            return data
        self.fail("invalid")

    def to_representation(self, value: Any) -> Any:
        return value


class EvidenceListField(serializers.Field):
    """``[{"id": int >= 0, "text": str}, …]``, non-empty, ids unique.

    Hand-written rather than a nested serializer: imports validate 100k records with a dozen
    passages each, and a nested DRF serializer per passage was the slowest part of an import.
    """

    def to_internal_value(self, data: Any) -> list[dict]:
        if not isinstance(data, list) or not data:
            raise serializers.ValidationError("Must be a non-empty list of {id, text} objects.")
        evidence, seen = [], set()
        for index, passage in enumerate(data):
            if not isinstance(passage, dict):
                raise serializers.ValidationError(f"Passage {index} is not an object.")
            passage_id, text = passage.get("id"), passage.get("text")
            if isinstance(passage_id, str) and passage_id.strip().isdigit():
                passage_id = int(passage_id)
            if not isinstance(passage_id, int) or isinstance(passage_id, bool) or passage_id < 0:
                raise serializers.ValidationError(
                    f"Passage {index}: id must be a non-negative integer (markers look like [9])."
                )
            if not isinstance(text, str) or not text.strip():
                raise serializers.ValidationError(f"Passage {index} (id {passage_id}): text is missing.")
            _check_text(text)
            if passage_id in seen:
                raise serializers.ValidationError(f"Evidence id {passage_id} appears twice.")
            seen.add(passage_id)
            evidence.append({"id": passage_id, "text": text})
        return evidence

    def to_representation(self, value: Any) -> Any:
        return value


def _check_text(text: str) -> None:
    # Lone surrogates and NUL cannot be stored (PostgreSQL rejects them); encoding is the fast way
    # to find surrogates (DRF's own validator walks the string in Python).
    if "\x00" in text:
        raise serializers.ValidationError("Text contains a NUL character.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise serializers.ValidationError("Text contains an invalid (surrogate) character.") from None


class CitationRecoveryPayloadSerializer(serializers.Serializer):
    id = serializers.CharField(max_length=200)
    claim = serializers.CharField()
    label = serializers.CharField(max_length=50, help_text="Veracity label, e.g. true / false / half-true.")
    evidence = EvidenceListField()
    explanation = ExplanationField()
    masked_evidence = serializers.IntegerField(
        required=False, allow_null=True, help_text="Evidence to mask; chosen by seeded RNG if absent."
    )
    generator = serializers.CharField(required=False, allow_blank=True, max_length=80)
    evidence_source = serializers.CharField(required=False, allow_blank=True, max_length=80)
    kind = serializers.ChoiceField(
        choices=["regular", "control", "qualification"], required=False, default="regular"
    )
    gold_sentences = serializers.ListField(
        child=serializers.IntegerField(min_value=0),
        required=False,
        help_text="Only for control/qualification items whose gold is given rather than derived.",
    )


class CitationRecoveryConfigSerializer(serializers.Serializer):
    masking = serializers.ChoiceField(choices=["sample", "full"], default="sample")
    seed = serializers.IntegerField(default=13)
    keep_other_markers = serializers.BooleanField(default=True)
    helpfulness_question = serializers.CharField(default=HELPFULNESS_QUESTION)


# --- answer --------------------------------------------------------------------------------------


class CitationRecoveryAnswerSerializer(serializers.Serializer):
    """Validates a submitted answer; needs ``context={"item": item}`` for the sentence count."""

    sentences = serializers.ListField(child=serializers.IntegerField(min_value=0), default=list)
    none = serializers.BooleanField(default=False)
    helpfulness = serializers.IntegerField(min_value=0, max_value=100)

    def validate(self, attrs: dict) -> dict:
        chosen = sorted(set(attrs["sentences"]))
        item = self.context.get("item")
        if item is not None:
            count = len(item.prepared["sentences"])
            out_of_range = [i for i in chosen if i >= count]
            if out_of_range:
                raise serializers.ValidationError(
                    {"sentences": f"Sentence {out_of_range[0] + 1} does not exist (the explanation has {count})."}
                )
        if attrs["none"] and chosen:
            raise serializers.ValidationError(
                {"none": "Choose sentences or 'No sentence should cite this evidence', not both."}
            )
        if not attrs["none"] and not chosen:
            raise serializers.ValidationError(
                {"sentences": "Select at least one sentence, or 'No sentence should cite this evidence'."}
            )
        return {"sentences": chosen, "none": attrs["none"], "helpfulness": attrs["helpfulness"]}


# --- hooks ---------------------------------------------------------------------------------------


def _sentences_of(explanation: str | list[str]) -> list[str]:
    if isinstance(explanation, list):
        return [s.strip() for s in explanation]
    from annotation.text import split_sentences  # spaCy loads only when raw text needs splitting

    return split_sentences(explanation)


def _group(payload: dict) -> str:
    return " / ".join(p for p in (payload.get("generator"), payload.get("evidence_source")) if p)


def prepare(payload: dict, *, config: dict) -> list[PreparedItem]:
    """Split, parse citations, choose the evidence to mask, mask it and derive the gold.

    Returns no item when the explanation cites nothing (there is no citation to recover); the
    importer reports such records as skipped.
    """
    return _prepare(payload, _sentences_of(payload["explanation"]), config)


def prepare_many(payloads: list[dict], *, config: dict) -> list[list[PreparedItem] | PayloadError]:
    """``prepare`` for a chunk: raw-text explanations are split in one spaCy ``pipe`` call."""
    from annotation.text import split_sentences_many

    raw = [p["explanation"] for p in payloads if isinstance(p["explanation"], str)]
    split = iter(split_sentences_many(raw)) if raw else iter(())
    results: list[list[PreparedItem] | PayloadError] = []
    for payload in payloads:
        explanation = payload["explanation"]
        sentences = next(split) if isinstance(explanation, str) else [s.strip() for s in explanation]
        try:
            results.append(_prepare(payload, sentences, config))
        except PayloadError as exc:
            results.append(exc)
    return results


def _prepare(payload: dict, sentences: list[str], config: dict) -> list[PreparedItem]:
    from annotation.text import parse_citations, remove_all_citations, remove_citation

    citations = [parse_citations(s) for s in sentences]
    cited = sorted({e for cites in citations for e in cites})
    known = {e["id"] for e in payload["evidence"]}
    unknown = [e for e in cited if e not in known]
    if unknown:
        raise PayloadError(
            f"The explanation cites evidence {unknown[0]}, which is not among the evidence passages.",
            field="explanation",
        )
    kind = payload.get("kind", "regular")
    given_gold = payload.get("gold_sentences")
    if given_gold is not None:
        bad = [i for i in given_gold if i >= len(sentences)]
        if bad:
            raise PayloadError(f"Gold sentence {bad[0]} does not exist.", field="gold_sentences")

    requested = payload.get("masked_evidence")
    if requested is not None and requested < 0:
        requested = None  # the Transparent-FCExp files use -1 for "no masked citation"
    if config.get("masking") == "full" and given_gold is None:
        requested = None  # full setting: every cited evidence is masked in turn, whatever the file chose
    if given_gold is not None and requested is None:
        raise PayloadError(
            "an item with given gold_sentences must name the masked_evidence they belong to",
            field="masked_evidence",
        )
    if requested is not None and requested not in known:
        raise PayloadError(
            f"Masked evidence {requested} is not among the evidence passages.", field="masked_evidence"
        )
    if requested is not None and requested not in cited and given_gold is None:
        raise PayloadError(
            f"Masked evidence {requested} is not cited by the explanation.", field="masked_evidence"
        )
    if not cited and requested is None:
        return []

    if config.get("masking") == "full" and requested is None:
        targets = cited
    elif requested is not None:
        targets = [requested]
    else:
        # Seeded per record, so the choice does not depend on import order or file position.
        rng = random.Random(f"{config.get('seed', 13)}:{payload['id']}")
        targets = [rng.choice(cited)]

    keep_others = config.get("keep_other_markers", True)
    items = []
    for target in targets:
        masked = [
            remove_citation(s, target) if target in c else s
            for s, c in zip(sentences, citations, strict=True)
        ]
        if not keep_others:
            masked = [remove_all_citations(s) for s in masked]
        gold_sentences = (
            sorted(set(given_gold))
            if given_gold is not None
            else [i for i, c in enumerate(citations) if target in c]
        )
        full = config.get("masking") == "full" and requested is None
        external_id = f"{payload['id']}#{target}" if full else payload["id"]
        items.append(
            PreparedItem(
                external_id=external_id,
                payload=payload,
                prepared={"sentences": masked, "target_evidence_id": target},
                gold={"evidence_id": target, "sentences": gold_sentences},
                group=_group(payload),
                kind=kind,
            )
        )
    return items


def display(item: Any) -> dict:
    """What the annotator sees: no gold, no group, no generator, no kind."""
    target = item.prepared["target_evidence_id"]
    return {
        "claim": item.payload["claim"],
        "label": item.payload["label"],
        "evidence": [
            {"id": e["id"], "text": e["text"], "target": e["id"] == target}
            for e in item.payload["evidence"]
        ],
        "sentences": item.prepared["sentences"],
    }


def set_scores(predicted: set, gold: set) -> dict:
    """Set precision / recall / F1 of chosen sentences against gold.

    "None" is an answer too: an empty choice against an empty gold scores 1/1/1; an empty choice
    against a non-empty gold, or a non-empty choice against an empty gold, scores 0/0/0.
    """
    if not predicted and not gold:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    hit = len(predicted & gold)
    precision = hit / len(predicted) if predicted else 0.0
    recall = hit / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def score(answer: dict, gold: dict | None) -> dict:
    if gold is None:
        return {}
    result = set_scores(set(answer.get("sentences", [])), set(gold.get("sentences", [])))
    result["correct"] = result["f1"] == 1.0
    return result


def agreement_key(answer: dict) -> list[int]:
    """Annotators agree when they chose the same sentences ("none" is the empty choice); the
    helpfulness rating is a scale, compared by agreement metrics rather than by vote."""
    return sorted(answer.get("sentences", []))


def export_row(item: Any, annotation: Any) -> dict:
    answer = annotation.answer
    row = {
        "selected_sentences": answer.get("sentences", []),
        "none": answer.get("none", False),
        "helpfulness": answer.get("helpfulness"),
        "masked_evidence_id": item.prepared.get("target_evidence_id"),
        "gold_sentences": (item.gold or {}).get("sentences"),
    }
    scores = score(answer, item.gold)
    row.update({k: scores.get(k) for k in ("precision", "recall", "f1")})
    return row


def demo_payload() -> dict:
    return {
        "id": "demo-1",
        "claim": "The city doubled its bike lanes in 2023.",
        "label": "half-true",
        "evidence": [
            {"id": 1, "text": "The 2023 report lists 40 km of new lanes."},
            {"id": 2, "text": "The network was 80 km long at the end of 2022."},
            {"id": 3, "text": "Most new lanes are painted, not protected."},
        ],
        "explanation": "The city added 40 km of lanes in 2023 [1]. It had 80 km before [2]. "
        "So the network grew by half, not double [1, 2]. Many lanes are only painted [3].",
        "generator": "demo",
    }


# --- import formats ------------------------------------------------------------------------------


def _parse_passage(passage: str) -> list[dict]:
    evidence = []
    for line in passage.split("\n"):
        if not line.strip():
            continue
        head, sep, text = line.partition(":")
        if not sep or not head.strip().isdigit():
            raise ValueError(f"passage line {line[:40]!r} is not '<id>: <text>'")
        evidence.append({"id": int(head), "text": text.strip()})
    return evidence


def read_transparent_fcexp(stream: IO[str]) -> Iterator[tuple[str, dict]]:
    """Transparent-FCExp release files: ``{claim_id: {claim, label, passage, explanation, …}}``,
    one generator per file. The generator becomes the item group; ``masked_cit`` the masked
    evidence (so derived gold equals the file's ``ans_sens``)."""
    try:
        data = json.load(stream)
    except json.JSONDecodeError as exc:
        raise PayloadError(f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}") from exc
    if not isinstance(data, dict):
        raise PayloadError("expected one JSON object keyed by claim id")
    for claim_id, record in data.items():
        location = f"claim {claim_id}"
        if not isinstance(record, dict):
            raise PayloadError("record is not an object", location=location)
        explanations = record.get("explanation")
        if not isinstance(explanations, dict) or len(explanations) != 1:
            raise PayloadError(
                "expected an object with exactly one generator", field="explanation", location=location
            )
        ((generator, explanation),) = explanations.items()
        try:
            evidence = _parse_passage(record.get("passage") or "")
        except ValueError as exc:
            raise PayloadError(str(exc), field="passage", location=location) from None
        masked_by_generator = record.get("masked_cit") or {}
        if not isinstance(masked_by_generator, dict):
            raise PayloadError(
                "expected an object {generator: evidence id}", field="masked_cit", location=location
            )
        masked = masked_by_generator.get(generator)
        payload = {
            "id": claim_id,
            "claim": record.get("claim"),
            "label": record.get("label"),
            "evidence": evidence,
            "explanation": explanation,
            "generator": generator,
        }
        if masked is not None:
            payload["masked_evidence"] = masked
        if record.get("article_id"):
            payload["article_id"] = str(record["article_id"])
        yield location, payload


def csv_to_payload(row: dict) -> dict:
    """CSV columns: id, claim, label, evidence, explanation[, masked_evidence, generator,
    evidence_source, kind, gold_sentences]. ``evidence`` is JSON (``[{"id":…, "text":…}]``) or
    lines ``<id>: <text>``; ``explanation`` is JSON (a list of sentences) or raw text."""
    payload: dict[str, Any] = {k: v for k, v in row.items() if v not in (None, "")}
    evidence = payload.get("evidence")
    if isinstance(evidence, str):
        if evidence.lstrip().startswith("["):
            payload["evidence"] = json.loads(evidence)
        else:
            payload["evidence"] = _parse_passage(evidence)
    explanation = payload.get("explanation")
    if isinstance(explanation, str) and explanation.lstrip().startswith("["):
        payload["explanation"] = json.loads(explanation)
    if "gold_sentences" in payload:
        payload["gold_sentences"] = json.loads(payload["gold_sentences"])
    return payload


CITATION_RECOVERY = register(
    TaskType(
        slug="citation_recovery",
        name="Citation recovery",
        template_name="annotation/citation_recovery.html",
        script="js/task_types/citation_recovery.js",
        payload_serializer=CitationRecoveryPayloadSerializer,
        answer_serializer=CitationRecoveryAnswerSerializer,
        config_serializer=CitationRecoveryConfigSerializer,
        measures={"sentences": "jaccard", "helpfulness": "interval"},
        prepare=prepare,
        prepare_many=prepare_many,
        display=display,
        score=score,
        export_row=export_row,
        agreement_key=agreement_key,
        demo_payload=demo_payload,
        readers={"transparent-fcexp": read_transparent_fcexp},
        csv_to_payload=csv_to_payload,
    )
)
