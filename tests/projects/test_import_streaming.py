"""Uploads are stored in parts and read back as a stream: neither the web process that stores
an upload nor the worker that imports it holds the whole file; a running job reports progress."""

import io
import json
import re
from datetime import datetime, timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Item
from studies.models import ImportJob, ImportJobPart
from studies.selectors import import_jobs as import_job_reads
from studies.services import import_jobs
from studies.services.import_jobs import import_job_run, import_upload_store
from tests import factories


def jsonl(records) -> bytes:
    return b"".join((json.dumps(r, ensure_ascii=False) + "\n").encode() for r in records)


@pytest.fixture
def progress_reports(monkeypatch) -> list[dict]:
    """What the job reports as its progress (to the cache), in order."""
    seen = []
    real_set = import_jobs.cache.set

    def spy(key, value, *args, **kwargs):
        if key.endswith(":progress"):
            seen.append(dict(value))
        return real_set(key, value, *args, **kwargs)

    monkeypatch.setattr(import_jobs.cache, "set", spy)
    return seen


@pytest.fixture
def small_parts(monkeypatch):
    monkeypatch.setattr(ImportJob, "PART_BYTES", 700)
    return 700


def test_an_upload_is_stored_in_parts_no_larger_than_the_part_size(project, small_parts):
    content = jsonl(factories.citation_payload(n) for n in range(6))
    job = ImportJob.objects.create(project=project, filename="a.jsonl", fmt="jsonl")
    # The upload arrives in pieces that do not line up with parts.
    pieces = [content[i : i + 333] for i in range(0, len(content), 333)]
    assert import_upload_store(job=job, chunks=pieces) == len(content)
    sizes = list(job.parts.order_by("index").values_list("data", flat=True))
    assert len(sizes) == -(-len(content) // small_parts) > 2
    assert all(len(bytes(part)) == small_parts for part in sizes[:-1])
    assert factories.stored_upload(job) == content
    job.refresh_from_db()
    assert job.size == len(content)


def test_a_job_imports_records_and_characters_that_straddle_parts(project, small_parts):
    records = [
        factories.citation_payload(n, claim=f"Claim {n} — «ünïcödé» ✓ " + "é" * (n * 37 + 1))
        for n in range(8)
    ]
    content = jsonl(records)
    job = factories.import_job(project=project, content=content)
    assert job.parts.count() > 3
    job = import_job_run(job_id=job.id)
    assert job.status == "done", job.message
    claims = list(
        Item.objects.filter(project=project).order_by("position").values_list("payload", flat=True)
    )
    assert [c["claim"] for c in claims] == [r["claim"] for r in records]
    assert not ImportJobPart.objects.filter(job=job).exists()  # not kept after success


def test_a_bad_line_in_a_later_part_is_named_and_nothing_is_imported(project, small_parts):
    content = jsonl(factories.citation_payload(n) for n in range(5)) + b'{"id": "x", oops\n'
    job = import_job_run(job_id=factories.import_job(project=project, content=content).id)
    assert job.status == "failed" and "line 6" in job.message
    assert not Item.objects.filter(project=project).exists()
    assert factories.stored_upload(job) == content  # kept for the researcher to inspect


def test_the_worker_reads_a_few_parts_per_query(project, small_parts, django_assert_num_queries):
    content = jsonl(factories.citation_payload(n) for n in range(100))
    job = factories.import_job(project=project, content=content)
    parts = job.parts.count()
    ahead = import_jobs._UploadReader.READ_AHEAD
    assert parts > 2 * ahead
    stream = import_jobs.import_upload_stream(job=job)
    with django_assert_num_queries(1):
        first = stream.read(10)
    assert first == content[:10]
    # What it holds is bounded: the parts of one query, never the whole upload.
    assert len(stream.raw.ahead) == ahead - 1
    with django_assert_num_queries(-(-parts // ahead)):  # the remaining batches, plus the end
        rest = stream.read()
    assert first + rest == content


def test_a_running_job_reports_progress(project, small_parts, monkeypatch, progress_reports):
    monkeypatch.setattr("studies.services.imports.CHUNK_SIZE", 2)
    content = jsonl(factories.citation_payload(n) for n in range(7))
    job = factories.import_job(project=project, content=content)
    seen = progress_reports
    assert import_job_run(job_id=job.id).status == "done"
    assert [p["records"] for p in seen] == sorted(p["records"] for p in seen)
    assert seen[0]["records"] < 7 and seen[-1]["created"] == 7
    assert all(p["bytes"] == len(content) for p in seen)
    assert 0 < seen[0]["bytes_read"] <= seen[-1]["bytes_read"] <= len(content)


def test_the_job_api_shows_progress_while_the_job_runs(researcher_client, researcher, project):
    job = factories.import_job(project=project, content=b"{}\n", status="running")
    cache.set(
        import_job_reads.import_progress_key(job_id=job.id),
        {"records": 3, "created": 2, "updated": 0, "bytes_read": 2, "bytes": 3},
    )
    polled = researcher_client.get(f"/api/projects/{project.slug}/imports/{job.id}/")
    assert polled.status_code == 202
    assert polled.json()["progress"]["records"] == 3 and polled.json()["bytes"] == 3
    browser = Client()
    browser.force_login(researcher)
    page = browser.get(f"/p/{project.slug}/")
    assert "3 records read, 67 % of" in page.content.decode()


@pytest.mark.django_db(transaction=True)  # the job is queued on commit
def test_an_api_upload_is_stored_in_parts_and_imported(researcher_client, project, small_parts):
    body = io.BytesIO(jsonl(factories.citation_payload(n) for n in range(5)))
    body.name = "items.jsonl"
    response = researcher_client.post(
        f"/api/projects/{project.slug}/import/", {"file": body, "format": "jsonl"}
    )
    assert response.status_code == 201 and response.json()["created"] == 5
    assert response.json()["progress"] is None and response.json()["bytes"] > small_parts
    assert response.json()["started_at"] <= response.json()["finished_at"]


def _aged(job, **minutes_ago):
    now = timezone.now()
    ImportJob.objects.filter(pk=job.pk).update(
        **{field: now - timedelta(minutes=m) for field, m in minutes_ago.items()}
    )
    job.refresh_from_db()
    return job


def test_a_job_queued_too_long_is_flagged_as_waiting_for_a_worker(
    researcher_client, project, settings
):
    settings.CONCORD_IMPORT_STALL_MINUTES = 10
    job = factories.import_job(project=project, content=b"{}\n")
    assert import_job_reads.import_job_stalled(job=_aged(job, created_at=9)) is None
    polled = researcher_client.get(
        f"/api/projects/{project.slug}/imports/{_aged(job, created_at=12).id}/"
    )
    stalled = polled.json()["stalled"]
    assert stalled["minutes"] == 12
    assert stalled["message"].startswith("Waiting 12 minutes for a worker")
    settings.CONCORD_IMPORT_STALL_MINUTES = 1
    assert import_job_reads.import_job_stalled(job=_aged(job, created_at=1))["message"].startswith(
        "Waiting 1 minute for a worker"
    )


def test_the_project_page_says_once_that_the_queue_waits(researcher, project, settings):
    settings.CONCORD_IMPORT_STALL_MINUTES = 10
    for minutes in (12, 15, 11):
        _aged(factories.import_job(project=project, content=b"{}\n"), created_at=minutes)
    browser = Client()
    browser.force_login(researcher)
    with CaptureQueriesContext(connection) as queries:
        page = browser.get(f"/p/{project.slug}/").content.decode()
    # When the queue last moved is asked once for the page, not once per waiting job.
    assert sum('MAX("projects_importjob"."started_at")' in q["sql"] for q in queries) == 1
    assert page.count('class="message error"') == 1
    assert "<strong>3 imports</strong>: Waiting 15 minutes for a worker" in page
    assert page.count("(stalled)") == 3


def test_a_job_waiting_behind_a_moving_queue_is_not_flagged(project, settings):
    settings.CONCORD_IMPORT_STALL_MINUTES = 10
    waiting = _aged(factories.import_job(project=project, content=b"{}\n"), created_at=30)
    other = factories.import_job(project=project, content=b"{}\n", status="running")
    _aged(other, started_at=40)
    assert import_job_reads.import_job_stalled(job=waiting)["minutes"] == 30
    _aged(other, started_at=3)  # a worker took another import 3 minutes ago: the queue moves
    assert import_job_reads.import_job_stalled(job=waiting) is None
    _aged(other, started_at=40, finished_at=12)  # ... and finished it 12 minutes ago
    stalled = import_job_reads.import_job_stalled(job=waiting)
    assert stalled["minutes"] == 12 and "no import has started or finished" in stalled["message"]


def test_polling_a_failed_job_is_a_200_with_its_status_and_an_unknown_one_a_404(
    researcher_client, project
):
    job = import_job_run(job_id=factories.import_job(project=project, content=b"{oops\n").id)
    polled = researcher_client.get(f"/api/projects/{project.slug}/imports/{job.id}/")
    assert polled.status_code == 200
    assert polled.json()["status"] == "failed" and "line 1" in polled.json()["message"]
    for missing in (job.id + 1000, "abc"):
        response = researcher_client.get(f"/api/projects/{project.slug}/imports/{missing}/")
        assert response.status_code == 404 and response.json()["code"] == "not_found"
    other = factories.ProjectFactory()
    foreign = factories.import_job(project=other, content=b"{}\n")
    response = researcher_client.get(f"/api/projects/{project.slug}/imports/{foreign.id}/")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_a_running_job_without_progress_is_flagged_and_progress_clears_the_flag(
    researcher_client, researcher, project, settings
):
    settings.CONCORD_IMPORT_STALL_MINUTES = 10
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
    job = factories.import_job(project=project, content=b"{}\n", status="running")
    job = _aged(job, created_at=40, started_at=15)  # taken 15 minutes ago, nothing reported
    # Job ids recur across test databases.
    cache.delete(import_job_reads.import_progress_key(job_id=job.id))
    stalled = import_job_reads.import_job_stalled(job=job)
    assert stalled["minutes"] == 15 and "may have stopped" in stalled["message"]
    assert "60 minutes after handing it out" in stalled["message"]  # the visibility timeout
    browser = Client()
    browser.force_login(researcher)
    assert stalled["message"] in browser.get(f"/p/{project.slug}/").content.decode()

    recent = (timezone.now() - timedelta(minutes=2)).isoformat()
    cache.set(
        import_job_reads.import_progress_key(job_id=job.id),
        {
            "records": 3,
            "created": 2,
            "updated": 0,
            "bytes_read": 2,
            "bytes": 3,
            "updated_at": recent,
        },
    )
    polled = researcher_client.get(f"/api/projects/{project.slug}/imports/{job.id}/")
    assert polled.json()["stalled"] is None
    stale = (timezone.now() - timedelta(minutes=11)).isoformat()
    cache.set(
        import_job_reads.import_progress_key(job_id=job.id), {"records": 3, "updated_at": stale}
    )
    assert (
        import_job_reads.import_job_stalled(
            job=job, progress=import_job_reads.import_job_progress(job=job)
        )["minutes"]
        == 11
    )


def test_finished_jobs_are_never_stalled(project):
    for status in ("done", "failed"):
        job = factories.import_job(project=project, content=b"{}\n", status=status)
        assert import_job_reads.import_job_stalled(job=_aged(job, created_at=600)) is None


def test_a_worker_taking_a_job_records_when_and_reports_the_time_of_its_progress(
    project, progress_reports
):
    content = jsonl(factories.citation_payload(n) for n in range(3))
    job = factories.import_job(project=project, content=content)
    assert job.started_at is None
    seen = progress_reports
    before = timezone.now()
    job = import_job_run(job_id=job.id)
    assert job.status == "done" and before <= job.started_at <= job.finished_at
    assert seen and all(before <= datetime.fromisoformat(p["updated_at"]) for p in seen)


def test_the_project_page_says_how_long_imports_take_at_a_constant_query_count(
    researcher, project, django_assert_num_queries
):
    """Elapsed time, records per second and, while it runs, the time left (from the bytes read),
    from the job's stored times, its report and the cached progress: no query per job."""
    done = factories.import_job(project=project, content=b"{}\n", status="done")
    done.report = {"records": 600}
    done.save(update_fields=["report"])
    _aged(done, started_at=3, finished_at=1)  # 600 records in 2 minutes
    running = _aged(
        factories.import_job(project=project, content=b"{}\n", status="running"), started_at=1
    )
    cache.set(
        import_job_reads.import_progress_key(job_id=running.id),
        {"records": 120, "created": 120, "updated": 0, "bytes_read": 250, "bytes": 1000},
    )
    browser = Client()
    browser.force_login(researcher)
    browser.get(f"/p/{project.slug}/")  # warm: sessions, content types
    with CaptureQueriesContext(connection) as two_jobs:
        page = browser.get(f"/p/{project.slug}/").content.decode()
    queries = len(two_jobs.captured_queries)
    assert "2 min 00 s · 5.0 records/s</td>" in page
    # A quarter of the upload read in a minute: about three minutes left, at two records a second.
    assert re.search(r"1 min 0\d s · 2\.0 records/s · about 3 min 0\d s left</td>", page), page
    for _ in range(3):
        factories.import_job(project=project, content=b"{}\n", status="done")
    with django_assert_num_queries(queries):
        browser.get(f"/p/{project.slug}/")
    api = browser.get(f"/api/projects/{project.slug}/imports/{done.id}/").json()
    assert api["pace"]["rate"] == pytest.approx(5.0)
    assert api["pace"]["remaining_seconds"] is None


def test_a_queued_job_has_no_pace():
    job = ImportJob(status="queued")
    assert import_job_reads.import_job_pace(job=job) is None
