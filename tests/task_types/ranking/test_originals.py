"""The original study's rankings as external coders: the ``reprohum-ranks`` reader on the
ReproHum sheet's shape with the real per-row mapping file; ranks stored by each item's opaque
keys; bad rows named by line and field, nothing imported."""

import csv
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import ExternalAnnotation, ExternalCoder, Item
from studies.services.external_annotations import import_annotations
from studies.services.imports import ImportFailed, import_items
from tests import factories
from tests.conftest import REPO

DATA = REPO / "data" / "explanation-ranking"
MAPPING = (DATA / "reprohum_mapping.csv").read_text()
CRITERIA = [
    {"name": "Coverage", "definition": "Covers the salient points.", "examples": []},
    {"name": "Overall", "definition": "Overall quality.", "examples": []},
]


def mapping_rows() -> dict[str, dict[int, str]]:
    """{claim id: {justification number: system}} read straight from the mapping file."""
    rows: dict[str, dict[int, str]] = {}
    for row in csv.DictReader(io.StringIO(MAPPING)):
        rows.setdefault(row["id"], {})[int(row["column"].split()[-1])] = row["system"]
    return rows


CLAIMS = list(mapping_rows())


@pytest.fixture
def project(db):
    project = factories.ProjectFactory(
        task_type="ranking", config={"criteria": CRITERIA, "seed": 5}
    )
    with open(DATA / "reprohum_sheet.csv", "rb") as stream:
        import_items(project=project, stream=stream, fmt="reprohum", options={"mapping": MAPPING})
    return project


def sheet(rows: list[list]) -> str:
    header = ["id", "annotator", "claim", "Coverage 1", "Coverage 2", "Coverage 3"]
    header += ["Overall 1", "Overall 2", "Overall 3"]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def load(project, text: str, mapping: str | None = MAPPING):
    return import_annotations(
        project=project,
        stream=io.BytesIO(text.encode()),
        fmt="reprohum-ranks",
        source="original",
        options={"mapping": mapping},
    )


def test_the_original_ranks_are_stored_by_each_items_keys_and_shown_order(project):
    rows = [
        [CLAIMS[0], "A1", "claim text", 1, 1, 3, 2, 1, 3],
        [CLAIMS[0], "A2", "", 3, 2, 1, "", "", ""],  # Overall not ranked by A2
        [CLAIMS[1], "A1", "", 2, 1, 3, 1, 2, 3],
    ]
    counts = load(project, sheet(rows))
    assert counts == {
        "annotations": 3,
        "coders": 2,
        "new_coders": 2,
        "skipped": 0,
        "skipped_first": "",
    }
    systems = mapping_rows()
    for claim, coder, ranks in [
        (CLAIMS[0], "A1", {"Coverage": [1, 1, 3], "Overall": [2, 1, 3]}),
        (CLAIMS[0], "A2", {"Coverage": [3, 2, 1]}),
        (CLAIMS[1], "A1", {"Coverage": [2, 1, 3], "Overall": [1, 2, 3]}),
    ]:
        item = Item.objects.get(project=project, external_id=claim)
        key_of = {
            o["system"]: k
            for k, o in zip(item.prepared["keys"], item.payload["outputs"], strict=True)
        }
        stored = ExternalAnnotation.objects.get(item=item, coder__name=coder)
        # The order the original annotator saw: justification 1, 2, 3 of the row.
        assert stored.answer["order"] == [key_of[systems[claim][n]] for n in (1, 2, 3)]
        assert stored.answer["ranks"] == {
            criterion: {key_of[systems[claim][n]]: r for n, r in zip((1, 2, 3), given, strict=True)}
            for criterion, given in ranks.items()
        }
        assert stored.source == "original"


def test_the_command_takes_the_mapping_file(project, tmp_path):
    path = tmp_path / "original.csv"
    path.write_text(sheet([[CLAIMS[2], "B", "", 1, 2, 3, 1, 2, 3]]))
    out = io.StringIO()
    call_command(
        "import_annotations",
        str(path),
        project=project.slug,
        fmt="reprohum-ranks",
        mapping=str(DATA / "reprohum_mapping.csv"),
        stdout=out,
    )
    assert "Imported 1 annotations by 1 external coders" in out.getvalue()
    with pytest.raises(CommandError, match="needs the mapping file"):
        call_command("import_annotations", str(path), project=project.slug, fmt="reprohum-ranks")
    with pytest.raises(CommandError, match="takes no mapping file"):
        call_command(
            "import_annotations",
            str(path),
            project=project.slug,
            fmt="csv",
            mapping=str(DATA / "reprohum_mapping.csv"),
        )


@pytest.mark.parametrize(
    "row, message",
    [
        ([0, "A", "", 1, "x", 3, 1, 2, 3], "line 3, field 'Coverage 2': a rank is a whole number"),
        ([0, "A", "", 1, "", 3, 1, 2, 3], "line 3, field 'Coverage 2': Coverage is ranked for"),
        ([0, "A", "", 1, 1, 2, 1, 2, 3], "line 3, field 'answer.ranks.Coverage': Ranks 1, 1, 2"),
        ([0, "A", "", 1, 2, 4, 1, 2, 3], "line 3, field 'answer.ranks.Coverage': Ranks run from"),
        (["nope", "A", "", 1, 2, 3, 1, 2, 3], "line 3, field 'id': the mapping file has no"),
        ([0, "", "", 1, 2, 3, 1, 2, 3], "line 3, field 'coder': a coder name"),
        ([0, "A", "", "", "", "", "", "", ""], "line 3, field 'annotator': no ranks"),
    ],
)
def test_a_bad_row_is_named_by_line_and_field_and_nothing_is_imported(project, row, message):
    good = [CLAIMS[1], "A", "", 1, 2, 3, 1, 2, 3]
    bad = [CLAIMS[0] if row[0] == 0 else row[0], *row[1:]]
    with pytest.raises(ImportFailed) as refused:
        load(project, sheet([good, bad]))
    assert message in str(refused.value)
    assert not ExternalCoder.objects.filter(project=project).exists()
    assert not ExternalAnnotation.objects.exists()


def test_an_unknown_criterion_and_a_missing_mapping_are_refused(project):
    text = "id,annotator,Fluency 1,Fluency 2,Fluency 3\n" + f"{CLAIMS[0]},A,1,2,3\n"
    with pytest.raises(ImportFailed, match="'answer.ranks.Fluency': not a criterion"):
        load(project, text)
    with pytest.raises(ImportFailed, match="needs the mapping file"):
        load(project, sheet([[CLAIMS[0], "A", "", 1, 2, 3, 1, 2, 3]]), mapping=None)
    with pytest.raises(ImportFailed, match="line 1: the sheet has no rank columns"):
        load(project, f"id,annotator,claim\n{CLAIMS[0]},A,x\n")
    assert not ExternalAnnotation.objects.exists()


def test_the_dense_convention_of_a_project_is_the_one_checked(db):
    project = factories.ProjectFactory(
        task_type="ranking", config={"criteria": CRITERIA, "tie_convention": "dense"}
    )
    with open(DATA / "reprohum_sheet.csv", "rb") as stream:
        import_items(project=project, stream=stream, fmt="reprohum", options={"mapping": MAPPING})
    load(project, sheet([[CLAIMS[0], "A", "", 1, 1, 2, 1, 2, 3]]))
    with pytest.raises(ImportFailed, match="tie convention"):
        load(project, sheet([[CLAIMS[0], "A", "", 1, 1, 3, 1, 2, 3]]))


def test_a_jsonl_ranking_by_system_name_takes_the_items_order_when_it_has_none(project):
    claim = CLAIMS[3]
    body = (
        f'{{"item": "{claim}", "coder": "J", "answer": {{"ranks": '
        '{"overall": {"gpt4": 1, "gpt35": 2, "llama2-70b": 2}}}}\n'
    )
    counts = import_annotations(
        project=project, stream=io.BytesIO(body.encode()), fmt="jsonl", source="sheet"
    )
    assert counts["annotations"] == 1
    item = Item.objects.get(project=project, external_id=claim)
    key_of = {
        o["system"]: k for k, o in zip(item.prepared["keys"], item.payload["outputs"], strict=True)
    }
    stored = ExternalAnnotation.objects.get(item=item)
    assert stored.answer["order"] == item.prepared["keys"]  # the item's (payload) order
    # The criterion's name is the project's own ("Overall"), whatever its case in the source.
    assert stored.answer["ranks"] == {
        "Overall": {key_of["gpt4"]: 1, key_of["gpt35"]: 2, key_of["llama2-70b"]: 2}
    }
    with pytest.raises(
        ImportFailed, match="line 1, field 'answer.ranks.overall': 'gpt5' is not a system"
    ):
        import_annotations(
            project=project,
            stream=io.BytesIO(body.replace('"gpt4"', '"gpt5"').encode()),
            fmt="jsonl",
        )
