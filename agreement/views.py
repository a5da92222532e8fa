"""The researcher's agreement dashboard, its CSV downloads, and the comparison of two projects.

Security: every view requires login and the researcher role in the project (``project_for``
with ``RESEARCH_ROLES``: 404 for annotators, reviewers, non-members and unknown slugs alike, so
slugs do not leak), because the pages show every annotator's answers aggregated against gold.
The comparison requires the researcher role in both projects (404 otherwise). Annotators
appear by username and pseudonym, as on the project page; CSV files name them by pseudonym only
(through the report's coder ids) except the progress table, which mirrors the page. POST
(retry) is CSRF-protected. Dataset text (group names, item ids) is escaped by the templates and
by the SVG renderer, and text cells that a spreadsheet would run as formulas are neutralised in
CSV files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods

from agreement import selectors, services
from agreement.reports import AnnotatorFilter, ReportOptions, compare_reports
from agreement.reports.inputs import ReportParameter
from agreement.reports.page import rendered_table, with_links
from agreement.reports.plots import render as render_plot
from agreement.reports.published import parse_published, published_report
from agreement.reports.sections import parameters_for
from agreement.reports.tables import column, table, to_csv
from annotation import task_types
from core.errors import Refusal
from core.wording import indefinite
from projects.models import Membership
from projects.permissions import RESEARCH_ROLES, project_for


class BadQuery(Refusal):
    """A dashboard query parameter that cannot be read (the message names it)."""


@dataclass
class Choice:
    """The coder filter and options parsed from a query string."""

    annotator_filter: AnnotatorFilter
    options: ReportOptions


def _parameters(query: QueryDict, specs: tuple[ReportParameter, ...]) -> tuple:
    values = []
    for spec in specs:
        text = query.get(spec.name, "").strip()
        if not text:
            continue
        try:
            values.append((spec.name, spec.read(float(text))))
        except ValueError:
            raise BadQuery(
                f"{spec.name} must be a number between {spec.minimum:g} and {spec.maximum:g},"
                f" got {text!r}",
                field=spec.name,
            ) from None
    return tuple(values)


def _settings_version(query: QueryDict) -> int:
    """``settings_version=<n>``: only the answers made under settings version n (blank: all)."""
    text = query.get("settings_version", "").strip()
    if not text:
        return 0
    if not text.isdecimal() or not 1 <= int(text) <= 2**31:
        raise BadQuery(
            f"settings_version must be a version number, got {text!r}", field="settings_version"
        )
    return int(text)


def parse_choice(
    query: QueryDict, *, shared_with: str = "", parameters: tuple[ReportParameter, ...] = ()
) -> Choice:
    """Filter and options from GET parameters: ``select=1`` with ``include=<pseudonym>``…
    (exactly these annotators), ``exclude=<pseudonym>``…, ``disqualified=include``,
    ``judge=<key>``…, ``settings_version=<n>`` (the answers made under that settings version)
    and ``<name>=<number>`` for each of the task type's report ``parameters``."""
    include = tuple(query.getlist("include")) if query.get("select") else None
    options = ReportOptions(
        shared_with=shared_with,
        parameters=_parameters(query, parameters),
        settings_version=_settings_version(query),
    )
    return Choice(
        AnnotatorFilter(
            include=include,
            exclude=tuple(query.getlist("exclude")),
            exclude_disqualified=query.get("disqualified") != "include",
            judges=tuple(query.getlist("judge")),
        ),
        options,
    )


def _query_without(query: QueryDict, *names: str) -> str:
    pairs = [(k, v) for k in query for v in query.getlist(k) if k not in names]
    return urlencode(pairs)


def _csv_response(tbl: dict, filename: str) -> HttpResponse:
    response = HttpResponse(to_csv(tbl), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _rendered_table(name: str, tbl: dict, base_query: str, preview: int | None = None) -> dict:
    return with_links(rendered_table(name, tbl, preview), base_query)


def _progress_table(progress: dict) -> dict:
    return table(
        "Annotators",
        [
            column("username", "Annotator", "text"),
            column("pseudonym", "Pseudonym", "text"),
            column("qualification_label", "Qualification", "text"),
            column("submitted", "Submitted", "int"),
            column("reserved", "Open reservations", "int"),
            column("median_time_s", "Median time per item (s)", "num1"),
        ],
        progress["annotators"],
    )


def _counted(member: dict, choice: Choice) -> bool:
    f = choice.annotator_filter
    if f.include is not None:
        return member["pseudonym"] in f.include
    if member["pseudonym"] in f.exclude:
        return False
    return not (
        f.exclude_disqualified
        and member.get("qualification") == Membership.Qualification.DISQUALIFIED
    )


def _page_context(page: dict, base_query: str) -> dict:
    """The stored page (:mod:`agreement.reports.page`) with this request's CSV links; nothing is
    computed here."""
    blocks = [
        {
            **block,
            "table": with_links(block["table"], base_query),
            "plots": [
                {"title": plot["title"], "svg": mark_safe(plot["svg"])}  # noqa: S308 - escaped
                for plot in block["plots"]
            ],
        }
        for block in page["blocks"]
    ]
    return {
        "report": page["report"],
        "agreement": with_links(page["agreement"], base_query),
        "blocks": blocks,
        "section": page["section"],
        "generated_at": datetime.fromisoformat(page["generated_at"]),
    }


@login_required
@require_http_methods(["GET", "POST"])
def dashboard(request, slug):
    """Progress, agreement per answer field, and the task type's figures, tables and plots.

    Security: researchers of the project only (404 otherwise; see the module docstring). GET
    ``?download=<table>`` returns that table of the report on screen as CSV (``progress``: the
    annotator table). POST ``action=retry`` queues a failed computation again.
    """
    project = project_for(request.user, slug, RESEARCH_ROLES)
    parameters = parameters_for(project.task_type)
    choice = parse_choice(request.GET, parameters=parameters)  # BadQuery: a 400 as text
    base_query = _query_without(request.GET, "download")
    if request.method == "POST":
        return _retry(request, project, base_query)
    download = request.GET.get("download")
    if download == "progress":
        progress = selectors.dashboard_progress(project=project)
        return _csv_response(_progress_table(progress), f"{project.slug}-progress.csv")
    state = services.snapshot_request(
        project=project,
        annotator_filter=choice.annotator_filter,
        options=choice.options,
        load="page",
    )
    if download:
        return _report_table_csv(project, state, download)
    return _dashboard_page(request, project, choice, state, base_query)


def _retry(request, project, base_query: str) -> HttpResponse:
    """POST ``action=retry``: queue the failed computation again, back to the same page."""
    if services.snapshot_retry_in(project=project, snapshot_id=request.POST.get("snapshot", "")):
        messages.success(request, "The computation was queued again.")
    else:
        messages.error(request, "Nothing to retry.")
    return redirect(request.path + ("?" + base_query if base_query else ""))


def _report_table_csv(project, state, name: str) -> HttpResponse:
    """A table of the report on screen as CSV."""
    if state.snapshot is None:
        raise Refusal("The report is still being computed; try again in a moment.", code="conflict")
    tbl = selectors.snapshot_table(snapshot_id=state.snapshot.pk, name=name)
    if tbl is None:
        raise Refusal(f"No table {name!r} in this report.", code="not_found")
    return _csv_response(tbl, f"{project.slug}-{name}.csv")


def _dashboard_page(request, project, choice: Choice, state, base_query: str) -> HttpResponse:
    parameters = parameters_for(project.task_type)
    page = state.page
    progress = selectors.dashboard_progress(
        project=project, median_times=page.get("median_times") if page is not None else None
    )
    members = [{**row, "counted": _counted(row, choice)} for row in progress["annotators"]]
    context = {
        "parameters": [
            {"spec": spec, "value": choice.options.parameter(spec)} for spec in parameters
        ],
        "settings_versions": range(project.settings_version, 0, -1),
        "project": project,
        "task_type": task_types.get(project.task_type),
        "progress": progress,
        "progress_table": _rendered_table("progress", _progress_table(progress), base_query),
        "members": members,
        "choice": choice,
        "state": state,
        "report": None,
        "refresh": state.active is not None and not state.fresh,
        "comparable": selectors.comparable_projects(user=request.user, project=project),
        "base_query": base_query,
    }
    if page is not None:
        context.update(_page_context(page, base_query))
    return render(request, "agreement/dashboard.html", context)


def _comparison_context(
    comparison: dict,
    *,
    names: tuple[str, str],
    domains: dict,
    base_query: str,
    tables: tuple[str, ...] = ("vectors", "spearman", "scalars"),
) -> dict:
    """Plots and rendered tables of a ``compare_reports`` result."""
    plots = []
    for spearman in comparison["spearman"]["rows"]:
        title = spearman["vector"]
        rows = [r for r in comparison["vectors"]["rows"] if r["vector"] == title]
        svg = render_plot(
            {
                "kind": "grouped",
                "table": "vector",
                "label": "entry",
                "series": ["a", "b"],
                "series_labels": {"a": names[0], "b": names[1]},
                "title": title,
                "domain": domains.get(title),
            },
            {"vector": {"rows": rows}},
        )
        plots.append(
            {
                "title": title,
                "rho": spearman["rho"],
                "entries": spearman["entries"],
                "svg": mark_safe(svg),  # noqa: S308 - labels escaped by the renderer
            }
        )
    return {
        "comparison": comparison,
        "tables": [_rendered_table(name, comparison[name], base_query) for name in tables],
        "plots": plots,
    }


@login_required
@require_GET
def compare_published(request, slug):
    """This project against figures typed in from a paper (e.g. the original study's MAR per
    system): one result vector of the project's current report, entry by entry with CV*, and
    Spearman's rho. The typed values travel in the query (nothing is stored); bad lines are
    refused naming the line, with the form kept. ``?download=vectors|spearman|scalars``: CSV.

    Security: researcher role in the project (404 otherwise).
    """
    project = project_for(request.user, slug, RESEARCH_ROLES)
    choice = parse_choice(request.GET, parameters=parameters_for(project.task_type))
    state = services.snapshot_request(
        project=project, annotator_filter=choice.annotator_filter, options=choice.options
    )
    report = state.report
    vectors = report["comparison"]["vectors"] if report is not None else {}
    form = {
        "vector": request.GET.get("vector", ""),
        "values": request.GET.get("values", ""),
        "label": request.GET.get("label", "").strip()[:80] or "Published",
    }
    context = {
        "project": project,
        "other": {"name": form["label"]},
        "states": [state],
        "refresh": state.active is not None and not state.fresh,
        "comparison": None,
        "vectors": list(vectors),
        "form": form,
        "error": "",
    }
    status = 200
    if report is not None and form["values"].strip():
        try:
            if form["vector"] not in vectors:
                raise Refusal("Choose one of this project's result vectors.", field="vector")
            values = parse_published(text=form["values"], known=vectors[form["vector"]])
        except Refusal as exc:
            context["error"] = exc.message
            status = 400
        else:
            comparison = compare_reports(
                report,
                published_report(vector=form["vector"], values=values),
                labels=(project.name, form["label"]),
            )
            download = request.GET.get("download")
            if download in comparison:
                return _csv_response(
                    comparison[download], f"{project.slug}-vs-published-{download}.csv"
                )
            context.update(
                _comparison_context(
                    comparison,
                    names=(project.name, form["label"]),
                    domains=report["comparison"].get("domains", {}),
                    base_query=_query_without(request.GET, "download"),
                    tables=("vectors", "spearman"),  # a paper's figures: one vector, no scalars
                )
            )
    return render(request, "agreement/compare_published.html", context, status=status)


@login_required
@require_GET
def compare(request, slug):
    """Two projects over the same items side by side (original vs reproduction).

    Security: researcher role in both projects (404 otherwise). Each project's report is
    restricted to the items (by external id) that both projects have, with the default coder
    choice. ``?download=vectors|spearman|scalars`` returns that table as CSV.
    """
    project = project_for(request.user, slug, RESEARCH_ROLES)
    other_slug = request.GET.get("with", "")
    if not other_slug:
        return redirect("agreement-dashboard", slug=slug)
    other = project_for(request.user, other_slug, RESEARCH_ROLES)
    if other.task_type != project.task_type:
        messages.error(
            request,
            f"{other.name} is {indefinite(other.task_type)} project; only projects of the same task type "
            "can be compared.",
        )
        return redirect("agreement-dashboard", slug=slug)
    states = [
        services.snapshot_request(
            project=p,
            annotator_filter=AnnotatorFilter(),
            options=ReportOptions(shared_with=q.slug),
        )
        for p, q in ((project, other), (other, project))
    ]
    context = {
        "project": project,
        "other": other,
        "states": states,
        "refresh": any(s.active is not None and not s.fresh for s in states),
        "comparison": None,
    }
    reports = [s.report for s in states]
    if all(r is not None for r in reports):
        comparison = compare_reports(reports[0], reports[1], labels=(project.name, other.name))
        download = request.GET.get("download")
        if download in comparison:
            return _csv_response(
                comparison[download], f"{project.slug}-vs-{other.slug}-{download}.csv"
            )
        base_query = _query_without(request.GET, "download")
        context.update(
            _comparison_context(
                comparison,
                names=(project.name, other.name),
                domains=reports[0]["comparison"].get("domains", {}),
                base_query=base_query,
            )
        )
        context["shared_items"] = (reports[0]["items"], reports[1]["items"])
    return render(request, "agreement/compare.html", context)


def _target_width(query: QueryDict) -> float | None:
    text = query.get("width", "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise selectors.BadProjectionQuery(
            f"Target width: {text!r} is not a number (write it like 0.05).", field="width"
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise selectors.BadProjectionQuery(
            f"Target width: it must be a positive number, got {text!r}.", field="width"
        )
    return value


def _labels_needed(stored: dict, query: QueryDict) -> tuple[selectors.LabelsNeeded, str, str]:
    """The projection asked for by ``?figure=&judge=&width=`` from the stored pilots, the width
    as typed and the refusal's message (then the projection without the faulty part, for the
    form). No query."""
    figure, judge = query.get("figure", ""), query.get("judge", "")
    width_text = query.get("width", "").strip()[:40]
    need = partial(selectors.labels_needed_stored, stored=stored)
    try:
        return need(figure=figure, judge=judge, target_width=_target_width(query)), width_text, ""
    except selectors.BadProjectionQuery as refusal:
        try:  # the same figure and judge without the target, when they are not at fault
            fallback = need(figure=figure, judge=judge)
        except selectors.BadProjectionQuery:
            fallback = need()
        return fallback, width_text, refusal.message


def _need_context(stored: dict, query: QueryDict, base_query: str) -> dict:
    need, width_text, error = _labels_needed(stored, query)
    context = {"need": need, "need_width": width_text, "need_error": error}
    result = need.projection
    if result is not None and result.tables:
        svg = render_plot(result.plot, result.tables)
        context["need_plot"] = mark_safe(svg)  # noqa: S308 - the renderer escapes every label
        context["need_table"] = _rendered_table(
            "projection", result.tables["projection"], base_query
        )
    return context


def _validation_csv(project, stored: dict | None, subset: str, download: str, query: QueryDict):
    """A table of the judge validation page (or its projection) as CSV."""
    if stored is None:
        raise Refusal(
            "The figures are still being computed; try again in a moment.", code="conflict"
        )
    if download == "projection":
        need, _, error = _labels_needed(stored["need"], query)
        if error or need.projection is None or not need.projection.tables:
            raise Refusal(error or "No projection to download for this figure.", field="figure")
        return _csv_response(need.projection.tables["projection"], f"{project.slug}-projection.csv")
    tables = stored["validation"]["tables"]
    if download not in tables:
        raise Refusal(f"No table {download!r} on this page.", code="not_found")
    return _csv_response(tables[download], f"{project.slug}-judges-{subset}-{download}.csv")


def _confusion_plots(result: dict) -> list[dict]:
    tables = result["tables"]
    if "confusion" not in tables:
        return []
    plots = []
    for name in result["judges"]:
        spec = {
            "kind": "heatmap",
            "table": "confusion",
            "row": "reference",
            "column": "predicted",
            "value": "count",
            "row_title": "humans",
            "column_title": "judge",
            "where": {"judge": name},
            "title": f"Confusion matrix: {name}",
        }
        svg = render_plot(spec, tables)
        if svg:
            plots.append({"title": name, "svg": mark_safe(svg)})  # noqa: S308 - escaped
    return plots


def _validation_context(stored: dict, query: QueryDict, base_query: str) -> dict:
    result = stored["validation"]
    return {
        "result": result,
        "subset_choices": list(result["subsets"].items()),
        "counts": [(k.replace("_", " ").capitalize(), v) for k, v in result["counts"].items()],
        "rendered": [
            _rendered_table(name, tbl, base_query) for name, tbl in result["tables"].items()
        ],
        "confusion": _confusion_plots(result),
        **_need_context(stored["need"], query, base_query),
    }


@login_required
@require_http_methods(["GET", "POST"])
def judge_validation(request, slug):
    """Every judge of the project against the humans, on the chosen subset of units
    (``?subset=all|agreed|certain``): alpha against the merged humans and, for label tasks,
    accuracy, macro and weighted F1 with bootstrap intervals, per-class scores and a
    confusion matrix per judge. ``?download=<table>`` returns a table as CSV. POST
    ``action=retry`` queues a failed computation again.

    Security: researchers of the project only (404 otherwise; see the module docstring).
    Cached per data version as the dashboard's report is (``services.judge_validation_request``):
    computed inline on a small project, else on the worker while the last figures are shown
    marked out of date; a request never reads every answer of a large project.
    """
    project = project_for(request.user, slug, RESEARCH_ROLES)
    subset = request.GET.get("subset", "all")
    base_query = _query_without(request.GET, "download")
    if request.method == "POST":
        return _retry(request, project, base_query)
    try:
        state = services.judge_validation_request(project=project, subset=subset)
    except ValueError as exc:
        raise BadQuery(str(exc), field="subset") from None
    stored = state.report
    download = request.GET.get("download")
    if download:
        return _validation_csv(project, stored, subset, download, request.GET)
    context = {
        "project": project,
        "task_type": task_types.get(project.task_type),
        "state": state,
        "refresh": state.active is not None and not state.fresh,
        "result": None,
        "subset": subset,
    }
    if stored is not None:
        context.update(_validation_context(stored, request.GET, base_query))
    status = 400 if context.get("need_error") else 200
    return render(request, "agreement/judge_validation.html", context, status=status)
