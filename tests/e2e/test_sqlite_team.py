"""`make run`'s embedded SQLite database serves a small team: five browser annotators submit at
once against a real `runserver` on a SQLite file (WAL, busy timeout, BEGIN IMMEDIATE writes).
Before, three annotators were enough for "database is locked" on submit and draft, and a
resubmit after that error stored extra versions."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from urllib.request import urlopen

import pytest

from tests import factories

ROOT = Path(__file__).resolve().parents[2]
ANNOTATORS = 5
ITEMS_EACH = 6

SETUP = """
import json
from tests import factories
from tests.e2e.pages import demo_project
project, _, first = demo_project("citation_recovery", items={items}, per_item={per_item})
people = [first] + [factories.UserFactory() for _ in range({annotators} - 1)]
for user in people[1:]:
    factories.MembershipFactory(project=project, user=user, role="annotator")
print("SETUP" + json.dumps({{"slug": project.slug, "users": [u.username for u in people]}}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manage(env, *args, **kwargs):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        **kwargs,
    )


@pytest.fixture
def sqlite_server(tmp_path):
    """A migrated SQLite file with one project and five annotators, served by runserver."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'team.sqlite3'}"
    manage(env, "migrate", "--noinput")
    script = SETUP.format(items=ITEMS_EACH, per_item=ANNOTATORS, annotators=ANNOTATORS)
    out = manage(env, "shell", "-c", script).stdout
    setup = json.loads(out.split("SETUP", 1)[1])
    port = free_port()
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urlopen(f"{url}/healthz", timeout=1)
            break
        except OSError:
            time.sleep(0.2)  # sleep-ok: polls another process (runserver) until it answers
    yield url, setup, tmp_path
    server.terminate()
    server.wait(timeout=10)
    log.close()


def test_five_annotators_submit_at_once_on_sqlite_without_errors_or_extra_versions(
    browser, sqlite_server
):
    url, setup, folder = sqlite_server
    contexts = [browser.new_context() for _ in setup["users"]]
    pages = [context.new_page() for context in contexts]
    errors = []
    for page, username in zip(pages, setup["users"], strict=True):
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{url}/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", factories.PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{url}/")
        page.goto(f"{url}/p/{setup['slug']}/annotate/")
        page.wait_for_selector("#cr-sentences li")
    for n in range(1, ITEMS_EACH + 1):
        # Every page answers (each change autosaves a draft), then all submit together: the
        # requests reach the server at the same time.
        for page in pages:
            page.click("#cr-sentences li[data-index='0']")
            page.evaluate(
                "() => { const s = document.querySelector('#cr-helpfulness');"
                " s.value = '70'; s.dispatchEvent(new Event('input')); }"
            )
        for page in pages:
            page.evaluate("() => Concord.submit()")
        for page in pages:
            page.wait_for_function(
                f"document.querySelector('#position').textContent.startsWith('Item {n + 1}')"
                " || !document.querySelector('#done').hidden",
                timeout=30000,
            )
            banner = page.locator("#banner")
            assert banner.is_hidden() or not banner.inner_text(), banner.inner_text()
    for context in contexts:
        context.close()

    server_log = (folder / "server.log").read_text()
    assert "database is locked" not in server_log and "Traceback" not in server_log
    assert errors == []
    with sqlite3.connect(folder / "team.sqlite3") as db:
        versions = db.execute(
            "SELECT assignment_id, COUNT(*) FROM annotation_annotation GROUP BY assignment_id"
        ).fetchall()
    assert len(versions) == ANNOTATORS * ITEMS_EACH
    assert all(count == 1 for _, count in versions)  # no duplicate version of any answer
