"""Judges in study replays: the platform's real LLM-judge pipeline against a simulated model.

A replay whose paper used an automatic annotator (citation recovery: an LLM finds the sentences
to cite; UPHILL: an evaluator labels each response's stance) runs one through Concord as a
researcher would: a :class:`llm_judges.models.Judge` of kind ``llm`` pointed at an
OpenAI-compatible chat-completions server, a run over the project's items, batches processed by
the same code the Celery workers run (prompt rendering, the ``openai`` client over HTTP, strict
parsing, results, call records). Only the model is simulated, and its name says so: the server
here (a real HTTP server on 127.0.0.1, in threads of this process, closed when the run ends)
answers each prompt with ``reply(prompt_text)``, the replay's noisy reader of the truth it
generated. No weights, no network.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from llm_judges.models import Judge, JudgeRun, ModelEndpoint
from llm_judges.parameters import clean_parameters
from llm_judges.services.batch_engine import judge_batch_process
from llm_judges.services.configuration import judge_create
from llm_judges.services.runs import batches, judge_run_start_pending
from projects.models import Project

SIMULATED_MODEL = "simulated-llm-judge"


def _completion(content: str, prompt: str) -> dict:
    prompt_tokens, completion_tokens = len(prompt.split()), len(content.split())
    return {
        "id": "chatcmpl-simulated",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": SIMULATED_MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _handler(reply: Callable[[str], str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
                prompt = "\n\n".join(str(m.get("content", "")) for m in request["messages"])
                status, body = 200, _completion(reply(prompt), prompt)
            except Exception as exc:  # what a real server does with a request it cannot serve
                status, body = 400, {"error": {"message": str(exc), "type": "invalid_request"}}
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def chat_server(*, reply: Callable[[str], str]) -> Iterator[str]:
    """Serve ``POST /v1/chat/completions`` on 127.0.0.1 (a free port) while the block runs;
    yields the API root (``http://127.0.0.1:PORT/v1``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(reply))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="simulated-judge", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _endpoint(project: Project, base_url: str) -> ModelEndpoint:
    """The replay's simulated server as a model endpoint of this project alone (the replay runs
    as staff would set one up: a server on this machine, so private addresses allowed)."""
    endpoint, _ = ModelEndpoint.objects.update_or_create(
        name=f"simulated:{project.slug}"[:100],
        defaults={
            "base_url": base_url,
            "api_key_env": "",
            "allow_private_network": True,
            "description": "The replay's simulated model server (127.0.0.1, while it runs).",
        },
    )
    endpoint.projects.add(project)
    return endpoint


def _judge(project: Project, name: str, base_url: str, description: str) -> Judge:
    parameters = {"structured_output": "none"}
    endpoint = _endpoint(project, base_url)
    judge = Judge.objects.filter(project=project, name=name).first()
    if judge is None:
        return judge_create(
            project=project,
            name=name,
            kind=Judge.Kind.LLM,
            model=SIMULATED_MODEL,
            endpoint=endpoint,
            parameters=parameters,
            description=description,
        )
    # The server's port changes from replay to replay; the judge keeps its name and history.
    judge.parameters = clean_parameters(Judge.Kind.LLM, {**judge.parameters, **parameters})
    judge.model, judge.description, judge.endpoint = SIMULATED_MODEL, description, endpoint
    judge.save(update_fields=["parameters", "model", "description", "endpoint", "updated_at"])
    return judge


def simulated_judge_run(
    *, project: Project, name: str, reply: Callable[[str], str], description: str
) -> JudgeRun:
    """Judge every item of ``project`` with the judge ``name`` (created, or re-pointed at this
    replay's server) whose model answers ``reply(prompt)``; returns the finished run. The
    batches run here, one after the other, through the workers' own code."""
    with chat_server(reply=reply) as base_url:
        judge = _judge(project, name, base_url, description)
        started = judge_run_start_pending(judge=judge, project=project, enqueue=False)
        run = started.run
        for chunk in batches(item_ids=started.pending_item_ids, size=run.items_per_task):
            judge_batch_process(run_id=run.pk, item_ids=chunk)
    run.refresh_from_db()
    return run
