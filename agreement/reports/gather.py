"""Selectors: a project's current answers as a :class:`ReportInput`, and its data version.

A fixed number of queries whatever the number of annotations (memberships, items, current
annotations, annotations collected elsewhere, available judges, plus one for the items of a comparison project and one per
selected judge), so the reports layer has no N+1.

Which answers count:

* regular items only (control and qualification items check annotators, they are not data);
* the current version of each human annotation;
* coders as chosen by an :class:`AnnotatorFilter` (default: every annotator who answered, except
  members whose qualification is "disqualified"). Coders are named by their pseudonym; answers of
  a user who is no longer a member count as ``ann-removed-<user id>`` (as in exports);
* judge answers from ``llm_judges`` (:func:`judge_answers`), added as coders ``judge:<name>``
  when selected by name;
* annotations collected elsewhere (``annotation.ExternalAnnotation``) count as human coders
  ``ext:<name>`` (labelled "<name> (external)"), chosen and excluded like annotators;
* with ``ReportOptions.settings_version``, only the annotators' current answers made under that
  settings version (guidelines, config and crowd settings, ``projects.ProjectSettingsVersion``);
  external coders' answers, made elsewhere, are then left out (selected judges still count).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Exists, OuterRef, TextField, Value
from django.db.models.functions import Cast

from annotation import task_types
from annotation.flags import agreement_items
from annotation.models import Annotation, ExternalAnnotation, Item
from annotation.selectors import external_answers_version, project_counts
from annotation.task_types import TaskType
from projects.crowd import crowd_settings
from projects.models import Membership, Project

from .build import REPORT_VERSION
from .inputs import HUMAN, JUDGE, AnnotatorFilter, CoderInfo, ItemInfo, ReportInput, ReportOptions
from .sections import item_extra_for

JUDGE_PREFIX = "judge:"


# --- judge answers (llm_judges) ---------------------------------------------------------------


def available_judges(project: Project) -> list[str]:
    """Names of the project's judges with at least one parsed answer in ``project`` (one query:
    per judge, an index finds its first parsed answer; the results are not counted)."""
    from llm_judges.models import Judge, JudgeResult

    answered = JudgeResult.objects.filter(
        judge_id=OuterRef("pk"), item__project=project, status=JudgeResult.Status.OK
    )
    return sorted(
        Judge.objects.filter(project=project)
        .filter(Exists(answered))
        .values_list("name", flat=True)
        .distinct()
    )


def judge_answers(project: Project, keys: tuple[str, ...]) -> dict[str, dict[str, dict]]:
    """``{judge name: {item external id: answer}}`` for the selected judges of ``project``.

    Through :func:`llm_judges.selectors.judge_answers`: each judge's parsed answers for its
    current prompt version and the project's current setting (citation recovery: the masking
    mode), in the task type's answer shape. One query per selected judge, plus one.
    """
    from llm_judges.models import Judge
    from llm_judges.selectors import judge_answers as answers_of

    return {
        judge.name: answers_of(project=project, judge=judge)
        for judge in Judge.objects.filter(project=project, name__in=keys)
    }


def judge_presented_answers(
    project: Project, keys: tuple[str, ...]
) -> dict[str, dict[str, dict[str, dict]]]:
    """``{judge name: {presentation: {item external id: answer}}}``: the selected judges'
    answers in other presentations (position bias). One query per selected judge, plus one."""
    from llm_judges.models import Judge
    from llm_judges.selectors import judge_presented_answers as presented_of

    return {
        judge.name: presented_of(project=project, judge=judge)
        for judge in Judge.objects.filter(project=project, name__in=keys)
    }


def judges_version(project: Project) -> list:
    """Changes whenever :func:`judge_answers` could return something else (cache key part): a
    new, re-judged or deleted result, a run, a judge's prompt version changed. Reads maintained
    counters, never the results (:func:`llm_judges.selectors.judge_results_version`)."""
    from llm_judges.selectors import judge_results_version

    return judge_results_version(project=project)


# --- gathering -------------------------------------------------------------------------------


def _members(project: Project) -> dict[int, dict]:
    return {
        m["user_id"]: m
        for m in Membership.objects.filter(project=project).values(
            "user_id", "pseudonym", "qualification", "role", "user__username"
        )
    }


def shared_item_keys(project: Project, other_slug: str) -> set[str]:
    """External ids of ``project``'s regular items that the project ``other_slug`` also has."""
    return set(
        Item.objects.filter(project__slug=other_slug, kind=Item.Kind.REGULAR).values_list(
            "external_id", flat=True
        )
    )


def _items(project: Project, options: ReportOptions) -> tuple[dict[str, ItemInfo], dict[int, str]]:
    """The regular items as units (``{external id: ItemInfo}``) and ``{item pk: external id}``."""
    # Items researchers left out of agreement (a broken item) drop out here, the one place.
    item_rows = agreement_items(project=project).order_by("position", "id")
    if options.shared_with:
        keep = shared_item_keys(project, options.shared_with)
        item_rows = item_rows.filter(external_id__in=keep) if len(keep) < 5000 else item_rows
    else:
        keep = None
    items: dict[str, ItemInfo] = {}
    key_of: dict[int, str] = {}
    extra_of = item_extra_for(project.task_type)
    columns = ["id", "external_id", "group", "gold", "sampling_weight", "sampling_priority"]
    if extra_of is not None:
        # Payloads can be large (texts): read in chunks and keep only what the report needs.
        rows = item_rows.values_list(*columns, "payload", "prepared").iterator(chunk_size=2000)
    else:
        rows = ((*row, None, None) for row in item_rows.values_list(*columns))
    for pk, external_id, group, gold, weight, priority, payload, prepared in rows:
        if keep is not None and external_id not in keep:
            continue
        extra = extra_of(payload or {}, prepared or {}) if extra_of is not None else {}
        sampling = (weight, priority) if weight is not None and priority > 0 else None
        items[external_id] = ItemInfo(
            key=external_id, group=group, gold=gold, extra=extra, sampling=sampling
        )
        key_of[pk] = external_id
    return items, key_of


# Answers are read as their JSON text and parsed once per distinct text: equal answers (most of
# them, in label and set tasks) are one object, so the report's columns
# (:func:`agreement.reports.generic.field_columns`) read each distinct answer once and the
# worker holds each once. Past this many distinct texts, answers are parsed without the cache.
_PARSE_CACHE = 200_000
_CHUNK = 20_000
_ANSWER_TEXT = Cast("answer", TextField())


def parsed_answers(rows: Iterable[tuple]) -> Iterator[tuple]:
    """``rows`` whose last column is an answer's JSON text, with that text parsed; equal texts
    give the same (shared, not to be modified) object."""
    cache: dict[str, Any] = {}
    loads = json.loads
    for row in rows:
        text = row[-1]
        answer = cache.get(text)
        if answer is None:
            answer = loads(text) if text is not None else None
            if len(cache) < _PARSE_CACHE and text is not None:
                cache[text] = answer
        yield (*row[:-1], answer)


@dataclass
class _HumanAnswers:
    answers: dict[str, dict[str, dict]]  # coder -> unit -> answer
    labels: dict[str, str]  # coder -> username
    qualification: dict[str, str]  # coder -> membership qualification
    presented: dict[str, dict[str, dict]] = field(default_factory=dict)  # coder -> unit -> layout


def _human_answers(
    project: Project,
    key_of: Mapping[int, str],
    *,
    settings_version: int = 0,
    with_presentation: bool = False,
) -> _HumanAnswers:
    """Every current human answer on the units, by pseudonymous coder (of one settings version
    when ``settings_version`` is set), with each answer's presentation when
    ``with_presentation`` (task types that counterbalance the layout)."""
    members = _members(project)
    found = _HumanAnswers({}, {}, {})
    current = Annotation.objects.filter(
        item__project=project, item__kind=Item.Kind.REGULAR, is_current=True
    ).order_by("id")
    if settings_version:
        current = current.filter(settings_version=settings_version)
    layout = Cast("presentation", TextField()) if with_presentation else Value(None, TextField())
    rows = current.values_list("annotator_id", "item_id", layout, _ANSWER_TEXT)
    layouts: dict[str, Any] = {}
    for user_id, item_id, shown, answer in parsed_answers(rows.iterator(chunk_size=_CHUNK)):
        unit = key_of.get(item_id)
        if unit is None:
            continue
        member = members.get(user_id)
        coder = member["pseudonym"] if member else f"ann-removed-{user_id}"
        if coder not in found.labels:
            found.labels[coder] = member["user__username"] if member else coder
            found.qualification[coder] = member["qualification"] if member else ""
        found.answers.setdefault(coder, {})[unit] = answer
        if shown is not None and shown != "{}":
            if shown not in layouts:
                layouts[shown] = json.loads(shown)
            found.presented.setdefault(coder, {})[unit] = layouts[shown]
    return found


def _external_answers(project: Project, key_of: Mapping[int, str], found: _HumanAnswers) -> None:
    """Add every external coder's answers on the units to ``found`` (one query)."""
    rows = (
        ExternalAnnotation.objects.filter(item__project=project, item__kind=Item.Kind.REGULAR)
        .order_by("id")
        .values_list("coder__name", "item_id", _ANSWER_TEXT)
    )
    for name, item_id, answer in parsed_answers(rows.iterator(chunk_size=_CHUNK)):
        unit = key_of.get(item_id)
        if unit is None:
            continue
        coder = f"ext:{name}"
        if coder not in found.labels:
            found.labels[coder] = f"{name} (external)"
            found.qualification[coder] = ""
        found.answers.setdefault(coder, {})[unit] = answer


def _exclusion_reason(coder: str, qualification: str, annotator_filter: AnnotatorFilter) -> str:
    """Why the filter leaves this human coder out ("" when they count)."""
    if annotator_filter.include is not None:
        return "" if coder in annotator_filter.include else "not selected"
    if coder in annotator_filter.exclude:
        return "excluded"
    if (
        annotator_filter.exclude_disqualified
        and qualification == Membership.Qualification.DISQUALIFIED
    ):
        return "disqualified"
    return ""


def _judge_coders(
    project: Project,
    annotator_filter: AnnotatorFilter,
    extra_judges: Mapping[str, Mapping[str, dict]],
    items: Mapping[str, ItemInfo],
) -> tuple[list[CoderInfo], dict[str, dict[str, dict]], dict[str, dict[str, dict[str, dict]]]]:
    """The judges the filter asks for, as coders, their answers on the units, and their
    answers in other presentations (``{coder: {presentation: {unit: answer}}}``)."""
    judges = dict(extra_judges)
    wanted_judges = tuple(k for k in annotator_filter.judges if k not in judges)
    presented_by_key: dict[str, dict[str, dict[str, dict]]] = {}
    if wanted_judges:
        judges.update(judge_answers(project, wanted_judges))
        presented_by_key = judge_presented_answers(project, wanted_judges)
    coders, answers, presented = [], {}, {}
    for key in annotator_filter.judges:
        if key not in judges:
            continue
        coder = f"{JUDGE_PREFIX}{key}"
        coders.append(CoderInfo(id=coder, kind=JUDGE, label=key))
        answers[coder] = {u: a for u, a in judges[key].items() if u in items}
        other = {
            presentation: {u: a for u, a in by_unit.items() if u in items}
            for presentation, by_unit in presented_by_key.get(key, {}).items()
        }
        if other:
            presented[coder] = other
    return coders, answers, presented


def gather(
    *,
    project: Project,
    annotator_filter: AnnotatorFilter | None = None,
    options: ReportOptions | None = None,
    extra_judges: Mapping[str, Mapping[str, dict]] | None = None,
) -> ReportInput:
    """The project's answers, filtered to the coders that count, as plain structures.

    ``extra_judges`` (``{judge key: {item external id: answer}}``) adds judge answers that do not
    come from the database; they count when their key is in ``annotator_filter.judges``.
    """
    annotator_filter = annotator_filter or AnnotatorFilter()
    options = options or ReportOptions()
    task_type = task_types.get(project.task_type)
    items, key_of = _items(project, options)
    humans = _human_answers(
        project,
        key_of,
        settings_version=options.settings_version,
        with_presentation=type(task_type).presentation is not TaskType.presentation,
    )
    if not options.settings_version:  # made elsewhere: under none of this project's versions
        _external_answers(project, key_of, humans)

    answers = humans.answers
    coders: list[CoderInfo] = []
    excluded: list[dict] = []
    for coder in sorted(answers, key=lambda c: humans.labels[c]):
        reason = _exclusion_reason(coder, humans.qualification[coder], annotator_filter)
        if reason:
            excluded.append({"id": coder, "label": humans.labels[coder], "reason": reason})
            del answers[coder]
        else:
            coders.append(CoderInfo(id=coder, kind=HUMAN, label=humans.labels[coder]))
    judge_coders, judge_answers_, presented = _judge_coders(
        project, annotator_filter, extra_judges or {}, items
    )
    coders.extend(judge_coders)
    answers.update(judge_answers_)

    return ReportInput(
        task_type=project.task_type,
        measures=dict(task_type.measures_for(project.config or {})),
        items=items,
        coders=coders,
        answers=answers,
        config=dict(project.config or {}),
        options=options,
        excluded=excluded,
        available_judges=sorted(set(available_judges(project)) | set(extra_judges or {})),
        presented=presented,
        human_presented={c: p for c, p in humans.presented.items() if c in answers},
        active_sampling=crowd_settings(project).assignment_strategy == "active",
    )


def data_version(project: Project, options: ReportOptions | None = None) -> dict:
    """What a report of ``project`` depends on, as a small dict (a fixed number of small queries,
    none of them over the project's answers or items).

    Any new, revised or deleted answer moves the project's ``annotations_revision``, any new,
    deleted or re-imported item its ``items_revision`` (both kept by database triggers,
    :func:`annotation.selectors.project_counts`), any new, replaced or deleted external answer
    its external revision (:func:`annotation.selectors.external_answers_version`); a qualification change or a new member changes
    the membership digest; a config change moves ``project.updated_at``.
    """
    options = options or ReportOptions()
    counts = project_counts(project=project)
    external, external_revision = external_answers_version(project=project)
    members = sorted(
        Membership.objects.filter(project=project).values_list("user_id", "qualification", "role")
    )
    version = {
        "report": REPORT_VERSION,
        "annotations": [counts["annotations"], counts["annotations_revision"]],
        # The answers a report reads: each annotator's current one (not every version) and the
        # external coders' ("from N answers" on the pages).
        "answers": counts["submitted"] + external,
        "external": [external, external_revision],
        "items": [counts["items"], counts["items_revision"]],
        "members": [list(m) for m in members],
        "project": project.updated_at.isoformat() if project.updated_at else None,
        "judges": judges_version(project),
    }
    if options.shared_with:
        other = Project.objects.filter(slug=options.shared_with).first()
        other_counts = project_counts(project=other) if other is not None else {}
        version["shared_with"] = [other_counts.get("items"), other_counts.get("items_revision")]
    return version
