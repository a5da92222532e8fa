"""Reads of the item browser: a project's items as a paged, sortable, filterable table, one
item with every coder's answer, and finding an item by the reference annotators quote.

Paging is by keyset (the last row's sort value and id, in ``after``), never by offset, and no
page counts the project's items: "n items" comes from the maintained counters
(``annotation.selectors.project_counts``). A page costs a fixed number of queries whatever the
project's size (``tests/studies/test_item_browser.py`` counts them at 10 and 200 items).

Status and answers so far are the item's own maintained columns (``assigned_count``,
``submitted_count``); agreement, score against gold and a judge's agreement with the humans are
read from :class:`studies.models.ItemFigures` and :class:`studies.models.ItemJudgeFigures`,
which ``studies.services.item_figures`` keeps in step with the project's data version.

Security: researchers only (the views call ``project_for`` first); these reads show gold, every
annotator's answers (by pseudonym) and judges' raw replies.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypedDict

from django.db.models import (
    Count,
    Exists,
    F,
    FilteredRelation,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
)
from django.db.models.fields.tuple_lookups import (  # Django's row comparisons (5.2)
    Tuple,
    TupleGreaterThan,
    TupleGreaterThanOrEqual,
    TupleLessThan,
    TupleLessThanOrEqual,
)
from django.db.models.functions import Cast, Coalesce

from annotation import task_types
from annotation.models import Annotation, ExternalAnnotation, Item, ItemExclusion, ItemFlag
from annotation.references import ALPHABET, LENGTH, item_reference
from annotation.selectors import project_counts
from core.errors import Refusal
from llm_judges.models import Judge, JudgeResult
from projects.models import Membership, Project
from studies.models import ItemFigures, ItemJudgeFigures

PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
STATUSES = {"open": "Open", "in_progress": "In progress", "complete": "Complete"}
FLAGGED = {
    "open": "with an open flag",
    "any": "flagged or skipped",
    "excluded": "left out of agreement",
}
VERDICTS = {
    "agrees": "agrees with the humans' majority",
    "disagrees": "disagrees with the humans' majority",
    "unjudged": "not judged",
}
SORTS = {
    "position": "Queue order",
    "external_id": "External id",
    "answers": "Answers so far",
    "agreement": "Agreement",
    "gold": "Score against gold",
    "judge": "Judge vs humans",
}
# sort -> (column or lookup, may be empty)
_SORT_KEYS = {
    "position": ("position", False),
    "external_id": ("external_id", False),
    "answers": ("submitted_count", False),
    "agreement": ("browser_figures__agreement", True),
    "gold": ("browser_figures__gold_score", True),
    "judge": ("judge_share", True),
}
KINDS = dict(Item.Kind.choices)
_REFERENCE = re.compile(rf"#[{ALPHABET}]{{{LENGTH}}}|[{ALPHABET}]{{{LENGTH}}}")


class BrowserRefused(Refusal):
    """A browser request that cannot be answered (a bad filter value, an unknown judge)."""


# --- judges ------------------------------------------------------------------------------------


def project_judges(*, project: Project) -> QuerySet[Judge]:
    """The project's own judges (the one place the browser asks which judges it has)."""
    return Judge.objects.filter(project=project).order_by("name")


# --- the filter --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemFilter:
    """What the table shows: every field optional (empty: no condition)."""

    q: str = ""
    status: str = ""
    kind: str = ""
    group: str = ""
    answers_min: int | None = None
    answers_max: int | None = None
    agreement_min: float | None = None
    agreement_max: float | None = None
    gold_min: float | None = None
    gold_max: float | None = None
    judge: str = ""
    verdict: str = ""
    flagged: str = ""
    sort: str = "position"
    descending: bool = False

    def query(self) -> dict[str, str]:
        """The filter as query parameters (empty ones left out), for links and the export."""
        out: dict[str, str] = {}
        for name in FILTER_FIELDS:
            value = getattr(self, name)
            if value is None or value == "" or value is False:
                continue
            if name == "sort" and value == "position":
                continue
            out[name] = "1" if value is True else str(value)
        return out


FILTER_FIELDS = tuple(ItemFilter.__dataclass_fields__)


def _number(params: Mapping[str, str], name: str, kind: type, low: float, high: float | None):
    text = (params.get(name) or "").strip()
    if not text:
        return None
    try:
        value = kind(text)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise BrowserRefused(f"{name} must be {what}, not {text[:40]!r}.", field=name) from None
    if value != value or value < low or (high is not None and value > high):  # NaN, range
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise BrowserRefused(f"{name} must be {bounds}.", field=name)
    return value


def _choice(params: Mapping[str, str], name: str, choices: Mapping[str, str]) -> str:
    value = (params.get(name) or "").strip()
    if value and value not in choices:
        raise BrowserRefused(
            f"{name} must be one of {', '.join(choices)}, not {value[:40]!r}.", field=name
        )
    return value


def item_filter_from_query(params: Mapping[str, str]) -> ItemFilter:
    """The filter in a request's query parameters; a bad value is refused naming its field."""
    text = {}
    for name in ("q", "group", "judge"):
        value = (params.get(name) or "").strip()
        if len(value) > 200:
            raise BrowserRefused(f"{name} is longer than 200 characters.", field=name)
        text[name] = value
    sort = _choice(params, "sort", SORTS) or "position"
    descending = (params.get("descending") or "").strip()
    if descending not in ("", "0", "1"):
        raise BrowserRefused("descending must be 0 or 1.", field="descending")
    verdict = _choice(params, "verdict", VERDICTS)
    if (verdict or sort == "judge") and not text["judge"]:
        field_name = "verdict" if verdict else "sort"
        raise BrowserRefused("Choose a judge to compare with the humans.", field=field_name)
    return ItemFilter(
        q=text["q"],
        status=_choice(params, "status", STATUSES),
        kind=_choice(params, "kind", KINDS),
        group=text["group"],
        answers_min=_number(params, "answers_min", int, 0, None),
        answers_max=_number(params, "answers_max", int, 0, None),
        agreement_min=_number(params, "agreement_min", float, 0, 1),
        agreement_max=_number(params, "agreement_max", float, 0, 1),
        gold_min=_number(params, "gold_min", float, 0, 1),
        gold_max=_number(params, "gold_max", float, 0, 1),
        judge=text["judge"],
        verdict=verdict,
        flagged=_choice(params, "flagged", FLAGGED),
        sort=sort,
        descending=descending == "1",
    )


def _judge_named(project: Project, name: str) -> Judge:
    judge = project_judges(project=project).filter(name=name).first()
    if judge is None:
        raise BrowserRefused(f"This project has no judge named {name[:100]!r}.", field="judge")
    return judge


def reference_of(text: str) -> str | None:
    """``text`` as an item reference ("#XBSVYF", or the six characters without "#", upper
    case), or None when it cannot be one."""
    text = text.strip()
    if text.startswith("#"):
        text = text.upper()
    if _REFERENCE.fullmatch(text) is None:
        return None
    return text if text.startswith("#") else f"#{text}"


def items_with_reference(*, project: Project, reference: str) -> list[int]:
    """Ids of the project's items whose reference is ``reference`` (almost always one, or
    none). The reference is a keyed hash of the id, so this computes it for each of the
    project's item ids (one query; about 0.3 s at 100k items, only for a reference search)."""
    found = []
    ids = Item.objects.filter(project=project).values_list("id", flat=True)
    for item_id in ids.iterator(chunk_size=20_000):
        if item_reference(item_id=item_id) == reference:
            found.append(item_id)
    return found


_FLAGGED_CONDITIONS = {
    "open": lambda: Exists(ItemFlag.objects.filter(item=OuterRef("pk"), state="open")),
    "any": lambda: Exists(ItemFlag.objects.filter(item=OuterRef("pk"))),
    "excluded": lambda: Q(exclusion__isnull=False),
}


def _by_kind_group_flags(items: QuerySet[Item], f: ItemFilter) -> QuerySet[Item]:
    if f.kind:
        items = items.filter(kind=f.kind)
    if f.group:
        items = items.filter(group=f.group)
    if f.flagged:
        items = items.filter(_FLAGGED_CONDITIONS[f.flagged]())
    return items


def _filtered(project: Project, item_filter: ItemFilter, judge: Judge | None) -> QuerySet[Item]:
    items = Item.objects.filter(project=project)
    if judge is not None:
        # The project in the join too (the judge's rows are all the project's): a verdict
        # filter or the judge's sort then walks ``itemjudgefigures_sort_idx`` (project, judge,
        # share, item) instead of reading every judge figure.
        items = items.annotate(
            judge_figures=FilteredRelation(
                "browser_judge_figures",
                condition=Q(browser_judge_figures__judge=judge)
                & Q(browser_judge_figures__project=project),
            )
        ).annotate(
            # every read of the judge's figure through these names: each filter() naming the
            # relation itself would join the judge's figures once more
            judge_share=F("judge_figures__humans_agreeing"),
            judge_item=F("judge_figures__item"),
        )
    f = item_filter
    if f.q:
        text = Q(external_id__icontains=f.q) | Q(payload_text__icontains=f.q)
        reference = reference_of(f.q)
        if reference is not None:
            text |= Q(pk__in=items_with_reference(project=project, reference=reference))
        items = items.annotate(payload_text=Cast("payload", TextField())).filter(text)
    items = _by_status(items, f.status, needed=project.annotators_per_item)
    items = _by_kind_group_flags(items, f)
    ranges = (
        ("submitted_count", f.answers_min, f.answers_max),
        ("browser_figures__agreement", f.agreement_min, f.agreement_max),
        ("browser_figures__gold_score", f.gold_min, f.gold_max),
    )
    for lookup, low, high in ranges:
        if low is not None:
            items = items.filter(**{f"{lookup}__gte": low})
        if high is not None:
            items = items.filter(**{f"{lookup}__lte": high})
    if any(v is not None for figure in ("agreement", "gold") for v in _figure_range(f, figure)):
        # A range over the item figures keeps only items with figures (an inner join): naming
        # the figures' project lets PostgreSQL read them by ``itemfigures_agreement_idx`` /
        # ``itemfigures_gold_idx`` (project, value, item), in the sort's order when the table is
        # sorted by that figure, instead of every project's figures joined to every item.
        items = items.filter(browser_figures__project=project)
    # judge_share and judge_item are annotations (above), which django-stubs cannot see
    if f.verdict == "agrees":
        items = items.filter(judge_share__gt=0.5)  # type: ignore[misc]
    elif f.verdict == "disagrees":
        items = items.filter(judge_share__lte=0.5)  # type: ignore[misc]
    elif f.verdict == "unjudged":
        items = items.filter(judge_item__isnull=True)  # type: ignore[misc]
    return items


def _figure_range(f: ItemFilter, figure: str) -> tuple[Any, Any]:
    """(low, high) of the filter's range over an item figure (``agreement``, ``gold``); both
    None for anything else."""
    if figure == "agreement":
        return f.agreement_min, f.agreement_max
    if figure == "gold":
        return f.gold_min, f.gold_max
    return None, None


def _by_status(items: QuerySet[Item], status: str, *, needed: int) -> QuerySet[Item]:
    """Items complete (``needed`` answers), in progress (assigned or answered, not complete) or
    open (neither); all items for any other status."""
    if status == "complete":
        return items.filter(submitted_count__gte=needed)
    if status == "in_progress":
        return items.filter(Q(assigned_count__gt=0) | Q(submitted_count__gt=0)).filter(
            submitted_count__lt=needed
        )
    if status == "open":
        return items.filter(assigned_count=0, submitted_count=0)
    return items


# --- a page ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemRow:
    id: int
    external_id: str
    reference: str
    kind: str
    group: str
    status: str
    answers: int
    headline: str
    agreement: float | None
    gold_score: float | None
    judge_agreement: float | None  # share of counted humans with the judge's answer
    judge_verdict: str  # a key of VERDICTS, or "" (no judge chosen, or no human answer)
    open_flags: int = 0
    excluded: bool = False
    # Active sampling: the item's recorded weight and priority (Item.sampling_*); with the
    # threshold τ of the labelled prefix, its inclusion probability is min(1, weight / τ).
    sampling_weight: float | None = None
    sampling_priority: float = 0.0
    sort_value: Any = field(repr=False, default=None)


@dataclass(frozen=True)
class ItemPage:
    rows: list[ItemRow]
    next_after: str | None  # cursor of the next page, None on the last one
    items_in_project: int
    judge: str
    # The page looked at ``SEARCH_SPAN`` items in the table's order without filling up: the rows
    # are the matches among them, and the next page looks on from the last one looked at.
    searched: int = 0


def _encode_cursor(value: Any, item_id: int) -> str:
    raw = json.dumps([value, item_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(text: str, sort: str) -> tuple[Any, int]:
    bad = BrowserRefused("after is not a page position of this table.", field="after")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        value, item_id = json.loads(raw)
    except (ValueError, TypeError):
        raise bad from None
    if type(item_id) is not int:
        raise bad
    expected = {"external_id": (str,), "position": (int,), "answers": (int,)}.get(
        sort, (int, float, type(None))
    )
    if type(value) not in expected:
        raise bad
    return value, item_id


# The item's id as the index of each sort holds it (the figures' own item column for a figure):
# the keyset's (value, id) comparison is then a condition on that index, which starts the walk
# at the cursor instead of reading every item with the same value before it.
_TIE_KEYS = {
    "agreement": "browser_figures__item",
    "gold": "browser_figures__item",
    "judge": "judge_item",
}


def _beyond(sort: str, descending: bool, value: Any, item_id: int, *, inclusive: bool = False):
    """(sort value, id) after (value, id) in the table's order, as one row comparison; with
    ``inclusive`` also the row itself. ``value`` is not empty."""
    key, _ = _SORT_KEYS[sort]
    pair = Tuple(F(key), F(_TIE_KEYS.get(sort, "id")))
    if descending:
        return (TupleLessThanOrEqual if inclusive else TupleLessThan)(pair, (value, item_id))
    return (TupleGreaterThanOrEqual if inclusive else TupleGreaterThan)(pair, (value, item_id))


def _after(sort: str, descending: bool, value: Any, item_id: int) -> Q:
    key, nullable = _SORT_KEYS[sort]
    beyond = "lt" if descending else "gt"
    if value is None:  # already among the empty values, which come last
        return Q(**{f"{key}__isnull": True, f"id__{beyond}": item_id})
    after = Q(_beyond(sort, descending, value, item_id))
    if nullable:
        after |= Q(**{f"{key}__isnull": True})
    return after


def _order(sort: str, descending: bool, *, without_empty: bool = False) -> list:
    """The table's order; ``without_empty``: the filter leaves no empty sort value, so where
    the empty values would go does not matter, and a descending order is a backward walk of the
    figure's index (which keeps them last going up: first going down)."""
    key, nullable = _SORT_KEYS[sort]
    if descending:
        return [F(key).desc(nulls_last=True if not without_empty else None), "-id"]
    return [F(key).asc(nulls_last=True), "id"]


def _sort_value_required(item_filter: ItemFilter) -> bool:
    """Whether the filter keeps only items with a sort value (a range over the sorted figure,
    or a verdict on the sorted judge)."""
    f = item_filter
    if f.sort in ("agreement", "gold"):
        return any(bound is not None for bound in _figure_range(f, f.sort))
    if f.sort == "judge":
        return f.verdict in ("agrees", "disagrees")
    return False


_ROW_FIELDS = (
    "id",
    "external_id",
    "kind",
    "group",
    "position",
    "payload",
    "assigned_count",
    "submitted_count",
    "browser_figures__agreement",
    "browser_figures__gold_score",
    "sampling_weight",
    "sampling_priority",
)


def _status(assigned: int, submitted: int, needed: int) -> str:
    if submitted >= needed:
        return "complete"
    if assigned or submitted:
        return "in_progress"
    return "open"


def _verdict(share: float | None, judged: bool) -> str:
    if not judged:
        return "unjudged"
    if share is None:
        return ""
    return "agrees" if share > 0.5 else "disagrees"


# A page whose filter has a condition no index serves in the table's order (status, answers,
# text, not judged) looks at no more than this many items in that order: a filter that few items
# match would otherwise read the whole project to fill a page (0.3 s at 100k items for an empty
# page). The page shows the matches among them and, when it is not full, leads on from the last
# item it looked at (``ItemPage.searched``). Orders without an index walk (answers, a figure
# without a range over it) are not bounded.
SEARCH_SPAN = 5000


def _needs_search_span(f: ItemFilter) -> bool:
    # open items in queue order have their own index (``item_open_status_idx``)
    status_indexed = f.status == "open" and f.sort == "position"
    unindexed = (
        (f.status and not status_indexed)
        or f.q
        or f.answers_min is not None
        or f.answers_max is not None
        or f.verdict == "unjudged"
    )
    walked = f.sort in ("position", "external_id") or _sort_value_required(f)
    return bool(unindexed) and walked


def _search_end(
    project: Project, item_filter: ItemFilter, judge: Judge | None, after: tuple[Any, int] | None
) -> tuple[Any, int] | None:
    """The last of the next ``SEARCH_SPAN`` items in the table's order (sort value, id), or
    None when fewer are left. One query, on the order's own index alone (the items' queue or
    external ids, the figures in a range, the judge's verdicts): a walk ``SEARCH_SPAN`` long."""
    f = item_filter
    rows: QuerySet[Any]
    if f.sort in ("agreement", "gold"):
        column = "agreement" if f.sort == "agreement" else "gold_score"
        low, high = _figure_range(f, f.sort)
        rows = ItemFigures.objects.filter(project=project)
        if low is not None:
            rows = rows.filter(**{f"{column}__gte": low})
        if high is not None:
            rows = rows.filter(**{f"{column}__lte": high})
        pair = (column, "item_id")
    elif f.sort == "judge":
        share = Q(humans_agreeing__gt=0.5) if f.verdict == "agrees" else Q(humans_agreeing__lte=0.5)
        rows = ItemJudgeFigures.objects.filter(share, project=project, judge=judge)
        pair = ("humans_agreeing", "item_id")
    else:
        rows = Item.objects.filter(project=project)
        pair = (_SORT_KEYS[f.sort][0], "id")
    keys = Tuple(F(pair[0]), F(pair[1]))
    if after is not None:
        rows = rows.filter((TupleLessThan if f.descending else TupleGreaterThan)(keys, after))
    order = [F(name).desc() if f.descending else F(name).asc() for name in pair]
    found = list(rows.order_by(*order).values_list(*pair)[SEARCH_SPAN - 1 : SEARCH_SPAN])
    return (found[0][0], found[0][1]) if found else None


def _up_to(sort: str, descending: bool, value: Any, item_id: int) -> Q:
    """Items up to (value, id) in the table's order (a non-empty value: the walks that are
    bounded have one), which ends the index walk there."""
    return Q(_beyond(sort, not descending, value, item_id, inclusive=True))


def _rows(
    project: Project,
    item_filter: ItemFilter,
    judge: Judge | None,
    *,
    after: tuple[Any, int] | None,
    limit: int,
    headline: bool = True,
) -> tuple[list[ItemRow], tuple[Any, int] | None]:
    """Up to ``limit`` rows after ``after``, and where the search for more stopped (sort value,
    id) when it looked at ``SEARCH_SPAN`` items without finding ``limit`` (None: it did not
    stop short; fewer rows than ``limit`` then mean the last of them)."""
    task_type = task_types.get(project.task_type)
    items = _filtered(project, item_filter, judge)
    sort, descending = item_filter.sort, item_filter.descending
    if after is not None:
        items = items.filter(_after(sort, descending, *after))
    end = None
    if _needs_search_span(item_filter):
        end = _search_end(project, item_filter, judge, after)
        if end is not None:
            items = items.filter(_up_to(sort, descending, *end))
    fields = [f for f in _ROW_FIELDS if headline or f != "payload"]
    if judge is not None:
        fields += ["judge_share", "judge_item"]
    key = _SORT_KEYS[sort][0]
    if key not in fields:
        fields.append(key)
    needed = project.annotators_per_item
    rows = []
    items = items.annotate(
        open_flags=Coalesce(
            Subquery(
                ItemFlag.objects.filter(item=OuterRef("pk"), state="open")
                .values("item")
                .annotate(n=Count("id"))
                .values("n")
            ),
            0,
        ),
        excluded=Exists(ItemExclusion.objects.filter(item=OuterRef("pk"))),
    )
    fields += ["open_flags", "excluded"]
    order = _order(sort, descending, without_empty=_sort_value_required(item_filter))
    for r in items.order_by(*order).values(*fields)[:limit]:
        share = r.get("judge_share")
        rows.append(
            ItemRow(
                id=r["id"],
                external_id=r["external_id"],
                reference=item_reference(item_id=r["id"]),
                kind=r["kind"],
                group=r["group"],
                status=_status(r["assigned_count"], r["submitted_count"], needed),
                answers=r["submitted_count"],
                headline=task_type.headline(r["payload"] or {}) if headline else "",
                agreement=r["browser_figures__agreement"],
                gold_score=r["browser_figures__gold_score"],
                judge_agreement=share,
                judge_verdict=_verdict(share, r.get("judge_item") is not None)
                if judge is not None
                else "",
                open_flags=r["open_flags"],
                excluded=r["excluded"],
                sampling_weight=r["sampling_weight"],
                sampling_priority=r["sampling_priority"],
                sort_value=r[key],
            )
        )
    return rows, (end if len(rows) < limit else None)


def item_page(
    *, project: Project, item_filter: ItemFilter, after: str = "", page_size: int = PAGE_SIZE
) -> ItemPage:
    """One page of the table: at most ``page_size`` rows after the cursor ``after`` (the first
    page without one). Queries: the judge (when one is chosen), the rows, the counters."""
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise BrowserRefused(f"page_size must be 1 to {MAX_PAGE_SIZE}.", field="page_size")
    judge = _judge_named(project, item_filter.judge) if item_filter.judge else None
    cursor = _decode_cursor(after, item_filter.sort) if after else None
    rows, stopped = _rows(project, item_filter, judge, after=cursor, limit=page_size + 1)
    next_after = None
    if len(rows) > page_size:
        rows = rows[:page_size]
        next_after = _encode_cursor(rows[-1].sort_value, rows[-1].id)
    elif stopped is not None:
        next_after = _encode_cursor(*stopped)
    return ItemPage(
        rows=rows,
        next_after=next_after,
        items_in_project=project_counts(project=project)["items"],
        judge=judge.name if judge is not None else "",
        searched=SEARCH_SPAN if stopped is not None else 0,
    )


def item_rows_all(
    *, project: Project, item_filter: ItemFilter, chunk: int = 2000
) -> Iterator[ItemRow]:
    """Every row of the filter, in its order, read page by page (a keyset walk: memory stays
    flat however many items match). For the export."""
    judge = _judge_named(project, item_filter.judge) if item_filter.judge else None
    cursor = None
    while True:
        rows, stopped = _rows(project, item_filter, judge, after=cursor, limit=chunk)
        yield from rows
        if len(rows) == chunk:
            cursor = (rows[-1].sort_value, rows[-1].id)
        elif stopped is not None:
            cursor = stopped
        else:
            return


def item_find(*, project: Project, text: str) -> int | None:
    """The item whose reference ("#XBSVYF") or external id is exactly ``text``, or None."""
    text = text.strip()
    if not text:
        return None
    reference = reference_of(text)
    if reference is not None:
        found = items_with_reference(project=project, reference=reference)
        if found:
            return found[0]
    return (
        Item.objects.filter(project=project, external_id=text).values_list("id", flat=True).first()
    )


# --- one item ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerVersion:
    version: int
    current: bool
    text: str
    answer: Any
    time_spent_s: float | None
    at: datetime | None
    correct: bool | None  # against gold, where the item has gold and the task type scores it
    # A human answer made on an earlier revision of the item (it saw the record before a fix).
    item_revision: int | None = None
    earlier_revision: bool = False

    @property
    def answer_json(self) -> str:
        return json.dumps(self.answer, ensure_ascii=False, indent=2, sort_keys=True)


@dataclass(frozen=True)
class CoderAnswers:
    coder: str  # pseudonym, "ext:<name>" or the judge's name
    kind: str  # "human", "external", "judge"
    note: str  # disqualified, removed, the judge's prompt version and setting…
    versions: list[AnswerVersion]
    raw: str = ""  # a judge's reply as received (researchers only)
    error: str = ""


@dataclass(frozen=True)
class ItemDetail:
    item: Item
    reference: str
    status: str
    display: Any
    gold: Any
    coders: list[CoderAnswers] = field(default_factory=list)


def _correct(task_type, answer: Any, gold: Any) -> bool | None:
    if gold is None or not isinstance(answer, dict):
        return None
    try:
        verdict = task_type.score(answer, gold).get("correct")
    except (KeyError, TypeError, ValueError):  # an answer shape the scorer does not read
        return None
    return bool(verdict) if verdict is not None else None


def _text(task_type, answer: Any, item: Item) -> str:
    if not isinstance(answer, dict):
        return "–"
    try:
        return task_type.answer_text(answer, item=item)
    except (KeyError, TypeError, ValueError, AttributeError):
        return json.dumps(answer, ensure_ascii=False, sort_keys=True)


def item_detail(*, project: Project, item_id: int) -> ItemDetail:
    """One item of the project with every coder's answers: annotators (by pseudonym, every
    version), external coders, and every judge result (all prompt versions, settings and
    presentations; unparseable and failed ones with their message). Five queries."""
    item = Item.objects.filter(project=project, pk=item_id).first()
    if item is None:
        raise BrowserRefused("This project has no such item.", code="not_found")
    task_type = task_types.get(project.task_type)
    gold = item.gold
    coders = [
        *_human_answers(project, item, task_type, gold),
        *_external_answers(item, task_type, gold),
        *_judge_answers(item, task_type, gold),
    ]
    return ItemDetail(
        item=item,
        reference=item_reference(item_id=item.id),
        status=_status(item.assigned_count, item.submitted_count, project.annotators_per_item),
        display=readable(task_type.display(item)),
        gold=readable(gold) if gold is not None else None,
        coders=coders,
    )


def _human_answers(project: Project, item: Item, task_type: Any, gold: Any) -> list[CoderAnswers]:
    """Every annotator's answers to the item, every version, by pseudonym."""
    coders: list[CoderAnswers] = []
    members = {
        m["user_id"]: m
        for m in Membership.objects.filter(project=project).values(
            "user_id", "pseudonym", "qualification", "removed_at"
        )
    }
    by_annotator: dict[int, list[Annotation]] = {}
    for annotation in Annotation.objects.filter(item=item).order_by("annotator_id", "version"):
        by_annotator.setdefault(annotation.annotator_id, []).append(annotation)
    for user_id, versions in by_annotator.items():
        member = members.get(user_id)
        notes = []
        if member is None:
            name = f"ann-removed-{user_id}"
        else:
            name = member["pseudonym"]
            if member["qualification"] == Membership.Qualification.DISQUALIFIED:
                notes.append("disqualified: not counted")
            if member["removed_at"] is not None:
                notes.append("no longer a member")
        coders.append(
            CoderAnswers(
                coder=name,
                kind="human",
                note="; ".join(notes),
                versions=[
                    AnswerVersion(
                        version=a.version,
                        current=a.is_current,
                        text=_text(task_type, a.answer, item),
                        answer=a.answer,
                        time_spent_s=round(a.time_spent_ms / 1000, 1),
                        at=a.created_at,
                        correct=_correct(task_type, a.answer, gold),
                        item_revision=a.item_revision,
                        earlier_revision=(a.item_revision or 1) < item.revision,
                    )
                    for a in versions
                ],
            )
        )
    return coders


def _external_answers(item: Item, task_type: Any, gold: Any) -> list[CoderAnswers]:
    """External coders' answers to the item."""
    coders: list[CoderAnswers] = []
    for external in (
        ExternalAnnotation.objects.filter(item=item).select_related("coder").order_by("coder__name")
    ):
        coders.append(
            CoderAnswers(
                coder=external.coder.coder_id,
                kind="external",
                note=external.source or external.coder.source,
                versions=[
                    AnswerVersion(
                        version=1,
                        current=True,
                        text=_text(task_type, external.answer, item),
                        answer=external.answer,
                        time_spent_s=round(external.time_spent_ms / 1000, 1)
                        if external.time_spent_ms is not None
                        else None,
                        at=external.annotated_at,
                        correct=_correct(task_type, external.answer, gold),
                    )
                ],
            )
        )
    return coders


def _judge_answers(item: Item, task_type: Any, gold: Any) -> list[CoderAnswers]:
    """Every judge result for the item (all prompt versions, settings, presentations)."""
    coders: list[CoderAnswers] = []
    results = (
        JudgeResult.objects.filter(item=item)
        .select_related("judge")
        .order_by("judge__name", "prompt_version", "setting", "presentation")
    )
    for result in results:
        note = ", ".join(
            part
            for part in (
                f"prompt {result.prompt_version}",
                f"setting {result.setting}" if result.setting else "",
                f"presented {result.presentation}" if result.presentation else "",
                result.get_status_display() if result.status != JudgeResult.Status.OK else "",
            )
            if part
        )
        coders.append(
            CoderAnswers(
                coder=result.judge.name,
                kind="judge",
                note=note,
                versions=[
                    AnswerVersion(
                        version=1,
                        current=True,
                        text=_text(task_type, result.answer, item) if result.answer else "–",
                        answer=result.answer,
                        time_spent_s=round(result.latency_ms / 1000, 1)
                        if result.latency_ms is not None
                        else None,
                        at=result.created_at,
                        correct=_correct(task_type, result.answer, gold),
                    )
                ],
                raw=result.raw,
                error=result.error,
            )
        )
    return coders


def field_label(key: Any) -> str:
    """A record's key as a person reads it: ``evidence_id`` → "Evidence id" (the record itself,
    keys as imported, is in the item page's fix form and the API)."""
    text = str(key).replace("_", " ").strip() or str(key)
    return text[:1].upper() + text[1:]


class ReadableNode(TypedDict, total=False):
    """One of ``text``, ``entries`` or ``fields`` (see ``readable``)."""

    text: str
    entries: list[ReadableNode]
    fields: list[tuple[str, ReadableNode]]


def readable(value: Any, *, depth: int = 0) -> ReadableNode:
    """A JSON value as nested nodes a template renders without knowing the task type:
    ``{"text": str}``, ``{"entries": [node…]}`` (a list) or ``{"fields": [(key, node)…]}``
    (keys that are no attribute of a dict, so that a template's lookup finds them)."""
    if depth > 6:
        return {"text": json.dumps(value, ensure_ascii=False)}
    if isinstance(value, Mapping):
        return {
            "fields": [(field_label(k), readable(v, depth=depth + 1)) for k, v in value.items()]
        }
    if isinstance(value, list):
        return {"entries": [readable(v, depth=depth + 1) for v in value]}
    if value is None:
        return {"text": "–"}
    if isinstance(value, bool):
        return {"text": "yes" if value else "no"}
    return {"text": str(value)}


__all__ = [
    "FILTER_FIELDS",
    "FLAGGED",
    "KINDS",
    "SORTS",
    "STATUSES",
    "VERDICTS",
    "BrowserRefused",
    "ItemDetail",
    "ItemFilter",
    "ItemPage",
    "ItemRow",
    "item_detail",
    "item_filter_from_query",
    "item_find",
    "item_page",
    "item_rows_all",
    "items_with_reference",
    "project_judges",
    "readable",
    "reference_of",
]
