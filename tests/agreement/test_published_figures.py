"""Comparing a project with published figures typed in (ReproHum: a reproduction against the
original paper's MARs), CV* and Spearman's rho as in REFERENCE.md."""

import pytest
from django.test import Client

from agreement.reports import compare_reports
from agreement.reports.published import parse_published, published_report
from core.errors import Refusal
from metrics import cv_star

SYSTEMS = {"Just": 2.18, "Explain-Extr": 1.93, "Explain-MT": 1.62}  # the reproduction


def reproduction():
    return {"comparison": {"scalars": {}, "vectors": {"MAR · coverage": dict(SYSTEMS)}}}


def test_published_values_parse_one_entry_per_line_in_any_common_form():
    text = "Just: 1.48\nexplain-extr = 1.89\n\n  Explain-MT\t1.68  \n"
    assert parse_published(text=text, known=SYSTEMS) == {
        "Just": 1.48,
        "Explain-Extr": 1.89,  # matched case-insensitively to the report's own name
        "Explain-MT": 1.68,
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Just 1.48", "Line 1: write"),
        ("Just: 1.48\nExplain-Extr: many", "Line 2: 'many' is not a number"),
        ("Just: nan", "Line 1: 'nan' is not a number"),
        ("Just: 1.48\nBaseline: 2.0", "Line 2: no entry 'Baseline'"),
        ("Just: 1.48\njust: 1.5", "Line 2: 'just' is given twice"),
        ("", "Type at least one"),
    ],
)
def test_bad_published_values_are_refused_naming_the_line(text, message):
    with pytest.raises(Refusal) as refused:
        parse_published(text=text, known=SYSTEMS)
    assert message in refused.value.message and refused.value.field == "values"


def test_the_reproduction_against_the_published_original_gives_the_papers_cv_star_and_rho():
    original = parse_published(
        text="Just: 1.48\nExplain-Extr: 1.89\nExplain-MT: 1.68", known=SYSTEMS
    )
    result = compare_reports(
        reproduction(),
        published_report(vector="MAR · coverage", values=original),
        labels=("Reproduction", "Original (published)"),
    )
    rows = {r["entry"]: r for r in result["vectors"]["rows"]}
    # REFERENCE.md, Table 2: reproduction vs original 38.14 / 2.09 / 3.63.
    assert rows["Just"]["cv_star"] == pytest.approx(38.14, abs=0.01)
    assert rows["Explain-Extr"]["cv_star"] == pytest.approx(2.09, abs=0.01)
    assert rows["Explain-MT"]["cv_star"] == pytest.approx(3.63, abs=0.01)
    assert rows["Just"]["cv_star"] == pytest.approx(cv_star([2.18, 1.48]))
    (spearman,) = result["spearman"]["rows"]
    assert spearman["rho"] == pytest.approx(-0.5)  # Table 3


def test_the_published_comparison_page_shows_cv_star_and_keeps_the_typed_text(db, researcher):
    from tests.task_types.ranking.test_report import ranked_project  # a small finished study

    project = ranked_project(researcher)
    client = Client()
    client.force_login(researcher)
    client.get(f"/p/{project.slug}/agreement/")  # computes the snapshot (eager in tests)
    response = client.get(
        f"/p/{project.slug}/agreement/compare/published/",
        {"vector": "MAR · Coverage", "values": "S1: 1.5\nS2 2", "label": "Paper"},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "Line 2: write" in html and "S2 2" in html  # the error, and nothing lost
    response = client.get(
        f"/p/{project.slug}/agreement/compare/published/",
        {"vector": "MAR · Coverage", "values": "S1: 1.5\nS2: 2", "label": "Paper"},
    )
    assert response.status_code == 200, response.content
    html = response.content.decode()
    assert "Paper" in html and "CV*" in html and "Spearman" in html
