"""Label Studio interchange: a labeling config (XML) as a questionnaire, a JSON export (tasks
with their annotations and predictions) as items and external coders' answers, and a project
written back as a Label Studio JSON export with its labeling config.

Mapping (control tag → question kind): ``Choices`` → single (``choice="single"`` or
``"single-radio"``, the default) or multiple (``choice="multiple"``); ``Rating`` → Likert with
points 1..``maxRating`` (default 5, at most 10); ``Number`` with ``min`` and ``max`` within 0–100
→ slider (whole numbers); ``TextArea`` → free text; ``Pairwise`` → pairwise without a tie (left:
the first field is better, -1; right: 1). Object tags ``Text`` and ``HyperText`` become the item
fields shown (``value="$key"``: the task's ``data`` key). Anything else (``Ranker``, ``Labels``,
``RectangleLabels``, ``Number`` without bounds in 0–100, an ``Image`` …) is reported as not
mapped, and its results in the export are left out and reported with the task's id. Every
question is optional: an annotator in Label Studio may skip a control.

Names: a question's id is the control's ``name`` and a field's name the data key, written in
lower case with ``_`` for other characters (``txt-1`` → ``txt_1``); two that would become the
same name are refused.

The export (its envelope read by ``studies.label_studio``, shared with the other task types;
the results mapped here): ``completed_by`` (a number or ``{"id", "email"}``) becomes the external coder
``ls-user-<id>`` (never the e-mail address); a prediction the coder ``model:<model_version>``;
``lead_time`` (seconds) the time spent, ``created_at`` the time annotated. Cancelled annotations
(``was_cancelled``) are left out and counted. A task or annotation that is not in the documented
shape is refused naming its index in the file and the field, and nothing is imported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any
from xml.etree.ElementTree import Element

from annotation.task_types import PayloadError
from studies import label_studio as common
from studies.label_studio import ExportReading, LabelingConfigError, TaskError

from .serializers import MAX_CHOICES, MAX_POINTS, MIN_POINTS, NAME, PREFER_FIRST, PREFER_SECOND

OBJECT_TAGS = {"text": "text", "hypertext": "text"}  # HTML is shown as its text
CONTROL_TAGS = ("choices", "rating", "number", "textarea", "pairwise")
LEFT, RIGHT = "left", "right"


@dataclass
class Control:
    """One mapped control tag: its Label Studio name and type, and the question it became."""

    name: str
    tag: str  # lower case: choices, rating, number, textarea, pairwise
    question: dict
    to_name: str = ""
    # Choices: the stored value of each choice (its alias, else its value), choice order.
    choices: list[str] = field(default_factory=list)
    low: int = 0
    high: int = 0


@dataclass
class LabelingConfig:
    """A labeling config read as a questionnaire config, and what could not be mapped."""

    fields: list[dict]
    controls: dict[str, Control]  # by Label Studio control name
    data_keys: dict[str, str]  # Label Studio data key -> item field name
    unmapped: list[str]  # one line per control or object tag that is not mapped

    @property
    def questionnaire(self) -> dict:
        return {
            "fields": self.fields,
            "layout": "stacked",
            "questions": [c.question for c in self.controls.values()],
        }


def _identifier(raw: str, what: str) -> str:
    name = re.sub(r"[^a-z0-9_]", "_", raw.strip().lower())
    if name and not name[0].isalpha():
        name = f"q_{name}"
    if not NAME.match(name) or name in ("id", "kind", "order"):
        raise LabelingConfigError(
            f"the {what} {raw!r} cannot be a name here (1 to 40 letters, digits or _, "
            "starting with a letter; not id, kind or order)",
            field="labeling_config",
        )
    return name


def parse_labeling_config(xml: str) -> LabelingConfig:
    """The labeling config as a questionnaire (see the module docstring); raises
    ``LabelingConfigError`` when it cannot be read or maps to no field or no question."""
    config = LabelingConfig(fields=[], controls={}, data_keys={}, unmapped=[])
    objects: dict[str, str] = {}  # object tag name -> field name
    elements = list(common.config_root(xml).iter())
    for element in elements:
        tag = element.tag.lower()
        if tag in OBJECT_TAGS:
            _add_object(config, objects, element, OBJECT_TAGS[tag])
    common.read_controls(
        elements,
        config.unmapped,
        is_control=lambda tag: tag in CONTROL_TAGS,
        add=lambda element, header: _add_control(config, objects, element, header),
        why_not="a questionnaire has no such question kind",
        other=lambda element: _not_shown(config, element),
    )
    if not config.fields:
        raise LabelingConfigError(
            "the labeling config has no <Text> tag with a value like $text: nothing to show",
            field="labeling_config",
        )
    if not config.controls:
        raise LabelingConfigError(
            "no control tag of the labeling config maps to a question ("
            + ("; ".join(config.unmapped) or "it has none")
            + ")",
            field="labeling_config",
        )
    return config


def _not_shown(config: LabelingConfig, element: Element) -> None:
    if element.get("value", "").startswith("$") and element.tag.lower() not in OBJECT_TAGS:
        config.unmapped.append(
            f"<{element.tag} name={element.get('name')!r}>: not shown (a questionnaire shows "
            "text fields only; the data is kept with each item)"
        )


def _add_object(config: LabelingConfig, objects: dict, element: Element, fmt: str) -> None:
    name, value = element.get("name") or "", element.get("value") or ""
    if not value.startswith("$") or len(value) < 2:
        config.unmapped.append(f"<{element.tag} name={name!r}>: its value is no $data key")
        return
    key = value[1:]
    field_name = _identifier(key, "data key")
    if field_name in (f["name"] for f in config.fields) and config.data_keys.get(key) is None:
        raise LabelingConfigError(
            f"two data keys become the field name {field_name!r}", field="labeling_config"
        )
    objects[name] = field_name
    if key not in config.data_keys:
        config.data_keys[key] = field_name
        config.fields.append({"name": field_name, "label": name or key, "format": fmt})


def _add_control(config: LabelingConfig, objects: dict, element: Element, header: str) -> None:
    name = element.get("name") or ""
    tag = element.tag.lower()
    ident = _identifier(name, "control name")
    if ident in (c.question["id"] for c in config.controls.values()) or ident in objects.values():
        raise LabelingConfigError(
            f"two tags become the name {ident!r}; rename one", field="labeling_config"
        )
    question: dict[str, Any] = {"id": ident, "prompt": header or name, "required": False}
    control = Control(name=name, tag=tag, question=question, to_name=element.get("toName") or "")
    problem = _KIND[tag](control, element, objects)
    if problem:
        config.unmapped.append(f"<{element.tag} name={name!r}>: not mapped ({problem})")
        return
    config.controls[name] = control


def _choices(control: Control, element: Element, objects: dict) -> str:
    options = []
    for choice in element.iter():
        if choice.tag.lower() != "choice":
            continue
        value = choice.get("value") or ""
        stored = choice.get("alias") or value
        if stored:
            control.choices.append(stored)
            options.append({"value": stored, "label": value or stored})
    if not 2 <= len(options) <= MAX_CHOICES:
        return f"{len(options)} choices; a choice question has 2 to {MAX_CHOICES}"
    if len(set(control.choices)) != len(control.choices):
        return "a choice value appears twice"
    multiple = (element.get("choice") or "single").lower() == "multiple"
    control.question.update(kind="multiple" if multiple else "single", options=options)
    return ""


def _rating(control: Control, element: Element, objects: dict) -> str:
    raw = element.get("maxRating") or "5"
    if not raw.isdigit() or not MIN_POINTS <= int(raw) <= MAX_POINTS:
        return f"maxRating {raw}; a Likert scale has {MIN_POINTS} to {MAX_POINTS} points"
    control.low, control.high = 1, int(raw)
    control.question.update(kind="likert", points=[str(n) for n in range(1, int(raw) + 1)])
    return ""


def _number(control: Control, element: Element, objects: dict) -> str:
    low, high = element.get("min"), element.get("max")
    bounds = [b for b in (low, high) if b is not None and b.lstrip("-").isdigit()]
    if len(bounds) != 2 or not 0 <= int(low) < int(high) <= 100:
        return "a slider takes whole numbers from 0 to 100: give min and max within them"
    control.low, control.high = int(low), int(high)
    control.question.update(kind="slider", min_label=low, max_label=high)
    return ""


def _textarea(control: Control, element: Element, objects: dict) -> str:
    control.question.update(kind="text")
    return ""


def _pairwise(control: Control, element: Element, objects: dict) -> str:
    names = [n.strip() for n in control.to_name.split(",")]
    if len(names) != 2 or not all(n in objects for n in names):
        return "toName must name two Text tags"
    control.question.update(
        kind="pairwise",
        fields=[objects[n] for n in names],
        allow_tie=False,
        labels=["Left is better", "Tie", "Right is better"],
    )
    return ""


_KIND = {
    "choices": _choices,
    "rating": _rating,
    "number": _number,
    "textarea": _textarea,
    "pairwise": _pairwise,
}


# --- the export ----------------------------------------------------------------------------------


def read_export(tasks: Any, config: LabelingConfig) -> ExportReading:
    """Every task of a parsed Label Studio JSON export (a list), read against ``config``; raises
    ``PayloadError`` naming the first bad task's index and field."""
    return common.read_tasks(
        tasks, lambda task, ident, data, reading: _read_task(task, ident, data, config, reading)
    )


def _read_task(
    task: dict, ident: str, data: dict, config: LabelingConfig, reading: ExportReading
) -> None:
    item: dict[str, Any] = {"id": ident}
    for key, value in data.items():
        name = config.data_keys.get(key)
        if name is None:
            if isinstance(key, str) and key not in ("id", "kind") and NAME.match(key):
                item[key] = value  # provenance (the import keeps texts and numbers)
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or value == "":
            raise TaskError(f"data.{key}", "a field shown to annotators must be a non-empty text")
        item[name] = value
    missing = [k for k in config.data_keys if k not in data]
    if missing:
        raise TaskError(f"data.{missing[0]}", "this field is shown to annotators and is missing")
    reading.items.append(item)
    common.read_entries(
        task, ident, reading, lambda result, at, note: _mapped_result(result, config, note)
    )


def _mapped_result(
    result: dict, config: LabelingConfig, note: Callable[[str], None]
) -> tuple[str, Any] | None:
    """``(question id, answer)`` of one result, or None (reported) where it does not map."""
    name, kind = str(result.get("from_name")), str(result.get("type", "")).lower()
    control = config.controls.get(name)
    if control is None:
        note(f"{kind or 'result'} {name!r}: no question for this control")
        return None
    if kind != control.tag:
        note(f"{name!r}: a {kind} result for a {control.tag} control")
        return None
    value, problem = _VALUES[control.tag](control, result["value"])
    if problem:
        note(f"{name!r}: {problem}")
        return None
    return control.question["id"], value


def _choice_value(control: Control, value: dict) -> tuple[Any, str]:
    chosen = value.get("choices")
    if not isinstance(chosen, list) or not all(isinstance(c, str) for c in chosen):
        return None, "choices is not a list of texts"
    strangers = [c for c in chosen if c not in control.choices]
    if strangers:
        return None, f"the choice {strangers[0]!r} is not in the labeling config"
    if control.question["kind"] == "multiple":
        return [c for c in control.choices if c in chosen], ""
    if len(chosen) != 1:
        return None, f"{len(chosen)} choices for a single-choice control"
    return chosen[0], ""


def _whole_in_range(control: Control, value: Any, what: str) -> tuple[Any, str]:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None, f"{what} {value!r} is not a whole number"
    if not control.low <= value <= control.high:
        return None, f"{what} {value} is outside {control.low}..{control.high}"
    return value, ""


def _text_value(control: Control, value: dict) -> tuple[Any, str]:
    text = value.get("text")
    if isinstance(text, str):
        text = [text]
    if not isinstance(text, list) or not all(isinstance(t, str) for t in text):
        return None, "text is not a list of texts"
    return "\n".join(text), ""


def _pairwise_value(control: Control, value: dict) -> tuple[Any, str]:
    selected = value.get("selected")
    if selected == LEFT:
        return PREFER_FIRST, ""
    if selected == RIGHT:
        return PREFER_SECOND, ""
    return None, f"selected {selected!r} is neither left nor right"


_VALUES = {
    "choices": _choice_value,
    "rating": lambda c, v: _whole_in_range(c, v.get("rating"), "rating"),
    "number": lambda c, v: _whole_in_range(c, v.get("number"), "number"),
    "textarea": _text_value,
    "pairwise": _pairwise_value,
}


# --- the item import format ----------------------------------------------------------------------


def read_label_studio_tasks(stream: IO[str]) -> Iterator[tuple[str, dict]]:
    """Label Studio JSON export: a JSON array of tasks ``{"id", "data": {…}, "annotations",
    "predictions"}`` (a task list written for Label Studio's import is read too). Each task's
    ``data`` becomes an item whose id is the task's id; its keys must be the project's fields.
    The annotations and predictions, and the questions from the labeling config, come in one
    step with the project page's Label Studio form (or ``manage.py import_label_studio EXPORT
    --config CONFIG.xml``; docs/label_studio.md). Errors name the task's index in the file and
    the field."""
    try:
        tasks = common.export_json(stream.read())
    except PayloadError:
        raise
    except ValueError as exc:
        raise PayloadError(f"not valid JSON: {exc}", location="the file") from None
    if not isinstance(tasks, list):
        raise PayloadError("a Label Studio export is a JSON array of tasks", location="the file")
    for index, task in enumerate(tasks):
        location = f"task at index {index}"
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            raise PayloadError("a task is an object with its data", field="data", location=location)
        task_id = task.get("id")
        if isinstance(task_id, bool) or not isinstance(task_id, (int, str)) or task_id == "":
            raise PayloadError("a task needs its id", field="id", location=location)
        data = {k: v for k, v in task["data"].items() if k not in ("id", "kind")}
        yield f"{location} (id {task_id})", {**data, "id": str(task_id)}


def read_label_studio_annotations(
    stream: IO[str], mapping: str | None = None
) -> Iterator[tuple[str, dict]]:
    """Label Studio JSON export's annotations and predictions, read against the project's
    labeling config (XML, given as the mapping file): each annotator an external coder
    ``ls-user-<id>``, each prediction's model ``model:<model_version>``; cancelled annotations and
    results that map to no question are left out. The items must be imported first (the
    ``label-studio`` item format); ``manage.py import_label_studio`` does both and reports what
    it left out."""
    reading = common.read_with_mapping(stream, mapping, parse_labeling_config, read_export)
    yield from zip(reading.where, reading.answers, strict=True)
