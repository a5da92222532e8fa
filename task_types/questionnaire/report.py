"""Questionnaire report: per question, how it was answered and how far coders agree.

Rules:

* one row per question of the project's config, in its order;
* answers: how many coders' answers the question got (an optional question left blank does not
  count);
* summary: for choices and Likert points the most frequent answer and its share, for multiple
  choice the mean number of options chosen, for sliders the mean and standard deviation, for
  pairwise preference the shares of first preferred / tie / second preferred, for free text the
  mean length in characters;
* alpha: Krippendorff's alpha under the question's declared distance (:mod:`metrics.alpha`
  through :func:`agreement.reports.generic.alpha_with_ci`), one unit per item, with a bootstrap
  interval over items; free-text questions have none. Every coder that counts is a coder here
  (judges too, when selected);
* position effect (pairwise questions): each annotator sees half of their items with the two
  fields swapped (``Questionnaire.presentation``); the share of decided answers preferring the
  side shown first, with a Wilson interval (50 % without a position effect).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from statistics import mean, pstdev
from typing import Any

from rest_framework import serializers

from agreement.reports import sections
from agreement.reports.generic import alpha_with_ci, reliability_data
from agreement.reports.inputs import HUMAN, JUDGE, ReportInput
from agreement.reports.sections import Estimand, Figure, SectionResult
from agreement.reports.tables import Table, column, table
from metrics.distances import AgreementError
from metrics.position import first_shown_preference

from .serializers import (
    PAIRWISE_VALUES,
    PREFER_FIRST,
    PREFER_SECOND,
    SLIDER_MAX,
    SLIDER_MIN,
    TIE,
    project_config,
)
from .task import Questionnaire, _value_text


def _values(inp: ReportInput, ident: str) -> list[Any]:
    found = []
    for answers in inp.answers.values():
        for unit, answer in answers.items():
            if unit in inp.items and isinstance(answer, Mapping) and answer.get(ident) is not None:
                found.append(answer[ident])
    return found


def _share(count: int, total: int) -> str:
    return f"{100 * count / total:.0f} %"


def _summary(question: dict, values: list[Any], labels: Mapping[str, str]) -> str:
    if not values:
        return "no answers"
    kind = question["kind"]
    if kind in ("single", "likert"):
        value, count = Counter(values).most_common(1)[0]
        return f"most often {_value_text(question, value)} ({_share(count, len(values))})"
    if kind == "multiple":
        return f"{mean(len(v) for v in values):.1f} options chosen on average"
    if kind == "slider":
        spread = f" ± {pstdev(values):.1f}" if len(values) > 1 else ""
        return f"mean {mean(values):.1f}{spread}"
    if kind == "pairwise":
        counts = Counter(values)
        # The fields as annotators see them named ("Response A"), not their keys ("response_a").
        first, second = (labels.get(name, name) for name in question["fields"])
        return (
            f"{first} {_share(counts[PREFER_FIRST], len(values))} · tie "
            f"{_share(counts[TIE], len(values))} · {second} "
            f"{_share(counts[PREFER_SECOND], len(values))}"
        )
    return f"{mean(len(str(v)) for v in values):.0f} characters on average"


def question_rows(
    inp: ReportInput, questions: list[dict], labels: Mapping[str, str] | None = None
) -> list[dict]:
    """One row per question: answers, summary and alpha under its distance (``labels``: the item
    fields' labels by name, for the summary)."""
    rows = []
    for question in questions:
        values = _values(inp, question["id"])
        row: dict[str, Any] = {
            "question": question["id"],
            "prompt": question["prompt"],
            "kind": question["kind"],
            "distance": question["distance"] or "—",
            "answers": len(values),
            "summary": _summary(question, values, labels or {}),
            "alpha": None,
        }
        if question["distance"]:
            try:
                data = reliability_data(
                    inp.answers, question["id"], question["distance"], set(inp.items)
                )
            except AgreementError as exc:
                row["alpha_error"] = str(exc)
            else:
                row["units"] = len(data)
                row.update(
                    alpha_with_ci(
                        data,
                        question["distance"],
                        n_boot=inp.options.n_boot,
                        confidence=inp.options.confidence,
                    )
                )
        rows.append(row)
    return rows


def _questions_table(rows: list[dict], inp: ReportInput) -> Table:
    return table(
        "Agreement per question",
        [
            column("question", "Question", "text"),
            column("prompt", "Asked", "text"),
            column("kind", "Kind", "text"),
            column("distance", "Distance", "text"),
            column("answers", "Answers", "int"),
            column("pairable_units", "Pairable items", "int"),
            column("alpha", f"Krippendorff's α [{round(100 * inp.options.confidence)} % CI]", "ci"),
            column("summary", "Answers in short", "text"),
        ],
        rows,
        note="α under each question's declared distance, one unit per item; free-text questions "
        f"have none. Bootstrap: {inp.options.n_boot} replicates resampling items.",
    )


def positional(value: int, question: dict, first_shown: str) -> int:
    """A pairwise answer (-1: the question's first field better) as +1 when the field shown
    first was preferred, -1 when the one shown second was, 0 for a tie."""
    first_is_first = first_shown == question["fields"][0]
    if value == TIE:
        return 0
    return 1 if (value == PREFER_FIRST) == first_is_first else -1


def position_rows(inp: ReportInput, questions: list[dict]) -> list[dict]:
    """One row per pairwise question: the annotators' answers by the side shown first
    (``Questionnaire.presentation``), and the share of decided ones that prefer it."""
    rows = []
    for question in questions:
        if question["kind"] != "pairwise":
            continue
        outcomes: list[int] = []
        swapped = 0
        for coder, layouts in inp.human_presented.items():
            for unit, layout in layouts.items():
                answer = inp.answers.get(coder, {}).get(unit)
                first_shown = (layout.get("first_shown") or {}).get(question["id"])
                value = answer.get(question["id"]) if isinstance(answer, Mapping) else None
                if first_shown not in question["fields"] or value not in PAIRWISE_VALUES:
                    continue
                outcomes.append(positional(value, question, first_shown))
                swapped += first_shown == question["fields"][1]
        if not outcomes:
            continue
        found = first_shown_preference(outcomes, inp.options.confidence)
        rows.append(
            {
                "question": question["id"],
                "answers": found.answers,
                "as_configured": found.answers - swapped,
                "swapped": swapped,
                "first": found.first,
                "ties": found.ties,
                "second": found.second,
                "share_first": found.share_first,
                "share_first_lower": found.low,
                "share_first_upper": found.high,
            }
        )
    return rows


def _position_table(rows: list[dict], inp: ReportInput) -> Table:
    return table(
        "Annotators' position effect on pairwise questions",
        [
            column("question", "Question", "text"),
            column("answers", "Answers", "int"),
            column("as_configured", "Shown as configured", "int"),
            column("swapped", "Shown swapped", "int"),
            column("first", "Shown first preferred", "int"),
            column("ties", "Ties", "int"),
            column("second", "Shown second preferred", "int"),
            column(
                "share_first",
                f"Share preferring the side shown first [{round(100 * inp.options.confidence)} %"
                " CI]",
                "ci",
            ),
        ],
        rows,
        note="Each annotator sees half of their items (within one) with a pairwise question's "
        "two fields swapped; without a position effect the side shown first is preferred in "
        "half of the decided answers (50 %). Wilson interval; only answers whose presentation "
        "was recorded count.",
    )


def section(inp: ReportInput) -> SectionResult:
    try:
        config = project_config(inp.config)
    except serializers.ValidationError:
        return SectionResult(
            title="Questionnaire",
            tables={},
            notes=["The project's questionnaire is invalid; fix its configuration."],
        )
    questions = config["questions"]
    labels = {field["name"]: field["label"] for field in config["fields"]}
    rows = question_rows(inp, questions, labels)
    # α per question is the generic table's, and a headline tile and a comparison figure there
    # ("α <question id>"): the section adds no second tile of it.
    result = SectionResult(title="Questionnaire", tables={"questions": _questions_table(rows, inp)})
    positions = position_rows(inp, questions)
    if positions:
        result.tables["human_position"] = _position_table(positions, inp)
        for row in positions:
            share = row["share_first"]
            result.summary.append(
                Figure(
                    f"Shown first preferred · {row['question']}",
                    "—" if share is None else f"{100 * share:.0f} %",
                )
            )
    return result


def _per_item(inp: ReportInput, coders: list[str], ident: str, value) -> dict[str, float]:
    """Per item, ``value(answer)`` averaged over ``coders``' answers to question ``ident``."""
    found: dict[str, list[float]] = {}
    for coder in coders:
        for unit, answer in inp.answers.get(coder, {}).items():
            if unit in inp.items and isinstance(answer, Mapping) and answer.get(ident) is not None:
                number = value(answer[ident])
                if number is not None:
                    found.setdefault(unit, []).append(number)
    return {unit: mean(values) for unit, values in found.items()}


SHARE = (0.0, 1.0)


def _figures(question: dict) -> list[tuple[str, Any, tuple[float, float]]]:
    """(figure, value of one answer, the range of values) for the question's item means and
    shares."""
    kind, ident = question["kind"], question["id"]

    def number(v: Any) -> float | None:
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    figures: list[tuple[str, Any, tuple[float, float]]] = []
    if kind == "likert":
        figures.append((f"Mean · {ident}", number, (1.0, float(len(question["points"])))))
    if kind == "slider":
        figures.append((f"Mean · {ident}", number, (float(SLIDER_MIN), float(SLIDER_MAX))))
    if kind == "single":
        for option in question.get("options") or []:
            figures.append(
                (
                    f"Share {option['label']} · {ident}",
                    lambda v, o=option["value"]: float(v == o),
                    SHARE,
                )
            )
    if kind == "pairwise":
        for name, choice in (("first preferred", PREFER_FIRST), ("tie", TIE)):
            figures.append((f"Share {name} · {ident}", lambda v, c=choice: float(v == c), SHARE))
        figures.append(
            (f"Share second preferred · {ident}", lambda v: float(v == PREFER_SECOND), SHARE)
        )
    return figures


def estimands(inp: ReportInput) -> list[Estimand]:
    """Per question, over items: the mean of Likert and slider answers, and the share of each
    option of single-choice questions and of each preference of pairwise ones (the humans'
    value of an item: over their answers to it)."""
    try:
        questions = project_config(inp.config)["questions"]
    except serializers.ValidationError:
        return []
    humans = inp.coder_ids(HUMAN)
    judges = [c for c in inp.coders if c.kind == JUDGE]
    found = []
    for question in questions:
        for figure, value, bounds in _figures(question):
            found.append(
                Estimand(
                    figure=figure,
                    bounds=bounds,
                    humans=_per_item(inp, humans, question["id"], value),
                    judges={
                        j.label or j.id: _per_item(inp, [j.id], question["id"], value)
                        for j in judges
                    },
                )
            )
    return found


sections.register(Questionnaire.slug, section=section, estimands=estimands)
