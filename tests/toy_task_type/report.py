from __future__ import annotations

from agreement.reports.inputs import ReportInput
from agreement.reports.sections import register
from agreement.reports.tables import column, table


def section(report_input: ReportInput) -> dict:
    """Share of "yes" answers, one row."""
    answers = [a for by_unit in report_input.answers.values() for a in by_unit.values()]
    yes = sum(1 for a in answers if a.get("answer") is True)
    share = yes / len(answers) if answers else None
    rows = [{"answers": len(answers), "yes": yes, "share_yes": share}]
    columns = [
        column("answers", "Answers", "int"),
        column("yes", "Yes", "int"),
        column("share_yes", "Share yes", "num"),
    ]
    return {
        "title": "Yes or no",
        "summary": [{"label": "Share yes", "value": "–" if share is None else f"{share:.2f}"}],
        "tables": {"yes_share": table("Yes answers", columns, rows)},
    }


register("yes_no", section=section)
