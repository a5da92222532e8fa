"""Ranking's report section: MAR per system per annotator and overall, alpha at four levels.

The section is a plain function of a ReportInput, so most tests build the input by hand; one
reads it from the database through ``gather`` (the systems behind the keys via ``item_extra``).
"""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from agreement.reports import ReportOptions, build_report
from agreement.reports.gather import gather
from agreement.reports.inputs import CoderInfo, ItemInfo, ReportInput
from annotation.models import Item
from tests import factories
from tests.agreement import helpers

OPTIONS = ReportOptions(n_boot=100)


def rows_by(table, key):
    return {row[key]: row for row in table["rows"]}


SYSTEMS = {"i1": {"k1": "S1", "k2": "S2", "k3": "S3"}, "i2": {"m1": "S1", "m2": "S2", "m3": "S3"}}
# Ranks by system: x ranks i1 1, 2, 3 and i2 1, 1, 3; y ranks i1 2, 1, 3 and i2 1, 3, 2.
RANKS = {
    "x": {"i1": {"S1": 1, "S2": 2, "S3": 3}, "i2": {"S1": 1, "S2": 1, "S3": 3}},
    "y": {"i1": {"S1": 2, "S2": 1, "S3": 3}, "i2": {"S1": 1, "S2": 3, "S3": 2}},
}


def ranking_answers():
    answers = {}
    for coder, by_item in RANKS.items():
        answers[coder] = {}
        for item, ranks in by_item.items():
            key_of = {system: key for key, system in SYSTEMS[item].items()}
            answers[coder][item] = {
                "order": list(SYSTEMS[item]),
                "ranks": {"Coverage": {key_of[s]: r for s, r in ranks.items()}},
            }
    return answers


def ranking_input():
    return ReportInput(
        task_type="ranking",
        measures={"ranks": "ordinal"},
        items={k: ItemInfo(key=k, extra={"systems": v}) for k, v in SYSTEMS.items()},
        coders=[CoderInfo("x", label="Xavier"), CoderInfo("y", label="Yuki")],
        answers=ranking_answers(),
        config={"criteria": [{"name": "Coverage", "definition": "…"}]},
        options=OPTIONS,
    )


def test_ranking_report_gives_mar_per_system_per_annotator_and_overall():
    report = build_report(ranking_input())
    mar = rows_by(report["tables"]["mar_1"], "system")
    assert mar["S1"]["mar:x"] == 1.0 and mar["S1"]["mar:y"] == 1.5
    assert mar["S2"]["mar:x"] == 1.5 and mar["S2"]["mar:y"] == 2.0
    assert mar["S3"]["mar:x"] == 3.0 and mar["S3"]["mar:y"] == 2.5
    assert [mar[s]["mar"] for s in ("S1", "S2", "S3")] == [1.25, 1.75, 2.75]
    assert list(mar) == ["S1", "S2", "S3"]  # best first
    assert report["section"]["summary"][0] == {"label": "Best · Coverage", "value": "S1 (1.25)"}
    assert report["comparison"]["vectors"]["MAR · Coverage"] == {"S1": 1.25, "S2": 1.75, "S3": 2.75}
    labels = [c["label"] for c in report["tables"]["mar_1"]["columns"]]
    assert "Xavier" in labels and "Yuki" in labels


def test_ranking_alpha_at_four_levels_equals_the_krippendorff_package():
    report = build_report(ranking_input())
    (row,) = report["tables"]["alpha_levels"]["rows"]
    units = [(item, system) for item in ("i1", "i2") for system in ("S1", "S2", "S3")]
    matrix = np.array([[RANKS[c][i][s] for i, s in units] for c in ("x", "y")], dtype=float)
    for level in ("nominal", "ordinal", "interval", "ratio"):
        expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
        assert row[f"alpha_{level}"] == pytest.approx(expected), level
    assert row["units"] == 6 and row["coders"] == 2
    # The generic row of the "ranks" field flattens to the same units at the ordinal level.
    generic = report["tables"]["agreement"]["rows"][0]
    assert generic["units"] == 6 and generic["alpha"] == pytest.approx(row["alpha_ordinal"])


def ranked_project(researcher=None):
    """The hand-made study above, in the database (two annotators, two items)."""
    project = factories.ProjectFactory(
        task_type="ranking", config={"criteria": [{"name": "Coverage", "definition": "…"}]}
    )
    if researcher is not None:
        factories.MembershipFactory(project=project, user=researcher, role="researcher")
    users = {c: factories.UserFactory() for c in RANKS}
    for user in users.values():
        factories.MembershipFactory(project=project, user=user)
    for n, (item_id, systems) in enumerate(SYSTEMS.items()):
        item = Item.objects.create(
            project=project,
            external_id=item_id,
            payload={
                "id": item_id,
                "claim": "c",
                "label": "true",
                "outputs": [{"system": s, "text": "…"} for s in systems.values()],
            },
            prepared={"keys": list(systems), "order_seed": "13:x"},
            position=n,
        )
        for coder, user in users.items():
            answer = ranking_answers()[coder][item_id]
            helpers.answer(item, user, [], 0)
            item.annotations.filter(annotator=user).update(answer=answer)
    return project


def test_ranking_report_reads_systems_from_the_database(db):
    project = ranked_project()
    report = build_report(gather(project=project, options=OPTIONS))
    mar = rows_by(report["tables"]["mar_1"], "system")
    assert [mar[s]["mar"] for s in ("S1", "S2", "S3")] == [1.25, 1.75, 2.75]


def test_mean_rank_and_first_place_get_prediction_powered_estimates_per_system():
    from dataclasses import replace

    from agreement.reports.inputs import JUDGE
    from metrics.prediction_powered import prediction_powered_mean

    inp = ranking_input()
    extra = {f"i{n}": {f"o{n}1": "S1", f"o{n}2": "S2", f"o{n}3": "S3"} for n in (3, 4, 5)}
    items = {**inp.items, **{k: ItemInfo(key=k, extra={"systems": v}) for k, v in extra.items()}}
    # The judge ranks i1 and i2 as Xavier did; S1 first on i3 and i4, last on i5.
    judge = dict(ranking_answers()["x"])
    for n, first in ((3, "S1"), (4, "S1"), (5, "S2")):
        keys = {s: k for k, s in extra[f"i{n}"].items()}
        others = [s for s in ("S1", "S2", "S3") if s != first]
        order = {first: 1, others[0]: 2, others[1]: 3}
        judge[f"i{n}"] = {
            "order": list(keys.values()),
            "ranks": {"Coverage": {keys[s]: r for s, r in order.items()}},
        }
    inp = replace(
        inp,
        items=items,
        coders=[*inp.coders, CoderInfo("judge:j", kind=JUDGE, label="j")],
        answers={**inp.answers, "judge:j": judge},
    )
    rows = rows_by(build_report(inp)["tables"]["prediction_powered"], "figure")
    first = rows["Ranked first · Coverage · S1"]
    # Humans: i1 Xavier 1st, Yuki 2nd → 0.5; i2 both 1st → 1. Judge: 1, 1 there; 1, 1, 0 on i3–i5.
    assert first["human"] == pytest.approx(0.75) and first["human_n"] == 2
    assert first["judge_only"] == pytest.approx(0.8) and first["judge_n"] == 5
    expected = prediction_powered_mean([0.5, 1.0], [1.0, 1.0], [1.0, 1.0, 0.0])
    assert first["ppi"] == pytest.approx(expected.estimate)
    # "ranked first" is a share: its interval is cut to [0, 1], here at the top
    assert expected.high > 1 and first["ppi_upper"] == 1.0
    assert first["ppi_lower"] == pytest.approx(expected.low)
    mean_rank = rows["Mean rank · Coverage · S3"]
    assert mean_rank["human"] == pytest.approx(np.mean([3.0, 2.5]))
