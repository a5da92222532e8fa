from __future__ import annotations

from agreement.reports.inputs import ReportInput
from agreement.reports.sections import Figure, SectionResult, register
from agreement.reports.tables import Table, column, table


def yes_share(report_input: ReportInput) -> Table:
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
    return table("Yes answers", columns, rows)


def section(report_input: ReportInput) -> SectionResult:
    share = yes_share(report_input)
    value = share["rows"][0]["share_yes"]
    return SectionResult(
        title="Yes or no",
        tables={"yes_share": share},
        summary=[Figure("Share yes", "–" if value is None else f"{value:.2f}")],
        scalars={"share yes": value},
    )


register("yes_no", section=section)
