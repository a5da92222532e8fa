"""The LLM judge against a real ``transformers serve`` (an OpenAI-compatible server) serving a
tiny random causal LM that the test builds, over HTTP through the real openai client (issue 11).

Needs transformers' ``serve`` command with its serving extras (fastapi, uvicorn, accelerate) and
torch: skipped without them on a developer machine, required in CI.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from llm_judges import services
from llm_judges.models import JudgeCall, JudgeResult, JudgeRun
from tests.conftest import require
from tests.llm_judges.conftest import start, stub_endpoint

SERVING_MODULES = ("torch", "transformers.cli.serving", "fastapi", "uvicorn", "accelerate")


def _missing() -> list[str]:
    missing = []
    for name in SERVING_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _judge(server, project, *, name: str, model: str, **parameters):
    """An LLM judge of ``project`` calling the local server through a keyless staff endpoint
    (on 127.0.0.1: private addresses allowed)."""
    defaults = {"timeout": 30, "concurrency": 2}
    return services.judge_create(
        project=project,
        name=name,
        kind="llm",
        model=model,
        endpoint=stub_endpoint(server, project, api_key_env=""),
        parameters={**defaults, **parameters},
    )


class _Server:
    def __init__(self, url: str, model: str) -> None:
        self.url, self.model = url, model


@pytest.fixture(scope="module")
def transformers_serve(tmp_path_factory):
    missing = _missing()
    require(not missing, f"transformers serve needs {', '.join(missing)}")
    from tests.llm_judges.tiny_causal_lm import build_tiny_causal_lm

    model = build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-causal-lm") / "model")
    port = _free_port()
    serve = Path(sys.executable).with_name("transformers")
    command = [str(serve), "serve", str(model), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--device", "cpu"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        f"transformers serve did not start:\n{log.read_text()}"
                    ) from None
                time.sleep(0.25)  # sleep-ok: polls another process until it answers
        yield _Server(f"http://127.0.0.1:{port}/v1", str(model))
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def test_a_judge_run_against_transformers_serve_records_every_reply_and_ends(
    transformers_serve, project, items, django_capture_on_commit_callbacks
):
    judge = _judge(
        transformers_serve,
        project,
        name="tiny",
        model=transformers_serve.model,
        max_tokens=12,
        seed=7,
    )
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE, run.error
    assert run.answered_count + run.unparseable_count == run.total == 5
    assert run.failed_count == 0
    assert (run.seed, run.structured_output) == (7, "json_schema")
    results = list(JudgeResult.objects.filter(run=run))
    for result in results:
        assert result.finish_reason in ("stop", "length")
        assert result.seed == 7
        assert result.completion_tokens and result.completion_tokens <= 12
        if result.finish_reason == "length" and result.status == "unparseable":
            assert result.error.startswith("the reply was cut at max_tokens")
    # transformers serve ignores response_format: only replies that happen to be exactly the
    # schema's JSON count as honoured, and the run says how many.
    assert run.schema_valid_count == sum(r.schema_valid is True for r in results)
    assert set(JudgeCall.objects.filter(run=run).values_list("http_status", flat=True)) == {200}


def test_a_wrong_model_name_fails_the_run_once_with_transformers_serves_message(
    transformers_serve, project, items, django_capture_on_commit_callbacks
):
    judge = _judge(
        transformers_serve, project, name="wrong-model", model="not-the-served-model", concurrency=1
    )
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.FAILED
    assert run.error == "HTTP 400: the model name is refused (item claim-0)"
    assert run.error_excerpt.startswith(
        f"Server is pinned to '{transformers_serve.model}'; requested 'not-the-served-model'."
    )
    assert JudgeCall.objects.filter(run=run).count() == 1
