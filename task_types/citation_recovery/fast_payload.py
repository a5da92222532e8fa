"""The citation-recovery payload validated without DRF, for ordinary records: the import spent a
sixth of its time in ``Serializer.run_validation`` of records that were all fine.

:func:`fast_validated_payload` returns exactly what ``CitationRecoveryPayloadSerializer``'s
``run_validation`` returns (same keys in the same order, same values and types) when the record
is plainly well formed, and None for anything else, unusual but valid ones included (text padded
with whitespace is still trimmed, "3" for a number or "true" for a flag are left to DRF): the
serializer then validates it and words the errors as it always has. It follows the serializer
field by field; tests/task_types/citation_recovery/test_fast_payload.py holds the two together.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from .serializers import (
    ID_MAX_LENGTH,
    ITEM_KINDS,
    LABEL_MAX_LENGTH,
    SOURCE_MAX_LENGTH,
    explanation_is_valid,
    validated_evidence,
)

# The serializer's fields in its order (the order of the validated dict's keys).
FIELDS = (
    "id",
    "claim",
    "label",
    "evidence",
    "explanation",
    "masked_evidence",
    "generator",
    "evidence_source",
    "kind",
    "gold_sentences",
    "expected_gold_sentences",
    "negative_control",
)
_KINDS = frozenset(ITEM_KINDS)
# Integers DRF's IntegerField takes as they are (it converts through str(), which refuses
# thousands of digits); a larger one is left to DRF.
_INT_LIMIT = 2**63


def fast_validated_payload(data: Any) -> dict | None:
    """The serializer's validated data for ``data``, or None where DRF must decide."""
    if type(data) is not dict:
        return None
    external_id = _text(data.get("id"), ID_MAX_LENGTH)
    claim = _text(data.get("claim"), None)
    label = _text(data.get("label"), LABEL_MAX_LENGTH)
    explanation = data.get("explanation")
    evidence = data.get("evidence")
    if external_id is None or claim is None or label is None or evidence is None:
        return None
    try:
        if explanation is None or not explanation_is_valid(explanation):
            return None
        evidence = validated_evidence(evidence)
    except (serializers.ValidationError, ValueError):
        return None
    result = {
        "id": external_id,
        "claim": claim,
        "label": label,
        "evidence": evidence,
        "explanation": explanation,
    }
    return _with_optional_fields(result, data)


def _with_optional_fields(result: dict, data: dict) -> dict | None:
    if "masked_evidence" in data:
        masked = data["masked_evidence"]
        if masked is not None and not _is_plain_int(masked):
            return None
        result["masked_evidence"] = masked
    for name in ("generator", "evidence_source"):
        if name in data:
            value = _text(data[name], SOURCE_MAX_LENGTH, allow_blank=True)
            if value is None:
                return None
            result[name] = value
    kind = data.get("kind", "regular")
    if type(kind) is not str or kind not in _KINDS:
        return None
    result["kind"] = kind
    for name in ("gold_sentences", "expected_gold_sentences"):
        if name in data:
            values = data[name]
            if type(values) is not list or not all(
                _is_plain_int(value) and value >= 0 for value in values
            ):
                return None
            result[name] = list(values)
    negative_control = data.get("negative_control", False)
    if negative_control is not True and negative_control is not False:
        return None
    if negative_control and kind == "regular":
        return None  # the serializer's validate() refuses it
    result["negative_control"] = negative_control
    return result


def _is_plain_int(value: Any) -> bool:
    return type(value) is int and -_INT_LIMIT < value < _INT_LIMIT


def _text(value: Any, max_length: int | None, *, allow_blank: bool = False) -> str | None:
    """``StrictCharField``'s value (trimmed; "" for blank where allowed), or None where it would
    refuse the value."""
    if type(value) is not str:
        return None
    value = value.strip()
    if not value:
        return "" if allow_blank else None
    if max_length is not None and len(value) > max_length:
        return None
    if "\x00" in value:
        return None
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None
    return value
