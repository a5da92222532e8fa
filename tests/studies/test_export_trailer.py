"""A download cut off anywhere is told from a complete one (issue 34): every streamed export ends
with a trailer line (rows, sha256 of the bytes before it) that ``studies.export_check`` checks;
and a long export tells gunicorn its worker is alive between chunks, so the worker timeout never
cuts one."""

from __future__ import annotations

import csv
import io
import json
import runpy

import pytest
from django.core.management import call_command

from core import liveness
from studies import export_check
from studies.export_check import IncompleteExport, check_export, export_body
from studies.services import exports
from tests.conftest import REPO
from tests.projects.test_export import annotate_all

ANSWER = {"sentences": [1], "none": False, "helpfulness": 50}


@pytest.fixture
def answered(project, annotator, items, monkeypatch):
    annotate_all(project, annotator, ANSWER)
    monkeypatch.setattr(exports, "TEXT_CHUNK", 2)  # several chunks from five rows
    return project


def download(client, project, fmt: str) -> list[bytes]:
    response = client.get(f"/api/projects/{project.slug}/export/", {"format": fmt})
    assert response.status_code == 200 and response.streaming
    return list(response.streaming_content)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_complete_download_checks_complete_with_its_rows(answered, items, researcher_client, fmt):
    chunks = download(researcher_client, answered, fmt)
    data = b"".join(chunks)
    check = check_export(data)
    assert check.complete and check.problem == "" and check.fmt == fmt
    assert check.rows == len(items)
    body = export_body(data).decode()
    assert body == "".join(exports.export_chunks(project=answered, fmt=fmt))
    if fmt == "jsonl":
        assert [json.loads(line)["item_id"] for line in body.splitlines()] == [
            i.external_id for i in items
        ]
        assert data.endswith(b'"rows":5,"sha256":"' + check.sha256.encode() + b'"}}\n')
    else:
        assert len(list(csv.DictReader(io.StringIO(body)))) == len(items)
        assert data.endswith(f"# concord_export_end rows=5 sha256={check.sha256}\r\n".encode())


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_export_interrupted_mid_stream_is_detected_as_incomplete(
    answered, researcher_client, fmt
):
    """Cut after any chunk the server sent (a worker killed between writes), and at every byte
    (a connection broken mid-write): never complete; every line of a cut JSONL before the cut
    still parses, which is why a cut file looked whole before."""
    chunks = download(researcher_client, answered, fmt)
    assert len(chunks) >= 4
    for sent in range(len(chunks)):
        cut = b"".join(chunks[:sent])
        check = check_export(cut)
        assert not check.complete and "cut off" in check.problem
        with pytest.raises(IncompleteExport):
            export_body(cut)
    data = b"".join(chunks)
    for size in range(len(data)):
        assert not check_export(data[:size]).complete, size
    assert check_export(data).complete


def test_a_changed_or_spliced_file_is_not_complete(answered, researcher_client):
    data = b"".join(download(researcher_client, answered, "jsonl"))
    changed = data.replace(b'"helpfulness":50', b'"helpfulness":51', 1)
    assert changed != data
    assert "sha256" in check_export(changed).problem
    lines = data.splitlines(keepends=True)
    dropped = b"".join(lines[1:])  # a row lost, the trailer kept
    assert not check_export(dropped).complete


def test_an_empty_export_is_its_trailer_alone(project, researcher_client):
    for fmt in ("jsonl", "csv"):
        data = b"".join(download(researcher_client, project, fmt))
        check = check_export(data)
        assert check.complete and check.rows == 0 and check.body_bytes == 0


def test_the_command_writes_the_trailer_and_the_checker_cli_says_so(answered, tmp_path, capsys):
    out = tmp_path / "export.csv"
    call_command("export_annotations", project=answered.slug, fmt="csv", out=str(out))
    assert export_check.main([str(out)]) == 0
    assert "complete, 5 rows" in capsys.readouterr().out
    cut = tmp_path / "cut.csv"
    cut.write_bytes(out.read_bytes()[:-20])
    assert export_check.main([str(out), str(cut)]) == 1
    assert "cut.csv: INCOMPLETE" in capsys.readouterr().out


def test_the_checker_needs_nothing_but_the_standard_library():
    import ast

    tree = ast.parse((REPO / "studies" / "export_check.py").read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    import sys

    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


class FakeWorker:
    def __init__(self):
        self.notified = 0

    def notify(self):
        self.notified += 1


def test_a_download_tells_the_gunicorn_worker_it_is_alive_between_chunks(
    answered, researcher_client, monkeypatch
):
    conf = runpy.run_path(str(REPO / "config" / "gunicorn.py"))
    worker = FakeWorker()
    reported = []
    monkeypatch.setattr(liveness, "_report", None)
    conf["post_worker_init"](worker)  # as gunicorn calls it in each new worker
    try:
        real_alive = liveness.alive
        monkeypatch.setattr(liveness, "alive", lambda: reported.append(1) or real_alive())
        chunks = download(researcher_client, answered, "jsonl")
    finally:
        liveness.report_with(None)
    assert len(reported) == len(chunks) - 1  # after every chunk of rows (not the trailer)
    assert worker.notified >= 1  # at most once a second: at least the first


def test_alive_reports_at_most_once_per_interval(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(liveness.time, "monotonic", lambda: now[0])
    worker = FakeWorker()
    liveness.report_with(worker.notify)
    try:
        for _ in range(5):
            liveness.alive()
        assert worker.notified == 1
        now[0] += liveness.EVERY_S
        liveness.alive()
        assert worker.notified == 2
    finally:
        liveness.report_with(None)
    liveness.alive()  # nothing registered: nothing to do
    assert worker.notified == 2
