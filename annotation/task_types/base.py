"""The task-type contract: everything that differs between annotation task types.

Adding a task type means one module here (a ``TaskType`` instance registered in the registry),
one template and one JS module. Services call these hooks; they never branch on the slug.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


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
    display: Callable[[Any], dict]  # (item) -> what an annotator may see; never gold
    score: Callable[[dict, dict | None], dict]  # (answer, gold) -> scores
    export_row: Callable[[Any, Any], dict]  # (item, annotation) -> flat, JSON-able row
    demo_payload: Callable[[], dict]
    readers: Mapping[str, Callable[..., Iterator[tuple[str, dict]]]] = field(default_factory=dict)
    # ^ extra import formats: name -> reader(file) yielding (location, payload); location names the
    #   line or record in error messages.
    csv_to_payload: Callable[[dict], dict] | None = None
    judge_prompt: str | None = None  # filled by llm_judges when the task type gets a judge

    def validate_payload(self, data: Any) -> dict:
        serializer = self.payload_serializer(data=data)
        if not serializer.is_valid():
            field_name, message = first_error(serializer.errors)
            raise PayloadError(message, field=field_name)
        return serializer.validated_data

    def validate_config(self, data: Any) -> dict:
        serializer = self.config_serializer(data=data or {})
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


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
