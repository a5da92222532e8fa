"""Reading and writing :class:`~task_types.argument_structure.models.StoredMetrics`: the metrics
an export writes of each human answer, keyed by what they depend on (see the models module)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson
from django.db.models import TextField
from django.db.models.functions import Cast

from .models import METRICS_VERSION, StoredMetrics
from .serializers import METRIC_KEYS

Metrics = tuple[dict, dict | None]  # the answer's metrics, the draft's (None: no draft)


def item_basis(item: Any, reference: list, scorer: str) -> bytes:
    """What an item gives every stored key of its answers: its evidence, draft and reference, the
    scorer's name and the version of the metrics."""
    payload = item.payload
    return orjson.dumps(
        [METRICS_VERSION, scorer, payload.get("evidence"), reference, payload.get("structure")]
    )


def metrics_key(basis: bytes, answer: Mapping) -> str:
    """The stored key of ``answer``'s metrics on the item of ``basis`` (:func:`item_basis`)."""
    digest = hashlib.sha256(basis)
    digest.update(orjson.dumps([answer["steps"], answer.get("evidence")]))
    return digest.hexdigest()


def _values(metrics: Mapping) -> list:
    if tuple(metrics) != METRIC_KEYS:  # the row's columns; a list keeps their order in any JSON
        raise ValueError(f"Unexpected metric keys: {list(metrics)}")
    return list(metrics.values())


def read_metrics(keys: Mapping[int, str]) -> dict[int, Metrics]:
    """The stored metrics of the answers ``keys`` names (answer id -> key), those stored under
    that key only: a stale one (another key) counts as missing."""
    found: dict[int, Metrics] = {}
    stored = (
        StoredMetrics.objects.filter(annotation_id__in=list(keys))
        .annotate(values_json=Cast("values", TextField()))  # decoded by orjson, not json
        .values_list("annotation_id", "key", "values_json")
    )
    for annotation_id, key, values in stored:
        if keys[annotation_id] == key:
            answer, draft = orjson.loads(values)
            found[annotation_id] = (
                dict(zip(METRIC_KEYS, answer, strict=True)),
                None if draft is None else dict(zip(METRIC_KEYS, draft, strict=True)),
            )
    return found


def write_metrics(computed: Mapping[int, tuple[str, Metrics]]) -> None:
    """Store (or replace) the metrics of these answers: answer id -> (key, metrics)."""
    StoredMetrics.objects.bulk_create(
        [
            StoredMetrics(
                annotation_id=annotation_id,
                key=key,
                values=[_values(answer), None if draft is None else _values(draft)],
            )
            for annotation_id, (key, (answer, draft)) in computed.items()
        ],
        batch_size=1000,
        update_conflicts=True,
        unique_fields=["annotation"],
        update_fields=["key", "values"],
    )
