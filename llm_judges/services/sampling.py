"""Active sampling: each regular item's weight and priority from its judges' uncertainty.

A project whose crowd setting ``assignment_strategy`` is "active" deals its items highest
``Item.sampling_priority`` first (:mod:`annotation.services`). :func:`sampling_weights_compute`
sets those priorities from the judge results stored so far (:mod:`metrics.active_sampling`):

* a result's own uncertainty, where its judge kind gives one (``uncertainty(detail)`` of the
  backend: an NLI classifier's probabilities, an embedding similarity's margin to the
  threshold; an LLM reply's token log-probabilities, where the server returned them: one minus
  the probability of its answer, :mod:`llm_judges.backends.logprobs`);
* the disagreement between an item's results (judges, or one judge in both presentations): the
  share of pairs of answers that differ. Generic over task types: answers are compared as stored.

An item's uncertainty is the mean of the signals it has; an item with none gets the mean weight.
The weight mixes it with a uniform floor, ``w = (1 − floor) · u / mean(u) + floor``, and the
priority is ``w / U`` with ``U`` from the item's shuffle key (drawn at import, before any judge
or human saw the item). Weights are fixed once humans start: recomputing them afterwards would
make the probabilities of the items already dealt unknowable, so it is refused.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from annotation.models import SHUFFLE_KEYS, Assignment, Item
from llm_judges.backends import embedding, logprobs, nli
from llm_judges.models import JudgeResult
from llm_judges.services.errors import JudgeError
from metrics.active_sampling import DEFAULT_FLOOR, priorities, sampling_weights
from projects.crowd import crowd_settings
from projects.models import Project

ACTIVE = "active"  # the crowd setting assignment_strategy that deals by these priorities

# A judge kind's uncertainty about one result, read from the result's ``detail``.
UNCERTAINTY: dict[str, Callable[[Mapping[str, Any]], float | None]] = {
    "nli": nli.uncertainty,
    "embedding": embedding.uncertainty,
    "llm": logprobs.uncertainty,
}


@dataclass(frozen=True)
class SamplingWeights:
    items: int  # regular items weighted
    with_uncertainty: int  # of which the judges gave an uncertainty for
    floor: float


def _disagreement(answers: list[str]) -> float | None:
    pairs = list(combinations(answers, 2))
    if not pairs:
        return None
    return sum(a != b for a, b in pairs) / len(pairs)


def item_uncertainties(*, project_id: int) -> dict[int, float]:
    """{item id: uncertainty} for the project's regular items that have any signal."""
    own: dict[int, list[float]] = defaultdict(list)
    answers: dict[int, list[str]] = defaultdict(list)
    rows = JudgeResult.objects.filter(
        item__project_id=project_id, item__kind=Item.Kind.REGULAR, status=JudgeResult.Status.OK
    ).values_list("item_id", "judge__kind", "answer", "detail")
    for item_id, kind, answer, detail in rows.iterator(chunk_size=2000):
        read = UNCERTAINTY.get(kind)
        value = read(detail or {}) if read is not None else None
        if value is not None:
            own[item_id].append(value)
        answers[item_id].append(json.dumps(answer, sort_keys=True))
    result = {}
    for item_id in own.keys() | answers.keys():
        signals = []
        if own[item_id]:
            signals.append(sum(own[item_id]) / len(own[item_id]))
        disagreement = _disagreement(answers[item_id])
        if disagreement is not None:
            signals.append(disagreement)
        if signals:
            result[item_id] = sum(signals) / len(signals)
    return result


def sampling_weights_compute(*, project_id: int, floor: float = DEFAULT_FLOOR) -> SamplingWeights:
    """Set every regular item's ``sampling_weight`` and ``sampling_priority``; refused once any
    regular item has been dealt to a human."""
    if not 0 < floor <= 1:
        raise JudgeError("The uniform floor must be above 0 and at most 1.", field="floor")
    if Assignment.objects.filter(project_id=project_id, item__kind=Item.Kind.REGULAR).exists():
        raise JudgeError(
            "Items have already been dealt to annotators: the sampling weights are fixed once "
            "humans start, or the estimate's probabilities would be unknown.",
            code="conflict",
        )
    uncertain = item_uncertainties(project_id=project_id)
    items = list(
        Item.objects.filter(project_id=project_id, kind=Item.Kind.REGULAR)
        .order_by("id")
        .only("id", "shuffle_key")
    )
    weights = sampling_weights([uncertain.get(item.id) for item in items], floor=floor)
    keys = priorities(weights, [(item.shuffle_key + 1) / SHUFFLE_KEYS for item in items])
    for item, weight, key in zip(items, weights, keys, strict=True):
        item.sampling_weight = float(weight)
        item.sampling_priority = float(key)
    Item.objects.bulk_update(items, ["sampling_weight", "sampling_priority"], batch_size=2000)
    return SamplingWeights(
        items=len(items), with_uncertainty=sum(i.id in uncertain for i in items), floor=floor
    )


@dataclass(frozen=True)
class SamplingStatus:
    """What the judges page says of active sampling: whether the project deals actively, how
    many of its regular items have a weight, and whether humans have started (weights fixed)."""

    active: bool
    items: int
    weighed: int
    dealt: bool


def sampling_status(*, project: Project) -> SamplingStatus:
    """Three small queries; nothing when the project does not deal actively."""
    if crowd_settings(project).assignment_strategy != ACTIVE:
        return SamplingStatus(active=False, items=0, weighed=0, dealt=False)
    regular = Item.objects.filter(project=project, kind=Item.Kind.REGULAR)
    return SamplingStatus(
        active=True,
        items=regular.count(),
        weighed=regular.filter(sampling_weight__isnull=False).count(),
        dealt=Assignment.objects.filter(project=project, item__kind=Item.Kind.REGULAR).exists(),
    )


def sampling_weights_after_run(*, project_id: int) -> SamplingWeights | None:
    """After a judge run ends: a project that deals actively and has dealt no regular item to a
    human yet gets its weights from every judge answer stored so far (None otherwise)."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None or crowd_settings(project).assignment_strategy != ACTIVE:
        return None
    try:
        return sampling_weights_compute(project_id=project_id)
    except JudgeError:  # humans have started: the weights stay as they were dealt under
        return None
