"""Config, payload and answer of a questionnaire project (DRF serializers).

The config is the questionnaire: the item fields shown (``fields``, ``layout``) and the questions
(``questions``). Every error names the question (by its id, or its position when it has none)
and the field at fault, e.g. ``questions.2 (helpfulness).points: a Likert scale needs 2 to 10
points``. Answers are one entry per question id (see the package docstring).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext, gettext_noop
from rest_framework import serializers

KINDS = ("single", "multiple", "likert", "slider", "text", "pairwise")
FIELD_FORMATS = ("text", "markdown")
LAYOUTS = ("stacked", "side_by_side")

# The agreement distance each kind may declare (first: the default); free text has none.
DISTANCES: dict[str, tuple[str, ...]] = {
    "single": ("nominal", "ordinal", "interval"),
    "multiple": ("jaccard", "masi"),
    "likert": ("ordinal", "interval", "nominal"),
    "slider": ("interval", "ordinal", "ratio"),
    "text": (),
    "pairwise": ("ordinal", "nominal", "interval"),
}
SLIDER_MIN, SLIDER_MAX = 0, 100
# Pairwise preference values: the first field is preferred, tie, the second is preferred (an
# ordinal scale, so "ordinal" alpha counts A-vs-B as a larger disagreement than A-vs-tie).
PREFER_FIRST, TIE, PREFER_SECOND = -1, 0, 1
PAIRWISE_VALUES = (PREFER_FIRST, TIE, PREFER_SECOND)
MAX_CHOICES = 20  # the first ten have digit keys (1–9, 0)
MIN_POINTS, MAX_POINTS = 2, 10  # every Likert point has a digit key
DEFAULT_TEXT_LENGTH = 2000
NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
RESERVED = frozenset({"id", "kind", "order"})

# The default questionnaire, stored in English; annotators read it translated (defaults.py).
DEFAULT_FIELDS = [
    {"name": "prompt", "label": gettext_noop("Prompt"), "format": "text"},
    {"name": "response_a", "label": gettext_noop("Response A"), "format": "markdown"},
    {"name": "response_b", "label": gettext_noop("Response B"), "format": "markdown"},
]
DEFAULT_QUESTIONS = [
    {
        "id": "preference",
        "kind": "pairwise",
        "prompt": gettext_noop("Which response answers the prompt better?"),
        "fields": ["response_a", "response_b"],
    },
    {
        "id": "helpfulness",
        "kind": "likert",
        "prompt": gettext_noop("How helpful is Response A?"),
        "points": [
            gettext_noop("Not at all"),
            gettext_noop("Slightly"),
            gettext_noop("Moderately"),
            gettext_noop("Very"),
            gettext_noop("Extremely"),
        ],
    },
    {
        "id": "comment",
        "kind": "text",
        "prompt": gettext_noop("Anything else? (optional)"),
        "required": False,
    },
]


def _where(index: int, question: Mapping[str, Any]) -> str:
    ident = question.get("id") if isinstance(question, Mapping) else None
    return f"{index} ({ident})" if isinstance(ident, str) and ident else str(index)


def _problem(where: str, field: str, message: str) -> serializers.ValidationError:
    return serializers.ValidationError({f"{where}.{field}" if field else where: message})


# --- config --------------------------------------------------------------------------------------


class ItemFieldSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=40)
    label = serializers.CharField(max_length=120, required=False, allow_blank=True, default="")
    format = serializers.ChoiceField(choices=FIELD_FORMATS, default="text")

    def validate_name(self, value: str) -> str:
        if not NAME.match(value):
            raise serializers.ValidationError(
                f"{value!r} is not a field name: use lower-case letters, digits and _."
            )
        if value in RESERVED:
            raise serializers.ValidationError(f"{value!r} is reserved; name the field otherwise.")
        return value

    def validate(self, attrs: dict) -> dict:
        attrs["label"] = attrs.get("label") or attrs["name"].replace("_", " ").capitalize()
        return attrs


def _options(where: str, raw: Any) -> list[dict]:
    """Choice options: strings (value = label) or ``{"value", "label"}``."""
    if not isinstance(raw, list) or not 2 <= len(raw) <= MAX_CHOICES:
        raise _problem(where, "options", f"give 2 to {MAX_CHOICES} options")
    options = []
    for n, option in enumerate(raw):
        if isinstance(option, str):
            option = {"value": option, "label": option}
        if not isinstance(option, Mapping) or set(option) - {"value", "label"}:
            raise _problem(where, f"options.{n}", 'an option is a text or {"value": …, "label": …}')
        value, label = option.get("value"), option.get("label", option.get("value"))
        if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
            raise _problem(where, f"options.{n}.value", "must be a non-empty text or a number")
        if not isinstance(label, (str, int)) or label == "":
            raise _problem(where, f"options.{n}.label", "must be a non-empty text")
        options.append({"value": value, "label": str(label)})
    values = [o["value"] for o in options]
    twice = next((v for v in values if values.count(v) > 1), None)
    if twice is not None:
        raise _problem(where, "options", f"the value {twice!r} appears twice")
    return options


def _points(where: str, raw: Any) -> list[str]:
    if not isinstance(raw, list) or not MIN_POINTS <= len(raw) <= MAX_POINTS:
        raise _problem(
            where, "points", f"a Likert scale needs {MIN_POINTS} to {MAX_POINTS} labelled points"
        )
    for n, label in enumerate(raw):
        if not isinstance(label, str) or not label.strip():
            raise _problem(where, f"points.{n}", "each point needs a label (a text)")
    return [label.strip() for label in raw]


def _text(where: str, question: Mapping, key: str, *, required: bool = False) -> str:
    value = question.get(key, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise _problem(where, key, "must be a text")
    if required and not value.strip():
        raise _problem(where, key, "this question needs a text here")
    return value.strip()


COMMON_KEYS = {"id", "kind", "prompt", "help", "required", "distance"}
KIND_KEYS = {
    "single": {"options"},
    "multiple": {"options", "min", "max"},
    "likert": {"points"},
    "slider": {"min_label", "max_label", "step"},
    "text": {"max_length", "multiline"},
    "pairwise": {"fields", "allow_tie", "labels"},
}


def _whole(where: str, raw: Mapping, key: str, default: int, low: int, high: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _problem(where, key, f"must be a whole number from {low} to {high}")
    return value


def _flag(where: str, raw: Mapping, key: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise _problem(where, key, "must be true or false")
    return value


def _choice_settings(where: str, raw: Mapping, question: dict) -> dict:
    options = _options(where, raw.get("options"))
    numeric = all(isinstance(o["value"], int) and not isinstance(o["value"], bool) for o in options)
    distance = question["distance"]
    if distance in ("ordinal", "interval") and not numeric:
        raise _problem(where, "distance", f"{distance} agreement needs numbers as option values")
    settings: dict[str, Any] = {"options": options}
    if question["kind"] == "multiple":
        count = len(options)
        settings["min"] = _whole(where, raw, "min", 1 if question["required"] else 0, 0, count)
        settings["max"] = _whole(where, raw, "max", count, 0, count)
        if settings["min"] > settings["max"]:
            raise _problem(where, "min", "must not be larger than max")
    return settings


def _pairwise_settings(where: str, raw: Mapping, field_labels: Mapping[str, str]) -> dict:
    pair = raw.get("fields")
    if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(f, str) for f in pair):
        raise _problem(where, "fields", "name the two item fields to compare")
    if pair[0] == pair[1]:
        raise _problem(where, "fields", "the two fields must differ")
    missing = [f for f in pair if f not in field_labels]
    if missing:
        raise _problem(
            where,
            "fields",
            f"{missing[0]!r} is not one of the item fields ({', '.join(field_labels)})",
        )
    first, second = (field_labels[f] for f in pair)
    labels = raw.get("labels", [f"{first} is better", "Tie", f"{second} is better"])
    if (
        not isinstance(labels, list)
        or len(labels) != 3
        or not all(isinstance(t, str) and t.strip() for t in labels)
    ):
        raise _problem(where, "labels", "give three texts: first preferred, tie, second preferred")
    return {
        "fields": list(pair),
        "allow_tie": _flag(where, raw, "allow_tie", True),
        "labels": labels,
    }


def _kind_settings(
    where: str, raw: Mapping, question: dict, field_labels: Mapping[str, str]
) -> dict:
    """The settings particular to the question's kind, checked, with their defaults."""
    kind = question["kind"]
    if kind in ("single", "multiple"):
        return _choice_settings(where, raw, question)
    if kind == "likert":
        return {"points": _points(where, raw.get("points"))}
    if kind == "slider":
        return {
            "min_label": _text(where, raw, "min_label"),
            "max_label": _text(where, raw, "max_label"),
            "step": _whole(where, raw, "step", 1, 1, 50),
        }
    if kind == "text":
        return {
            "max_length": _whole(where, raw, "max_length", DEFAULT_TEXT_LENGTH, 1, 20000),
            "multiline": _flag(where, raw, "multiline", True),
        }
    return _pairwise_settings(where, raw, field_labels)


def _distance(where: str, raw: Mapping, kind: str) -> str | None:
    allowed = DISTANCES[kind]
    distance = raw.get("distance", allowed[0] if allowed else None)
    if not allowed and distance is not None:
        raise _problem(where, "distance", "free-text answers have no agreement distance")
    if allowed and distance not in allowed:
        raise _problem(
            where,
            "distance",
            f"{distance!r} does not fit a {kind} question; use one of {', '.join(allowed)}",
        )
    return distance


def clean_question(index: int, raw: Any, field_labels: Mapping[str, str]) -> dict:
    """One question of the config, checked and with its defaults; raises ``ValidationError``
    keyed ``<index> (<id>).<field>``."""
    where = _where(index, raw)
    if not isinstance(raw, Mapping):
        raise _problem(where, "", "a question is an object with an id, a kind and a prompt")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise _problem(
            where, "kind", f"{kind!r} is not a question kind; use one of {', '.join(KINDS)}"
        )
    ident = raw.get("id")
    if not isinstance(ident, str) or not NAME.match(ident):
        raise _problem(
            where,
            "id",
            "give the question an id of lower-case letters, digits and _ (e.g. helpful)",
        )
    if ident in RESERVED:
        raise _problem(where, "id", f"{ident!r} is reserved; name the question otherwise")
    unknown = sorted(set(raw) - COMMON_KEYS - KIND_KEYS[kind])
    if unknown:
        raise _problem(where, unknown[0], f"a {kind} question has no setting {unknown[0]!r}")
    question: dict[str, Any] = {
        "id": ident,
        "kind": kind,
        "prompt": _text(where, raw, "prompt", required=True),
        "help": _text(where, raw, "help"),
        "required": _flag(where, raw, "required", True),
        "distance": _distance(where, raw, kind),
    }
    question.update(_kind_settings(where, raw, question, field_labels))
    return question


def question_json_schema() -> dict:
    """The JSON Schema of one question, one variant per kind, written from the constants that
    ``clean_question`` checks with (study files and editors read it; checks that need the rest
    of the config, such as a pairwise question's fields being item fields, stay in
    ``clean_question``)."""
    text = {"type": "string"}
    whole = {"type": "integer"}
    option = {
        "oneOf": [
            {"type": "string", "minLength": 1, "description": "value and label"},
            {
                "type": "object",
                "properties": {
                    "value": {"type": ["string", "integer"], "minLength": 1},
                    "label": {"type": ["string", "integer"], "minLength": 1},
                },
                "required": ["value"],
                "additionalProperties": False,
            },
        ]
    }
    settings: dict[str, dict] = {
        "id": {**text, "pattern": NAME.pattern, "description": "lower-case letters, digits, _"},
        "prompt": {**text, "minLength": 1, "description": "the question as annotators read it"},
        "help": {**text, "description": "a line under the question (optional)"},
        "required": {"type": "boolean", "default": True},
        "options": {"type": "array", "minItems": 2, "maxItems": MAX_CHOICES, "items": option},
        "min": {**whole, "minimum": 0, "description": "fewest options ticked"},
        "max": {**whole, "minimum": 0, "description": "most options ticked"},
        "points": {
            "type": "array",
            "minItems": MIN_POINTS,
            "maxItems": MAX_POINTS,
            "items": {**text, "minLength": 1},
            "description": "the labels of the scale's points, lowest first",
        },
        "min_label": text,
        "max_label": text,
        "step": {**whole, "minimum": 1, "maximum": 50, "default": 1},
        "max_length": {**whole, "minimum": 1, "maximum": 20000, "default": DEFAULT_TEXT_LENGTH},
        "multiline": {"type": "boolean", "default": True},
        "fields": {
            "type": "array",
            "minItems": 2,
            "maxItems": 2,
            "items": text,
            "description": "the two item fields compared",
        },
        "allow_tie": {"type": "boolean", "default": True},
        "labels": {
            "type": "array",
            "minItems": 3,
            "maxItems": 3,
            "items": {**text, "minLength": 1},
            "description": "first preferred, tie, second preferred",
        },
    }
    needs = {"single": ["options"], "multiple": ["options"], "likert": ["points"]}
    needs["pairwise"] = ["fields"]
    variants = []
    for kind in KINDS:
        keys = sorted((COMMON_KEYS | KIND_KEYS[kind]) - {"kind", "distance"})
        properties = {"kind": {"const": kind}, **{key: settings[key] for key in keys}}
        properties["distance"] = (
            {"enum": list(DISTANCES[kind]), "default": DISTANCES[kind][0]}
            if DISTANCES[kind]
            else {"type": "null"}
        )
        variants.append(
            {
                "title": f"a {kind} question",
                "type": "object",
                "properties": properties,
                "required": ["id", "kind", "prompt", *needs.get(kind, [])],
                "additionalProperties": False,
            }
        )
    return {"oneOf": variants, "description": f"a question; kind is one of {', '.join(KINDS)}"}


class QuestionField(serializers.JSONField):
    """A question of the config (checked by ``clean_question``), described by
    :func:`question_json_schema` in the study file's JSON Schema."""

    json_schema = staticmethod(question_json_schema)


class QuestionnaireConfigSerializer(serializers.Serializer):
    fields = ItemFieldSerializer(many=True, default=DEFAULT_FIELDS)
    layout = serializers.ChoiceField(
        choices=LAYOUTS,
        default="stacked",
        help_text="stacked: the fields one below the other; side_by_side: in columns (stacked "
        "again on narrow screens).",
    )
    questions = serializers.ListField(child=QuestionField(), default=DEFAULT_QUESTIONS)

    def validate_fields(self, value: list[dict]) -> list[dict]:
        if not value:
            raise serializers.ValidationError("Show at least one item field.")
        names = [f["name"] for f in value]
        twice = next((n for n in names if names.count(n) > 1), None)
        if twice:
            raise serializers.ValidationError(f"The field {twice!r} appears twice.")
        return [dict(f) for f in value]

    def validate(self, attrs: dict) -> dict:
        raw = attrs.get("questions")
        if not raw:
            raise serializers.ValidationError({"questions": "Ask at least one question."})
        labels = {f["name"]: f["label"] for f in attrs["fields"]}
        names = list(labels)
        questions = []
        for index, question in enumerate(raw):
            try:
                questions.append(clean_question(index, question, labels))
            except serializers.ValidationError as exc:
                raise serializers.ValidationError({"questions": exc.detail}) from None
        ids = [q["id"] for q in questions]
        twice = next((i for i in ids if ids.count(i) > 1), None)
        if twice:
            raise serializers.ValidationError(
                {"questions": f"Two questions have the id {twice!r}; ids must differ."}
            )
        clash = next((i for i in ids if i in names), None)
        if clash:
            raise serializers.ValidationError(
                {"questions": f"The question id {clash!r} is also an item field; rename one."}
            )
        return {**attrs, "questions": questions}


def project_config(config: Mapping[str, Any] | None) -> dict:
    """The validated config of a project (the default questionnaire when it names none)."""
    serializer = QuestionnaireConfigSerializer(data=dict(config or {}))
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


# --- payload -------------------------------------------------------------------------------------


class QuestionnairePayloadSerializer(serializers.Serializer):
    """Only the id and kind are fixed; the configured fields are checked at ``prepare`` (they
    depend on the project), and every other field is kept as provenance."""

    id = serializers.CharField(max_length=200)
    kind = serializers.ChoiceField(
        choices=["regular", "control", "qualification"], required=False, default="regular"
    )

    def to_internal_value(self, data: Any) -> dict:
        """The id and kind, and every other text or number of the record (the configured fields
        among them), checked to be storable."""
        validated = super().to_internal_value(data)
        texts = {}
        for key, value in data.items():
            if key in validated or isinstance(value, bool):
                continue
            if isinstance(value, str):
                if "\x00" in value:
                    raise serializers.ValidationError({key: "contains a NUL character"})
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    raise serializers.ValidationError(
                        {key: "contains an invalid (surrogate) character"}
                    ) from None
                texts[key] = value
            elif isinstance(value, (int, float)):
                texts[key] = value
        return {**texts, **validated}


# --- answer --------------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def clean_answer(question: dict, value: Any) -> Any:
    """One question's answer, checked against its config; ``None`` when unanswered. Raises
    ``ValueError`` with the problem."""
    kind = question["kind"]
    if value is None or (kind == "text" and isinstance(value, str) and not value.strip()):
        if question["required"]:
            raise ValueError(gettext("This question needs an answer."))
        return None
    return _ANSWER_CHECKS[kind](question, value)


def _single_answer(question: dict, value: Any) -> Any:
    values = [o["value"] for o in question["options"]]
    if isinstance(value, bool) or value not in values:
        raise ValueError(
            gettext("%(value)s is not one of the options (%(options)s).")
            % {"value": repr(value), "options": ", ".join(map(str, values))}
        )
    return value


def _multiple_answer(question: dict, value: Any) -> list:
    values = [o["value"] for o in question["options"]]
    if not isinstance(value, list):
        raise ValueError(gettext("Give the chosen options as a list."))
    strangers = [v for v in value if isinstance(v, bool) or v not in values]
    if strangers:
        raise ValueError(
            gettext("%(value)s is not one of the options.") % {"value": repr(strangers[0])}
        )
    if len(set(value)) != len(value):
        raise ValueError(gettext("An option is chosen twice."))
    if not question["min"] <= len(value) <= question["max"]:
        raise ValueError(
            gettext("Choose %(min)d to %(max)d options (%(chosen)d chosen).")
            % {"min": question["min"], "max": question["max"], "chosen": len(value)}
        )
    return [v for v in values if v in value]  # the options' order: equal sets, equal lists


def _likert_answer(question: dict, value: Any) -> int:
    n = len(question["points"])
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= n:
        raise ValueError(gettext("Choose a point from 1 to %(n)d.") % {"n": n})
    return value


def _slider_answer(question: dict, value: Any) -> int:
    if not _is_number(value) or value != int(value) or not SLIDER_MIN <= value <= SLIDER_MAX:
        raise ValueError(
            gettext("Give a whole number from %(low)d to %(high)d.")
            % {"low": SLIDER_MIN, "high": SLIDER_MAX}
        )
    return int(value)


def _text_answer(question: dict, value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(gettext("Give a text."))
    if "\x00" in value:
        raise ValueError(gettext("The text contains a NUL character."))
    text = value.strip()
    if len(text) > question["max_length"]:
        raise ValueError(
            gettext("At most %(limit)d characters (%(given)d given).")
            % {"limit": question["max_length"], "given": len(text)}
        )
    return text


def _pairwise_answer(question: dict, value: Any) -> int:
    allowed = PAIRWISE_VALUES if question["allow_tie"] else (PREFER_FIRST, PREFER_SECOND)
    if isinstance(value, bool) or value not in allowed:
        raise ValueError(
            gettext("Give -1 (the first is better), 1 (the second is better) or 0 (a tie).")
            if question["allow_tie"]
            else gettext(
                "Give -1 (the first is better) or 1 (the second is better); this question "
                "allows no tie."
            )
        )
    return int(value)


# One check per question kind (KINDS): the kind's answer, checked and normalised.
_ANSWER_CHECKS = {
    "single": _single_answer,
    "multiple": _multiple_answer,
    "likert": _likert_answer,
    "slider": _slider_answer,
    "text": _text_answer,
    "pairwise": _pairwise_answer,
}


class QuestionAnswerField(serializers.Field):
    """One question's answer on its own (answers collected elsewhere, which may answer only
    some questions), checked by :func:`clean_answer`; null: left unanswered."""

    def __init__(self, question: dict, **kwargs: Any) -> None:
        self.question = question
        super().__init__(allow_null=True, **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        try:
            return clean_answer(self.question, data)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def to_representation(self, value: Any) -> Any:
        return value


class QuestionnaireAnswerSerializer(serializers.Serializer):
    """Validates a submitted answer (``{question id: value}``) against the questions of the
    item's project (``context={"item": item}``); each error is keyed by the question id. The
    stored answer has one entry per question, ``None`` for an optional one left unanswered."""

    def to_internal_value(self, data: Any) -> dict:
        if not isinstance(data, Mapping):
            raise serializers.ValidationError(
                {"non_field_errors": [gettext("An answer is an object of question id: answer.")]}
            )
        item = self.context.get("item")
        config = project_config(getattr(getattr(item, "project", None), "config", None))
        questions = config["questions"]
        known = {q["id"] for q in questions}
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise serializers.ValidationError(
                {
                    unknown[0]: [
                        gettext("This questionnaire has no question %(id)s.")
                        % {"id": repr(unknown[0])}
                    ]
                }
            )
        clean: dict[str, Any] = {}
        errors: dict[str, list[str]] = {}
        for question in questions:
            try:
                clean[question["id"]] = clean_answer(question, data.get(question["id"]))
            except ValueError as exc:
                errors[question["id"]] = [str(exc)]
        if errors:
            raise serializers.ValidationError(errors)
        return clean

    def to_representation(self, instance: Any) -> Any:
        return dict(instance)
