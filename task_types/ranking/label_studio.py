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
The export's envelope (tasks, annotations, predictions, coders) is read by
``studies.label_studio``; only the List and the Ranker results are mapped here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any
from xml.etree.ElementTree import Element

from studies import label_studio as common
from studies.label_studio import ExportReading, LabelingConfigError, TaskError

from .ranks import competition_ranks
from .serializers import MAX_OUTPUTS, MIN_OUTPUTS

MAX_NAME = 80  # a criterion's name
MAX_SYSTEM = 100
UNSORTED = "_"  # Label Studio's column of the items not put in a bucket
NO_LABEL = "none"


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


def _data_key(element: Element) -> str:
    value = element.get("value") or ""
    return value[1:] if value.startswith("$") and len(value) > 1 else ""


def parse_labeling_config(xml: str) -> RankingConfig:
    """The List, the claim's Text and the Rankers of a labeling config; raises
    ``LabelingConfigError`` without a List that a Ranker ranks."""
    elements = list(common.config_root(xml).iter())
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
    common.read_controls(
        elements,
        config.unmapped,
        is_control=lambda tag: tag == "ranker",
        add=lambda element, header: _add_ranker(config, element, ranked, header),
        why_not="a ranking project has Rankers only",
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


def read_export(tasks: Any, config: RankingConfig) -> ExportReading:
    """Every task of a parsed Label Studio JSON export, read against ``config``; raises
    ``PayloadError`` naming the first bad task's index and field."""
    return common.read_tasks(
        tasks, lambda task, ident, data, reading: _read_task(task, ident, data, config, reading)
    )


def _task_item(ident: str, data: dict, config: RankingConfig) -> tuple[dict, list[str]]:
    """The ranking item of one task and its list's item ids (the outputs' systems)."""
    entries = data.get(config.list_key)
    where = f"data.{config.list_key}"
    if not isinstance(entries, list) or not MIN_OUTPUTS <= len(entries) <= MAX_OUTPUTS:
        raise TaskError(
            where, f"the List's items: a list of {MIN_OUTPUTS} to {MAX_OUTPUTS} objects"
        )
    outputs = [_output(entry, f"{where}.{n}") for n, entry in enumerate(entries)]
    systems = [o["system"] for o in outputs]
    if len(set(systems)) != len(systems):
        raise TaskError(where, "an item id appears twice in the list")
    claim = data.get(config.claim_key) if config.claim_key else config.list_title
    if not isinstance(claim, str) or not claim.strip():
        raise TaskError(f"data.{config.claim_key or 'title'}", "the claim must be a non-empty text")
    label = data.get("label")
    label = label.strip()[:50] if isinstance(label, str) and label.strip() else NO_LABEL
    item = {"id": ident, "claim": claim, "label": label, "outputs": outputs}
    return item, systems


def _output(entry: Any, where: str) -> dict:
    if not isinstance(entry, dict):
        raise TaskError(where, "a List item is an object with id, title and body")
    ident = entry.get("id")
    if isinstance(ident, bool) or not isinstance(ident, (int, str)) or str(ident).strip() == "":
        raise TaskError(f"{where}.id", "a List item needs its id (a number or a text)")
    if len(str(ident)) > MAX_SYSTEM:
        raise TaskError(f"{where}.id", f"an id is at most {MAX_SYSTEM} characters")
    text = next(
        (entry[k] for k in ("body", "title", "html") if isinstance(entry.get(k), str) and entry[k]),
        None,
    )
    if text is None:
        raise TaskError(where, "a List item needs a body, title or html text")
    return {"system": str(ident), "text": text}


def _read_task(
    task: dict, ident: str, data: dict, config: RankingConfig, reading: ExportReading
) -> None:
    item, systems = _task_item(ident, data, config)
    reading.items.append(item)
    common.read_entries(
        task,
        ident,
        reading,
        lambda result, at, note: _ranking_of(result, at, note, config, systems),
        lambda ranks: {"order": list(systems), "ranks": ranks},
    )


def _ranking_of(
    result: dict, at: str, note: Callable[[str], None], config: RankingConfig, systems: list[str]
) -> tuple[str, dict[str, int]] | None:
    """``(criterion, {system: rank})`` of one result, or None (noted) where it does not map."""
    ranker = config.rankers.get(str(result.get("from_name")))
    if ranker is None or str(result.get("type", "")).lower() != "ranker":
        note(
            f"{result.get('type') or 'result'} {result.get('from_name')!r}: "
            "no criterion for this control"
        )
        return None
    ranked = _ranks(ranker, result["value"], systems, f"{at}.value.ranker")
    if ranked is None:
        note(f"{ranker.name!r}: not every item is in a bucket")
        return None
    return ranker.name, ranked


def _ranks(ranker: Ranker, value: dict, systems: list[str], at: str) -> dict[str, int] | None:
    """``{system: rank}`` of one Ranker result (competition ranks; ties within a bucket), or
    None when some item is in no bucket."""
    groups = value.get("ranker")
    if not isinstance(groups, dict):
        raise TaskError(at, "a Ranker result's value.ranker is an object of lists of item ids")
    levels = ranker.buckets or [ranker.name]
    strangers = [k for k in groups if k not in levels and k != UNSORTED]
    if strangers:
        raise TaskError(f"{at}.{strangers[0]}", f"the Ranker {ranker.name!r} has no such bucket")
    level_of: dict[str, int] = {}
    for index, level in enumerate(levels):
        ids = groups.get(level, [])
        if not isinstance(ids, list):
            raise TaskError(f"{at}.{level}", "must be a list of item ids")
        for position, ident in enumerate(ids):
            system = (
                str(ident)
                if isinstance(ident, (int, str)) and not isinstance(ident, bool)
                else None
            )
            if system not in systems:
                raise TaskError(f"{at}.{level}", f"{ident!r} is not an item of this task's List")
            if system in level_of:
                raise TaskError(f"{at}.{level}", f"the item {system!r} is ranked twice")
            level_of[system] = index if ranker.buckets else position
    if len(level_of) != len(systems):
        return None
    values = [level_of[s] for s in systems]
    return dict(zip(systems, competition_ranks(values), strict=True))


# --- the item and annotation import formats ------------------------------------------------------


def _parsed(stream: IO[str], mapping: str | None) -> ExportReading:
    return common.read_with_mapping(stream, mapping, parse_labeling_config, read_export)


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
