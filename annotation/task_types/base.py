"""The task-type contract: everything that differs between annotation task types.

Adding a task type means one module here (a ``TaskType`` instance registered in the registry),
one template and one JS module. Services call these hooks; they never branch on the slug.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from rest_framework import serializers


class PayloadError(ValueError):
    """An imported record that cannot become an item; ``field`` names the offending field."""

    def __init__(self, message: str, *, field: str = "", location: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.location = location  # "line 3", "claim 27c2…"; set by readers or the importer

    def __str__(self) -> str:
        where = ", ".join(p for p in (self.location, f"field {self.field!r}" if self.field else "") if p)
        return f"{where}: {self.message}" if where else self.message


@dataclass(frozen=True)
class PreparedItem:
    """One item derived from one imported record (a record may yield several, e.g. the
    citation-recovery ``full`` setting masks each cited evidence in turn)."""

    external_id: str
    payload: dict
    prepared: dict
    gold: dict | None
    group: str = ""
    kind: str = "regular"


@dataclass(frozen=True)
class TaskType:
    slug: str
    name: str
    template_name: str
    script: str  # static path of the task's JS module
    payload_serializer: type
    answer_serializer: type
    config_serializer: type
    measures: Mapping[str, str]  # answer field -> agreement distance name
    prepare: Callable[..., list[PreparedItem]]  # (payload: dict, *, config: dict) -> [...]
    display: Callable[..., dict]  # (item) -> what an annotator may see; never gold
    score: Callable[[dict, dict | None], dict]  # (answer, gold) -> scores
    export_row: Callable[[Any, Any], dict]  # (item, annotation) -> flat, JSON-able row
    demo_payload: Callable[[], dict]
    readers: Mapping[str, Callable[..., Iterator[tuple[str, dict]]]] = field(default_factory=dict)
    # ^ extra import formats: name -> reader(file) yielding (location, payload); location names the
    #   line or record in error messages.
    csv_to_payload: Callable[[dict], dict] | None = None
    prepare_many: Callable[..., list] | None = None  # batched prepare; see prepare_batch
    export_rows: Callable[[Any, Any], list[dict]] | None = None
    # ^ optional (item, annotation) -> several rows (one per claim, per criterion and system…);
    #   exports use it instead of export_row when set. Every row of a task type has the same keys.
    display_per_assignment: bool = False
    # ^ True when what an annotator sees depends on who they are (e.g. an order shuffled per
    #   annotator): display is then called as display(item, assignment=…); see display_for.
    private_config: frozenset[str] = frozenset()
    # ^ config keys the annotation page must not carry (e.g. ranking's system names and seed).
    agreement_key: Callable[[dict], Any] | None = None
    # ^ optional answer -> the JSON-able part annotators must agree on (review and majority vote;
    #   e.g. the chosen sentences, not a free rating). None: the whole answer; see answer_key.

    def validate_payload(self, data: Any) -> dict:
        # One serializer instance per thread, reused: building a DRF serializer deep-copies its
        # fields, which dominated import time (100k records). run_validation keeps no state.
        serializer = _reusable(self.payload_serializer)
        try:
            return serializer.run_validation(data)
        except serializers.ValidationError as exc:
            field_name, message = first_error(exc.detail)
            raise PayloadError(message, field=field_name) from None

    def prepare_batch(self, payloads: list[dict], *, config: dict) -> list[list[PreparedItem] | PayloadError]:
        """``prepare`` over a chunk of validated payloads (task types may batch expensive work,
        e.g. sentence splitting); a record's ``PayloadError`` is returned in its place."""
        if self.prepare_many is not None:
            return self.prepare_many(payloads, config=config)
        results: list[list[PreparedItem] | PayloadError] = []
        for payload in payloads:
            try:
                results.append(self.prepare(payload, config=config))
            except PayloadError as exc:
                results.append(exc)
        return results

    def answer_key(self, answer: dict) -> str:
        """Canonical text of what two answers must share to agree (``agreement_key``)."""
        import json

        value = self.agreement_key(answer) if self.agreement_key is not None else answer
        return json.dumps(value, sort_keys=True, separators=(",", ":"))

    def display_for(self, item: Any, *, assignment: Any = None) -> dict:
        """What the annotator of ``assignment`` sees of ``item`` (never gold)."""
        if self.display_per_assignment:
            return self.display(item, assignment=assignment)
        return self.display(item)

    def annotator_config(self, config: Mapping[str, Any]) -> dict:
        """The validated config without the keys annotators must not see."""
        return {k: v for k, v in config.items() if k not in self.private_config}

    def validate_config(self, data: Any) -> dict:
        serializer = self.config_serializer(data=data or {})
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


def jsonl_records(stream: IO[str]) -> Iterator[tuple[str, dict]]:
    """``(location, record)`` for each non-blank line of a JSON Lines file; a line that is not a
    JSON object raises ``PayloadError`` naming it. Shared by the generic importer and the
    task-specific JSONL formats."""
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        location = f"line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PayloadError(
                f"not valid JSON ({exc.msg}, column {exc.colno})", location=location
            ) from None
        if not isinstance(record, dict):
            raise PayloadError("each line must be a JSON object", location=location)
        yield location, record


_local = threading.local()


def _reusable(serializer_class: type) -> Any:
    cache = _local.__dict__.setdefault("serializers", {})
    if serializer_class not in cache:
        cache[serializer_class] = serializer_class()
    return cache[serializer_class]


def first_error(errors: Any, prefix: str = "") -> tuple[str, str]:
    """The first (field path, message) of a DRF ``errors`` structure, for one-line reports."""
    if isinstance(errors, dict):
        for key, value in errors.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if key == "non_field_errors":
                path = prefix
            return first_error(value, path)
    if isinstance(errors, list):
        for index, value in enumerate(errors):
            if isinstance(value, dict | list) and value:
                return first_error(value, f"{prefix}[{index}]")
            if isinstance(value, dict | list):
                continue
            return prefix, str(value)
    return prefix, str(errors)
