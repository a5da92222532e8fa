"""A real HTTP server that speaks the OpenAI chat-completions wire format, for tests and the
throughput benchmark. The judge talks to it through the real ``openai`` client (nothing mocked).

``StubLLM(responder)`` serves ``POST /v1/chat/completions`` on 127.0.0.1 in background threads;
``responder(request) -> Reply`` decides each answer (status, content, delay). Every request is
recorded (path, headers, JSON body) in ``requests``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    content: str | None = '{"sentences": [2]}'
    delay: float = 0.0
    headers: dict = field(default_factory=dict)
    body: dict | None = None  # a full body instead of a completion / error built from the rest
    wait: threading.Event | None = None  # block until set (a call that hangs)
    finish_reason: str = "stop"  # "length": cut at max_tokens
    drop: bool = False  # close the connection without an answer (a server that died mid-call)
    raw_body: str | None = None  # a body sent as it is (an HTML error page)
    # (token, log-probability) pairs that spell ``content``, returned when the request asks
    # for logprobs (as OpenAI and vLLM do); None: "logprobs": null, as servers without them.
    logprobs: list[tuple[str, float]] | None = None


def completion_body(
    content: str,
    *,
    model: str,
    prompt_tokens: int = 120,
    completion_tokens: int = 7,
    finish_reason: str = "stop",
    logprobs: list[tuple[str, float]] | None = None,
) -> dict:
    content_logprobs = None
    if logprobs is not None:
        content_logprobs = {
            "content": [
                {
                    "token": token,
                    "logprob": logprob,
                    "bytes": list(token.encode()),
                    "top_logprobs": [{"token": token, "logprob": logprob, "bytes": None}],
                }
                for token, logprob in logprobs
            ]
        }
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
                "logprobs": content_logprobs,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}


def error_body(status: int, message: str) -> dict:
    return {
        "error": {
            "message": message,
            "type": ERROR_TYPES.get(status, "error"),
            "param": None,
            "code": None,
        }
    }


def user_message(request: dict) -> str:
    return next(m["content"] for m in request["json"]["messages"] if m["role"] == "user")


def claim_of(request: dict) -> str:
    match = re.search(r"^Claim: (.*)$", user_message(request), re.MULTILINE)
    return match.group(1) if match else ""


class StubLLM:
    def __init__(
        self,
        responder: Callable[[dict], Reply] | None = None,
        *,
        latency: float = 0.0,
        port: int = 0,
    ):
        self.responder = responder or (lambda request: Reply())
        self.latency = latency
        self.requests: list[dict] = []
        self.replies_written = 0  # whole replies handed to the connection (a stop may cut others)
        self._lock = threading.Lock()
        self._connections: set = set()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
            disable_nagle_algorithm = True  # headers and body in separate writes: no 40 ms stall

            def log_message(self, *args):  # quiet
                pass

            def setup(self):
                super().setup()
                with stub._lock:
                    stub._connections.add(self.connection)

            def finish(self):
                with stub._lock:
                    stub._connections.discard(self.connection)
                try:
                    super().finish()
                except OSError:
                    pass  # stopped: the connection was shut down under it

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                request = {
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "json": body,
                }
                with stub._lock:
                    stub.requests.append(request)
                reply = stub.responder(request)
                if stub.latency:
                    time.sleep(stub.latency)  # sleep-ok: the simulated LLM's latency
                if reply.wait is not None:
                    reply.wait.wait(timeout=120)
                if reply.delay:
                    time.sleep(reply.delay)  # sleep-ok: a slow reply (for timeouts under test)
                if reply.drop:
                    self.close_connection = True
                    return
                if reply.raw_body is not None:
                    data = reply.raw_body.encode()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if reply.body is not None:
                    payload = reply.body
                elif reply.status == 200:
                    payload = completion_body(
                        reply.content,
                        model=body.get("model", "stub"),
                        finish_reason=reply.finish_reason,
                        logprobs=reply.logprobs if body.get("logprobs") else None,
                    )
                else:
                    payload = error_body(reply.status, f"stub error {reply.status}")
                data = json.dumps(payload).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                    self.wfile.flush()
                    with stub._lock:
                        stub.replies_written += 1
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) or its worker was killed

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256  # many concurrent clients connect at once

        self.server = Server(("127.0.0.1", port), Handler)  # a port again: a restarted server
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def start(self) -> StubLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop as a killed server does: no new connection is accepted (refused), and every
        open one, kept alive by a client or in the middle of a call, is reset."""
        import socket

        self.server.shutdown()
        self.server.server_close()
        with self._lock:
            connections, self._connections = list(self._connections), set()
        for sock in connections:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> StubLLM:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def chat_requests(self) -> list[dict]:
        with self._lock:
            return [r for r in self.requests if r["path"].endswith("/chat/completions")]
