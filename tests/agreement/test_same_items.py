"""Issue 27, item 1: wherever judges and humans share a table, the comparison is on the items
both have, with the count shown; a judge's all-items figure is a separate, labelled row.

Walks every report table of every task type with a report section (the report registry), on a
replay of that task type (or, for one with no source study, a simulated one): the humans keep their answers on a third of the items, and a judge
answers every item (the first human answer of each item, copied: a judge that agrees well). The
report must equal, row for row, the report computed with the judge cut down by hand to the
humans' items, except for rows labelled as the judge's all-items figure."""

from __future__ import annotations

import importlib
from dataclasses import replace

import pytest

from agreement.reports import build_report
from agreement.reports.coverage import ALL_ITEMS, BASIS
from agreement.reports.gather import gather
from agreement.reports.inputs import HUMAN, JUDGE, CoderInfo, ReportInput, ReportOptions
from agreement.reports.sections import report_registry
from studies.replays import replays

JUDGE_ID = "judge:copying-judge"


def _answered_project(task_type: str):
    """The task type's first replay, run; a task type with no source study to replay brings a
    simulated one (``tests/task_types/<slug>/simulated_study.py``: ``run(seed=…)``)."""
    replay = next((r for r in replays() if r.task_type == task_type), None)
    if replay is not None:
        return replay.run(scale=1, seed=87).project
    try:
        simulated = importlib.import_module(f"tests.task_types.{task_type}.simulated_study")
    except ModuleNotFoundError:
        pytest.fail(
            f"{task_type}: no replay, and no tests/task_types/{task_type}/simulated_study.py"
        )
    return simulated.run(seed=87)


def _with_judge(inp: ReportInput, human_units: set[str], judge_units: set[str]) -> ReportInput:
    """``inp`` with the humans on ``human_units`` and a judge on ``judge_units``."""
    judge: dict[str, dict] = {}
    for coder in inp.coder_ids(HUMAN):
        for unit, answer in inp.answers[coder].items():
            judge.setdefault(unit, answer)
    answers = {
        coder: {u: a for u, a in by_unit.items() if u in human_units}
        for coder, by_unit in inp.answers.items()
        if coder in inp.coder_ids(HUMAN)
    }
    answers[JUDGE_ID] = {u: a for u, a in judge.items() if u in judge_units}
    coders = [c for c in inp.coders if c.kind == HUMAN]
    coders.append(CoderInfo(id=JUDGE_ID, kind=JUDGE, label="copying-judge"))
    return replace(
        inp, coders=coders, answers=answers, presented={}, human_presented={}, columns_cache={}
    )


def _plain(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in (BASIS, ALL_ITEMS)}


@pytest.mark.parametrize("task_type", sorted(report_registry.keys()))
def test_judges_and_humans_are_compared_on_the_same_items_in_every_table(db, task_type):
    inp = gather(project=_answered_project(task_type), options=ReportOptions(n_boot=20))
    answered = sorted({u for c in inp.coder_ids(HUMAN) for u in inp.answers[c]})
    assert len(answered) >= 2, "the replay must give the humans two items at least"
    humans_on = set(answered[: max(1, len(answered) // 3)])
    report = build_report(_with_judge(inp, humans_on, set(answered)))
    # Independent: the judge cut down to the humans' items by hand.
    same = build_report(_with_judge(inp, humans_on, humans_on))

    assert report["human_items"] == len(humans_on)
    assert report["judge_items"] == {"copying-judge": len(answered)}
    labelled = 0
    for name, tbl in report["tables"].items():
        if name == "prediction_powered":
            continue
        expected = [_plain(row) for row in same["tables"][name]["rows"]]
        for row in tbl["rows"]:
            if row.get(ALL_ITEMS):
                assert row[BASIS].startswith("judge's all items (copying-judge: "), (name, row)
                labelled += 1
            else:
                assert _plain(row) in expected, (
                    f"{name}: a row differs from its same-items figure and is not labelled "
                    f"as the judge's all-items figure: {row}"
                )
                assert row[BASIS] == f"the {len(humans_on)} items with human answers"
        if tbl["rows"]:
            assert any(c["key"] == BASIS for c in tbl["columns"]), name
    assert labelled, "the judge's all-items figures appear as labelled rows"
