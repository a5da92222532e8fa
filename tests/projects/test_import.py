"""Importing items: real Transparent-FCExp data, generic JSONL/CSV, all-or-nothing errors."""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Item
from studies.services.imports import ImportFailed, import_items
from tests import factories
from tests.conftest import REPO

GPT4_FILE = REPO / "data" / "transparent-fcexp" / "gpt4_full_data.json"


def jsonl(records) -> io.BytesIO:
    return io.BytesIO("".join(json.dumps(r) + "\n" for r in records).encode())


def test_importing_the_real_gpt4_file_yields_486_items_whose_gold_equals_ans_sens(project):
    with open(GPT4_FILE, "rb") as stream:
        report = import_items(project=project, stream=stream, fmt="transparent-fcexp")
    source = json.loads(GPT4_FILE.read_text())
    assert report.created == 486 and not report.skipped
    items = {i.external_id: i for i in Item.objects.filter(project=project)}
    assert len(items) == 486
    for claim_id, record in source.items():
        item = items[claim_id]
        assert item.gold["sentences"] == record["ans_sens"]["gpt4"], claim_id
        assert item.gold["evidence_id"] == record["masked_cit"]["gpt4"]
        assert item.group == "gpt4"
        # The masked evidence's markers are gone; the other markers stay.
        masked = f"[{record['masked_cit']['gpt4']}]"
        assert not any(masked in s for s in item.prepared["sentences"])


@pytest.mark.parametrize("name", ["gpt35_full_data.json", "llama2-70b_full_data.json"])
def test_the_other_generators_import_and_explanations_without_citations_are_rating_only(
    project, name
):
    path = GPT4_FILE.parent / name
    with open(path, "rb") as stream:
        report = import_items(project=project, stream=stream, fmt="transparent-fcexp")
    source = json.loads(path.read_text())
    assert report.created == len(source) and not report.skipped
    model = name.removesuffix("_full_data.json")
    chosen_by_us = rating_only = 0
    for item in Item.objects.filter(project=project):
        record = source[item.external_id]
        if not any(record["gen_cit"][model]):  # cites nothing: helpfulness only
            rating_only += 1
            assert item.prepared["rating_only"] and item.gold is None
            assert item.prepared["target_evidence_id"] is None
        elif model in record["ans_sens"]:
            assert item.gold["sentences"] == record["ans_sens"][model]
        else:  # the file names no masked citation: the seeded sample choice picks a cited one
            chosen_by_us += 1
            assert item.gold["sentences"]
    assert chosen_by_us == sum(
        1 for r in source.values() if model not in r["masked_cit"] and any(r["gen_cit"][model])
    )
    uncited = sum(1 for r in source.values() if not any(r["gen_cit"][model]))
    assert rating_only == uncited and (model != "llama2-70b" or uncited == 24)
    assert any("rating-only item" in note for note in report.notes) == bool(uncited)


def test_a_file_with_a_malformed_line_3_imports_nothing_and_reports_line_3(project):
    good = [factories.citation_payload(n) for n in range(5)]
    body = (
        "".join(json.dumps(r) + "\n" for r in good[:2]) + "{not json\n" + json.dumps(good[3]) + "\n"
    )
    with pytest.raises(ImportFailed, match="line 3"):
        import_items(project=project, stream=io.BytesIO(body.encode()), fmt="jsonl")
    assert not Item.objects.exists()


def test_an_invalid_field_on_a_later_chunk_rolls_back_everything(project, monkeypatch):
    monkeypatch.setattr("studies.services.imports.CHUNK_SIZE", 2)
    records = [factories.citation_payload(n) for n in range(7)]
    records[5]["evidence"] = [{"id": "x", "text": "no id"}]
    with pytest.raises(ImportFailed) as caught:
        import_items(project=project, stream=jsonl(records), fmt="jsonl")
    message = str(caught.value)
    assert "line 6" in message and "evidence" in message
    assert not Item.objects.exists()


def test_an_explanation_citing_unknown_evidence_names_the_line_and_field(project):
    records = [factories.citation_payload(0), factories.citation_payload(1)]
    records[1]["explanation"] = ["This cites a passage that does not exist [77]."]
    records[1]["masked_evidence"] = None
    with pytest.raises(ImportFailed, match=r"line 2.*explanation.*77"):
        import_items(project=project, stream=jsonl(records), fmt="jsonl")
    assert not Item.objects.exists()


def test_reimporting_the_same_external_ids_is_refused_clearly(project):
    records = [factories.citation_payload(n) for n in range(3)]
    import_items(project=project, stream=jsonl(records), fmt="jsonl")
    with pytest.raises(ImportFailed, match="already exists"):
        import_items(project=project, stream=jsonl(records), fmt="jsonl")
    assert Item.objects.count() == 3


def test_reimporting_with_update_replaces_the_items(project):
    records = [factories.citation_payload(n) for n in range(3)]
    import_items(project=project, stream=jsonl(records), fmt="jsonl")
    records[0]["claim"] = "A corrected claim."
    report = import_items(project=project, stream=jsonl(records), fmt="jsonl", update=True)
    assert (report.created, report.updated) == (0, 3)
    assert Item.objects.get(external_id="claim-0").payload["claim"] == "A corrected claim."


def test_duplicate_ids_inside_one_file_are_refused(project):
    records = [factories.citation_payload(1), factories.citation_payload(1)]
    with pytest.raises(ImportFailed, match="line 2.*appears twice"):
        import_items(project=project, stream=jsonl(records), fmt="jsonl")


def test_raw_text_explanations_are_split_into_sentences_at_import(project):
    record = factories.citation_payload(1)
    record["explanation"] = (
        "The city added lanes [1]. It had 80 km before.[2] So it grew by half [1, 2]."
    )
    import_items(project=project, stream=jsonl([record]), fmt="jsonl")
    item = Item.objects.get()
    assert len(item.prepared["sentences"]) == 3
    assert item.gold == {"evidence_id": 2, "sentences": [1, 2]}
    assert "[1]" in item.prepared["sentences"][2] and "2]" not in item.prepared["sentences"][2]


def test_full_masking_makes_one_item_per_cited_evidence(researcher):
    project = factories.ProjectFactory(config={"masking": "full"})
    record = factories.citation_payload(1, sentences=3)
    del record["masked_evidence"]
    report = import_items(project=project, stream=jsonl([record]), fmt="jsonl")
    assert report.created == 3
    golds = {i.external_id: i.gold for i in Item.objects.filter(project=project)}
    assert golds == {
        "claim-1#1": {"evidence_id": 1, "sentences": [0]},
        "claim-1#2": {"evidence_id": 2, "sentences": [1]},
        "claim-1#3": {"evidence_id": 3, "sentences": [2]},
    }


def test_csv_import_reads_json_cells_and_passage_lines(project):
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=["id", "claim", "label", "evidence", "explanation", "masked_evidence"]
    )
    writer.writeheader()
    writer.writerow(
        {
            "id": "c1",
            "claim": "A claim.",
            "label": "false",
            "evidence": "1: First passage.\n2: Second passage.",
            "explanation": json.dumps(["One [1].", "Two [2].", "Both [1][2]."]),
            "masked_evidence": "2",
        }
    )
    writer.writerow(
        {
            "id": "c2",
            "claim": "Another.",
            "label": "true",
            "evidence": json.dumps([{"id": 4, "text": "Only passage."}]),
            "explanation": "It is true [4]. Nothing else.",
            "masked_evidence": "",
        }
    )
    import_items(project=project, stream=io.BytesIO(buffer.getvalue().encode()), fmt="csv")
    golds = dict(Item.objects.values_list("external_id", "gold"))
    assert golds == {
        "c1": {"evidence_id": 2, "sentences": [1, 2]},
        "c2": {"evidence_id": 4, "sentences": [0]},
    }


def test_csv_with_a_bad_row_names_its_spreadsheet_line(project):
    body = "id,claim,label,evidence,explanation\nc1,A,true,1: x,One [1].\nc2,B,true,not a passage,Two [1].\n"
    with pytest.raises(ImportFailed, match="line 3.*passage"):
        import_items(project=project, stream=io.BytesIO(body.encode()), fmt="csv")
    assert not Item.objects.exists()


def test_the_sample_choice_of_masked_evidence_is_seeded_and_order_independent(researcher):
    records = [factories.citation_payload(n, sentences=5) for n in range(20)]
    for r in records:
        del r["masked_evidence"]
    first = factories.ProjectFactory(config={"masking": "sample", "seed": 7})
    second = factories.ProjectFactory(config={"masking": "sample", "seed": 7})
    import_items(project=first, stream=jsonl(records), fmt="jsonl")
    import_items(project=second, stream=jsonl(list(reversed(records))), fmt="jsonl")

    def pick(p):
        return dict(Item.objects.filter(project=p).values_list("external_id", "gold__evidence_id"))

    assert pick(first) == pick(second)
    assert len(set(pick(first).values())) > 1


def test_the_import_command_reports_progress_and_errors(project, tmp_path, capsys):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(factories.citation_payload(n)) + "\n" for n in range(3)))
    call_command("import_items", str(path), project=project.slug, fmt="jsonl")
    captured = capsys.readouterr()
    assert "3 items created" in captured.out
    assert "[" + "#" * 30 + "] 100%" in captured.err and "3 records" in captured.err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(factories.citation_payload(9)) + "\n[1, 2]\n")
    with pytest.raises(CommandError, match="line 2"):
        call_command("import_items", str(bad), project=project.slug, fmt="jsonl")


@pytest.mark.django_db(transaction=True)  # the job is queued on commit
def test_the_upload_form_imports_and_shows_errors(client, researcher, project):
    client.force_login(researcher)
    good = io.BytesIO(
        b"".join((json.dumps(factories.citation_payload(n)) + "\n").encode() for n in range(2))
    )
    good.name = "items.jsonl"
    response = client.post(f"/p/{project.slug}/", {"file": good, "format": "jsonl"}, follow=True)
    assert b"2 items created" in response.content
    bad = io.BytesIO(b'{"id": "x"}\n')
    bad.name = "bad.jsonl"
    response = client.post(f"/p/{project.slug}/", {"file": bad, "format": "jsonl"}, follow=True)
    assert b"line 1" in response.content and b"Nothing imported" in response.content
    assert Item.objects.filter(project=project).count() == 2


@pytest.mark.django_db(transaction=True)  # the job is queued on commit
def test_the_import_api_returns_the_error_with_line_and_field(researcher_client, project):
    body = io.BytesIO(
        b'{"id": "a", "claim": "c", "label": "true", "evidence": [], "explanation": "x [1]."}\n'
    )
    body.name = "items.jsonl"
    response = researcher_client.post(
        f"/api/projects/{project.slug}/import/", {"file": body, "format": "jsonl"}
    )
    assert response.status_code == 400
    assert "line 1" in response.data["detail"] and "evidence" in response.data["detail"]


@pytest.mark.django_db(transaction=True)  # the job is queued on commit
def test_an_upload_is_imported_by_a_job_that_records_its_result(researcher_client, project):
    from studies.models import ImportJob

    good = io.BytesIO(
        b"".join((json.dumps(factories.citation_payload(n)) + "\n").encode() for n in range(2))
    )
    good.name = "items.jsonl"
    response = researcher_client.post(
        f"/api/projects/{project.slug}/import/", {"file": good, "format": "jsonl"}
    )
    assert response.status_code == 201 and response.data["created"] == 2
    job = ImportJob.objects.get(id=response.data["id"])
    assert (
        job.status == "done" and factories.stored_upload(job) == b""
    )  # the upload is not kept after success
    polled = researcher_client.get(f"/api/projects/{project.slug}/imports/{job.id}/")
    assert polled.status_code == 200 and polled.data["summary"].startswith("2 records read")


def test_an_import_job_runs_once_even_if_its_message_is_delivered_twice(project, researcher):
    from studies.services.import_jobs import import_job_run

    content = (json.dumps(factories.citation_payload(1)) + "\n").encode()
    job = factories.import_job(project=project, content=content)
    assert import_job_run(job_id=job.id).status == "done"
    assert import_job_run(job_id=job.id).status == "done"  # redelivered: nothing happens again
    assert Item.objects.filter(project=project).count() == 1


def test_a_failed_import_job_keeps_the_upload_and_says_why(project):
    from studies.services.import_jobs import import_job_run

    job = factories.import_job(project=project, content=b"{oops\n")
    job = import_job_run(job_id=job.id)
    assert (
        job.status == "failed"
        and "line 1" in job.message
        and factories.stored_upload(job) == b"{oops\n"
    )
    assert not Item.objects.filter(project=project).exists()


def test_an_unknown_format_is_refused_before_anything_is_stored(researcher_client, project):
    from studies.models import ImportJob

    body = io.BytesIO(b"{}\n")
    body.name = "x.jsonl"
    response = researcher_client.post(
        f"/api/projects/{project.slug}/import/", {"file": body, "format": "xml"}
    )
    assert response.status_code == 400 and "Unknown format" in response.data["detail"]
    assert not ImportJob.objects.exists()


def test_full_masking_ignores_the_masked_citation_named_in_a_transparent_fcexp_file(researcher):
    project = factories.ProjectFactory(config={"masking": "full"})
    source = json.loads(GPT4_FILE.read_text())
    subset = dict(list(source.items())[:5])
    report = import_items(
        project=project, stream=io.BytesIO(json.dumps(subset).encode()), fmt="transparent-fcexp"
    )
    cited = sum(len({e for cites in r["gen_cit"]["gpt4"] for e in cites}) for r in subset.values())
    assert report.created == cited > 5
    assert all(
        "#" in i for i in Item.objects.filter(project=project).values_list("external_id", flat=True)
    )


def test_updating_an_item_already_given_to_annotators_is_refused(project, annotator):
    from annotation import services

    records = [factories.citation_payload(n) for n in range(2)]
    import_items(project=project, stream=jsonl(records), fmt="jsonl")
    services.assignment_next(
        project=project, annotator=annotator
    )  # reserved, nothing submitted yet
    records[0]["claim"] = "Changed."
    with pytest.raises(ImportFailed, match="already been given to annotators"):
        import_items(project=project, stream=jsonl(records), fmt="jsonl", update=True)


def test_an_update_drops_judge_answers_and_marks_the_items_changed(project):
    from llm_judges.models import Judge, JudgeResult

    records = [factories.citation_payload(1)]
    import_items(project=project, stream=jsonl(records), fmt="jsonl")
    item = Item.objects.get(project=project)
    judge = Judge.objects.create(project=project, name="j", kind="embedding", model="m")
    JudgeResult.objects.create(
        item=item, judge=judge, prompt_version="v1", setting="sample", status="ok", answer={}
    )
    before = item.updated_at
    records[0]["masked_evidence"] = 3
    import_items(project=project, stream=jsonl(records), fmt="jsonl", update=True)
    item.refresh_from_db()
    assert item.gold["evidence_id"] == 3 and item.updated_at > before
    assert not JudgeResult.objects.filter(item=item).exists()


def test_unknown_fields_with_unstorable_text_are_reported_not_crashed_on(project):
    record = factories.citation_payload(1)
    record["note"] = "bad \x00 byte"
    with pytest.raises(ImportFailed, match=r"line 1.*note.*NUL"):
        import_items(project=project, stream=jsonl([record]), fmt="jsonl")


def test_a_csv_with_a_broken_quote_names_the_line(project):
    body = 'id,claim,label,evidence,explanation\nc1,"A,true,1: x,One [1].\n'
    body += "x" * 10 + "\n"
    with pytest.raises(ImportFailed, match=r"line \d+: not valid CSV"):
        import_items(project=project, stream=io.BytesIO(body.encode()), fmt="csv")


def test_a_transparent_fcexp_record_with_a_malformed_masked_cit_is_named(project):
    source = json.loads(GPT4_FILE.read_text())
    claim_id, record = next(iter(source.items()))
    record["masked_cit"] = 5
    with pytest.raises(ImportFailed, match=rf"claim {claim_id}.*masked_cit"):
        import_items(
            project=project,
            stream=io.BytesIO(json.dumps({claim_id: record}).encode()),
            fmt="transparent-fcexp",
        )


def test_a_job_left_running_by_a_dead_worker_runs_again_when_its_message_comes_back(project):
    from studies.services.import_jobs import import_job_run

    content = (json.dumps(factories.citation_payload(1)) + "\n").encode()
    job = factories.import_job(project=project, content=content, status="running")
    assert import_job_run(job_id=job.id).status == "running"  # a duplicate message: left alone
    assert import_job_run(job_id=job.id, redelivered=True).status == "done"
    assert Item.objects.filter(project=project).count() == 1


def test_a_cancelled_import_is_never_imported_even_when_redelivered(
    project, researcher, researcher_client
):
    """Found by the outside probe: a worker killed mid-import left its job "running"; the broker
    re-delivered it an hour later and it imported on top of the corrected file imported
    meanwhile. A researcher cancels it instead."""
    from projects.models import AuditEntry
    from studies.models import ImportJob, ImportJobPart
    from studies.services.import_jobs import import_job_run

    content = (json.dumps(factories.citation_payload(1)) + "\n").encode()
    job = factories.import_job(project=project, content=content)
    ImportJob.objects.filter(pk=job.pk).update(status="running")  # its worker died
    url = f"/api/projects/{project.slug}/imports/{job.id}/cancel/"
    cancelled = researcher_client.post(url)
    assert cancelled.status_code == 200 and cancelled.data["status"] == "cancelled"
    assert import_job_run(job_id=job.id, redelivered=True).status == "cancelled"
    assert not Item.objects.filter(project=project).exists()
    assert not ImportJobPart.objects.filter(job_id=job.id).exists()  # the upload is dropped
    assert AuditEntry.objects.filter(project=project, kind="import_cancelled").count() == 1
    again = researcher_client.post(url)
    assert again.status_code == 409 and "finished" in again.data["detail"]
    polled = researcher_client.get(f"/api/projects/{project.slug}/imports/{job.id}/")
    assert polled.status_code == 200 and polled.data["status"] == "cancelled"


def test_a_running_import_stops_at_its_next_chunk_and_writes_nothing(project, monkeypatch):
    from studies.services import import_jobs, imports

    monkeypatch.setattr(imports, "CHUNK_SIZE", 2)
    content = "".join(json.dumps(factories.citation_payload(n)) + "\n" for n in range(7))
    job = factories.import_job(project=project, content=content.encode())
    asked = []

    def cancelled_after_the_first_chunk(job_id):
        # A researcher's cancel commits from another connection; read between chunks.
        asked.append(job_id)
        return len(asked) > 1

    monkeypatch.setattr(import_jobs, "_cancel_requested", cancelled_after_the_first_chunk)
    assert import_jobs.import_job_run(job_id=job.id).status == "cancelled"
    assert len(asked) == 2
    assert not Item.objects.filter(project=project).exists()  # the first chunk rolled back


def test_the_project_page_cancels_a_queued_import_and_not_another_projects(
    client, project, researcher
):
    from studies.models import ImportJob

    job = factories.import_job(project=project, content=b"{}\n")
    client.force_login(researcher)
    page = client.get(f"/p/{project.slug}/").content.decode()
    assert f"/p/{project.slug}/imports/{job.id}/cancel/" in page
    other = factories.ProjectFactory()
    assert client.post(f"/p/{other.slug}/imports/{job.id}/cancel/").status_code == 404
    done = client.post(f"/p/{project.slug}/imports/{job.id}/cancel/", follow=True)
    assert "nothing of it is imported" in done.content.decode()
    assert ImportJob.objects.get(pk=job.pk).status == "cancelled"


def test_a_record_nested_too_deeply_is_named_not_an_unexpected_error(project):
    """Found by the probe: 5,000 nested arrays made the format hint's parser recurse, and the
    job said "Unexpected error: RecursionError(…)"."""
    line = '{"id": "x", "claim": ' + "[" * 5000 + "]" * 5000 + "}\n"
    with pytest.raises(ImportFailed, match="line 1, field 'claim': nested more than 64 levels"):
        import_items(project=project, stream=io.BytesIO(line.encode()), fmt="jsonl")
    with pytest.raises(ImportFailed, match="Nothing imported"):
        import_items(project=project, stream=io.BytesIO(line.encode()), fmt="detect")
