"""The ranking task type: rank blinded outputs per criterion, ties allowed (see the package
docstring for the tie convention and the blinding)."""

from __future__ import annotations

import csv
import hmac
import io
import json
import random
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.translation import gettext_noop

from annotation.task_types import PayloadError, PreparedItem, TaskType, register
from studies.label_studio import label_studio_exports

from .formats import decode_csv_row, read_reprohum
from .label_studio import read_label_studio_annotations, read_label_studio_tasks
from .originals import ranking_from_systems, read_reprohum_ranks
from .ranks import dense_ranks, output_letter
from .serializers import RankingAnswerSerializer, RankingConfigSerializer, RankingPayloadSerializer


def display_order(item: Any, annotator_id: Any = None) -> list[int]:
    """Payload indices of the outputs in the order this annotator sees them: a shuffle seeded by
    the item and the annotator, so it is random across annotators and stable for each. The seed
    is keyed with the server's secret: knowing the project seed, item id and user id is not
    enough to undo the blinding. (Answers name outputs by opaque key, so the order is cosmetic
    for stored work.)"""
    order = list(range(len(item.prepared["keys"])))
    seed = hmac.new(
        settings.SECRET_KEY.encode(),
        f"{item.prepared['order_seed']}:{annotator_id}".encode(),
        "sha256",
    ).hexdigest()
    random.Random(seed).shuffle(order)
    return order


def _label_studio() -> Any:
    """The Label Studio import and export module, imported when one runs (it uses the studies
    services, which import the task-type registry this module fills)."""
    from . import label_studio_io

    return label_studio_io


def _new_keys(count: int) -> list[str]:
    keys: list[str] = []
    while len(keys) < count:
        key = secrets.token_hex(4)
        if key not in keys:
            keys.append(key)
    return keys


def _systems_by_key(item: Any) -> dict[str, str]:
    outputs = item.payload["outputs"]
    return {key: o["system"] for key, o in zip(item.prepared["keys"], outputs, strict=True)}


def _review_names(item: Any) -> dict[str, str]:
    """{key: "letter system"} in the order reviewers see the outputs (the judges' order)."""
    systems = _systems_by_key(item)
    keys = item.prepared["keys"]
    shown = [keys[i] for i in display_order(item)]
    return {key: f"{output_letter(i)} {systems[key]}" for i, key in enumerate(shown)}


# Example import files of this task type's own formats come from its data (data/explanation-ranking/).
EXAMPLE_DATA = Path(settings.BASE_DIR) / "data" / "explanation-ranking"


@register
class Ranking(TaskType):
    slug = "ranking"
    name = gettext_noop("Ranking with ties")  # translated where annotators read it
    payload_serializer = RankingPayloadSerializer
    answer_serializer = RankingAnswerSerializer
    config_serializer = RankingConfigSerializer
    # Agreement unit: (item, criterion, system); value: the rank (ordinal).
    measures = {"ranks": "ordinal"}
    agreement_basis = gettext_noop(
        "the ranks given; the order the outputs were shown in does not count"
    )
    label_studio = True
    readers = {"reprohum": read_reprohum, "label-studio": read_label_studio_tasks}
    annotation_readers = {
        "reprohum-ranks": read_reprohum_ranks,
        "label-studio": read_label_studio_annotations,
    }
    export_formats = label_studio_exports(_label_studio)
    private_config = frozenset({"systems", "seed"})

    # --- import -------------------------------------------------------------------------------

    def import_label_studio(self, **options: Any) -> Any:
        """Criteria from the labeling config's Rankers, tasks as items, Ranker results as
        external coders' rankings (``label_studio_io.import_label_studio``)."""
        return _label_studio().import_label_studio(**options)

    def prepare(self, payload: dict, *, config: dict) -> list[PreparedItem]:
        """Check system names against the project's systems (when declared) and give each output
        an opaque key. The order seed combines the project seed and the item id."""
        allowed = config.get("systems") or []
        if allowed:
            for index, output in enumerate(payload["outputs"]):
                if output["system"] not in allowed:
                    raise PayloadError(
                        f"Unknown system {output['system']!r}; this project's systems are "
                        f"{', '.join(allowed)}.",
                        field=f"outputs.{index}.system",
                    )
        return [
            PreparedItem(
                external_id=payload["id"],
                payload=payload,
                prepared={
                    "keys": _new_keys(len(payload["outputs"])),
                    "order_seed": f"{config.get('seed', 13)}:{payload['id']}",
                },
                gold=None,
                kind=payload.get("kind", "regular"),
            )
        ]

    def csv_to_payload(self, row: dict) -> dict:
        return decode_csv_row(row)

    def example_files(self) -> dict[str, str]:
        """Beside JSON Lines and CSV, the first claim of the ReproHum sheet in data/ and its
        mapping file (the format's ``mapping`` option: ``reprohum mapping``)."""
        with (EXAMPLE_DATA / "reprohum_sheet.csv").open(encoding="utf-8", newline="") as sheet:
            rows = list(csv.reader(sheet))
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(rows[:2])
        mapping = (EXAMPLE_DATA / "reprohum_mapping.csv").read_text(encoding="utf-8").splitlines()
        first = rows[1][0]
        kept = [mapping[0], *(line for line in mapping[1:] if line.split(",", 1)[0] == first)]
        return {
            **super().example_files(),
            "reprohum": out.getvalue(),
            "reprohum mapping": "\n".join(kept) + "\n",
            **self._label_studio_example(),
        }

    def _label_studio_example(self) -> dict[str, str]:
        """The demo item as a Label Studio task (a List of the outputs) with one annotation
        whose Ranker puts two outputs in the best bucket (a tie), and its labeling config."""
        payload = self.demo_payload()
        systems = [o["system"] for o in payload["outputs"]]
        task = {
            "id": payload["id"],
            "data": {
                "claim": payload["claim"],
                "label": payload["label"],
                "items": [
                    {"id": o["system"], "title": f"Output {output_letter(n)}", "body": o["text"]}
                    for n, o in enumerate(payload["outputs"])
                ],
            },
            "annotations": [
                {
                    "id": 1,
                    "completed_by": 1,
                    "result": [
                        {
                            "from_name": "Overall",
                            "to_name": "outputs",
                            "type": "ranker",
                            "value": {"ranker": {"best": systems[:2], "worse": systems[2:]}},
                        }
                    ],
                    "was_cancelled": False,
                }
            ],
        }
        config = (
            '<View>\n  <Text name="claim" value="$claim"/>\n'
            '  <List name="outputs" value="$items" title="Outputs"/>\n'
            '  <Ranker name="Overall" toName="outputs">\n'
            '    <Bucket name="best" title="Best"/>\n    <Bucket name="worse" title="Worse"/>\n'
            "  </Ranker>\n</View>\n"
        )
        return {
            "label-studio": json.dumps([task], ensure_ascii=False, indent=1) + "\n",
            "label-studio mapping": config,
        }

    def external_answer(
        self, answer: dict, *, payload: Mapping, prepared: Mapping, config: Mapping
    ) -> dict:
        """Rankings collected elsewhere name outputs by system (the original study's sheet);
        stored by this item's opaque keys, checked like an annotator's (``originals``)."""
        return ranking_from_systems(answer, payload=payload, prepared=prepared, config=config)

    # --- annotation ---------------------------------------------------------------------------

    def presentation(self, item: Any, *, config: Mapping[str, Any], flipped: bool) -> dict:
        """The outputs' order for one assignment, by opaque key: the item's order (the one
        judges see, :func:`display_order` without an annotator) or, flipped, that order reversed
        (the judges' "reversed" presentation), so each annotator ranks half of their items each
        way round and the report compares the two (the human position effect)."""
        keys = item.prepared["keys"]
        order = [keys[i] for i in display_order(item)]
        if flipped:
            order.reverse()
        return {"order": order, "reversed": flipped}

    def display(self, item: Any, *, assignment: Any = None) -> dict:
        """The claim, its label and the outputs by opaque key in this annotator's order (the
        assignment's presentation; assignments reserved before presentations were recorded keep
        their shuffle per annotator): never the system names."""
        keys = item.prepared["keys"]
        outputs = item.payload["outputs"]
        index = {key: i for i, key in enumerate(keys)}
        presented = (getattr(assignment, "presentation", None) or {}).get("order")
        if isinstance(presented, list) and sorted(presented) == sorted(keys):
            order = [index[key] for key in presented]
        else:
            order = display_order(item, getattr(assignment, "annotator_id", None))
        return {
            "claim": item.payload["claim"],
            "label": item.payload["label"],
            "outputs": [{"key": keys[i], "text": outputs[i]["text"]} for i in order],
        }

    def score(self, answer: dict, gold: dict | None) -> dict:
        """Rankings have no gold answer: nothing to score."""
        return {}

    def answer_text(self, answer: dict, *, item: Any = None) -> str:
        """Each criterion's ranks, best first. With the item, each output as the review page
        shows it: its letter there (the judges' order, :meth:`display` without an assignment)
        and its system ("A gpt-4 1"), never the opaque key; a key the item lacks as it is."""
        names = _review_names(item) if item is not None else {}
        place = {key: i for i, key in enumerate(names)}
        lines = []
        for criterion, ranks in (answer.get("ranks") or {}).items():
            order = sorted(
                ranks.items(), key=lambda pair: (pair[1], place.get(pair[0], len(place)), pair[0])
            )
            lines.append(
                f"{criterion}: " + ", ".join(f"{names.get(key, key)} {rank}" for key, rank in order)
            )
        return " · ".join(lines)

    def agreement_key(self, answer: dict) -> dict:
        """Annotators agree on an item when they gave the same ranks; the order they were shown
        differs by design and does not count."""
        return answer.get("ranks", {})

    # --- export and demo ----------------------------------------------------------------------

    def export_row(self, item: Any, annotation: Any) -> dict:
        """One summary row per annotation: the systems in the order shown and the ranks by
        system."""
        systems = _systems_by_key(item)
        answer = annotation.answer
        return {
            "shown_order": [systems[key] for key in answer["order"]],
            "ranks": {
                c: {systems[key]: rank for key, rank in r.items()}
                for c, r in answer["ranks"].items()
            },
        }

    def export_rows(self, item: Any, annotation: Any) -> list[dict]:
        """One row per (criterion, system): the rank in the standard competition convention, its
        dense equivalent, and where the output was shown (1-based position, letter)."""
        systems = _systems_by_key(item)
        order = annotation.answer["order"]
        rows = []
        for criterion, ranks in annotation.answer["ranks"].items():
            keys = [key for key in item.prepared["keys"] if key in ranks]  # payload (system) order
            dense = dict(zip(keys, dense_ranks([ranks[key] for key in keys]), strict=True))
            for key in keys:
                rows.append(
                    {
                        "criterion": criterion,
                        "system": systems[key],
                        "rank": ranks[key],
                        "rank_dense": dense[key],
                        "k": len(order),
                        "shown_position": order.index(key) + 1,
                        "shown_as": f"Output {output_letter(order.index(key))}",
                    }
                )
        return rows

    def demo_payload(self) -> dict:
        return {
            "id": "demo-1",
            "claim": "The city doubled its bike lanes in 2023.",
            "label": "half-true",
            "outputs": [
                {
                    "system": "gold",
                    "text": "The city added 40 km to an 80 km network: a 50% increase.",
                },
                {"system": "extractive", "text": "The 2023 report lists 40 km of new lanes."},
                {
                    "system": "abstractive",
                    "text": "Lanes grew by half, not double, and most are painted.",
                },
            ],
        }
