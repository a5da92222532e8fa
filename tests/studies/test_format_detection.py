"""Detect the format (the import form's default), name the format a file looks like when the chosen
one cannot read it, and refuse a file that holds no records (found by the outside probe: an
import that read nothing reported success)."""

import io
import random
from pathlib import Path

import pytest
from django.test import Client

from annotation import task_types
from studies.services.format_detection import SampledText
from studies.services.imports import ImportFailed, available_formats, import_items
from tests import factories

FCEXP = Path(__file__).resolve().parents[2] / "data" / "transparent-fcexp"
CASES = [
    (t.slug, fmt) for t in task_types.all_task_types() for fmt in available_formats(task_type=t)
]


@pytest.mark.parametrize(("slug", "fmt"), CASES)
def test_every_example_file_is_detected_as_its_own_format(db, slug, fmt):
    files = task_types.get(slug).example_files()
    # a format that takes a mapping file is detected when the mapping is given
    options = {"mapping": files[f"{fmt} mapping"]} if f"{fmt} mapping" in files else None
    project = factories.ProjectFactory(task_type=slug)
    report = import_items(
        project=project, stream=io.StringIO(files[fmt]), fmt="detect", options=options
    )
    assert (report.fmt, report.detected) == (fmt, True)
    assert report.summary().startswith(f"Read as {fmt} (detected): ")
    assert project.items.count() == report.created >= 1


def _fcexp_file() -> Path:
    files = sorted(FCEXP.glob("*_full_data.json"))
    assert files, f"no Transparent-FCExp release file under {FCEXP}"
    return files[0]


def test_a_real_transparent_fcexp_file_is_detected(db):
    project = factories.ProjectFactory(task_type="citation_recovery")
    with _fcexp_file().open("rb") as stream:
        report = import_items(project=project, stream=stream, fmt="detect")
    assert report.fmt == "transparent-fcexp" and report.created > 400


def test_a_transparent_fcexp_file_chosen_as_jsonl_names_the_format_it_looks_like(db):
    """The probe's case: "line 1: not valid JSON (Expecting property name…)" and nothing more."""
    project = factories.ProjectFactory(task_type="citation_recovery")
    with _fcexp_file().open("rb") as stream, pytest.raises(ImportFailed) as refused:
        import_items(project=project, stream=stream, fmt="jsonl")
    message = str(refused.value)
    assert message.startswith("Nothing imported. line 1: not valid JSON")
    assert "This file looks like the transparent-fcexp format" in message
    assert project.items.count() == 0


def test_a_jsonl_file_chosen_as_csv_names_jsonl(db):
    files = task_types.get("stance").example_files()
    project = factories.ProjectFactory(task_type="stance")
    with pytest.raises(ImportFailed, match="looks like the jsonl format"):
        import_items(project=project, stream=io.StringIO(files["jsonl"] * 3), fmt="csv")


@pytest.mark.parametrize(
    ("text", "fmt", "message"),
    [
        ("", "jsonl", "holds no records in the jsonl format (it is empty)."),
        ("\n\n  \n", "jsonl", "holds no records in the jsonl format (it is empty)."),
        ("id,claim,evidence\n", "csv", "holds no records in the csv format."),
    ],
)
def test_a_file_with_no_records_is_refused(db, text, fmt, message):
    project = factories.ProjectFactory(task_type="stance")
    with pytest.raises(ImportFailed, match=message.replace("(", r"\(").replace(")", r"\)")):
        import_items(project=project, stream=io.StringIO(text), fmt=fmt)


def test_a_file_no_format_reads_is_refused_naming_the_formats(db):
    project = factories.ProjectFactory(task_type="stance")
    with pytest.raises(ImportFailed) as refused:
        import_items(project=project, stream=io.StringIO("{hello\n"), fmt="detect")
    assert refused.value.field == "format"
    assert "None of the formats of" in str(refused.value) and "jsonl, csv" in str(refused.value)


def test_a_detected_file_whose_first_record_is_refused_names_its_line_and_field(db):
    """No format's first record is valid, but one reads a record: its problem is the one to
    report (the line and field), not "no format fits"."""
    project = factories.ProjectFactory(task_type="stance")
    with pytest.raises(ImportFailed) as refused:
        import_items(project=project, stream=io.StringIO('{"id": "a"}\n'), fmt="detect")
    assert str(refused.value).startswith("Nothing imported. Read as jsonl (detected): line 1")


def test_the_sampled_stream_hands_out_the_whole_file_once():
    """Lines that straddle the sample's end, reads of every size: the reader sees the file as it
    is."""
    generator = random.Random(7)
    for _ in range(200):
        text = "".join(
            generator.choice(["a", "é", "\n", "bc\n", "\r\n", "xyz"])
            for _ in range(generator.randrange(0, 60))
        )
        cut = generator.randrange(0, len(text) + 1)
        lines = list(SampledText(sample=text[:cut], stream=io.StringIO(text[cut:])))
        assert "".join(lines) == text
        assert lines == io.StringIO(text).readlines()
        sampled, pieces = SampledText(sample=text[:cut], stream=io.StringIO(text[cut:])), []
        while piece := sampled.read(generator.randrange(1, 7)):
            pieces.append(piece)
        assert "".join(pieces) == text


def test_the_import_form_and_the_api_default_to_detecting(
    project, researcher, django_capture_on_commit_callbacks
):
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/p/{project.slug}/").content.decode()
    assert '<option value="detect" selected>detect the format</option>' in page
    example = task_types.get(project.task_type).example_files()["csv"]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/api/projects/{project.slug}/import/",
            {"file": io.BytesIO(example.encode())},
        )
    assert response.status_code in (201, 202), response.content
    if response.status_code == 202:  # a broker is up (PostgreSQL and Redis): run the queued job
        from studies.services.import_jobs import import_job_run

        import_job_run(job_id=response.json()["id"])
    assert project.items.count() >= 1


# --- found by the outside probe ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[\n  {"id": "a", "prompt": "p"},\n  {"id": "b", "prompt": "q"}\n]\n', "one JSON array"),
        ('{\n  "a": {"id": "a"}\n}\n', "one JSON object written over several lines"),
    ],
)
def test_a_json_document_is_not_read_as_csv_and_is_named(db, text, said):
    project = factories.ProjectFactory(task_type="questionnaire")
    with pytest.raises(ImportFailed) as refused:
        import_items(project=project, stream=io.StringIO(text), fmt="detect")
    assert "Read as csv" not in str(refused.value) and said in str(refused.value)
    with pytest.raises(ImportFailed, match=said):
        import_items(project=project, stream=io.StringIO(text), fmt="jsonl")


def test_a_json_document_larger_than_the_sample_says_to_choose_its_format(db, monkeypatch):
    from studies.services import format_detection

    monkeypatch.setattr(format_detection, "SAMPLE_CHARACTERS", 1000)
    project = factories.ProjectFactory(task_type="citation_recovery")
    with _fcexp_file().open("rb") as stream, pytest.raises(ImportFailed) as refused:
        import_items(project=project, stream=stream, fmt="detect")
    assert "Read as csv" not in str(refused.value)
    assert "first 4 MiB" in str(refused.value) and "choose it" in str(refused.value)


def test_a_first_jsonl_line_longer_than_the_sample_is_still_detected(db, monkeypatch):
    from studies.services import format_detection

    monkeypatch.setattr(format_detection, "SAMPLE_CHARACTERS", 50)
    files = task_types.get("stance").example_files()
    project = factories.ProjectFactory(task_type="stance")
    assert len(files["jsonl"].splitlines()[0]) > 50
    report = import_items(project=project, stream=io.StringIO(files["jsonl"]), fmt="detect")
    assert report.fmt == "jsonl" and report.records == report.created == 1


def test_a_mapping_file_makes_detection_try_the_formats_that_take_one(db):
    files = task_types.get("ranking").example_files()
    project = factories.ProjectFactory(task_type="ranking")
    report = import_items(
        project=project,
        stream=io.StringIO(files["reprohum"]),
        fmt="detect",
        options={"mapping": files["reprohum mapping"]},
    )
    assert report.fmt == "reprohum" and report.created >= 1


def test_jsonl_chosen_as_csv_names_line_1_in_sentences(db):
    project = factories.ProjectFactory(task_type="questionnaire")
    text = task_types.get("questionnaire").example_files()["jsonl"] * 2
    with pytest.raises(ImportFailed) as refused:
        import_items(project=project, stream=io.StringIO(text), fmt="csv")
    message = str(refused.value)
    assert "line 0" not in message
    assert ". This file looks like the jsonl format" in message


def test_a_utf16_file_is_named(db):
    project = factories.ProjectFactory(task_type="stance")
    data = task_types.get("stance").example_files()["jsonl"].encode("utf-16")
    with pytest.raises(ImportFailed, match="looks like UTF-16"):
        import_items(project=project, stream=io.BytesIO(data), fmt="detect")


def test_a_blank_file_is_empty_when_detecting(db):
    project = factories.ProjectFactory(task_type="stance")
    with pytest.raises(ImportFailed, match="The file is empty"):
        import_items(project=project, stream=io.StringIO("\n \n"), fmt="detect")


def test_a_huge_field_the_task_type_does_not_use_is_refused(db):
    """Found by the outside probe: an unknown field of 40 MB was stored as provenance."""
    import json

    record = json.loads(task_types.get("stance").example_files()["jsonl"])
    record["extra"] = "x" * 1_000_001
    project = factories.ProjectFactory(task_type="stance")
    with pytest.raises(ImportFailed, match="field 'extra'.*more than 1,000,000 characters"):
        import_items(project=project, stream=io.StringIO(json.dumps(record) + "\n"), fmt="jsonl")
    assert project.items.count() == 0
    record["extra"] = "x" * 1000
    report = import_items(
        project=project, stream=io.StringIO(json.dumps(record) + "\n"), fmt="jsonl"
    )
    assert report.created == 1


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"claim": "c", "x": NaN}', "line 2, field 'x': numbers must be finite"),
        ('{"claim": "c", "x": ' + "9" * 5001 + "}", "line 2, field 'x': integer out of range"),
        ('{"claim": "c", "x": "a\\u0000b"}', "line 2, field 'x': contains a NUL"),
        ('{"claim": "c", "x": ' + "[" * 70 + "]" * 70 + "}", "nested more than 64 levels"),
    ],
)
def test_a_bad_first_json_line_is_named_when_the_format_is_detected(db, line, says):
    # Found by an outside probe: with the format left to detection, these only said "none of
    # the formats reads a first record"; chosen as jsonl they named line and field.
    project = factories.ProjectFactory(task_type="stance")
    with pytest.raises(ImportFailed) as refused:
        import_items(project=project, stream=io.StringIO("\n" + line + "\n"), fmt="detect")
    assert "Read as JSON Lines" in str(refused.value) and says in str(refused.value)
    assert "Choose the format" not in str(refused.value)
    assert not project.items.exists()
