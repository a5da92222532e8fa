"""Comparing two reports (original versus reproduction): CV* and Spearman's rho. Each task
type's own report section is tested in tests/task_types/<slug>/."""

from __future__ import annotations

import pytest

from agreement.reports import ReportOptions, compare_reports

OPTIONS = ReportOptions(n_boot=100)


def rows_by(table, key):
    return {row[key]: row for row in table["rows"]}


# --- comparison ----------------------------------------------------------------------------------


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
