"""The ReproHum #0087-01 replay: set-up, real items, simulated annotators through the API, and
the paper's figures (MAR per system, alpha at four levels) checked against an independent
computation from the stored answers."""

from collections import defaultdict
from statistics import fmean

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command

from annotation.models import Annotation, Item
from studies.replays import replay_registry


@pytest.fixture
def replayed(db):
    return replay_registry.get("reprohum").run(scale=1, seed=87)


def stored_ranks(project):
    """{criterion: [(annotator, item, system, rank)]} read straight from the annotations."""
    rows = defaultdict(list)
    for annotation in Annotation.objects.filter(item__project=project).select_related("item"):
        item = annotation.item
        system_of = {
            key: output["system"]
            for key, output in zip(item.prepared["keys"], item.payload["outputs"], strict=True)
        }
        for criterion, ranks in annotation.answer["ranks"].items():
            for key, rank in ranks.items():
                rows[criterion].append((annotation.annotator_id, item.id, system_of[key], rank))
    return rows


def test_the_replay_is_set_up_as_the_paper_and_every_item_is_ranked_three_times(replayed):
    project = replayed.project
    assert project.task_type == "ranking" and project.annotators_per_item == 3
    assert Item.objects.filter(project=project).count() == 10
    per_item = defaultdict(int)
    for annotation in Annotation.objects.filter(item__project=project):
        per_item[annotation.item_id] += 1
        assert annotation.assignment.state == "submitted"  # through the API's submit
    assert set(per_item.values()) == {3} and len(per_item) == 10


def test_mar_per_system_is_the_mean_of_the_annotators_mars(replayed):
    criteria = [c["name"] for c in replayed.project.config["criteria"]]
    by_criterion = stored_ranks(replayed.project)
    for index, criterion in enumerate(criteria, start=1):
        per_annotator = defaultdict(lambda: defaultdict(list))
        for annotator, _item, system, rank in by_criterion[criterion]:
            per_annotator[system][annotator].append(rank)
        expected = {
            system: fmean(fmean(ranks) for ranks in by_annotator.values())
            for system, by_annotator in per_annotator.items()
        }
        table = replayed.tables[f"mar_{index}"]
        assert criterion in table["title"]
        got = {row["system"]: row["mar"] for row in table["rows"]}
        assert got == pytest.approx(expected)
    # The simulated quality order shows: GPT-4 best (lowest MAR) overall.
    overall = {r["system"]: r["mar"] for r in replayed.tables["mar_4"]["rows"]}
    assert min(overall, key=overall.get) == "gpt4"


def test_alpha_at_the_four_levels_equals_the_krippendorff_package(replayed):
    by_criterion = stored_ranks(replayed.project)
    rows = {r["criterion"]: r for r in replayed.tables["alpha_levels"]["rows"]}
    for criterion, values in by_criterion.items():
        annotators = sorted({a for a, *_ in values})
        units = sorted({(i, s) for _, i, s, _ in values})
        matrix = np.full((len(annotators), len(units)), np.nan)
        for annotator, item, system, rank in values:
            matrix[annotators.index(annotator), units.index((item, system))] = rank
        for level in ("nominal", "ordinal", "interval", "ratio"):
            expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
            assert rows[criterion][f"alpha_{level}"] == pytest.approx(expected, abs=1e-9)
        assert rows[criterion]["alpha_ordinal"] < 0.95  # simulated annotators disagree


def test_the_command_writes_the_papers_tables_as_csv(db, tmp_path):
    out = tmp_path / "tables"
    call_command("replay_study", "reprohum", "--out", str(out))
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "replay-reprohum-alpha_levels.csv",
        "replay-reprohum-mar_1.csv",
        "replay-reprohum-mar_2.csv",
        "replay-reprohum-mar_3.csv",
        "replay-reprohum-mar_4.csv",
    ]
    header = (out / "replay-reprohum-mar_1.csv").read_text().splitlines()[0]
    assert header.startswith("system,mar,pooled")
