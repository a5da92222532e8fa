"""The citation-recovery task type: split the explanation, parse its citation markers, mask one
cited evidence (or each in turn), derive the gold sentences; show, score and export answers."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.translation import gettext_noop

from annotation.task_types import PayloadError, PreparedItem, TaskType, register
from metrics.sets import set_scores

from .fast_payload import fast_validated_payload
from .formats import decode_csv_row, read_transparent_fcexp
from .ratings import read_utility_ratings
from .serializers import (
    CitationRecoveryAnswerSerializer,
    CitationRecoveryConfigSerializer,
    CitationRecoveryPayloadSerializer,
)

# Example import files of this task type's own formats come from its data (data/transparent-fcexp/).
EXAMPLE_DATA = Path(settings.BASE_DIR) / "data" / "transparent-fcexp"


@register
class CitationRecovery(TaskType):
    slug = "citation_recovery"
    name = gettext_noop("Citation recovery")  # translated where annotators read it
    skip_reason = "explanation cites no evidence"
    agreement_basis = gettext_noop(
        "the chosen sentences (“none” is the empty choice); the helpfulness rating does not count"
    )
    payload_serializer = CitationRecoveryPayloadSerializer
    answer_serializer = CitationRecoveryAnswerSerializer
    config_serializer = CitationRecoveryConfigSerializer
    measures = {"sentences": "jaccard", "helpfulness": "interval"}
    readers = {"transparent-fcexp": read_transparent_fcexp}
    annotation_readers = {"utility-ratings": read_utility_ratings}
    export_item_fields = frozenset({"prepared", "gold"})  # export_row reads no payload

    # --- import -------------------------------------------------------------------------------

    def fast_payload(self, data: Any) -> dict | None:
        return fast_validated_payload(data)

    def prepare(self, payload: dict, *, config: dict) -> list[PreparedItem]:
        """Split, parse citations, choose the evidence to mask, mask it and derive the gold.

        An explanation that cites nothing has no citation to recover: it becomes one rating-only
        item (``prepared["rating_only"]``; helpfulness only, no masked evidence, no gold), as the
        paper's annotators rated such explanations, or, with the config ``uncited: skip``, no
        item (the importer reports the record as skipped).
        """
        return self._prepare(payload, _sentences_of(payload["explanation"]), config)

    def prepare_batch(
        self, payloads: list[dict], *, config: dict
    ) -> list[list[PreparedItem] | PayloadError]:
        """``prepare`` for a chunk: raw-text explanations are split in one spaCy ``pipe`` call."""
        from annotation.text import split_sentences_many

        raw = [p["explanation"] for p in payloads if isinstance(p["explanation"], str)]
        split = iter(split_sentences_many(raw)) if raw else iter(())
        results: list[list[PreparedItem] | PayloadError] = []
        for payload in payloads:
            explanation = payload["explanation"]
            sentences = (
                next(split) if isinstance(explanation, str) else [s.strip() for s in explanation]
            )
            try:
                results.append(self._prepare(payload, sentences, config))
            except PayloadError as exc:
                results.append(exc)
        return results

    def _prepare(self, payload: dict, sentences: list[str], config: dict) -> list[PreparedItem]:
        from .citations import parse_citations  # lazily: annotation.text loads spaCy

        citations = [parse_citations(s) for s in sentences]
        cited = sorted({e for cites in citations for e in cites})
        known = {e["id"] for e in payload["evidence"]}
        unknown = [e for e in cited if e not in known]
        if unknown:
            raise PayloadError(
                f"The explanation cites evidence {unknown[0]}, which is not among the evidence passages.",
                field="explanation",
            )
        given_gold = payload.get("gold_sentences")
        if given_gold is not None:
            bad = [i for i in given_gold if i >= len(sentences)]
            if bad:
                raise PayloadError(
                    f"Gold sentence {bad[0]} does not exist.", field="gold_sentences"
                )
        requested = _requested_evidence(payload, cited=cited, known=known, config=config)
        if not cited and requested is None:
            # Controls and qualification items are scored against gold: one without a
            # citation to recover is skipped, whatever the setting.
            rated = config.get("uncited") != "skip" and payload.get("kind", "regular") == "regular"
            return [_rating_only_item(payload, sentences)] if rated else []
        full = config.get("masking") == "full" and requested is None
        notes: tuple[str, ...] = ()
        if full:
            targets = cited  # full setting: every cited evidence is masked in turn
        elif requested is not None:
            targets = [requested]
        else:
            # Seeded per record, so the choice does not depend on import order or file position.
            rng = random.Random(f"{config.get('seed', 13)}:{payload['id']}")
            targets = [rng.choice(cited)]
            notes = (SEEDED_CHOICE_NOTE.format(seed=config.get("seed", 13)),)
        return [
            _masked_item(
                payload, sentences, citations, target, full=full, config=config, notes=notes
            )
            for target in targets
        ]

    def csv_to_payload(self, row: dict) -> dict:
        return decode_csv_row(row)

    def example_files(self) -> dict[str, str]:
        """Beside JSON Lines and CSV, the first record of the GPT-4 Transparent-FCExp release
        file shipped in data/ (its own format: ``{claim_id: record}``)."""
        release = json.loads((EXAMPLE_DATA / "gpt4_full_data.json").read_text(encoding="utf-8"))
        claim_id = next(iter(release))
        example = json.dumps({claim_id: release[claim_id]}, ensure_ascii=False, indent=1)
        return {**super().example_files(), "transparent-fcexp": example + "\n"}

    # --- annotation ---------------------------------------------------------------------------

    def display(self, item: Any, *, assignment: Any = None) -> dict:
        """What the annotator sees: no gold, no group, no generator, no kind. A rating-only item
        (an explanation that cites no evidence) says so: no passage is highlighted, and only
        helpfulness is asked."""
        target = item.prepared["target_evidence_id"]
        shown = {
            "claim": item.payload["claim"],
            "label": item.payload["label"],
            "evidence": [
                {"id": e["id"], "text": e["text"], "target": e["id"] == target}
                for e in item.payload["evidence"]
            ],
            "sentences": item.prepared["sentences"],
        }
        if item.prepared.get("rating_only"):
            shown["rating_only"] = True
        return shown

    def control_quota(self, config: Mapping[str, Any]) -> Mapping[str, int] | None:
        return config.get("control_quota") or None

    def control_category(self, gold: Mapping[str, Any] | None) -> str:
        """Positive controls have gold sentences; negative ones have none ("none" is right)."""
        return "positive" if (gold or {}).get("sentences") else "negative"

    def score(self, answer: dict, gold: dict | None) -> dict:
        """Set precision / recall / F1 of the chosen sentences against gold
        (:func:`metrics.sets.set_scores`: "none" against an empty gold scores 1/1/1)."""
        if gold is None:
            return {}
        scores = set_scores(answer.get("sentences", []), gold.get("sentences", []))
        return {
            "precision": scores.precision,
            "recall": scores.recall,
            "f1": scores.f1,
            "correct": scores.f1 == 1.0,
        }

    def answer_text(self, answer: dict, *, item: Any = None) -> str:
        if "sentences" not in answer and "none" not in answer:  # a rating alone
            rating = answer.get("helpfulness")
            return f"helpfulness {rating}" if isinstance(rating, int) else "no answer"
        chosen = answer.get("sentences") or []
        text = (
            "no sentence"
            if answer.get("none") or not chosen
            else (
                "sentence"
                + ("s " if len(chosen) > 1 else " ")
                + ", ".join(str(i + 1) for i in chosen)
            )
        )
        if isinstance(answer.get("helpfulness"), int):
            text += f" · helpfulness {answer['helpfulness']}"
        return text

    def agreement_key(self, answer: dict) -> list[int]:
        """Annotators agree when they chose the same sentences ("none" is the empty choice); the
        helpfulness rating is a scale, compared by agreement metrics rather than by vote."""
        return sorted(answer.get("sentences", []))

    # --- export and demo ----------------------------------------------------------------------

    def export_row(self, item: Any, annotation: Any) -> dict:
        """Columns: ``selected_sentences`` and ``gold_sentences`` are sentence indices counted
        from 0 (the explanation's first sentence is 0), as stored and scored;
        ``selected_sentence_numbers`` and ``gold_sentence_numbers`` are the same sentences
        numbered from 1, as annotators see them on the page. An answer without a selection
        (a rating-only item, or helpfulness ratings collected elsewhere) has empty selection
        and score columns, as the report counts it: not an empty selection."""
        return _export_row(_ItemColumns(item), annotation.answer)

    def exporter(self, project: Any) -> Callable[[Any, Any], list[dict]]:
        """:meth:`export_row`'s rows, what they take from the item (gold, masked evidence) read
        once per item (an export hands every answer of an item the same item object)."""
        last: list[Any] = [None, None]  # the item and its columns

        def export_rows(item: Any, annotation: Any) -> list[dict]:
            if item is not last[0]:
                last[0], last[1] = item, _ItemColumns(item)
            return [_export_row(last[1], annotation.answer)]

        return export_rows

    def external_answer(
        self, answer: dict, *, payload: Mapping, prepared: Mapping, config: Mapping
    ) -> dict:
        """A selection collected elsewhere is checked against the item like an annotator's:
        sentences (numbered from 0) that exist, not both sentences and "none"."""
        if "sentences" not in answer:
            return answer
        chosen = sorted(set(answer["sentences"]))
        count = len(prepared.get("sentences") or [])
        missing = [i for i in chosen if i >= count]
        if missing:
            raise PayloadError(
                f"sentence {missing[0]} does not exist (the explanation has {count}, numbered "
                "from 0)",
                field="answer.sentences",
            )
        if answer.get("none") and chosen:
            raise PayloadError(
                "sentences and none (no sentence should cite it) cannot both be given",
                field="answer.none",
            )
        return {**answer, "sentences": chosen}

    def demo_payload(self) -> dict:
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


# --- preparation helpers -------------------------------------------------------------------------


def _sentences_of(explanation: str | list[str]) -> list[str]:
    if isinstance(explanation, list):
        return [s.strip() for s in explanation]
    from annotation.text import split_sentences  # spaCy loads only when raw text needs splitting

    return split_sentences(explanation)


SEEDED_CHOICE_NOTE = (
    "the record names no evidence to mask (no masked_evidence, or no masked_cit for its "
    "generator in a Transparent-FCExp file): the evidence was chosen by the seeded generator "
    "(seed {seed})"
)


def _check_stated_gold(payload: dict, target: int, gold_sentences: list[int]) -> None:
    """The gold the source states (``expected_gold_sentences``, Transparent-FCExp's ``ans_sens``)
    must equal the gold derived for the masked evidence it belongs to."""
    stated = payload.get("expected_gold_sentences")
    if stated is None or payload.get("masked_evidence") != target:
        return
    if gold_sentences != sorted(set(stated)):
        raise PayloadError(
            f"the gold derived from the explanation for evidence {target} is sentences "
            f"{gold_sentences}, but the file states {sorted(set(stated))} (ans_sens); "
            "refusing a record whose gold does not match",
            field="expected_gold_sentences",
        )


def _group(payload: dict) -> str:
    return " / ".join(p for p in (payload.get("generator"), payload.get("evidence_source")) if p)


def _requested_evidence(
    payload: dict, *, cited: list[int], known: set[int], config: dict
) -> int | None:
    """The evidence the record asks to mask, checked against the explanation; None to choose."""
    given_gold = payload.get("gold_sentences")
    requested = payload.get("masked_evidence")
    if requested is not None and requested < 0:
        requested = None  # the Transparent-FCExp files use -1 for "no masked citation"
    if config.get("masking") == "full" and given_gold is None:
        requested = (
            None  # full setting: every cited evidence is masked in turn, whatever the file chose
        )
    if given_gold is not None and requested is None:
        raise PayloadError(
            "an item with given gold_sentences must name the masked_evidence they belong to",
            field="masked_evidence",
        )
    if requested is not None and requested not in known:
        raise PayloadError(
            f"Masked evidence {requested} is not among the evidence passages.",
            field="masked_evidence",
        )
    if requested is not None and requested not in cited and given_gold is None:
        raise PayloadError(
            f"Masked evidence {requested} is not cited by the explanation.", field="masked_evidence"
        )
    return requested


RATING_ONLY_NOTE = (
    "the explanation cites no evidence: a rating-only item (helpfulness, no sentence selection, "
    "no masked evidence)"
)


def _rating_only_item(payload: dict, sentences: list[str]) -> PreparedItem:
    """An explanation without citations: shown whole, rated for helpfulness only."""
    return PreparedItem(
        external_id=payload["id"],
        payload=payload,
        prepared={"sentences": sentences, "target_evidence_id": None, "rating_only": True},
        gold=None,
        group=_group(payload),
        notes=(RATING_ONLY_NOTE,),
    )


def _masked_item(
    payload: dict,
    sentences: list[str],
    citations: list[list[int]],
    target: int,
    *,
    full: bool,
    config: dict,
    notes: tuple[str, ...] = (),
) -> PreparedItem:
    """The item masking ``target``: its markers removed (and the others too unless the project
    keeps them); gold is the given ``gold_sentences`` or else the sentences that cited it."""
    from .citations import remove_all_citations, remove_citation

    masked = [
        remove_citation(s, target) if target in c else s
        for s, c in zip(sentences, citations, strict=True)
    ]
    if not config.get("keep_other_markers", True):
        masked = [remove_all_citations(s) for s in masked]
    given_gold = payload.get("gold_sentences")
    gold_sentences = (
        sorted(set(given_gold))
        if given_gold is not None
        else [i for i, c in enumerate(citations) if target in c]
    )
    _check_stated_gold(payload, target, gold_sentences)
    if payload.get("negative_control"):
        # A negative control: without the sentences that cited the evidence, none should.
        masked = [s for i, s in enumerate(masked) if i not in set(gold_sentences)]
        gold_sentences = []
        if not masked:
            raise PayloadError(
                "A negative control needs sentences left once those citing the masked evidence "
                "are removed; this explanation has none.",
                field="negative_control",
            )
    return PreparedItem(
        external_id=f"{payload['id']}#{target}" if full else payload["id"],
        payload=payload,
        prepared={"sentences": masked, "target_evidence_id": target},
        gold={"evidence_id": target, "sentences": gold_sentences},
        group=_group(payload),
        kind=payload.get("kind", "regular"),
        notes=notes,
    )


class _ItemColumns:
    """What a row takes from its item: the gold (for the scores), its sentences from 0 and from
    1, the masked evidence."""

    __slots__ = ("gold", "gold_numbers", "gold_sentences", "masked_evidence_id")

    def __init__(self, item: Any) -> None:
        self.gold = item.gold
        self.gold_sentences = (item.gold or {}).get("sentences")
        self.gold_numbers = (
            [i + 1 for i in self.gold_sentences] if self.gold_sentences is not None else None
        )
        self.masked_evidence_id = item.prepared.get("target_evidence_id")


def _export_row(item: _ItemColumns, answer: dict) -> dict:
    selected = "sentences" in answer or "none" in answer
    chosen = answer.get("sentences", []) if selected else None
    precision = recall = f1 = None
    if selected and item.gold is not None:  # the scores of CitationRecovery.score()
        scores = set_scores(answer.get("sentences", []), item.gold.get("sentences", []))
        precision, recall, f1 = scores.precision, scores.recall, scores.f1
    return {
        "selected_sentences": chosen,
        "selected_sentence_numbers": [i + 1 for i in chosen] if chosen is not None else None,
        "none": answer.get("none", False) if selected else None,
        "helpfulness": answer.get("helpfulness"),
        "masked_evidence_id": item.masked_evidence_id,
        "gold_sentences": item.gold_sentences,
        "gold_sentence_numbers": item.gold_numbers,
        "precision": precision,
        "recall": recall,
        "f1": f1,
    }
