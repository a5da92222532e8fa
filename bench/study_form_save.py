"""The new-study form's save time (issue 26, item 1): a researcher's POST of the form as shown,
per task type, against the same study created by ``study_apply`` directly (the study file path
every save ends in), measured in the same run, sample by sample interleaved.

    .venv/bin/python bench/study_form_save.py [--samples 20]

Runs in a scratch test database (SQLite in memory by default; PostgreSQL when DATABASE_URL
points there: a ``test_…`` database, dropped at the end). Prints per task type the p50 and p95
of the form's save (the whole request: the session, the form generated from the JSON Schema,
validation, the study file applied, the redirect), of the direct ``study_apply``, their ratio
(goal: the form costs at most 2x the service it calls, on a quiet machine) and the queries of
one save each way (the difference: the session, the user and the message).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Permission  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402

from annotation import task_types  # noqa: E402
from studies.study_files import study_apply  # noqa: E402
from studies.study_forms import study_form_for  # noqa: E402


def form_data(slug: str, name: str) -> dict:
    """What a browser posts for the new-study form as shown (every initial value)."""
    data = {}
    for field in study_form_for(slug)():
        if field.field.disabled:
            continue
        value = field.value()
        if value is True:
            data[field.html_name] = "on"
        elif value not in (False, None):
            data[field.html_name] = str(value).replace("\n", "\r\n")
    data.update(
        name=f"Bench {name}", slug=name, guidelines="# Read\r\n\r\nCarefully.\r\n", action="save"
    )
    return data


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def measure(
    slug: str, samples: int, client: Client, user, run: str
) -> tuple[list, list, tuple[int, int]]:
    form_times, direct_times, queries = [], [], 0
    for n in range(samples):
        name = f"{slug.replace('_', '-')}-form-{run}{n}"
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.post(f"/p/new/{slug}/", form_data(slug, name))
            form_times.append(time.perf_counter() - started)
        assert response.status_code == 302, response.content[:500]
        queries = len(captured)
        study = {
            "slug": f"{slug.replace('_', '-')}-direct-{run}{n}",
            "name": f"Bench direct {n}",
            "task_type": slug,
            "guidelines": "# Read\n\nCarefully.\n",
        }
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            study_apply(data=study, user=user, create_only=True, via="bench")
            direct_times.append(time.perf_counter() - started)
        direct_queries = len(captured)
    return form_times, direct_times, (queries, direct_queries)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        user = get_user_model().objects.create_user("bench-creator", password="x")
        user.user_permissions.add(Permission.objects.get(codename="add_project"))
        client = Client()
        client.force_login(user)
        print(
            f"{'task type':<20} {'form p50':>9} {'form p95':>9} {'direct p50':>11} "
            f"{'ratio p50':>9} {'queries form / direct':>22}"
        )
        for kind in task_types.all_task_types():
            measure(kind.slug, 2, client, user, "warm")  # warm: templates, schema, first queries
            form_times, direct_times, queries = measure(kind.slug, args.samples, client, user, "")
            form_p50 = statistics.median(form_times)
            direct_p50 = statistics.median(direct_times)
            print(
                f"{kind.slug:<20} {form_p50 * 1000:>7.1f}ms {p95(form_times) * 1000:>7.1f}ms "
                f"{direct_p50 * 1000:>9.1f}ms {form_p50 / direct_p50:>8.2f}x "
                f"{queries[0]:>14} / {queries[1]}"
            )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
