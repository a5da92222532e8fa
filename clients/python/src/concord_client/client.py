"""The client: one ``httpx.Client`` and one method per thing a team scripts.

Every URL the client calls is in :data:`ENDPOINTS` (and every JSON field it sends in
:data:`REQUEST_FIELDS`); a test in Concord's repository compares both with the server's OpenAPI
schema, so the client and the API cannot drift apart.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypedDict
from urllib.parse import quote

import httpx

from concord_client.errors import (
    ExportFormatError,
    ImportFailedError,
    IncompleteExportError,
    error_from,
)

if TYPE_CHECKING:  # optional extras
    import datasets
    import pandas

# name -> (HTTP method, path template under the server's address)
ENDPOINTS: dict[str, tuple[str, str]] = {
    "token": ("POST", "/api/auth/token/"),
    "logout": ("POST", "/api/auth/logout/"),
    "projects": ("GET", "/api/projects/"),
    "project_create": ("POST", "/api/projects/"),
    "study_export": ("GET", "/api/projects/{slug}/"),
    "study_apply": ("PUT", "/api/projects/{slug}/"),
    "progress": ("GET", "/api/projects/{slug}/progress/"),
    "items": ("GET", "/api/projects/{slug}/items/"),
    "item_fix": ("POST", "/api/projects/{slug}/items/{item_id}/fix/"),
    "items_import": ("POST", "/api/projects/{slug}/import/"),
    "import_job": ("GET", "/api/projects/{slug}/imports/{job_id}/"),
    "import_cancel": ("POST", "/api/projects/{slug}/imports/{job_id}/cancel/"),
    "annotations_import": ("POST", "/api/projects/{slug}/annotations/import/"),
    "label_studio_import": ("POST", "/api/projects/{slug}/import/label-studio/"),
    "export": ("GET", "/api/projects/{slug}/export/"),
    "judge_runs": ("GET", "/api/projects/{slug}/judge-runs/"),
    "judge_run_start": ("POST", "/api/projects/{slug}/judge-runs/"),
    "judge_run_estimate": ("POST", "/api/projects/{slug}/judge-runs/estimate/"),
    "judge_run": ("GET", "/api/projects/{slug}/judge-runs/{run_id}/"),
    "judge_run_cancel": ("POST", "/api/projects/{slug}/judge-runs/{run_id}/cancel/"),
    "next": ("POST", "/api/projects/{slug}/next/"),
    "assignment": ("GET", "/api/assignments/{assignment_id}/"),
    "submit": ("POST", "/api/assignments/{assignment_id}/submit/"),
    "webhooks": ("GET", "/api/projects/{slug}/webhooks/"),
    "webhook_create": ("POST", "/api/projects/{slug}/webhooks/"),
    "webhook_delete": ("DELETE", "/api/projects/{slug}/webhooks/{subscription_id}/"),
    "webhook_deliveries": ("GET", "/api/projects/{slug}/webhooks/deliveries/"),
    "webhook_redeliver": (
        "POST",
        "/api/projects/{slug}/webhooks/deliveries/{delivery_id}/redeliver/",
    ),
}

# JSON (or form) fields the client sends, per endpoint with a documented request body.
REQUEST_FIELDS: dict[str, tuple[str, ...]] = {
    "items_import": ("file", "format", "update"),
    "item_fix": ("record", "note"),
    "annotations_import": ("file", "format", "source", "skip_unknown_items"),
    "label_studio_import": ("file", "labeling_config", "source"),
    "judge_run_start": ("judge", "filters", "both_orders", "budget_calls", "budget_tokens"),
    "judge_run_estimate": ("judge", "filters", "both_orders"),
    "next": ("start_batch",),
    "submit": ("answer", "time_spent_ms", "submission_id"),
    "webhook_create": ("url", "events", "description"),
}

# Query parameters the client sends.
QUERY_PARAMETERS: dict[str, tuple[str, ...]] = {"export": ("format", "coders")}

FINISHED_RUN = ("done", "failed", "cancelled")
FINISHED_IMPORT = ("done", "failed", "cancelled")


class ImportJob(TypedDict, total=False):
    id: int
    status: str  # queued, running, done, failed, cancelled
    message: str
    summary: str
    progress: dict | None
    stalled: dict | None


class JudgeRun(TypedDict, total=False):
    id: int
    status: str  # pending, running, done, failed, cancelled
    total: int


Progress = Callable[[dict], None]
FileLike = str | Path | bytes | IO[bytes]


END_KEY = "concord_export_end"  # the export's last line: {"concord_export_end": {"rows", "sha256"}}


class AnnotationExport:
    """The rows of a streamed JSONL export, read as they arrive (iterate it once), and checked.

    Every export ends with one line, ``{"concord_export_end": {"rows": N, "sha256": HEX}}``,
    written after the last row: the number of rows and the sha256 of every byte before it. The
    reader hashes and counts what it reads, and once the rows are read it raises
    :class:`IncompleteExportError` when that line is missing or does not match (a connection
    that broke, a download cut by a proxy or a killed worker): a cut export never passes for a
    complete one. The end line is kept in :attr:`trailer`; a line that is not a row before it is
    an ``ExportFormatError`` naming its number. ``chunks`` are the response's bytes as they
    arrive."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self.trailer: dict | None = None
        self.rows = 0

    @staticmethod
    def _row(line: bytes) -> dict | None:
        try:
            value = json.loads(line)
        except ValueError:
            return None
        return value if isinstance(value, dict) and "item_id" in value else None

    def _lines(self) -> Iterator[bytes]:
        """Whole lines with their ``\\n``; a last piece without one (a cut) as it is."""
        parts: list[bytes] = []
        try:
            for chunk in self._chunks:
                if b"\n" not in chunk:
                    parts.append(chunk)  # a long line: joined once it ends
                    continue
                parts.append(chunk)
                *whole, rest = b"".join(parts).split(b"\n")
                parts = [rest] if rest else []
                for line in whole:
                    yield line + b"\n"
        except httpx.TransportError as exc:
            raise IncompleteExportError(
                f"the export was cut after {self.rows} rows: the connection broke ({exc})"
            ) from exc
        if parts:
            yield b"".join(parts)

    def __iter__(self) -> Iterator[dict]:
        digest = hashlib.sha256()
        previous: bytes | None = None
        number = 0
        for line in self._lines():
            if previous is not None:
                digest.update(previous)
                if previous.strip():
                    row = self._row(previous)
                    if row is None:
                        raise ExportFormatError(f"line {number} of the export is not a row")
                    self.rows += 1
                    yield row
            previous, number = line, number + 1
        self.trailer = self._end(previous, digest.hexdigest())

    def _end(self, line: bytes | None, sha256: str) -> dict:
        try:
            end = json.loads(line) if line is not None and line.endswith(b"\n") else None
        except ValueError:
            end = None
        announced = end.get(END_KEY) if isinstance(end, dict) else None
        if not isinstance(announced, dict):
            whole_row = line is not None and line.endswith(b"\n") and self._row(line) is not None
            raise IncompleteExportError(
                f"the export has no end line: it was cut after {self.rows + whole_row} rows; "
                "read it again"
            )
        if announced.get("rows") != self.rows or announced.get("sha256") != sha256:
            raise IncompleteExportError(
                f"the export's end line announces {announced.get('rows')} rows and a sha256 "
                f"that do not match the {self.rows} rows read; read it again"
            )
        return end


def _file(data: FileLike, name: str) -> tuple[str, Any]:
    if isinstance(data, str | Path):
        path = Path(data)
        return path.name, path.read_bytes()
    if isinstance(data, bytes):
        return name, data
    return getattr(data, "name", name), data


class Concord:
    """A session with one Concord server.

    >>> concord = Concord("https://concord.example.org", token="…")
    >>> concord = Concord.login("https://concord.example.org", "alice", "…")
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Token {token}"
        self.token = token
        self.http = httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout, transport=transport
        )

    @classmethod
    def login(cls, url: str, username: str, password: str, **options: Any) -> Concord:
        """Ask for a new API token (it expires; :meth:`logout` revokes it)."""
        with cls(url, **options) as anonymous:
            answer = anonymous._call("token", data={"username": username, "password": password})
        return cls(url, token=answer["token"], **options)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Concord:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def logout(self) -> None:
        """Revoke this client's token."""
        self._call("logout")

    # --- plumbing ---------------------------------------------------------------------------

    def _path(self, name: str, **parts: Any) -> tuple[str, str]:
        method, template = ENDPOINTS[name]
        return method, template.format(**{k: quote(str(v), safe="") for k, v in parts.items()})

    def _call(
        self,
        name: str,
        *,
        json_body: Any = None,
        data: Mapping[str, Any] | None = None,
        files: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        **parts: Any,
    ) -> Any:
        method, path = self._path(name, **parts)
        response = self.http.request(
            method, path, json=json_body, data=data, files=files, params=params
        )
        return self._answer(response)

    @staticmethod
    def _answer(response: httpx.Response) -> Any:
        if response.status_code >= 400:
            try:
                body: Any = response.json()
            except ValueError:
                body = response.text
            raise error_from(response.status_code, body, response.headers)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    # --- projects and study files -----------------------------------------------------------

    def _pages(self, name: str, **parts: Any) -> Iterator[dict]:
        """Every row of a paginated list, following its ``next`` links."""
        answer = self._call(name, **parts)
        while True:
            yield from answer["results"]
            if not answer.get("next"):
                return
            answer = self._answer(self.http.get(answer["next"]))

    def projects(self) -> list[dict]:
        """The projects you belong to, with your role in each."""
        return list(self._pages("projects"))

    def items(self, slug: str) -> Iterator[dict]:
        """The project's items with payload, prepared data and gold (researchers)."""
        return self._pages("items", slug=slug)

    def fix_item(self, slug: str, item_id: int, record: dict, note: str = "") -> dict:
        """Replace one item's record (checked as an import checks it; the item keeps its id and
        kind). Returns ``{"item", "revision", "earlier_answers", "changed"}``: answers already
        made keep the revision they were made on."""
        return self._call(
            "item_fix", json_body={"record": record, "note": note}, slug=slug, item_id=item_id
        )

    def create_project(self, study: dict) -> dict:
        """Create a project from a study file (a dict, as ``study export`` writes it)."""
        return self._call("project_create", json_body=study)

    def apply_study(self, slug: str, study: dict) -> dict:
        """Change the project to match a study file; returns ``{"study", "changes"}``."""
        return self._call("study_apply", json_body=study, slug=slug)

    def export_study(self, slug: str) -> dict:
        """The project's study file."""
        return self._call("study_export", slug=slug)

    def progress(self, slug: str) -> dict:
        return self._call("progress", slug=slug)

    # --- imports ----------------------------------------------------------------------------

    def import_items(
        self,
        slug: str,
        file: FileLike,
        *,
        format: str = "detect",
        update: bool = False,
        wait: bool = True,
        on_progress: Progress | None = None,
        poll_s: float = 1.0,
        timeout_s: float | None = None,
    ) -> ImportJob:
        """Upload items; with ``wait`` (the default), poll the import job until it is done,
        calling ``on_progress(job)`` at each poll, and raise ``ImportFailedError`` if it failed.
        A bad file is an ``InvalidRequest`` naming the line and field."""
        job = self._call(
            "items_import",
            files={"file": _file(file, "items")},
            data={"format": format, "update": "true" if update else "false"},
            slug=slug,
        )
        if not wait:
            return job
        return self.wait_for_import(
            slug, job["id"], on_progress=on_progress, poll_s=poll_s, timeout_s=timeout_s
        )

    def import_job(self, slug: str, job_id: int) -> ImportJob:
        return self._call("import_job", slug=slug, job_id=job_id)

    def cancel_import(self, slug: str, job_id: int) -> ImportJob:
        """Cancel a queued or running import (nothing of it is imported); a finished one is
        refused (``Conflict``)."""
        return self._call("import_cancel", slug=slug, job_id=job_id)

    def wait_for_import(
        self,
        slug: str,
        job_id: int,
        *,
        on_progress: Progress | None = None,
        poll_s: float = 1.0,
        timeout_s: float | None = None,
    ) -> ImportJob:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            job = self.import_job(slug, job_id)
            if on_progress is not None:
                on_progress(job)
            if job.get("status") == "failed":
                error = ImportFailedError(
                    job.get("message") or "import failed", status=200, code="failed", body=job
                )
                error.job = dict(job)
                raise error
            if job.get("status") in FINISHED_IMPORT:
                return job
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"import job {job_id} is still {job.get('status')}")
            time.sleep(poll_s)

    def import_annotations(
        self,
        slug: str,
        file: FileLike,
        *,
        format: str = "jsonl",
        source: str = "",
        skip_unknown_items: bool = False,
        mapping: FileLike | None = None,
    ) -> dict:
        """Annotations collected elsewhere, as external coders' answers (all or nothing).
        ``mapping``: the file some formats read beside it (``reprohum-ranks``: the column →
        system mapping; a questionnaire's ``label-studio``: the labeling config XML)."""
        data = {"format": format, "skip_unknown_items": "true" if skip_unknown_items else "false"}
        if source:
            data["source"] = source
        files = {"file": _file(file, "annotations")}
        if mapping is not None:
            files["mapping"] = _file(mapping, "mapping")
        return self._call("annotations_import", files=files, data=data, slug=slug)

    def import_label_studio(
        self, slug: str, export: FileLike, labeling_config: FileLike, *, source: str = ""
    ) -> dict:
        """A Label Studio project in one request: its JSON export and labeling config become
        items and external coders' answers, all or nothing (task types that read Label Studio
        projects). Returns the counts and what was not mapped."""
        files = {
            "file": _file(export, "export.json"),
            "labeling_config": _file(labeling_config, "config.xml"),
        }
        data = {"source": source} if source else {}
        return self._call("label_studio_import", files=files, data=data, slug=slug)

    # --- exports ----------------------------------------------------------------------------

    def export_annotations(self, slug: str, *, coders: str = "humans") -> Iterator[dict]:
        """Every current annotation as a dict, streamed (constant memory): ``coders`` is
        ``humans``, ``external``, ``judges`` or ``all``. The export's end line is checked, not
        yielded: a cut export raises :class:`IncompleteExportError` after its rows (see
        :class:`AnnotationExport`)."""
        reader = self.export_reader(slug, coders=coders)
        yield from reader

    def export_reader(self, slug: str, *, coders: str = "humans") -> AnnotationExport:
        method, path = self._path("export", slug=slug)

        def chunks() -> Iterator[bytes]:
            with self.http.stream(
                method, path, params={"format": "jsonl", "coders": coders}
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    self._answer(response)
                yield from response.iter_bytes()

        return AnnotationExport(chunks())

    def annotations_dataframe(self, slug: str, *, coders: str = "humans") -> pandas.DataFrame:
        """The export as a pandas DataFrame (``pip install concord-client[pandas]``)."""
        import pandas

        return pandas.DataFrame.from_records(list(self.export_annotations(slug, coders=coders)))

    def annotations_dataset(self, slug: str, *, coders: str = "humans") -> datasets.Dataset:
        """The export as a Hugging Face ``datasets.Dataset`` (``concord-client[datasets]``);
        nested answers stay nested."""
        import datasets

        return datasets.Dataset.from_list(list(self.export_annotations(slug, coders=coders)))

    # --- judges -----------------------------------------------------------------------------

    def estimate_judge_run(
        self, slug: str, judge: str, *, filters: dict | None = None, both_orders: bool = False
    ) -> dict:
        """Items, calls and estimated tokens of a run, before anything is sent."""
        body = {"judge": judge, "filters": filters or {}, "both_orders": both_orders}
        return self._call("judge_run_estimate", json_body=body, slug=slug)

    def start_judge_run(
        self,
        slug: str,
        judge: str,
        *,
        filters: dict | None = None,
        both_orders: bool = False,
        budget_calls: int | None = None,
        budget_tokens: int | None = None,
    ) -> JudgeRun:
        body = {
            "judge": judge,
            "filters": filters or {},
            "both_orders": both_orders,
            "budget_calls": budget_calls,
            "budget_tokens": budget_tokens,
        }
        return self._call("judge_run_start", json_body=body, slug=slug)

    def judge_runs(self, slug: str) -> list[JudgeRun]:
        return self._call("judge_runs", slug=slug)["results"]

    def judge_run(self, slug: str, run_id: int) -> JudgeRun:
        return self._call("judge_run", slug=slug, run_id=run_id)

    def cancel_judge_run(self, slug: str, run_id: int) -> JudgeRun:
        return self._call("judge_run_cancel", slug=slug, run_id=run_id)

    def follow_judge_run(
        self, slug: str, run_id: int, *, poll_s: float = 2.0, timeout_s: float | None = None
    ) -> Iterator[JudgeRun]:
        """The run's progress at each poll, until it is done, failed or cancelled (the last
        one yielded is the finished run)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            run = self.judge_run(slug, run_id)
            yield run
            if run.get("status") in FINISHED_RUN:
                return
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"judge run {run_id} is still {run.get('status')}")
            time.sleep(poll_s)

    # --- scripted annotation ----------------------------------------------------------------

    def next_item(self, slug: str, *, start_batch: bool = False) -> dict | None:
        """Reserve your next item: the assignment (``id``, ``item``…), a ``{"stop": …}`` when
        you may not go on, or None when nothing is left."""
        return self._call("next", json_body={"start_batch": start_batch}, slug=slug)

    def submit_answer(
        self,
        assignment_id: int,
        answer: dict,
        *,
        time_spent_ms: int = 0,
        submission_id: str | None = None,
    ) -> dict:
        """Submit (or revise) an answer; retrying with the same ``submission_id`` is safe."""
        body = {
            "answer": answer,
            "time_spent_ms": time_spent_ms,
            "submission_id": submission_id or str(uuid.uuid4()),
        }
        return self._call("submit", json_body=body, assignment_id=assignment_id)

    def annotate(
        self, slug: str, answer_for: Callable[[dict], dict | None], *, limit: int | None = None
    ) -> int:
        """Answer items with ``answer_for(assignment)`` until nothing is left, a stop, or
        ``limit`` answers (None from ``answer_for`` stops too); returns how many were sent."""
        sent = 0
        while limit is None or sent < limit:
            assignment = self.next_item(slug)
            if assignment is None or "stop" in assignment:
                break
            answer = answer_for(assignment)
            if answer is None:
                break
            self.submit_answer(assignment["id"], answer)
            sent += 1
        return sent

    # --- webhooks ---------------------------------------------------------------------------

    def webhooks(self, slug: str) -> list[dict]:
        return self._call("webhooks", slug=slug)["results"]

    def create_webhook(
        self, slug: str, url: str, events: list[str], *, description: str = ""
    ) -> dict:
        """A new subscription; its ``secret`` verifies deliveries (``concord_client.webhooks``)."""
        body = {"url": url, "events": events, "description": description}
        return self._call("webhook_create", json_body=body, slug=slug)

    def delete_webhook(self, slug: str, subscription_id: int) -> None:
        self._call("webhook_delete", slug=slug, subscription_id=subscription_id)

    def webhook_deliveries(self, slug: str) -> list[dict]:
        return self._call("webhook_deliveries", slug=slug)["results"]

    def redeliver(self, slug: str, delivery_id: int) -> dict:
        return self._call("webhook_redeliver", slug=slug, delivery_id=delivery_id)
