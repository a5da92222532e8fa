"""A real HTTP server on 127.0.0.1 in a thread, standing in for a team's webhook receiver.

It records every request (headers, body) and answers as the test says: ``ok`` (204), ``fail``
(an HTTP error with a long HTML body full of markup and control characters, which must never
reach the log verbatim), ``hold`` (keeps the connection open until ``release()``: a receiver
that does not answer) or, with ``stop()``, not at all (nothing listens on the port). ``plan``
answers the next requests in turn (then ``mode``), for receivers that fail and come back.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAILURE_BODY = (
    "<html><head><script>alert('x')</script></head><body>\x00\x1b[31m"
    + "Internal error: database password=hunter2 " * 40
    + "</body></html>"
)


class Receiver:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.mode = "ok"
        self.plan: list[str] = []
        self.fail_status = 500
        self.released = threading.Event()
        self.arrived = threading.Event()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver._lock:
                    mode = receiver.plan.pop(0) if receiver.plan else receiver.mode
                    receiver.requests.append(
                        {"headers": dict(self.headers.items()), "body": body, "mode": mode}
                    )
                receiver.arrived.set()
                if mode == "hold":
                    receiver.released.wait(60)
                if mode == "fail":
                    data = FAILURE_BODY.encode()
                    self.send_response(receiver.fail_status)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks/concord"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def release(self) -> None:
        self.released.set()

    def stop(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()

    def restart(self) -> None:
        """Listen again on the same port (a receiver that comes back)."""
        self.released = threading.Event()
        handler = self.server.RequestHandlerClass
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
