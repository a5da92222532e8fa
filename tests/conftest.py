import os
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from rest_framework.test import APIClient

from tests import factories

REPO = Path(__file__).resolve().parents[1]
# CI sets this: a test that needs PostgreSQL, Redis or Chromium must run there, never skip.
REQUIRE_SERVICES = os.environ.get("CONCORD_REQUIRE_SERVICES") == "1"


def pytest_configure(config):
    """Passwords are hashed with a fast hasher in tests: the production default (PBKDF2, a
    million rounds) costs 0.4-1.4 CPU seconds per user made, and the suite makes thousands.
    Hashes stored before (PBKDF2) still verify. Servers a test starts in another process (e.g.
    ``runserver`` in tests/e2e/test_sqlite_team.py) make their own users with their defaults."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.MD5PasswordHasher",
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    ]


def require(condition: bool, reason: str) -> None:
    """Skip on a developer machine without the service; fail in CI, where it must exist."""
    if condition:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"CI requires this: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, django_db_keepdb):
    """With ``--reuse-db`` (the fast loop), the test database is kept between runs under a name
    keyed by the migrations (tests/template_db.py)."""
    if django_db_keepdb:
        from django.conf import settings

        from tests.template_db import key_the_test_database

        key_the_test_database(settings.DATABASES["default"])


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker, django_db_keepdb):
    """A kept database (``--reuse-db``) may come from a run whose transactional tests flushed it,
    which empties the rows a data migration wrote: the catalogue's baseline judge
    (``llm_judges/migrations/0007_split_shared_judges.py``). They are put back, as a fresh
    database has them; otherwise tests that read them fail in the fast loop only."""
    if django_db_keepdb:
        import importlib

        from llm_judges.models import Judge

        seeded = importlib.import_module("llm_judges.migrations.0007_split_shared_judges")
        with django_db_blocker.unblock():
            Judge.objects.get_or_create(
                project=None, name=seeded.BUILTIN, defaults=seeded.BUILTIN_SETTINGS
            )


@pytest.fixture
def celery_eager():
    """Run Celery tasks in-process for this test even when CI points Celery at a real broker."""
    from config.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


class Clock:
    """A stopped server clock (``django.utils.timezone.now``) for tests about elapsed time; the
    test moves it with ``advance(seconds=…)``, so nothing depends on how fast the test runs."""

    def __init__(self) -> None:
        from django.utils import timezone

        self.now = timezone.now()

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    stopped = Clock()
    monkeypatch.setattr("django.utils.timezone.now", stopped)
    return stopped


@pytest.fixture
def postgres(db):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")


@pytest.fixture
def researcher(db):
    return factories.UserFactory(username=factories.unique("researcher"))


@pytest.fixture
def project(db, researcher):
    project = factories.ProjectFactory(annotators_per_item=2)
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    return project


@pytest.fixture
def annotator(project):
    user = factories.UserFactory(username=factories.unique("annotator"))
    factories.MembershipFactory(project=project, user=user, role="annotator")
    return user


@pytest.fixture
def items(project):
    return factories.make_items(project, 5)


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def annotator_client(annotator):
    return client_for(annotator)


@pytest.fixture
def researcher_client(researcher):
    return client_for(researcher)


# --- real browser (headless Debian Chromium through Playwright) ----------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def live_server(live_server):
    """pytest-django's live server, its requests counted (tests/live_server.py)."""
    from tests.live_server import LiveServerRequests

    server = live_server.thread.httpd
    requests = LiveServerRequests(one_at_a_time=bool(server.connections_override))
    server.set_app(requests.wrap(server.get_app()))
    live_server.requests = requests
    return live_server


@pytest.fixture(autouse=True)
def _live_server_idle_before_the_flush(request):
    """A test with the live server ends only when the server has answered every request it
    took; later ones are turned away. Set up after the database fixture, so this runs before
    its flush."""
    if "live_server" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("transactional_db")
    requests = request.getfixturevalue("live_server").requests
    requests.begin_test()
    yield
    requests.settle()


@pytest.fixture(scope="session")
def browser():
    require(shutil.which(CHROMIUM) is not None, "needs Debian's chromium at /usr/bin/chromium")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
    # between browser steps are synchronous and safe here.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    # Leave the page (its unload handlers may still send an autosave) and close it; the live
    # server's requests then settle before the database is flushed (tests/live_server.py).
    page.goto("about:blank")
    context.close()
