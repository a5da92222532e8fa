"""Label Studio interchange, the parts that do not depend on the task type: the labeling config
read as XML safely, the export's envelope (a list of tasks, each with its id, its data, its
annotations and predictions) read into Concord records, and the two export formats a task type
declares. What a control means (a questionnaire's
``Choices`` or ``Rating``, a ranking's ``Ranker``) stays in the task type's own
``label_studio`` module, which hands this module its mapping as callables; the one-step import
and the export's coders and entries are in ``studies.services.label_studio``.

The export's envelope (labelstud.io, "Export annotations"): a task is ``{"id", "data": {…},
"annotations": […], "predictions": […]}``. ``completed_by`` (a number or ``{"id", "email"}``)
becomes the external coder ``ls-user-<id>`` (never the e-mail address), unless the entry carries
``concord_coder`` (Concord's own export: the coder as it was); a prediction the coder
``model:<model_version>``; ``lead_time`` (seconds) the time spent, ``created_at`` the time
annotated (ISO 8601, or Unix seconds). An object that gives a key twice is refused. Cancelled annotations (``was_cancelled``) are left out and counted. A task or
annotation that is not in the documented shape is refused naming its index in the file and the
field.

This module imports no model and no service: a task type's ``task`` module (loaded while the
registry fills) may import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError
from defusedxml.ElementTree import fromstring as safe_fromstring

from annotation.task_types import ExtraExport, PayloadError
from core.json_safety import UnsafeJSON
from core.json_safety import loads as safe_json_loads

MAX_CONFIG_BYTES = 256 * 1024
MAX_CODER_NAME = 100
ENTRY_KINDS = ("annotations", "predictions")
# The export formats (``TaskType.export_formats``) of a task type that writes Label Studio files:
# the JSON export and the labeling config (``label_studio_exports``).
EXPORT_FORMAT, CONFIG_FORMAT = "label-studio", "label-studio-config"

# One result mapped by the task type: (the answer's key, its value), or None where it does not
# map (the task type notes why). Arguments: the result, where it is ("annotations.0.result.1"),
# and ``note(reason)``, which reports it as not mapped in this task.
ResultMapping = Callable[[dict, str, Callable[[str], None]], "tuple[str, Any] | None"]


class LabelingConfigError(PayloadError):
    """The labeling config cannot be read (not XML, too large, a DOCTYPE or entity), or it
    holds nothing the task type maps."""

    def __init__(self, message: str, *, field: str = "labeling_config", location: str = ""):
        super().__init__(message, field=field, location=location)


class TaskError(Exception):
    """A task of the export not in the documented shape: the field (within the task) and why."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def config_root(xml: str) -> Element:
    """The labeling config's ``<View>``, parsed with no DOCTYPE and no entities, at most
    ``MAX_CONFIG_BYTES``; raises ``LabelingConfigError``."""
    if len(xml.encode("utf-8")) > MAX_CONFIG_BYTES:
        raise LabelingConfigError(
            f"the labeling config is larger than {MAX_CONFIG_BYTES // 1024} KiB"
        )
    try:
        root = safe_fromstring(xml, forbid_dtd=True, forbid_entities=True)
    except DefusedXmlException:
        raise LabelingConfigError(
            "the labeling config may not declare a DOCTYPE or entities"
        ) from None
    except ParseError as exc:
        raise LabelingConfigError(f"the labeling config is not XML ({exc})") from None
    if root.tag != "View":
        raise LabelingConfigError(f"a labeling config starts with <View>, not <{root.tag}>")
    return root


def read_controls(
    elements: list[Element],
    unmapped: list[str],
    *,
    is_control: Callable[[str], bool],
    add: Callable[[Element, str], None],
    why_not: str,
    other: Callable[[Element], None] | None = None,
) -> None:
    """The config's tags in document order: each control the task type maps (``is_control``
    of its lower-case tag) handed to ``add(element, header)`` with the ``<Header>`` just before
    it ("" when none); any other control (a tag with ``toName``) noted in ``unmapped`` as not
    mapped, ``why_not`` saying why; the remaining tags handed to ``other``."""
    header = ""
    for element in elements:
        tag = element.tag.lower()
        if tag == "header":
            header = (element.get("value") or element.text or "").strip()
        elif is_control(tag):
            add(element, header)
            header = ""
        elif element.get("toName") is not None:
            unmapped.append(f"<{element.tag} name={element.get('name')!r}>: not mapped ({why_not})")
        elif other is not None:
            other(element)


# --- the export ----------------------------------------------------------------------------------


@dataclass
class ExportReading:
    """What a Label Studio export holds, as Concord records, and what was left out."""

    items: list[dict] = field(default_factory=list)
    answers: list[dict] = field(default_factory=list)  # rows {item, coder, answer[, times]}
    where: list[str] = field(default_factory=list)  # each answer's task and entry, for errors
    task: str = ""  # the task being read: "task at index 2 (id 3)"
    cancelled: int = 0
    empty: int = 0  # annotations or predictions with no mapped result
    predictions: int = 0
    unmapped: dict[str, list[str]] = field(default_factory=dict)  # reason -> task ids

    def note(self, reason: str, task_id: str) -> None:
        self.unmapped.setdefault(reason, []).append(task_id)


def export_json(text: str) -> Any:
    """A Label Studio JSON export parsed: storable JSON in which no object gives a key twice
    (JSON would keep the last silently: an annotation's second ``result`` or ``completed_by``
    would win unseen). Raises ``PayloadError`` naming the task and the field, or ``ValueError``
    for text that is not JSON."""
    try:
        return safe_json_loads(text, unique_keys=True)
    except UnsafeJSON as exc:
        path = exc.path
        if len(path) > 1 and path[0].isdigit():
            raise PayloadError(
                exc.message, field=".".join(path[1:]), location=f"task at index {path[0]}"
            ) from None
        raise PayloadError(exc.message, field=exc.field or "file", location="the file") from None


def read_tasks(
    tasks: Any, read_task: Callable[[dict, str, dict, ExportReading], None]
) -> ExportReading:
    """Every task of a parsed Label Studio JSON export (a list): its id and data checked, then
    ``read_task(task, id, data, reading)`` (the task type's mapping, raising ``TaskError``);
    raises ``PayloadError`` naming the first bad task's index and field."""
    if not isinstance(tasks, list):
        raise PayloadError(
            "a Label Studio JSON export is a list of tasks", field="file", location="the file"
        )
    reading = ExportReading()
    seen: set[str] = set()
    for index, task in enumerate(tasks):
        task_id = task.get("id") if isinstance(task, dict) else None
        reading.task = f"task at index {index}" + (
            f" (id {task_id})" if task_id is not None else ""
        )
        try:
            ident, data = _task_identity(task, seen)
            read_task(task, ident, data, reading)
        except TaskError as exc:
            raise PayloadError(exc.message, field=exc.field, location=reading.task) from None
    return reading


def _task_identity(task: Any, seen: set[str]) -> tuple[str, dict]:
    if not isinstance(task, dict):
        raise TaskError("task", "a task is an object with id and data")
    task_id = task.get("id")
    if isinstance(task_id, bool) or not isinstance(task_id, (int, str)) or task_id == "":
        raise TaskError("id", "a task needs its id (a number or a text)")
    ident = str(task_id)
    if ident in seen:
        raise TaskError("id", f"the task id {ident} appears twice")
    seen.add(ident)
    data = task.get("data")
    if not isinstance(data, dict):
        raise TaskError("data", "a task's data is an object")
    return ident, data


def read_entries(
    task: dict,
    task_id: str,
    reading: ExportReading,
    result_of: ResultMapping,
    answer_of: Callable[[dict], dict] = dict,
) -> None:
    """The task's annotations, then its predictions, as answer rows: each result mapped by
    ``result_of``, the mapped ones made an answer by ``answer_of``; an entry with none is
    counted as empty."""
    for key in ENTRY_KINDS:
        entries = task.get(key)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise TaskError(key, "must be a list")
        for n, entry in enumerate(entries):
            _read_entry(task_id, f"{key}.{n}", entry, reading, result_of, answer_of)


def _read_entry(
    task_id: str,
    where: str,
    entry: Any,
    reading: ExportReading,
    result_of: ResultMapping,
    answer_of: Callable[[dict], dict],
) -> None:
    if not isinstance(entry, dict):
        raise TaskError(where, "an annotation is an object with a result list")
    if where.startswith("annotations") and entry.get("was_cancelled") is True:
        reading.cancelled += 1
        return
    coder = _coder(where, entry)
    results = entry.get("result")
    if not isinstance(results, list):
        raise TaskError(f"{where}.result", "must be a list of results")
    parts: dict[str, Any] = {}
    for n, result in enumerate(results):
        at = f"{where}.result.{n}"
        if not isinstance(result, dict) or not isinstance(result.get("value"), dict):
            raise TaskError(at, "a result is an object with from_name and value")
        mapped = result_of(result, at, lambda reason: reading.note(reason, task_id))
        if mapped is not None:
            parts[mapped[0]] = mapped[1]
    if not parts:
        reading.empty += 1
        return
    row: dict[str, Any] = {"item": task_id, "coder": coder, "answer": answer_of(parts)}
    row.update(_timing(where, entry))
    reading.predictions += where.startswith("predictions")
    reading.answers.append(row)
    reading.where.append(f"{reading.task}, {where}")


def _coder(where: str, entry: dict) -> str:
    """The external coder's name; one too long to store is refused, never cut (two names cut to
    the same would merge two coders)."""
    if where.startswith("predictions"):
        version = entry.get("model_version")
        if version in (None, ""):
            version = "unknown"
        if isinstance(version, bool) or not isinstance(version, (str, int, float)):
            raise TaskError(f"{where}.model_version", "the model's version is a text")
        return _within_name_limit(f"model:{str(version).strip()}", f"{where}.model_version")
    if "concord_coder" in entry:  # Concord's own export: the coder as it was, not renumbered
        return _concord_coder(f"{where}.concord_coder", entry["concord_coder"])
    who = entry.get("completed_by")
    if isinstance(who, dict):
        who = who.get("id")
    if isinstance(who, bool) or not isinstance(who, (int, str)) or who == "":
        raise TaskError(f"{where}.completed_by", "the annotator's id (a number, or {id, email})")
    return _within_name_limit(f"ls-user-{who}", f"{where}.completed_by")


def _concord_coder(where: str, name: Any) -> str:
    """The coder Concord's export named in ``concord_coder``: an annotator's pseudonym, or an
    external coder as ``ext:<name>`` (read back as that name), so a round trip keeps who
    answered what (``completed_by`` only numbers the coders of one export)."""
    if not isinstance(name, str) or not name.removeprefix("ext:").strip():
        raise TaskError(where, "the coder's name as Concord exported it (a text)")
    return _within_name_limit(name.removeprefix("ext:").strip(), where)


def _within_name_limit(name: str, where: str) -> str:
    if len(name) > MAX_CODER_NAME:
        raise TaskError(
            where, f"names a coder in more than {MAX_CODER_NAME} characters ({len(name)})"
        )
    return name


def _timing(where: str, entry: dict) -> dict:
    out: dict[str, Any] = {}
    lead = entry.get("lead_time")
    if lead is not None:
        if isinstance(lead, bool) or not isinstance(lead, (int, float)) or not 0 <= lead < 1e9:
            raise TaskError(f"{where}.lead_time", "seconds as a number from 0")
        out["time_spent_ms"] = round(lead * 1000)
    created = entry.get("created_at")
    if isinstance(created, str) and created.strip().isdigit():  # Unix time written as text
        created = int(created.strip())
    if isinstance(created, str) and created:
        out["annotated_at"] = _iso_time(f"{where}.created_at", created)
    elif created is not None and created != "":
        out["annotated_at"] = _unix_time(f"{where}.created_at", created)
    return out


def _iso_time(where: str, value: str) -> str:
    """A ``created_at`` given as text: ISO 8601, refused here under its own name (a probe's
    finding: the import's later check named ``annotated_at``, a field the export does not have)."""
    try:
        datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise TaskError(where, "a date and time: ISO 8601 text, or seconds since 1970") from None
    return value


def _unix_time(where: str, value: Any) -> str:
    """A ``created_at`` given as a number: seconds since 1970 (Unix time, UTC), as ISO 8601 (it
    was dropped before). Milliseconds land beyond the year 9999 or the import's bounds and are
    refused, never read as seconds."""
    expected = "a date and time: ISO 8601 text, or seconds since 1970 (Unix time)"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TaskError(where, expected)
    if abs(value) >= 1e11:  # past the year 5138 in seconds: milliseconds, most likely
        raise TaskError(
            where,
            f"{expected}; {value} looks like milliseconds since 1970: give seconds (divide by 1000)",
        )
    try:
        return datetime.fromtimestamp(value, tz=UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        raise TaskError(where, expected) from None


def unmapped_lines(reading: ExportReading, config_unmapped: list[str]) -> Iterator[str]:
    """The report of what was not mapped, one line each (config first, then results)."""
    yield from config_unmapped
    for reason, task_ids in reading.unmapped.items():
        shown = ", ".join(task_ids[:5]) + (", …" if len(task_ids) > 5 else "")
        yield f"{reason}: left out in {len(task_ids)} tasks ({shown})"


def read_with_mapping(
    stream: IO[str],
    mapping: str | None,
    parse: Callable[[str], Any],
    read: Callable[[Any, Any], ExportReading],
) -> ExportReading:
    """An import format's reading of an export with the labeling config as its mapping file:
    the task type's ``parse(xml)`` of the config, then its ``read(tasks, config)``."""
    if not mapping:
        raise PayloadError(
            "give the Label Studio labeling config (XML) as the mapping file",
            field="mapping",
            location="the file",
        )
    config = parse(mapping)
    try:
        tasks = export_json(stream.read())
    except PayloadError:
        raise
    except ValueError as exc:
        raise PayloadError(f"not valid JSON: {exc}", field="file", location="the file") from None
    return read(tasks, config)


# --- what a task type declares -------------------------------------------------------------------


def label_studio_exports(io_module: Callable[[], Any]) -> dict[str, ExtraExport]:
    """A task type's ``export_formats`` for Label Studio: the JSON export and the labeling
    config, from ``io_module()``'s ``export_label_studio`` and ``labeling_config`` (the module
    is imported when an export runs: it uses services that import the task-type registry)."""
    return {
        EXPORT_FORMAT: ExtraExport(
            title="Label Studio JSON",
            content_type="application/json",
            extension="json",
            stream=lambda project: io_module().export_label_studio(project=project),
        ),
        CONFIG_FORMAT: ExtraExport(
            title="Label Studio labeling config (XML)",
            content_type="application/xml",
            extension="xml",
            stream=lambda project: iter([io_module().labeling_config(project=project)]),
        ),
    }
