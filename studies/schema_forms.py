"""Django form fields generated from the JSON Schema of study files (``study_json_schema``), so
the admin edits a project's task configuration and crowd settings field by field, checked by
the same serializers as study files, instead of as raw JSON.

One form field per property of an object schema, named ``<prefix>__<key>`` (``config__seed``,
``crowd__batch_size``), by the property's kind:

* ``boolean``: a checkbox; ``integer`` / ``number``: a number input with the schema's bounds;
  a decimal (``["number", "string"]``): text, kept as written (money amounts);
* ``enum``: a choice of the schema's values;
* ``string``: a text input (a text area without ``maxLength``);
* an array of strings: a text area, one entry per line;
* anything nested (an array of objects, an object): a JSON text area for that one key.

An empty input leaves the key out, so the serializer's default applies. The values go through
the serializer (:func:`schema_errors`); every problem comes back with its path in the study
file (``crowd.control_rate: …``, ``config.criteria[0].name: …``) on the field it belongs to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django import forms

from studies.study_files import error_paths

SEP = "__"
BOOLEAN, INTEGER, NUMBER, DECIMAL, ENUM, STRING, LINES, JSON = (
    "boolean",
    "integer",
    "number",
    "decimal",
    "enum",
    "string",
    "lines",
    "json",
)


def property_kind(prop: Mapping[str, Any]) -> str:
    """How a property is edited (see the module docstring)."""
    kind = prop.get("type")
    if "enum" in prop:
        return ENUM
    if kind == "boolean":
        return BOOLEAN
    if kind == "integer":
        return INTEGER
    if kind == "number":
        return NUMBER
    if isinstance(kind, list) and set(kind) == {"number", "string"}:
        return DECIMAL
    if kind == "string":
        return STRING
    if kind == "array" and (prop.get("items") or {}).get("type") == "string":
        return LINES
    return JSON


def field_name(prefix: str, key: str) -> str:
    return f"{prefix}{SEP}{key}"


def _to_text(kind: str, value: Any) -> Any:
    """A stored value as the form field shows it."""
    if value is None:
        return None
    if kind == LINES:
        return "\n".join(str(v) for v in value) if isinstance(value, list) else value
    if kind in (ENUM, DECIMAL):
        return str(value)
    return value


def _help(prop: Mapping[str, Any], kind: str) -> str:
    parts = [str(prop.get("description") or "")]
    if kind == LINES:
        parts.append("One per line.")
    elif kind == JSON:
        parts.append("JSON.")
    if "default" in prop and kind not in (BOOLEAN, ENUM):
        default = prop["default"]
        shown = json.dumps(default, ensure_ascii=False) if not isinstance(default, str) else default
        parts.append(f"Empty: the default ({shown[:120] or 'none'}).")
    elif kind not in (BOOLEAN, ENUM):
        parts.append("Empty: not set.")
    return " ".join(p for p in parts if p)


def schema_field(prop: Mapping[str, Any], *, label: str) -> forms.Field:
    """The form field of one property (not required: empty means the default)."""
    kind = property_kind(prop)
    common = {"required": False, "label": label, "help_text": _help(prop, kind)}
    if kind == BOOLEAN:
        field: forms.Field = forms.BooleanField(**common)
    elif kind == INTEGER:
        field = forms.IntegerField(
            min_value=prop.get("minimum"), max_value=prop.get("maximum"), **common
        )
    elif kind == NUMBER:
        field = forms.FloatField(
            min_value=prop.get("minimum"), max_value=prop.get("maximum"), **common
        )
    elif kind == DECIMAL:
        field = forms.CharField(max_length=40, **common)
    elif kind == ENUM:
        choices = [(str(v), str(v)) for v in prop["enum"]]
        if "default" not in prop:
            choices.insert(0, ("", "(not set)"))
        field = forms.ChoiceField(choices=choices, **common)
    elif kind == STRING:
        widget = forms.TextInput if prop.get("maxLength") else forms.Textarea(attrs={"rows": 2})
        field = forms.CharField(
            max_length=prop.get("maxLength"), strip=False, widget=widget, **common
        )
    elif kind == LINES:
        # Tall enough to show the default's lines whole (the four default flag reasons).
        rows = max(3, len(prop.get("default") or []) + 1)
        field = forms.CharField(widget=forms.Textarea(attrs={"rows": rows}), **common)
    else:
        field = _JSONField(widget=forms.Textarea(attrs={"rows": 6}), **common)
    field.initial = _to_text(kind, prop.get("default"))
    return field


class _JSONField(forms.JSONField):
    """A JSON text area that shows nothing, not ``null``, for a key that is not set."""

    def prepare_value(self, value: Any) -> Any:
        return "" if value is None else super().prepare_value(value)


def schema_fields(schema: Mapping[str, Any], *, prefix: str) -> dict[str, forms.Field]:
    """One form field per property of the object ``schema``, in its order."""
    return {
        field_name(prefix, key): schema_field(prop, label=f"{prefix}.{key}")
        for key, prop in (schema.get("properties") or {}).items()
    }


def schema_initial(schema: Mapping[str, Any], *, prefix: str, values: Mapping) -> dict:
    """The form's initial data for stored ``values`` (keys left out show their default)."""
    initial = {}
    for key, prop in (schema.get("properties") or {}).items():
        if key in values:
            initial[field_name(prefix, key)] = _to_text(property_kind(prop), values[key])
    return initial


def schema_values(schema: Mapping[str, Any], *, prefix: str, cleaned: Mapping) -> dict:
    """The values of a cleaned form as the study file would hold them; empty inputs left out."""
    values: dict[str, Any] = {}
    for key, prop in (schema.get("properties") or {}).items():
        name = field_name(prefix, key)
        if name not in cleaned:
            continue
        kind, value = property_kind(prop), cleaned[name]
        if kind == BOOLEAN:
            values[key] = bool(value)
        elif kind == ENUM:
            if value not in ("", None):
                values[key] = next(v for v in prop["enum"] if str(v) == value)
        elif kind == LINES:
            lines = [line.strip() for line in (value or "").splitlines() if line.strip()]
            if lines:
                values[key] = lines
        elif kind in (STRING, DECIMAL):
            if value not in ("", None):
                values[key] = value.strip() if kind == DECIMAL else value
        elif value is not None and value != "":
            values[key] = value
    return values


def schema_errors(detail: Any, *, prefix: str, keys: set[str]) -> list[tuple[str | None, str]]:
    """DRF errors of a serializer as ``(form field or None, "path: message")``: each on the field
    of its top-level key (``config.criteria[0].name`` on ``config__criteria``)."""
    placed = []
    for problem in error_paths(detail, prefix):
        path = problem.split(":", 1)[0]
        top = path[len(prefix) + 1 :].split(".", 1)[0].split("[", 1)[0] if path != prefix else ""
        placed.append((field_name(prefix, top) if top in keys else None, problem))
    return placed
