"""The ReproHum #0087-01 replay: set-up, real items, simulated annotators through the API, the
original study's rankings loaded as external coders, and the paper's figures (MAR per system,
alpha at four levels, original vs reproduction MAR, CV* and Spearman's rho) checked against an
independent computation from the stored answers and the original sheet."""

import csv
import io
import math
from collections import defaultdict
from statistics import fmean, stdev

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from scipy.stats import spearmanr

from annotation.models import Annotation, ExternalAnnotation, Item
from studies.replays import replay_registry
from task_types.ranking.replay import original_sheet, records


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
        "replay-reprohum-cv_star.csv",
        "replay-reprohum-mar_1.csv",
        "replay-reprohum-mar_2.csv",
        "replay-reprohum-mar_3.csv",
        "replay-reprohum-mar_4.csv",
        "replay-reprohum-original_alpha_levels.csv",
        "replay-reprohum-original_vs_reproduction_mar.csv",
        "replay-reprohum-spearman.csv",
    ]
    header = (out / "replay-reprohum-mar_1.csv").read_text().splitlines()[0]
    assert header.startswith("system,mar,pooled")


def original_mars() -> dict[str, dict[str, float]]:
    """{criterion: {system: MAR}} of the generated original sheet, read with the csv module and
    its mapping file (not through the platform): the mean of the annotators' MARs."""
    sheet, mapping = original_sheet(records(1), seed=87)
    system_of = {
        (row["id"], int(row["column"].split()[-1])): row["system"]
        for row in csv.DictReader(io.StringIO(mapping))
    }
    ranks = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for row in csv.DictReader(io.StringIO(sheet)):
        for column, cell in row.items():
            head, _, number = column.rpartition(" ")
            if number.isdigit():
                system = system_of[(row["id"], int(number))]
                ranks[head][system][row["annotator"]].append(int(cell))
    return {
        criterion: {
            system: fmean(fmean(r) for r in by_annotator.values())
            for system, by_annotator in by_system.items()
        }
        for criterion, by_system in ranks.items()
    }


def reproduction_mars(project) -> dict[str, dict[str, float]]:
    out = {}
    for criterion, values in stored_ranks(project).items():
        per = defaultdict(lambda: defaultdict(list))
        for annotator, _item, system, rank in values:
            per[system][annotator].append(rank)
        out[criterion] = {s: fmean(fmean(r) for r in a.values()) for s, a in per.items()}
    return out


def cv_star_by_hand(a: float, b: float) -> float:
    """Belz et al. (2022): (1 + 1/4n) * 100 * (s / c4(n)) / mean, n = 2, s with n - 1."""
    n = 2
    c4 = math.sqrt(2 / (n - 1)) * math.gamma(n / 2) / math.gamma((n - 1) / 2)
    return (1 + 1 / (4 * n)) * 100 * (stdev([a, b]) / c4) / fmean([a, b])


def test_the_original_rankings_are_external_coders_and_leave_the_reproduction_alone(replayed):
    project = replayed.project
    originals = ExternalAnnotation.objects.filter(item__project=project)
    assert originals.count() == 10 * 3
    assert sorted({a.coder.name for a in originals}) == ["original-1", "original-2", "original-3"]
    # The reproduction's own tables count only the simulated annotators.
    for table in (replayed.tables[f"mar_{n}"] for n in range(1, 5)):
        assert not any(key.startswith("mar:ext:") for key in table["rows"][0])


def test_original_vs_reproduction_mar_cv_star_and_spearman_equal_an_independent_computation(
    replayed,
):
    original, reproduction = original_mars(), reproduction_mars(replayed.project)
    mar_rows = replayed.tables["original_vs_reproduction_mar"]["rows"]
    assert len(mar_rows) == 4 * 3
    for row in mar_rows:
        assert row["original"] == pytest.approx(original[row["criterion"]][row["system"]])
        assert row["reproduction"] == pytest.approx(reproduction[row["criterion"]][row["system"]])
    cv_rows = replayed.tables["cv_star"]["rows"]
    assert len(cv_rows) == 12
    for row in cv_rows:
        a = original[row["criterion"]][row["system"]]
        b = reproduction[row["criterion"]][row["system"]]
        assert row["cv_star"] == pytest.approx(cv_star_by_hand(a, b))
    rho_rows = {r["criterion"]: r for r in replayed.tables["spearman"]["rows"]}
    assert set(rho_rows) == set(original)
    for criterion, by_system in original.items():
        systems = sorted(by_system)
        expected = spearmanr(
            [by_system[s] for s in systems], [reproduction[criterion][s] for s in systems]
        ).statistic
        assert rho_rows[criterion]["systems"] == 3
        assert rho_rows[criterion]["rho"] == pytest.approx(expected)
    # The generated original prefers GPT-3.5 on Overall; the reproduction prefers GPT-4.
    overall = {r["system"]: r["original"] for r in mar_rows if r["criterion"] == "Overall"}
    assert min(overall, key=overall.get) == "gpt35"


def test_cv_star_by_hand_gives_the_published_reprohum_figures():
    """The independent CV* above, on the published MARs (REFERENCE.md, Table 2: reproduction vs
    original 38.14 / 2.09 / 3.63), so the check of the replay's CV* can fail."""
    original, reproduction = [1.48, 1.89, 1.68], [2.18, 1.93, 1.62]
    got = [cv_star_by_hand(a, b) for a, b in zip(original, reproduction, strict=True)]
    assert got == pytest.approx([38.14, 2.09, 3.63], abs=0.01)


def test_the_reproductions_own_set_up_ranks_coverage_only_with_its_guideline(db):
    """ReproHum #0087-01 ranked Coverage only, with the guideline modified to state the tie
    rule: the replay ``reprohum-coverage``. Its tables equal the same independent computations
    as the four-criteria replay's."""
    result = replay_registry.get("reprohum-coverage").run(scale=1, seed=87)
    project = result.project
    assert [c["name"] for c in project.config["criteria"]] == ["Coverage"]
    assert project.config["tie_instructions"] is False and "1, 1, 3" in project.guidelines
    assert sorted(n for n in result.tables if n.startswith("mar_")) == ["mar_1"]
    by_criterion = stored_ranks(project)
    assert list(by_criterion) == ["Coverage"] and len(by_criterion["Coverage"]) == 10 * 3 * 3
    reproduction = reproduction_mars(project)["Coverage"]
    got = {row["system"]: row["mar"] for row in result.tables["mar_1"]["rows"]}
    assert got == pytest.approx(reproduction)
    sheet, mapping = original_sheet(records(1), seed=87, criteria=["Coverage"])
    assert "Coverage 1" in sheet.splitlines()[0] and "Overall 1" not in sheet.splitlines()[0]
    mar_rows = result.tables["original_vs_reproduction_mar"]["rows"]
    assert {r["criterion"] for r in mar_rows} == {"Coverage"} and len(mar_rows) == 3
    for row in mar_rows:
        assert row["reproduction"] == pytest.approx(reproduction[row["system"]])
    for row in result.tables["cv_star"]["rows"]:
        a = next(r["original"] for r in mar_rows if r["system"] == row["system"])
        assert row["cv_star"] == pytest.approx(cv_star_by_hand(a, reproduction[row["system"]]))
    (rho,) = result.tables["spearman"]["rows"]
    systems = sorted(reproduction)
    originals = {r["system"]: r["original"] for r in mar_rows}
    expected = spearmanr([originals[s] for s in systems], [reproduction[s] for s in systems])
    assert rho["rho"] == pytest.approx(expected.statistic)
    values = by_criterion["Coverage"]
    annotators = sorted({a for a, *_ in values})
    units = sorted({(i, s) for _, i, s, _ in values})
    matrix = np.full((len(annotators), len(units)), np.nan)
    for annotator, item, system, rank in values:
        matrix[annotators.index(annotator), units.index((item, system))] = rank
    (alpha,) = result.tables["alpha_levels"]["rows"]
    for level in ("nominal", "ordinal", "interval", "ratio"):
        expected_alpha = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
        assert alpha[f"alpha_{level}"] == pytest.approx(expected_alpha, abs=1e-9)
