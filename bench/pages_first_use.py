"""Pages a new user waits on after ``make run`` (issue 31), against a trivial page, one run.

    env -u DATABASE_URL -u REDIS_URL DATABASE_URL=sqlite:////tmp/speed/demo.sqlite3 \\
        .venv/bin/python bench/pages_first_use.py [--samples 5] [--profile PAGE]

Runs against the database ``DATABASE_URL`` names (SQLite by default, as ``make run``), which
must hold the demo (``manage.py migrate && manage.py seed_demo``, the Makefile's ``run`` target;
seed a copy, never a database in use). In one process, through Django's test client, it times
each page's first request (what the first visitor after a server start waits: templates, the
schema, caches built then) and the p50 of the following ones, and prints each against the p50 of
``/healthz`` and of the login page measured interleaved in the same run (this machine is shared:
times move, ratios much less), with the load average beside them:

- accepting an invitation (a POST that creates the account; a new invitation per sample), and
  one password hash alone (Django's default PBKDF2 work factor, which the accept pays once);
- the admin's project change page (as a superuser), ``/api/docs/`` and the schema it loads;
- a replay study's agreement dashboard and judges page (as its researcher);
- the annotate page (as an annotator).

``--profile PAGE``: print the top of a cProfile of that page's warm requests instead.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PASSWORD = "bench-Pages-first-use-7391"  # noqa: S105 (a throwaway account of the bench)


def setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.conf import settings

    settings.STORAGES = {  # static files are not collected here
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


def accounts():
    from django.contrib.auth import get_user_model

    User = get_user_model()
    admin, _ = User.objects.get_or_create(
        username="bench-admin", defaults={"is_superuser": True, "is_staff": True}
    )
    researcher = User.objects.get(username="researcher")
    annotator = User.objects.get(username="annotator1")
    return admin, researcher, annotator


def demo_projects(researcher, annotator):
    from projects.models import Project

    replay = Project.objects.filter(
        slug__startswith="replay-", memberships__user=researcher
    ).order_by("slug")
    study = replay.filter(slug="replay-citation-recovery").first() or replay.first()
    annotated = (
        Project.objects.filter(memberships__user=annotator, memberships__role="annotator")
        .exclude(slug__startswith="replay-")
        .order_by("pk")
        .first()
    )
    return study, annotated


class Invitations:
    """A fresh invitation per accept (an accepted link is used up)."""

    def __init__(self, project, researcher) -> None:
        self.project, self.researcher, self.n = project, researcher, 0

    def accept(self, _client) -> object:
        from django.test import Client

        from projects import members

        client = Client()  # a visitor: logged in by the accept, so never the baseline's client

        invitation = members.invitation_create(
            project=self.project, role="annotator", created_by=self.researcher
        )
        token = members.invitation_token(invitation=invitation)
        self.n += 1
        username = f"bench-new-{os.getpid()}-{time.time_ns()}-{self.n}"
        return client.post(
            f"/invite/{token}/",
            {"username": username, "password1": PASSWORD, "password2": PASSWORD},
        )


def pages(study, annotated, admin, researcher, annotator, invitations) -> dict:
    """name → (user or None, a call of the client returning a response, expected status)."""
    return {
        "healthz (baseline)": (None, lambda c: c.get("/healthz"), 200),
        "login page (baseline)": (None, lambda c: c.get("/login/"), 200),
        "accept an invitation (POST)": (None, invitations.accept, 302),
        "  one password hash (what accepting pays)": (None, _hash_once, 200),
        "admin: project change page": (
            admin,
            lambda c: c.get(f"/admin/projects/project/{study.pk}/change/"),
            200,
        ),
        "/api/docs/": (researcher, lambda c: c.get("/api/docs/"), 200),
        "/api/schema/ (what /api/docs/ loads)": (
            researcher,
            lambda c: c.get("/api/schema/"),
            200,
        ),
        "agreement dashboard": (
            researcher,
            lambda c: c.get(f"/p/{study.slug}/agreement/"),
            200,
        ),
        "judges page": (researcher, lambda c: c.get(f"/p/{study.slug}/judges/"), 200),
        "annotate page": (
            annotator,
            lambda c: c.get(f"/p/{annotated.slug}/annotate/"),
            200,
        ),
    }


class _Hashed:
    status_code = 200


def _hash_once(_client) -> _Hashed:
    """One ``make_password`` with the configured hasher (Django's PBKDF2 default: 1,000,000
    iterations), the work factor an account's creation and every login pay by design."""
    from django.contrib.auth.hashers import make_password

    make_password(PASSWORD)
    return _Hashed()


def clients(users) -> dict:
    from django.test import Client

    made = {}
    for user in users:
        client = Client()
        if user is not None:
            client.force_login(user)
        made[user.pk if user else None] = client
    return made


def timed(client, call, expected: int) -> float:
    started = time.perf_counter()
    response = call(client)
    ms = (time.perf_counter() - started) * 1000
    if response.status_code != expected:
        raise RuntimeError(f"answered {response.status_code}, expected {expected}")
    return ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--profile", default=None, help="a page name (a unique part of it)")
    args = parser.parse_args()
    setup()
    admin, researcher, annotator = accounts()
    study, annotated = demo_projects(researcher, annotator)
    invitations = Invitations(study, researcher)
    table = pages(study, annotated, admin, researcher, annotator, invitations)
    by_user = clients([None, admin, researcher, annotator])
    if args.profile:
        profile(table, by_user, args.profile, args.samples)
        return
    first = {}
    for name, (user, call, expected) in table.items():
        first[name] = timed(by_user[user.pk if user else None], call, expected)
    warm: dict[str, list[float]] = {name: [] for name in table}
    for k in range(args.samples):
        order = list(table.items())
        for name, (user, call, expected) in order if k % 2 else reversed(order):
            warm[name].append(timed(by_user[user.pk if user else None], call, expected))
    base = statistics.median(warm["healthz (baseline)"])
    login = statistics.median(warm["login page (baseline)"])
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"# study {study.slug}, annotate {annotated.slug}; load {load}")
    print(f"{'page':40} {'first':>9} {'p50':>9} {'max':>9} {'×healthz':>9} {'×login':>7}")
    for name, times in warm.items():
        p50 = statistics.median(times)
        print(
            f"{name:40} {first[name]:7.0f}ms {p50:7.0f}ms {max(times):7.0f}ms "
            f"{p50 / base:8.1f}× {p50 / login:6.1f}×"
        )


def profile(table, by_user, part: str, samples: int) -> None:
    (name,) = [n for n in table if part in n]
    user, call, expected = table[name]
    client = by_user[user.pk if user else None]
    timed(client, call, expected)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(samples):
        timed(client, call, expected)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)


if __name__ == "__main__":
    main()
