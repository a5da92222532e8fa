"""Uploads: a configurable size limit (413 naming it), a mapping file that is not text refused,
and failed jobs' uploads cleared after the retention period (issue 14)."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from annotation.models import Item
from studies.models import ImportJob
from tests import factories
from tests.conftest import client_for

LINE = b'{"id": "x1", "claim": "c"}\n'


def test_an_upload_over_the_limit_is_a_413_naming_the_limit_through_the_api_and_the_page(
    researcher, project, settings
):
    settings.CONCORD_MAX_UPLOAD_BYTES = 100
    big = LINE * 10
    api = client_for(researcher)
    response = api.post(
        f"/api/projects/{project.slug}/import/",
        {"file": SimpleUploadedFile("big.jsonl", big), "format": "jsonl"},
        format="multipart",
    )
    assert response.status_code == 413
    assert (
        response.json()["field"] == "file" and "limited to 100 bytes" in response.json()["detail"]
    )
    page = Client()
    page.force_login(researcher)
    shown = page.post(
        f"/p/{project.slug}/", {"file": SimpleUploadedFile("big.jsonl", big), "format": "jsonl"}
    )
    assert shown.status_code == 413 and "limited to 100 bytes" in shown.content.decode()
    assert not ImportJob.objects.exists() and not Item.objects.filter(project=project).exists()


def test_a_mapping_file_that_is_not_utf8_is_refused_before_anything_is_stored(db):
    project = factories.ProjectFactory(task_type="ranking", config={})
    researcher = factories.UserFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    response = client_for(researcher).post(
        f"/api/projects/{project.slug}/import/",
        {
            "file": SimpleUploadedFile("sheet.csv", b"id,claim\n"),
            "format": "reprohum",
            "mapping": SimpleUploadedFile("map.csv", b"column,system\n\xff\xfe,gpt\n"),
        },
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["field"] == "mapping" and "not UTF-8" in response.json()["detail"]
    assert not ImportJob.objects.exists()


def test_old_failed_jobs_lose_their_upload_and_keep_their_error(researcher, project):
    def job(status, days_ago):
        made = factories.import_job(
            project=project,
            content=b"x" * 10,
            created_by=researcher,
            filename="f.jsonl",
            status=status,
            message="line 1: bad",
        )
        ImportJob.objects.filter(pk=made.pk).update(
            created_at=timezone.now() - timedelta(days=days_ago)
        )
        return made

    old_failed = job(ImportJob.Status.FAILED, 30)
    new_failed = job(ImportJob.Status.FAILED, 1)
    old_done = job(ImportJob.Status.DONE, 30)
    call_command("purge_failed_imports")
    contents = {j.pk: factories.stored_upload(j) for j in ImportJob.objects.all()}
    assert contents[old_failed.pk] == b""
    assert contents[new_failed.pk] == b"x" * 10 and contents[old_done.pk] == b"x" * 10
    assert ImportJob.objects.get(pk=old_failed.pk).message == "line 1: bad"


def test_the_purge_runs_daily_from_celery_beat(settings):
    from config.celery import app

    app.loader.import_default_modules()  # the tasks autodiscovered as a worker does
    entry = settings.CELERY_BEAT_SCHEDULE["purge-failed-import-uploads"]
    assert entry["task"] in app.tasks


@pytest.mark.parametrize(
    "line, named",
    [
        (
            '{"id": "d1", "x": ' + "[" * 5000 + "]" * 5000 + "}",
            "field 'x': nested more than 64 levels",
        ),
        ('{"id": "d2", "extra": {"note": "a\\u0000b"}}', "field 'extra.note'"),
        ('{"id": "d3", "extra": {"n": NaN}}', "finite"),
        ('{"id": "d4", "n": ' + "9" * 5000 + "}", "digits"),
        ('{"id": "d5", "\\u0000": 1}', "NUL"),
    ],
)
def test_unsafe_json_lines_are_named_errors_and_import_nothing(researcher, project, line, named):
    import json

    from studies.services.imports import ImportFailed, import_items

    body = (json.dumps(factories.citation_payload(1)) + "\n" + line + "\n").encode()
    with pytest.raises(ImportFailed, match="line 2") as refused:
        import_items(project=project, stream=io.BytesIO(body), fmt="jsonl")
    assert named in str(refused.value)
    assert not Item.objects.filter(project=project).exists()
