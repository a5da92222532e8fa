"""What a report is computed from: plain structures, no Django.

:mod:`agreement.reports.gather` fills a :class:`ReportInput` from the database; tests, the bench
and any other source (judge answers from a file, another platform's export) can build one by
hand. Answers are ``{coder_id: {unit_id: answer}}`` with ``answer`` the task type's answer dict
(``{"sentences": [0, 2], "none": False, "helpfulness": 70}`` for citation recovery); unit ids are
item external ids, so two projects over the same items share unit ids.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

HUMAN = "human"
JUDGE = "judge"

# Fixed so that a report recomputed from the same data shows the same intervals.
BOOTSTRAP_SEED = 13


@dataclass(frozen=True)
class AnnotatorFilter:
    """Which coders count.

    * ``include``: when given (even empty), exactly these human pseudonyms count, whatever their
      qualification (an explicit choice overrides the disqualification default);
    * otherwise every annotator who answered counts, minus ``exclude``, minus those whose
      membership is disqualified when ``exclude_disqualified`` (the default);
    * ``judges``: judge keys whose answers are added as coders (see
      :func:`agreement.reports.gather.judge_answers`).
    """

    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    exclude_disqualified: bool = True
    judges: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Canonical order, so that equal filters have equal cache keys.
        if self.include is not None:
            object.__setattr__(self, "include", tuple(sorted(set(self.include))))
        object.__setattr__(self, "exclude", tuple(sorted(set(self.exclude))))
        object.__setattr__(self, "judges", tuple(sorted(set(self.judges))))


@dataclass(frozen=True)
class ReportParameter:
    """A number a task type's report section lets researchers set on the dashboard (e.g.
    citation recovery's transparency threshold); declared when the section is registered."""

    name: str
    label: str
    default: float
    minimum: float
    maximum: float
    step: float = 0.05

    def read(self, value: float) -> float:
        if not self.minimum <= value <= self.maximum:
            raise ValueError(
                f"{self.name} must be a number between {self.minimum:g} and {self.maximum:g}"
            )
        return float(value)


@dataclass(frozen=True)
class ReportOptions:
    """Computation settings that change figures (and therefore the cache key).

    ``parameters`` holds the values of the task type's :class:`ReportParameter` s that differ
    from their defaults, as sorted ``(name, value)`` pairs; sections read them with
    :meth:`parameter`."""

    n_boot: int = 1000
    confidence: float = 0.95
    shared_with: str = ""  # restrict to items whose external id is also in this project
    parameters: tuple[tuple[str, float], ...] = ()
    # Only the human answers made under this settings version (0: every version).
    settings_version: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.n_boot <= 100_000:
            raise ValueError("n_boot must lie between 1 and 100000")
        if isinstance(self.settings_version, bool) or not 0 <= self.settings_version <= 2**31:
            raise ValueError("settings_version must be a version number (0: every version)")
        object.__setattr__(self, "parameters", tuple(sorted(dict(self.parameters).items())))

    def parameter(self, spec: ReportParameter) -> float:
        return dict(self.parameters).get(spec.name, spec.default)


def filter_key(annotator_filter: AnnotatorFilter, options: ReportOptions) -> str:
    """A stable digest of the filter and options (cache key part)."""
    text = json.dumps(
        {"filter": asdict(annotator_filter), "options": asdict(options)}, sort_keys=True
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class ItemInfo:
    """One unit: its external id, group (e.g. "gpt-4 / human"), gold (may be None) and the
    task-specific facts its report module asked for (``extra``, see
    :mod:`agreement.reports.sections`)."""

    key: str
    group: str = ""
    gold: Any = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    # Active sampling: (weight, priority) where the item was weighed (Item.sampling_weight,
    # Item.sampling_priority; metrics.active_sampling), else None.
    sampling: tuple[float, float] | None = None


@dataclass(frozen=True)
class CoderInfo:
    """A coder: ``id`` is the pseudonym (humans) or ``judge:<key>``; ``label`` for display."""

    id: str
    kind: str = HUMAN
    label: str = ""


@dataclass
class ReportInput:
    """Everything a report needs, already filtered to the coders that count."""

    task_type: str
    measures: Mapping[str, str]
    items: dict[str, ItemInfo]
    coders: list[CoderInfo]
    answers: dict[str, dict[str, dict]]
    config: dict = field(default_factory=dict)
    options: ReportOptions = field(default_factory=ReportOptions)
    excluded: list[dict] = field(default_factory=list)  # [{"id", "label", "reason"}]
    available_judges: list[str] = field(default_factory=list)
    # Judge coders' answers in other presentations of the items (ranking: outputs reversed),
    # ``{coder: {presentation: {unit: answer}}}``: their self-agreement measures position bias.
    presented: dict[str, dict[str, dict[str, dict]]] = field(default_factory=dict)
    # How each human answer's item was laid out for its coder where the task type counterbalances
    # it (``TaskType.presentation``: sides, output order), ``{coder: {unit: presentation}}``:
    # the human position effect.
    human_presented: dict[str, dict[str, dict]] = field(default_factory=dict)
    # Answer fields as reliability columns, built once per report input and shared by the
    # generic table and the task type's section (:func:`agreement.reports.generic.columns_of`).
    columns_cache: dict = field(default_factory=dict, repr=False, compare=False)
    # The project deals its items actively (crowd assignment_strategy "active"): the estimates
    # weight each human label by the item's recorded probability (agreement.reports.estimates).
    active_sampling: bool = False

    def coder_ids(self, kind: str | None = None) -> list[str]:
        return [c.id for c in self.coders if kind is None or c.kind == kind]

    def answers_of(self, kind: str) -> dict[str, dict[str, dict]]:
        ids = set(self.coder_ids(kind))
        return {c: a for c, a in self.answers.items() if c in ids}
