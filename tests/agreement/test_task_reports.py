"""Report sections of the ranking and stance task types, and the comparison of two reports.

The sections are plain functions of a ReportInput, so most tests build the input by hand; one
test per task type reads it from the database through ``gather`` (payload facts via
``item_extra``).
"""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from agreement.reports import ReportOptions, build_report, compare_reports
from agreement.reports.gather import gather
from agreement.reports.inputs import CoderInfo, ItemInfo, ReportInput
from annotation.models import Item
from tests import factories
from tests.agreement import helpers

OPTIONS = ReportOptions(n_boot=100)


def rows_by(table, key):
    return {row[key]: row for row in table["rows"]}


# --- ranking -------------------------------------------------------------------------------------

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


def test_comparison_reproduces_the_reprohum_cv_star_and_spearman_from_published_mars():
    def fake(mars):
        return {"comparison": {"scalars": {}, "vectors": {"MAR · Coverage": mars}}}

    original = fake({"Just": 1.48, "Explain-Extr": 1.89, "Explain-MT": 1.68})
    reproduction = fake({"Just": 2.18, "Explain-Extr": 1.93, "Explain-MT": 1.62})
    result = compare_reports(reproduction, original, labels=("reproduction", "original"))
    cv = {row["entry"]: row["cv_star"] for row in result["vectors"]["rows"]}
    # ReproHum #0087-01 Table 2 (reproduction vs original), to the published two decimals.
    assert cv["Just"] == pytest.approx(38.14, abs=0.01)
    assert cv["Explain-Extr"] == pytest.approx(2.09, abs=0.01)
    assert cv["Explain-MT"] == pytest.approx(3.63, abs=0.01)
    (rho,) = result["spearman"]["rows"]
    assert rho["rho"] == pytest.approx(-0.5) and rho["entries"] == 3


def test_ranking_report_reads_systems_from_the_database(db):
    project = factories.ProjectFactory(
        task_type="ranking", config={"criteria": [{"name": "Coverage", "definition": "…"}]}
    )
    users = {c: factories.UserFactory() for c in RANKS}
    for user in users.values():
        factories.MembershipFactory(project=project, user=user)
    for n, (item_id, systems) in enumerate(SYSTEMS.items()):
        item = Item.objects.create(
            project=project,
            external_id=item_id,
            payload={"id": item_id, "claim": "c", "label": "true",
                     "outputs": [{"system": s, "text": "…"} for s in systems.values()]},
            prepared={"keys": list(systems), "order_seed": "13:x"},
            position=n,
        )
        for coder, user in users.items():
            answer = ranking_answers()[coder][item_id]
            helpers.answer(item, user, [], 0)
            item.annotations.filter(annotator=user).update(answer=answer)
    report = build_report(gather(project=project, options=OPTIONS))
    mar = rows_by(report["tables"]["mar_1"], "system")
    assert [mar[s]["mar"] for s in ("S1", "S2", "S3")] == [1.25, 1.75, 2.75]


# --- claim review --------------------------------------------------------------------------------

PIPELINE_CLAIMS = [
    {"id": "c1", "text": "One.", "system_label": "supported", "evidence": [True]},
    {"id": "c2", "text": "Two.", "system_label": "refuted", "evidence": [True]},
    {"id": "c3", "text": "Three.", "system_label": "supported", "evidence": [True]},
]
REVIEWS = {
    "a": [
        {"id": "c1", "action": "keep", "agreement": "agree"},
        {"id": "c2", "action": "keep", "agreement": "disagree", "label": "supported"},
        {"id": "c3", "action": "remove", "reason": "redundant"},
        {"id": "new-1", "action": "add", "text": "Four.", "label": "supported"},
    ],
    "b": [
        {"id": "c1", "action": "keep", "agreement": "agree"},
        {"id": "c2", "action": "keep", "agreement": "agree"},
        {"id": "c3", "action": "remove", "reason": "redundant"},
    ],
}


def test_claim_review_report_counts_operations_agreements_and_labels():
    pytest.importorskip("annotation.task_types.claim_review")
    inp = ReportInput(
        task_type="claim_review",
        measures={"claims": "nominal"},
        items={"r1": ItemInfo(key="r1", extra={"model": "gpt-4o", "prompt_source": "freshQA",
                                               "claims": PIPELINE_CLAIMS})},
        coders=[CoderInfo("a"), CoderInfo("b")],
        answers={c: {"r1": {"claims": claims}} for c, claims in REVIEWS.items()},
        options=OPTIONS,
    )
    report = build_report(inp)
    groups = rows_by(report["tables"]["operations"], "group")
    assert set(groups) == {"All", "gpt-4o · freshQA"}
    everything = groups["All"]
    assert everything["samples"] == 2
    assert (everything["unchanged"], everything["revised"], everything["removed"],
            everything["added"]) == (4, 0, 2, 1)
    assert (everything["agreed"], everything["disagreed_corrected"]) == (3, 1)
    labels = rows_by(report["tables"]["labels"], "label")
    assert (labels["supported"]["claims"], labels["redundant"]["claims"],
            labels["refuted"]["claims"]) == (4, 2, 1)
    agreement = rows_by(report["tables"]["claim_agreement"], "attribute")
    assert agreement["Operation"]["units"] == 3 and agreement["Operation"]["pairwise"] == 1.0
    assert agreement["Final label"]["pairwise"] == pytest.approx(2 / 3)
    assert report["comparison"]["scalars"]["Agreed with the pipeline"] == pytest.approx(3 / 4)
    # The generic table still measures the "claims" field (one unit per claim and attribute).
    assert report["tables"]["agreement"]["rows"][0]["units"] > 0


# --- argument structure --------------------------------------------------------------------------

REFERENCE = [{"premises": ["E1", "E2"], "conclusion": "claim"}]
PARTIAL = [{"premises": ["E1"], "conclusion": "claim"}]


def test_argument_structure_report_compares_structures_with_the_reference_and_reviews():
    items = {
        "e1": ItemInfo(key="e1", gold={"structure": REFERENCE},
                       extra={"mode": "edit", "draft": PARTIAL}),
        **{k: ItemInfo(key=k, extra={"mode": "review", "draft": None})
           for k in ("r1", "r2", "r3")},
    }
    decisions = {"a": ("retain", "retain", "discard"), "b": ("retain", "discard", "discard")}
    answers = {c: {"e1": {"steps": steps}} for c, steps in (("a", PARTIAL), ("b", REFERENCE))}
    for coder, chosen in decisions.items():
        for item, decision in zip(("r1", "r2", "r3"), chosen, strict=True):
            answers[coder][item] = {"decision": decision, "faithfulness": True,
                                    "fluency": coder == "a", "validity": True}
    inp = ReportInput(
        task_type="argument_structure",
        measures={"edges": "jaccard", "decision": "nominal"},
        items=items,
        coders=[CoderInfo("a"), CoderInfo("b")],
        answers=answers,
        options=OPTIONS,
    )
    report = build_report(inp)
    metrics = rows_by(report["tables"]["structure_metrics"], "source")
    # a: edges {E1→claim} vs {E1→claim, E2→claim} = 1/2; b matches: 1 → mean 0.75.
    assert metrics["Annotators"]["edge_similarity"] == pytest.approx(0.75)
    assert metrics["Annotators"]["leaf_f1"] == pytest.approx((2 / 3 + 1) / 2)
    assert metrics["Drafts (starting point)"]["edge_similarity"] == pytest.approx(0.5)
    review = rows_by(report["tables"]["review"], "measure")
    assert review["Decision: retain"]["share"] == pytest.approx(0.5)
    assert review["Fluency: yes"]["share"] == pytest.approx(0.5)
    # P̄ = (1 + 0 + 1) / 3, p(retain) = 1/2 → κ = (2/3 - 1/2) / (1/2) = 1/3.
    assert review["Fleiss' κ (retain / discard)"]["kappa"] == pytest.approx(1 / 3)
