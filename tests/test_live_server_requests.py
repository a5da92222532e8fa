"""The live server's request counting (tests/live_server.py), with the threads' order fixed by
events: a test's end waits for the requests in flight, then turns later ones away; on a shared
SQLite connection, requests are answered one at a time."""

from __future__ import annotations

import threading

from tests.live_server import LiveServerRequests


class SlowApp:
    """A WSGI app whose responses wait for ``release`` and log when they are entered and closed."""

    def __init__(self, *paths: str) -> None:
        self.log: list[str] = []
        self.entered = threading.Event()
        self.release = {path: threading.Event() for path in paths}

    def __call__(self, environ, start_response):
        name = environ["PATH_INFO"]
        self.log.append(f"enter {name}")
        self.entered.set()
        assert self.release[name].wait(60)
        start_response("200 OK", [])
        app = self

        class Body(list):
            def close(self):
                app.log.append(f"close {name}")

        return Body([b"ok"])


def call(app, path: str) -> tuple[list[str], list[bytes]]:
    statuses: list[str] = []
    response = app({"REQUEST_METHOD": "GET", "PATH_INFO": path}, lambda s, h: statuses.append(s))
    body = list(response)
    getattr(response, "close", lambda: None)()  # WSGI: close() where the response has one
    return statuses, body


def test_a_tests_end_waits_for_the_request_in_flight_and_turns_later_ones_away():
    app = SlowApp("/autosave")
    requests = LiveServerRequests(one_at_a_time=False)
    served = requests.wrap(app)
    requests.begin_test()
    request = threading.Thread(target=call, args=(served, "/autosave"))
    request.start()
    assert app.entered.wait(60)

    def end_of_test():
        requests.settle()
        app.log.append("settled")

    ending = threading.Thread(target=end_of_test)
    ending.start()
    app.release["/autosave"].set()
    request.join()
    ending.join()
    assert app.log == ["enter /autosave", "close /autosave", "settled"]
    assert call(served, "/late-poll") == (
        ["503 Service Unavailable"],
        [b"the test that made this request has ended"],
    )
    assert app.log[-1] == "settled" and requests.turned_away == 1 and not requests.in_flight


def test_on_one_shared_connection_requests_are_answered_one_at_a_time():
    app = SlowApp("/first", "/second")
    requests = LiveServerRequests(one_at_a_time=True)
    served = requests.wrap(app)
    requests.begin_test()
    first = threading.Thread(target=call, args=(served, "/first"))
    first.start()
    assert app.entered.wait(60)
    second = threading.Thread(target=call, args=(served, "/second"))
    second.start()
    app.release["/second"].set()
    app.release["/first"].set()
    first.join()
    second.join()
    assert app.log == ["enter /first", "close /first", "enter /second", "close /second"]
    requests.settle()


def test_a_request_that_fails_is_no_longer_in_flight():
    def broken(environ, start_response):
        raise RuntimeError("boom")

    requests = LiveServerRequests(one_at_a_time=True)
    served = requests.wrap(broken)
    requests.begin_test()
    for _ in range(2):  # the second would wait forever for the lock if the first kept it
        try:
            call(served, "/broken")
        except RuntimeError:
            pass
    assert not requests.in_flight
    requests.settle()
