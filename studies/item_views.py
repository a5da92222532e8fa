"""The item browser's pages: the table of a project's items, one item with every coder's
answer, finding an item by reference or external id, and the current filter as CSV or JSONL.

Security: researcher role in the project (``project_for``: 404 to anyone else), as every
researcher page; the pages show gold, every annotator's answers by pseudonym, and judges' raw
replies. Query parameters are untrusted: a bad value is a 400 naming the parameter.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from itertools import chain
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation import flags, task_types
from core.errors import Refusal
from core.spreadsheet import spreadsheet_safe
from core.wording import counted
from projects.permissions import RESEARCH_ROLES, REVIEW_ROLES, has_role, project_for
from studies.export_check import with_end_line
from studies.selectors.item_browser import (
    FLAGGED,
    KINDS,
    PAGE_SIZE,
    SORTS,
    STATUSES,
    VERDICTS,
    ItemFilter,
    ItemRow,
    item_detail,
    item_filter_from_query,
    item_find,
    item_page,
    item_rows_all,
    project_judges,
)
from studies.services.exports import items_export_record
from studies.services.item_figures import item_figures_ensure
from studies.services.item_fixes import item_fix, item_record_text, record_from_text

EXPORT_FORMATS = ("csv", "jsonl")


def _page_size(request) -> int:
    text = request.GET.get("page_size", "")
    if not text:
        return PAGE_SIZE
    if not text.isdigit():
        raise Refusal("page_size must be a whole number.", field="page_size")
    return int(text)


@login_required
@require_GET
def items_list(request, slug):
    project = project_for(request.user, slug, RESEARCH_ROLES)
    task_type = task_types.get(project.task_type)
    context = {
        "project": project,
        "task_type": task_type,
        "judges": list(project_judges(project=project).values_list("name", flat=True)),
        "statuses": STATUSES,
        "kinds": KINDS,
        "sorts": SORTS,
        "verdicts": VERDICTS,
        "flagged": FLAGGED,
        "params": request.GET,
    }
    try:
        item_filter = item_filter_from_query(request.GET)
        context["filter"] = item_filter
        context["figures"] = item_figures_ensure(project=project)
        page = item_page(
            project=project,
            item_filter=item_filter,
            after=request.GET.get("after", ""),
            page_size=_page_size(request),
        )
    except Refusal as refusal:
        context["error"] = refusal
        return render(request, "studies/items/list.html", context, status=refusal.status)
    query = item_filter.query()
    context.update(
        page=page,
        query=urlencode(query),
        next_url=f"?{urlencode({**query, 'after': page.next_after})}" if page.next_after else "",
        first_url=f"?{urlencode(query)}" if request.GET.get("after") else "",
        filtered=bool(set(query) - {"sort", "descending"}),
    )
    return render(request, "studies/items/list.html", context)


@login_required
@require_GET
def item_find_view(request, slug):
    """Go to the item with this reference ("#XBSVYF") or external id."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    text = request.GET.get("ref", "")[:300]
    item_id = item_find(project=project, text=text)
    if item_id is None:
        raise Http404(f"No item of this project has the reference or external id {text!r}.")
    return redirect("project-item", slug=project.slug, item_id=item_id)


@login_required
@require_GET
def item_view(request, slug, item_id):
    project = project_for(request.user, slug, RESEARCH_ROLES)
    return _item_page(request, project, item_id)


def _item_page(request, project, item_id: int, *, fix: dict | None = None, status: int = 200):
    """The item page; ``fix``: the fix form as sent, with its refusal (nothing typed is lost)."""
    try:
        detail = item_detail(project=project, item_id=item_id)
    except Refusal as refusal:
        raise Http404(refusal.message) from None
    back = request.GET.get("back", "")
    back_url = reverse("project-items", args=[project.slug])
    if back.startswith("?") and "\n" not in back:
        back_url += back
    return render(
        request,
        "studies/items/detail.html",
        {
            "project": project,
            "task_type": task_types.get(project.task_type),
            "detail": detail,
            "statuses": STATUSES,
            "back_url": back_url,
            "discussion": flags.item_discussion(item=detail.item),
            "fix": fix or {"record": item_record_text(item=detail.item), "note": ""},
        },
        status=status,
    )


@login_required
@require_POST
def item_fix_view(request, slug, item_id):
    """Fix the item's record (``record``: JSON text, ``note``); a refusal shows the page again
    with the text as typed and the reason (400), so nothing is lost."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    text, note = request.POST.get("record", ""), request.POST.get("note", "")
    try:
        fix = item_fix(
            project=project,
            item_id=item_id,
            record=record_from_text(text=text),
            by=request.user,
            note=note,
        )
    except Refusal as refusal:
        if refusal.code == "not_found":
            raise Http404(refusal.message) from None
        form = {"record": text, "note": note, "error": refusal.message}
        return _item_page(request, project, item_id, fix=form, status=refusal.status)
    keeps = "keeps its" if fix.earlier_answers == 1 else "keep their"
    earlier = (
        f" {counted(fix.earlier_answers, 'answer')} made on the earlier record {keeps} revision."
        if fix.earlier_answers
        else ""
    )
    messages.success(request, f"Item fixed: revision {fix.revision}.{earlier}")
    return redirect("project-item", slug=project.slug, item_id=item_id)


FLAG_DONE = {
    "answer": "Answer saved.",
    "resolve": "Flag resolved.",
    "exclude": "Flag resolved; the item is left out of agreement.",
    "include": "Flag resolved; the item counts in agreement again.",
    "reopen_item": "Flag resolved; those who skipped the item may get it again.",
}


@login_required
@require_POST
def item_flag_action(request, slug, item_id, flag_id):
    """A researcher's action on one of the item's flags (answer, resolve, exclude, include,
    reopen_item); a bad action or text is refused naming the field (400)."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    flag = flags.flag_for(project=project, flag_id=flag_id)
    if flag.item_id != item_id:
        raise Http404("No such flag on this item.")
    action = request.POST.get("action", "")
    flags.flag_act(
        flag=flag, user=request.user, action=action, response=request.POST.get("response", "")
    )
    messages.success(request, FLAG_DONE[action])
    return redirect("project-item", slug=project.slug, item_id=item_id)


@login_required
@require_POST
def item_exclusion(request, slug, item_id):
    """Leave the item out of agreement (``excluded=1``) or take it back in (``excluded=0``)."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    item = flags.project_item(project=project, item_id=item_id)
    excluded = request.POST.get("excluded", "")
    if excluded not in ("0", "1"):
        raise Refusal("excluded must be 0 or 1.", field="excluded")
    flags.item_exclude(item=item, user=request.user, excluded=excluded == "1")
    messages.success(
        request,
        "The item is left out of agreement." if excluded == "1" else "The item counts again.",
    )
    return redirect("project-item", slug=project.slug, item_id=item_id)


@login_required
@require_POST
def item_comment(request, slug, item_id):
    """Add a comment to the item's thread, from the item page (researchers) or the review page
    (researchers and reviewers: ``back=review`` returns there).

    Security: researcher or reviewer role in the project; the item must belong to it (404)."""
    project = project_for(request.user, slug, REVIEW_ROLES)
    item = flags.project_item(project=project, item_id=item_id)
    flags.comment_add(item=item, author=request.user, body=request.POST.get("body", ""))
    messages.success(request, "Comment added.")
    page = "review-item" if request.POST.get("back") == "review" else "project-item"
    if page == "project-item" and not has_role(request.user, project, RESEARCH_ROLES):
        page = "review-item"  # a reviewer never lands on the researchers' item page
    return redirect(f"{reverse(page, args=[project.slug, item_id])}#comments-heading")


EXPORT_COLUMNS = (
    "external_id",
    "reference",
    "kind",
    "group",
    "status",
    "answers",
    "agreement",
    "gold_score",
    "sampling_weight",  # active sampling: the recorded weight and priority (empty / 0: none)
    "sampling_priority",
)


def _export_record(row: ItemRow, judge: str) -> dict:
    record = {name: getattr(row, name) for name in EXPORT_COLUMNS}
    if judge:
        record.update(
            judge=judge,
            judge_humans_agreeing=row.judge_agreement,
            judge_verdict=row.judge_verdict,
        )
    return record


def _csv_lines(rows: Iterator[ItemRow], judge: str) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    header = list(EXPORT_COLUMNS) + (
        ["judge", "judge_humans_agreeing", "judge_verdict"] if judge else []
    )
    writer.writerow(header)
    pending = 0
    for row in rows:
        writer.writerow([spreadsheet_safe(v) for v in _export_record(row, judge).values()])
        pending += 1
        if pending == 500:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate(0)
            pending = 0
    yield buffer.getvalue()


def _jsonl_lines(rows: Iterator[ItemRow], judge: str) -> Iterator[str]:
    batch = []
    for row in rows:
        batch.append(json.dumps(_export_record(row, judge), ensure_ascii=False) + "\n")
        if len(batch) == 500:
            yield "".join(batch)
            batch.clear()
    yield "".join(batch)


@login_required
@require_GET
def items_export(request, slug, fmt):
    """The rows of the current filter, in its order, every page of it (streamed), then the end
    line of every export (``python -m studies.export_check FILE`` says whether it is whole)."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    if fmt not in EXPORT_FORMATS:
        raise Http404(f"Unknown export format {fmt[:20]!r}; use csv or jsonl.")
    try:
        item_filter: ItemFilter = item_filter_from_query(request.GET)
        item_figures_ensure(project=project)
        rows = item_rows_all(project=project, item_filter=item_filter)
        first = next(rows, None)  # a bad judge is refused here, before the response starts
        items_export_record(project=project, fmt=fmt, query=request.GET.dict(), by=request.user)
    except Refusal as refusal:
        return render(
            request,
            "studies/items/list.html",
            {"project": project, "error": refusal, "params": request.GET},
            status=refusal.status,
        )

    counted = [0]

    def all_rows() -> Iterator[ItemRow]:
        if first is not None:
            for row in chain([first], rows):
                counted[0] += 1
                yield row

    lines = _csv_lines if fmt == "csv" else _jsonl_lines
    response = StreamingHttpResponse(
        with_end_line(
            (text.encode() for text in lines(all_rows(), item_filter.judge)),
            fmt=fmt,
            rows=lambda: counted[0],
        ),
        content_type="text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson",
    )
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-items.{fmt}"'
    return response
