"""Label Studio projects in and out of a ranking project (the mapping is in ``label_studio``).

:func:`import_label_studio` reads an export (JSON) with its labeling config (XML) into a ranking
project, all or nothing: the project takes the criteria derived from the config's Rankers when
it has no items yet (else it must have them), the tasks become items (the generic JSON Lines
import) and the Ranker results the rankings of external coders (the generic external-annotation
import, through ``external_answer``). :func:`export_label_studio` writes a project's items and
rankings as a Label Studio JSON export, and :func:`labeling_config` its criteria as Rankers with
one Bucket per rank, which the importer reads back.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from xml.etree.ElementTree import Element, SubElement, tostring

from annotation.models import Item
from projects.models import Project
from studies.services.label_studio import (
    ExportNumbers,
    LabelStudioMapping,
    add_entries,
    stream_export,
)

from .label_studio import RankingConfig, parse_labeling_config, read_export
from .ranks import output_letter
from .serializers import MAX_OUTPUTS, RankingConfigSerializer, project_criteria

LIST_NAME, LIST_KEY = "outputs", "items"


def _new_config(project: Project, config: RankingConfig) -> dict:
    serializer = RankingConfigSerializer(data={**(project.config or {}), **config.project_config})
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _mismatch(project: Project, config: RankingConfig) -> str:
    have = {str(c.get("name", "")).casefold() for c in (project.config or {}).get("criteria") or []}
    wanted = config.project_config["criteria"]
    missing = [c["name"] for c in wanted if c["name"].casefold() not in have]
    if not missing:
        return ""
    return (
        f"The project has items and no criterion {missing[0]!r} (a Ranker of the labeling "
        "config). Import into a new ranking project."
    )


MAPPING = LabelStudioMapping(
    task_type="ranking",
    parse=parse_labeling_config,
    read=read_export,
    new_config=_new_config,
    mismatch=_mismatch,
    items_read_again=True,  # the item import's own format: its errors name the task, not a line
    answer_word="ranking",
    empty_reason="with no Ranker result that maps to a criterion",
)


# the one-step import (studies.services.label_studio), all or nothing, with this mapping
import_label_studio = MAPPING.import_label_studio


# --- export --------------------------------------------------------------------------------------


def _most_outputs(project: Project) -> int:
    sizes = Item.objects.filter(project=project).values_list("prepared__keys", flat=True)
    return max((len(keys or []) for keys in sizes.iterator()), default=MAX_OUTPUTS)


def labeling_config(*, project: Project) -> str:
    """The project as a labeling config: the claim as ``Text``, the outputs as a ``List``, each
    criterion a ``Ranker`` (its definition the ``Header`` before it) with one ``Bucket`` per rank
    (``<criterion>_rank_1`` best), so tied outputs share a bucket."""
    criteria = project_criteria(project.config)
    view = Element("View")
    SubElement(view, "Header", value="Claim")
    SubElement(view, "Text", name="claim", value="$claim")
    SubElement(view, "List", name=LIST_NAME, value=f"${LIST_KEY}", title="Outputs")
    levels = _most_outputs(project)
    for criterion in criteria:
        SubElement(view, "Header", value=criterion["definition"])
        ranker = SubElement(view, "Ranker", name=criterion["name"], toName=LIST_NAME)
        for rank in range(1, levels + 1):
            # Names unique in the whole config (Label Studio refuses a name given twice); the
            # importer reads a Ranker's Buckets in order, so rank 1 is the first.
            bucket = _bucket(criterion["name"], rank)
            SubElement(ranker, "Bucket", name=bucket, title=f"Rank {rank}")
    return tostring(view, encoding="unicode") + "\n"


def _bucket(criterion: str, rank: int) -> str:
    return f"{criterion}_rank_{rank}"


def _results(answer: dict, system_of: dict[str, str]) -> list[dict]:
    """One Ranker result per criterion: the outputs (by system) in the bucket of their rank,
    in the order they were shown."""
    order = answer.get("order") or list(system_of)
    results = []
    for criterion, ranks in (answer.get("ranks") or {}).items():
        buckets: dict[str, list[str]] = {}
        for key in sorted(order, key=lambda k: ranks.get(k, 0)):
            buckets.setdefault(_bucket(criterion, ranks[key]), []).append(system_of[key])
        results.append(
            {
                "from_name": criterion,
                "to_name": LIST_NAME,
                "type": "ranker",
                "value": {"ranker": buckets},
            }
        )
    return results


def _task(row: tuple, answers: list, numbers: ExportNumbers) -> dict:
    _, external_id, payload, prepared = row
    outputs = payload.get("outputs") or []
    system_of = {
        key: o["system"] for key, o in zip(prepared.get("keys") or [], outputs, strict=False)
    }
    task: dict[str, Any] = {
        "id": external_id,
        "data": {
            "claim": payload.get("claim", ""),
            "label": payload.get("label", ""),
            LIST_KEY: [
                {"id": o["system"], "title": f"Output {output_letter(n)}", "body": o["text"]}
                for n, o in enumerate(outputs)
            ],
        },
        "annotations": [],
        "predictions": [],
    }
    add_entries(
        task=task,
        answers=answers,
        results_of=lambda answer: _results(answer, system_of),
        numbers=numbers,
    )
    return task


def export_label_studio(*, project: Project) -> Iterator[str]:
    """The project as a Label Studio JSON export, streamed a task at a time: each item's claim,
    label and outputs (a List of ``{id: system, title, body}``) with every coder's rankings as
    Ranker results (external coders named ``model:…`` as predictions)."""
    numbers = ExportNumbers()
    yield from stream_export(
        project=project,
        fields=("external_id", "payload", "prepared"),
        task_of=lambda row, answers: _task(row, answers, numbers),
    )
