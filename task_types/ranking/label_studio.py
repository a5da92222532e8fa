"""Label Studio interchange of rankings: a labeling config with a ``<List>`` and ``<Ranker>``
controls (optionally with ``<Bucket>`` tags) as a ranking project, a JSON export's tasks as
items and their Ranker results as external coders' rankings.

Label Studio's documented shapes (labelstud.io/tags/ranker, /tags/list):

* the task's ``data`` holds the List's items, ``value="$items"``: an array of objects
  ``{"id", "title", "body", "html"}``; each item becomes an output whose system is its ``id``
  and whose text is its ``body`` (else its ``title``, else its ``html``). The first ``<Text>`` or
  ``<HyperText>`` tag's data key is the claim (else the List's ``title``); a data key ``label``
  is the item's label (else ``none``).
* a Ranker result is ``{"from_name", "to_name", "type": "ranker", "value": {"ranker": {…}}}``.
  Without Buckets the dict has one key, the Ranker's name, whose list is every item id in the
  ranked order (best first): ranks 1..k, no tie. With Buckets its keys are bucket names (``_``:
  the items not put in a bucket); here the Buckets are the rank levels in the order the config
  lists them, the first the best, so the items of one bucket tie. Ranks are written in standard
  competition ranking (``ranks.competition_ranks``: buckets [a, b], [], [c] → 1, 1, 3).

Each Ranker becomes a criterion (its name; a ``<Header>`` before it is its definition). A result
that leaves items outside every bucket, or a Ranker over another List, is reported as not
mapped and left out. A result naming an item the task's list does not have, an item twice or a
bucket the config does not have refuses the import, naming the task's index and the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError
from defusedxml.ElementTree import fromstring as safe_fromstring

from annotation.task_types import PayloadError
from core.json_safety import loads as safe_json_loads

from .ranks import competition_ranks
from .serializers import MAX_OUTPUTS, MIN_OUTPUTS

MAX_CONFIG_BYTES = 256 * 1024
MAX_NAME = 80  # a criterion's name
MAX_CODER_NAME = 100
MAX_SYSTEM = 100
UNSORTED = "_"  # Label Studio's column of the items not put in a bucket
NO_LABEL = "none"


class LabelingConfigError(PayloadError):
    """The labeling config cannot be read or holds no List with a Ranker."""

    def __init__(self, message: str) -> None:
        super().__init__(message, field="labeling_config")


@dataclass
class Ranker:
    """One Ranker control: its name (the criterion) and its buckets, best first ([]: it ranks
    the whole list)."""

    name: str
    definition: str
    buckets: list[str] = field(default_factory=list)


@dataclass
class RankingConfig:
    """A labeling config read as a ranking project."""

    list_key: str  # the task data key of the List's items
    claim_key: str  # the data key of the claim ("": the List's title)
    list_title: str
    rankers: dict[str, Ranker]  # by Label Studio control name
    unmapped: list[str]

    @property
    def project_config(self) -> dict:
        return {
            "criteria": [
                {"name": r.name, "definition": r.definition, "examples": []}
                for r in self.rankers.values()
            ],
            "tie_convention": "competition",
        }


def _root(xml: str) -> Element:
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


def _data_key(element: Element) -> str:
    value = element.get("value") or ""
    return value[1:] if value.startswith("$") and len(value) > 1 else ""


def parse_labeling_config(xml: str) -> RankingConfig:
    """The List, the claim's Text and the Rankers of a labeling config; raises
    ``LabelingConfigError`` without a List that a Ranker ranks."""
    elements = list(_root(xml).iter())
    lists = {e.get("name") or "": e for e in elements if e.tag.lower() == "list" and _data_key(e)}
    texts = [_data_key(e) for e in elements if e.tag.lower() in ("text", "hypertext")]
    rankers = [e for e in elements if e.tag.lower() == "ranker"]
    ranked = next((r.get("toName") for r in rankers if r.get("toName") in lists), None)
    if ranked is None:
        raise LabelingConfigError(
            'the labeling config has no <Ranker> whose toName is a <List value="$key">: '
            "nothing to rank"
        )
    the_list = lists[ranked]
    config = RankingConfig(
        list_key=_data_key(the_list),
        claim_key=next((key for key in texts if key), ""),
        list_title=(the_list.get("title") or "").strip(),
        rankers={},
        unmapped=[],
    )
    header = ""
    for element in elements:
        tag = element.tag.lower()
        if tag == "header":
            header = (element.get("value") or element.text or "").strip()
        elif tag == "ranker":
            _add_ranker(config, element, ranked, header)
            header = ""
        elif element.get("toName") is not None:
            config.unmapped.append(
                f"<{element.tag} name={element.get('name')!r}>: not mapped (a ranking project "
                "has Rankers only)"
            )
    return config


def _add_ranker(config: RankingConfig, element: Element, ranked: str, header: str) -> None:
    name = (element.get("name") or "").strip()
    if element.get("toName") != ranked:
        config.unmapped.append(
            f"<Ranker name={name!r}>: not mapped (it ranks another List than {ranked!r})"
        )
        return
    if not name or len(name) > MAX_NAME:
        raise LabelingConfigError(f"a Ranker needs a name of 1 to {MAX_NAME} characters")
    if name.casefold() in (n.casefold() for n in config.rankers):
        raise LabelingConfigError(f"two Rankers are named {name!r}")
    buckets = [(b.get("name") or "") for b in element if b.tag.lower() == "bucket"]
    if any(not b or b == UNSORTED for b in buckets) or len(set(buckets)) != len(buckets):
        raise LabelingConfigError(
            f"the Buckets of Ranker {name!r} need distinct names other than {UNSORTED!r}"
        )
    config.rankers[name] = Ranker(
        name=name,
        definition=header or f"Ranked in Label Studio (Ranker {name!r}).",
        buckets=buckets,
    )


# --- the export ----------------------------------------------------------------------------------


@dataclass
class ExportReading:
    """What a Label Studio export holds, as Concord records, and what was left out."""

    items: list[dict] = field(default_factory=list)
    answers: list[dict] = field(default_factory=list)  # rows {item, coder, answer[, times]}
    where: list[str] = field(default_factory=list)  # each answer's task and entry
    task: str = ""
    cancelled: int = 0
    empty: int = 0
    predictions: int = 0
    unmapped: dict[str, list[str]] = field(default_factory=dict)

    def note(self, reason: str, task_id: str) -> None:
        self.unmapped.setdefault(reason, []).append(task_id)


class _Bad(Exception):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def read_export(tasks: Any, config: RankingConfig) -> ExportReading:
    """Every task of a parsed Label Studio JSON export, read against ``config``; raises
    ``PayloadError`` naming the first bad task's index and field."""
    if not isinstance(tasks, list):
        raise PayloadError("a Label Studio JSON export is a list of tasks", field="file")
    reading = ExportReading()
    seen: set[str] = set()
    for index, task in enumerate(tasks):
        task_id = task.get("id") if isinstance(task, dict) else None
        reading.task = f"task at index {index}" + (
            f" (id {task_id})" if task_id is not None else ""
        )
        try:
            _read_task(task, config, reading, seen)
        except _Bad as exc:
            raise PayloadError(exc.message, field=exc.field, location=reading.task) from None
    return reading


def _task_item(task: Any, config: RankingConfig, seen: set) -> tuple[dict, list[str]]:
    """The ranking item of one task and its list's item ids (the outputs' systems)."""
    if not isinstance(task, dict):
        raise _Bad("task", "a task is an object with id and data")
    task_id = task.get("id")
    if isinstance(task_id, bool) or not isinstance(task_id, (int, str)) or task_id == "":
        raise _Bad("id", "a task needs its id (a number or a text)")
    if str(task_id) in seen:
        raise _Bad("id", f"the task id {task_id} appears twice")
    seen.add(str(task_id))
    data = task.get("data")
    if not isinstance(data, dict):
        raise _Bad("data", "a task's data is an object")
    entries = data.get(config.list_key)
    where = f"data.{config.list_key}"
    if not isinstance(entries, list) or not MIN_OUTPUTS <= len(entries) <= MAX_OUTPUTS:
        raise _Bad(where, f"the List's items: a list of {MIN_OUTPUTS} to {MAX_OUTPUTS} objects")
    outputs = [_output(entry, f"{where}.{n}") for n, entry in enumerate(entries)]
    systems = [o["system"] for o in outputs]
    if len(set(systems)) != len(systems):
        raise _Bad(where, "an item id appears twice in the list")
    claim = data.get(config.claim_key) if config.claim_key else config.list_title
    if not isinstance(claim, str) or not claim.strip():
        raise _Bad(f"data.{config.claim_key or 'title'}", "the claim must be a non-empty text")
    label = data.get("label")
    label = label.strip()[:50] if isinstance(label, str) and label.strip() else NO_LABEL
    item = {"id": str(task_id), "claim": claim, "label": label, "outputs": outputs}
    return item, systems


def _output(entry: Any, where: str) -> dict:
    if not isinstance(entry, dict):
        raise _Bad(where, "a List item is an object with id, title and body")
    ident = entry.get("id")
    if isinstance(ident, bool) or not isinstance(ident, (int, str)) or str(ident).strip() == "":
        raise _Bad(f"{where}.id", "a List item needs its id (a number or a text)")
    if len(str(ident)) > MAX_SYSTEM:
        raise _Bad(f"{where}.id", f"an id is at most {MAX_SYSTEM} characters")
    text = next(
        (entry[k] for k in ("body", "title", "html") if isinstance(entry.get(k), str) and entry[k]),
        None,
    )
    if text is None:
        raise _Bad(where, "a List item needs a body, title or html text")
    return {"system": str(ident), "text": text}


def _read_task(task: Any, config: RankingConfig, reading: ExportReading, seen: set) -> None:
    item, systems = _task_item(task, config, seen)
    reading.items.append(item)
    for key in ("annotations", "predictions"):
        entries = task.get(key)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise _Bad(key, "must be a list")
        for n, entry in enumerate(entries):
            _read_annotation(item["id"], systems, f"{key}.{n}", entry, config, reading)


def _coder(where: str, entry: dict) -> str:
    if where.startswith("predictions"):
        version = entry.get("model_version")
        version = str(version).strip() if version not in (None, "") else "unknown"
        return f"model:{version}"[:MAX_CODER_NAME]
    who = entry.get("completed_by")
    if isinstance(who, dict):
        who = who.get("id")
    if isinstance(who, bool) or not isinstance(who, (int, str)) or who == "":
        raise _Bad(f"{where}.completed_by", "the annotator's id (a number, or {id, email})")
    return f"ls-user-{who}"[:MAX_CODER_NAME]


def _read_annotation(
    task_id: str,
    systems: list[str],
    where: str,
    entry: Any,
    config: RankingConfig,
    reading: ExportReading,
) -> None:
    if not isinstance(entry, dict):
        raise _Bad(where, "an annotation is an object with a result list")
    if where.startswith("annotations") and entry.get("was_cancelled") is True:
        reading.cancelled += 1
        return
    coder = _coder(where, entry)
    results = entry.get("result")
    if not isinstance(results, list):
        raise _Bad(f"{where}.result", "must be a list of results")
    ranks: dict[str, dict[str, int]] = {}
    for n, result in enumerate(results):
        at = f"{where}.result.{n}"
        if not isinstance(result, dict) or not isinstance(result.get("value"), dict):
            raise _Bad(at, "a result is an object with from_name and value")
        ranker = config.rankers.get(str(result.get("from_name")))
        if ranker is None or str(result.get("type", "")).lower() != "ranker":
            reading.note(
                f"{result.get('type') or 'result'} {result.get('from_name')!r}: no criterion for this control",
                task_id,
            )
            continue
        ranked = _ranks(ranker, result["value"], systems, f"{at}.value.ranker")
        if ranked is None:
            reading.note(f"{ranker.name!r}: not every item is in a bucket", task_id)
            continue
        ranks[ranker.name] = ranked
    if not ranks:
        reading.empty += 1
        return
    row: dict[str, Any] = {
        "item": task_id,
        "coder": coder,
        "answer": {"order": list(systems), "ranks": ranks},
    }
    row.update(_timing(where, entry))
    reading.predictions += where.startswith("predictions")
    reading.answers.append(row)
    reading.where.append(f"{reading.task}, {where}")


def _ranks(ranker: Ranker, value: dict, systems: list[str], at: str) -> dict[str, int] | None:
    """``{system: rank}`` of one Ranker result (competition ranks; ties within a bucket), or
    None when some item is in no bucket."""
    groups = value.get("ranker")
    if not isinstance(groups, dict):
        raise _Bad(at, "a Ranker result's value.ranker is an object of lists of item ids")
    levels = ranker.buckets or [ranker.name]
    strangers = [k for k in groups if k not in levels and k != UNSORTED]
    if strangers:
        raise _Bad(f"{at}.{strangers[0]}", f"the Ranker {ranker.name!r} has no such bucket")
    level_of: dict[str, int] = {}
    for index, level in enumerate(levels):
        ids = groups.get(level, [])
        if not isinstance(ids, list):
            raise _Bad(f"{at}.{level}", "must be a list of item ids")
        for position, ident in enumerate(ids):
            system = (
                str(ident)
                if isinstance(ident, (int, str)) and not isinstance(ident, bool)
                else None
            )
            if system not in systems:
                raise _Bad(f"{at}.{level}", f"{ident!r} is not an item of this task's List")
            if system in level_of:
                raise _Bad(f"{at}.{level}", f"the item {system!r} is ranked twice")
            level_of[system] = index if ranker.buckets else position
    if len(level_of) != len(systems):
        return None
    values = [level_of[s] for s in systems]
    return dict(zip(systems, competition_ranks(values), strict=True))


def _timing(where: str, entry: dict) -> dict:
    out: dict[str, Any] = {}
    lead = entry.get("lead_time")
    if lead is not None:
        if isinstance(lead, bool) or not isinstance(lead, (int, float)) or not 0 <= lead < 1e9:
            raise _Bad(f"{where}.lead_time", "seconds as a number from 0")
        out["time_spent_ms"] = round(lead * 1000)
    created = entry.get("created_at")
    if isinstance(created, str) and created:
        out["annotated_at"] = created
    return out


def unmapped_lines(reading: ExportReading, config: RankingConfig) -> Iterator[str]:
    """The report of what was not mapped, one line each (config first, then results)."""
    yield from config.unmapped
    for reason, task_ids in reading.unmapped.items():
        shown = ", ".join(task_ids[:5]) + (", …" if len(task_ids) > 5 else "")
        yield f"{reason}: left out in {len(task_ids)} tasks ({shown})"


# --- the item and annotation import formats ------------------------------------------------------


def _parsed(stream: IO[str], mapping: str | None) -> ExportReading:
    if not mapping:
        raise PayloadError(
            "give the Label Studio labeling config (XML) as the mapping file",
            field="mapping",
            location="the file",
        )
    config = parse_labeling_config(mapping)
    try:
        tasks = safe_json_loads(stream.read())
    except ValueError as exc:
        raise PayloadError(f"not valid JSON: {exc}", field="file", location="the file") from None
    return read_export(tasks, config)


def read_label_studio_tasks(
    stream: IO[str], mapping: str | None = None
) -> Iterator[tuple[str, dict]]:
    """Label Studio JSON export read against its labeling config (the mapping file): each task
    an item whose outputs are its List's items (``{id, title, body}``: the id is the system, the
    body the text), the first Text tag's data key the claim. The criteria from the config's
    Rankers and the Ranker results as rankings come in one step with the project page's Label
    Studio form (docs/label_studio.md). Errors name the task's index in the file and the field."""
    reading = _parsed(stream, mapping)
    for index, item in enumerate(reading.items):
        yield f"task at index {index} (id {item['id']})", item


def read_label_studio_annotations(
    stream: IO[str], mapping: str | None = None
) -> Iterator[tuple[str, dict]]:
    """The export's Ranker results, read against its labeling config (the mapping file): each
    annotator an external coder ``ls-user-<id>``, each prediction's model
    ``model:<model_version>``; the ranking by system (the List item's id)."""
    reading = _parsed(stream, mapping)
    yield from zip(reading.where, reading.answers, strict=True)
