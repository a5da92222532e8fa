"""A CSV file saved by a European Excel separates its cells with ';' (a probe's finding: the
import said only that a field was missing). It is refused, nothing imported, with the reason and
what to do, whether its format was chosen or detected, for items and for external annotations;
a comma-separated file whose cells hold semicolons is read as before."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation import task_types
from studies.services.format_detection import semicolon_problem
from studies.services.imports import ImportFailed, import_items
from tests import factories

SAID = "this file seems to use ';' as separator"
TO_DO = "save it as comma-separated: in Excel, “CSV UTF-8 (Comma delimited)”"


def _semicolons(text: str) -> str:
    """The example CSV as European Excel writes it (its cells hold no comma or semicolon)."""
    import csv

    rows = list(csv.reader(io.StringIO(text)))
    assert all(";" not in cell and "," not in cell for row in rows for cell in row[:1])
    out = io.StringIO()
    csv.writer(out, delimiter=";", lineterminator="\r\n").writerows(rows)
    return "\ufeff" + out.getvalue()


@pytest.mark.parametrize("fmt", ["csv", "detect"])
def test_an_items_file_with_semicolons_is_refused_saying_why_and_what_to_do(db, fmt):
    project = factories.ProjectFactory(task_type="stance")
    text = _semicolons(task_types.get("stance").example_files()["csv"])
    with pytest.raises(ImportFailed) as refused:
        import_items(project=project, stream=io.StringIO(text), fmt=fmt)
    message = str(refused.value)
    assert SAID in message.lower() and TO_DO in message, message
    if fmt == "csv":
        assert message.startswith("Nothing imported. line 1: this file seems to use ';'")
    assert project.items.count() == 0


def test_a_quoted_header_with_semicolons_is_recognised_too(db):
    project = factories.ProjectFactory(task_type="stance")
    text = '"id";"claim";"response"\r\n"1";"a";"b"\r\n'
    with pytest.raises(ImportFailed, match="seems to use ';' as separator"):
        import_items(project=project, stream=io.StringIO(text), fmt="csv")


def test_a_comma_separated_file_with_semicolons_in_its_cells_is_read_as_before(db):
    import csv

    project = factories.ProjectFactory(task_type="stance")
    rows = list(csv.reader(io.StringIO(task_types.get("stance").example_files()["csv"])))
    column = rows[0].index("claim")
    rows[1][column] += "; and more"
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    report = import_items(project=project, stream=io.StringIO(out.getvalue()), fmt="csv")
    assert report.created >= 1


@pytest.mark.parametrize(
    ("header", "refused"),
    [
        ("claim;evidence\r\n", True),
        ("\ufeffclaim ; evidence ; label\n", True),
        ('"claim";"evidence"\n', True),
        ("claim,evidence;notes\n", False),  # commas separate: a ';' in a name is a name
        ("claim\tevidence;x\n", False),
        ("claim\n", False),
        ("claim;\n", False),  # one name and an empty one: not a header of several columns
        (";\n", False),
    ],
)
def test_what_counts_as_a_semicolon_header(header, refused):
    assert bool(semicolon_problem(header=header)) is refused


def test_external_annotations_with_semicolons_are_refused_the_same_way(db, tmp_path):
    project = factories.ProjectFactory(task_type="citation_recovery")
    path = tmp_path / "ratings.csv"
    path.write_text("item;coder;helpfulness\r\nx;a;40\r\n", encoding="utf-8")
    with pytest.raises(CommandError) as refused:
        call_command("import_annotations", str(path), project=project.slug, fmt="csv")
    assert SAID in str(refused.value) and "Nothing imported" in str(refused.value)
