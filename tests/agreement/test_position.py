"""metrics.position against hand-computed values, and the ranking report's human position
effect from a hand-built report input."""

import pytest

from agreement.reports.inputs import CoderInfo, ItemInfo, ReportInput, ReportOptions
from metrics.position import first_shown_preference, mean_rank_by_position, wilson_interval
from task_types.ranking.report import human_position_rows


def test_wilson_interval_of_8_in_10():
    # By hand: p = 0.8, z = 1.959964; centre (0.8 + z²/20) / (1 + z²/10) = 0.716740,
    # half width z·sqrt(0.016 + z²/400) / (1 + z²/10) = 0.226578.
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.490162, abs=1e-6)
    assert high == pytest.approx(0.943318, abs=1e-6)
    assert wilson_interval(0, 5)[0] == 0.0 and wilson_interval(5, 5)[1] == 1.0
    with pytest.raises(ValueError, match="a proportion needs at least one trial"):
        wilson_interval(1, 0)
    with pytest.raises(ValueError, match="successes must lie between 0 and the trials"):
        wilson_interval(6, 5)


def test_first_shown_preference_counts_ties_apart():
    found = first_shown_preference([1, 1, 1, -1, 0, 0])
    assert (found.answers, found.first, found.ties, found.second) == (6, 3, 2, 1)
    assert found.share_first == 0.75
    assert found.low == pytest.approx(wilson_interval(3, 4)[0])
    assert first_shown_preference([0, 0]).share_first is None


def test_mean_rank_by_position():
    assert mean_rank_by_position([(1, 1), (2, 3), (1, 2), (2, 2)]) == {1: (2, 1.5), 2: (2, 2.5)}


def test_the_ranking_report_shows_a_panel_that_always_ranks_the_first_output_best():
    """Two annotators, two items, two outputs: each ranks whatever is shown first as 1. One saw
    item i1 in its order and i2 reversed, the other the opposite."""
    systems = {"k1": "alpha", "k2": "beta"}
    items = {u: ItemInfo(key=u, extra={"systems": systems}) for u in ("i1", "i2")}

    def first_best(order):
        return {"order": order, "ranks": {"Overall": {order[0]: 1, order[1]: 2}}}

    forward, backward = ["k1", "k2"], ["k2", "k1"]
    answers = {
        "a": {"i1": first_best(forward), "i2": first_best(backward)},
        "b": {"i1": first_best(backward), "i2": first_best(forward)},
    }
    presented = {
        "a": {
            "i1": {"order": forward, "reversed": False},
            "i2": {"order": backward, "reversed": True},
        },
        "b": {
            "i1": {"order": backward, "reversed": True},
            "i2": {"order": forward, "reversed": False},
        },
    }
    inp = ReportInput(
        task_type="ranking",
        measures={"ranks": "ordinal"},
        items=items,
        coders=[CoderInfo("a"), CoderInfo("b")],
        answers=answers,
        options=ReportOptions(n_boot=10),
        human_presented=presented,
    )
    positions, by_system = human_position_rows(inp, "Overall")
    assert [(r["position"], r["ranks"], r["mean_rank"]) for r in positions] == [
        (1, 4, 1.0),
        (2, 4, 2.0),
    ]
    alpha = next(r for r in by_system if r["system"] == "alpha")
    # alpha (k1) is first in the item's order: rank 1 there, rank 2 reversed.
    assert (alpha["mar_shown"], alpha["mar_reversed"], alpha["difference"]) == (1.0, 2.0, 1.0)
