"""Request sizes (issues 24 and 34): a body larger than its address takes is refused from its
Content-Length before anything reads it; a researcher's 128 MB study file is accepted with the
default settings, streamed to the job's parts with bounded memory.

The requests go through the whole middleware stack (Django's test handler) with a ``wsgi.input``
made here: one that counts what is read of it, so "refused before reading" is checked, and one
that makes a 128 MB multipart body on the fly, so the test itself never holds it."""

from __future__ import annotations

import hashlib
import io
import json
import tracemalloc

import pytest
from django.conf import settings
from django.test import Client
from knox.models import AuthToken

from studies.models import ImportJob
from studies.services.import_jobs import import_upload_stream
from tests import factories

MB = 10**6
BOUNDARY = "concord-test-boundary"


class Unread(io.RawIOBase):
    """A request body of which nothing may be read: counts what is asked of it."""

    def __init__(self):
        self.reads = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        self.reads += 1
        buffer[:1] = b"x"
        return 1


class StudyFileBody(io.RawIOBase):
    """A multipart form (``format=jsonl`` and a ``file`` of ``size`` bytes or a little more of
    JSONL study items), made as it is read; ``sha256`` is the file's, known once read."""

    LINE = '{{"id": "large-{n:07d}", "claim": "{filler}"}}\n'

    def __init__(self, size: int):
        filler = "Measles vaccination coverage rose in the region. " * 26
        self.line_length = len(self.LINE.format(n=0, filler=filler).encode())
        self.lines = -(-size // self.line_length)
        self.filler = filler
        self.head = (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="format"\r\n\r\njsonl\r\n'
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="study.jsonl"\r\nContent-Type: application/x-ndjson\r\n\r\n'
        ).encode()
        self.tail = f"\r\n--{BOUNDARY}--\r\n".encode()
        self.file_size = self.lines * self.line_length
        self.length = len(self.head) + self.file_size + len(self.tail)
        self.digest = hashlib.sha256()
        self.pending = bytearray(self.head)
        self.next_line = 0
        self.tail_sent = False

    @property
    def sha256(self) -> str:
        return self.digest.hexdigest()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while len(self.pending) < len(buffer) and not self.tail_sent:
            if self.next_line < self.lines:
                upto = min(self.lines, self.next_line + 256)
                block = "".join(
                    self.LINE.format(n=n, filler=self.filler) for n in range(self.next_line, upto)
                ).encode()
                self.digest.update(block)
                self.pending += block
                self.next_line = upto
            else:
                self.pending += self.tail
                self.tail_sent = True
        size = min(len(buffer), len(self.pending))
        buffer[:size] = self.pending[:size]
        del self.pending[:size]
        return size


def post(client: Client, path: str, body: io.RawIOBase, length: int, **headers):
    """POST ``body`` (``length`` bytes, as its Content-Length says) through every middleware."""
    environ = client._base_environ(
        REQUEST_METHOD="POST",
        PATH_INFO=path,
        CONTENT_TYPE=f"multipart/form-data; boundary={BOUNDARY}",
        CONTENT_LENGTH=str(length),
        **{"wsgi.input": body},
        **headers,
    )
    return client.handler(environ)


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_anonymous_post_to_the_login_page_is_refused_from_its_content_length(db):
    body = Unread()
    response = post(Client(), "/login/", body, 120 * MB)
    assert response.status_code == 413
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in response.content.decode()
    assert body.reads == 0


def test_an_anonymous_upload_to_an_import_endpoint_is_refused_unread(project):
    body = Unread()
    response = post(Client(), f"/api/projects/{project.slug}/import/", body, 120 * MB)
    refusal = json.loads(response.content)
    assert response.status_code == 413 and refusal["code"] == "too_large"
    assert "CONCORD_MAX_UPLOAD_BYTES" in refusal["detail"]
    assert body.reads == 0


@pytest.mark.parametrize(
    "path",
    [
        "/p/{slug}/",
        "/p/{slug}/annotations/import/",
        "/p/{slug}/import/label-studio/",
        "/api/projects/{slug}/import/",
        "/api/projects/{slug}/import/label-studio/",
    ],
)
def test_an_annotator_of_the_project_cannot_send_a_large_body(project, annotator, path):
    body = Unread()
    response = post(logged_in(annotator), path.format(slug=project.slug), body, 120 * MB)
    assert response.status_code == 413 and body.reads == 0


def test_a_researcher_of_another_project_or_a_bad_token_cannot_send_a_large_body(project):
    elsewhere = factories.ProjectFactory()
    outsider = factories.UserFactory()
    factories.MembershipFactory(project=elsewhere, user=outsider, role="researcher")
    _, key = AuthToken.objects.create(outsider)
    for headers in ({"HTTP_AUTHORIZATION": f"Token {key}"}, {"HTTP_AUTHORIZATION": "Token nope"}):
        body = Unread()
        response = post(
            Client(), f"/api/projects/{project.slug}/import/", body, 120 * MB, **headers
        )
        assert response.status_code == 413 and body.reads == 0


def test_a_researchers_body_over_the_upload_limit_is_refused_unread_naming_the_setting(
    project, researcher
):
    limit = settings.CONCORD_MAX_UPLOAD_BYTES
    body = Unread()
    response = post(logged_in(researcher), f"/p/{project.slug}/", body, limit + 2 * 2**20)
    assert response.status_code == 413 and body.reads == 0
    text = response.content.decode()
    assert f"{limit:,} bytes" in text and "CONCORD_MAX_UPLOAD_BYTES" in text


def test_ordinary_requests_are_unchanged(researcher, project):
    # A small body reaches its view (the login page answers its form).
    response = Client().post("/login/", {"username": "nobody", "password": "wrong"})
    assert response.status_code == 200


def test_a_128_mb_study_file_is_accepted_by_default_and_streamed_in_bounded_memory(
    project, researcher, monkeypatch
):
    """Default settings (no override): the researcher's token, 128 MB of JSONL. The job's import
    is left queued (no worker here); what is checked is the request: accepted, every byte
    stored in 1 MiB parts, and the request's peak Python memory a small fraction of the body."""
    assert settings.CONCORD_MAX_UPLOAD_BYTES >= 512 * 2**20  # the shipped default
    queued = []
    monkeypatch.setattr("studies.celery_tasks.run_import_job.delay", queued.append)
    _, key = AuthToken.objects.create(researcher)
    body = StudyFileBody(128 * MB)
    assert body.file_size >= 128 * MB
    tracemalloc.start()
    try:
        response = post(
            Client(),
            f"/api/projects/{project.slug}/import/",
            body,
            body.length,
            HTTP_AUTHORIZATION=f"Token {key}",
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 202, response.content[:500]
    job = ImportJob.objects.get(project=project)
    assert job.status == ImportJob.Status.QUEUED and job.size == body.file_size
    assert job.parts.count() == -(-body.file_size // ImportJob.PART_BYTES)
    stored, stream = hashlib.sha256(), import_upload_stream(job=job)
    while chunk := stream.read(ImportJob.PART_BYTES):
        stored.update(chunk)
    assert stored.hexdigest() == body.sha256
    # Held whole, the body alone would be 128 MB; streamed, a few parts' worth.
    assert peak < 24 * 2**20, f"peak {peak / 2**20:.1f} MiB"
