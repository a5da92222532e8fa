"""The pages' data version with many external coders' answers (issue 31).

    .venv/bin/python bench/data_version.py [--items 100000] [--coders 6] [--samples 25] [--keep]
        [--database concord_data_version_bench]

Every researcher page that shows figures (items list, item browser, dashboard) asks
``agreement.reports.gather.data_version`` whether its cached figures are current. It used to
count the project's external answers and read their latest ``updated_at`` on each request; it
now reads ``ExternalAnswerCounts``, a row database triggers keep. This builds, in a scratch
PostgreSQL database (``bench/scale_data.py``; dropped at the end unless ``--keep``), a
citation-recovery project of ``--items`` items with ``--coders`` external coders' answers on
every item (600k at the defaults, inserted in one statement: the triggers run as for an import),
then times, interleaved sample by sample after one untimed call each:

- ``data_version`` of that project (the counter row);
- the count and ``max(updated_at)`` it used to run (the baseline, same database, same run);
- ``data_version`` of a project with no external answers.

Prints p50 and p95 of each and the ratio of the old query's p50 to the new version's. Also the
time of the 600k-row insert with the counter triggers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_data  # noqa: E402


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _external_answers(project, coders: int) -> float:
    """``coders`` external coders, each answering every item of ``project`` (one INSERT)."""
    from django.db import connection

    from annotation.models import ExternalCoder

    ExternalCoder.objects.bulk_create(
        [ExternalCoder(project=project, name=f"mturk-{k}") for k in range(coders)]
    )
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO annotation_externalannotation
                (coder_id, item_id, answer, source, created_at, updated_at)
            SELECT c.id, i.id, '{"helpfulness": 60}'::jsonb, 'bench', now(), now()
            FROM annotation_item AS i JOIN annotation_externalcoder AS c
                ON c.project_id = i.project_id
            WHERE i.project_id = %s
            """,
            [project.pk],
        )
    return time.perf_counter() - started


def _measure(calls: dict, samples: int) -> dict[str, list[float]]:
    for call in calls.values():  # untimed first call each
        call()
    timings: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(samples):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            timings[name].append((time.perf_counter() - started) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--coders", type=int, default=6)
    parser.add_argument("--samples", type=int, default=25)
    parser.add_argument("--database", default="concord_data_version_bench")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    url = scale_data.scratch_database(args.database)
    assert url is not None
    scale_data.setup_django(url)
    from django.db.models import Count, Max

    from agreement.reports.gather import data_version
    from annotation.models import ExternalAnnotation

    coded = scale_data.build_project("coded", args.items)
    plain = scale_data.build_project("plain", 100)
    inserted = _external_answers(coded, args.coders)
    scale_data.analyze()
    answers = args.items * args.coders
    print(f"{answers:,} external answers inserted in {inserted:.1f} s (counter triggers on)")

    def old_query() -> None:
        ExternalAnnotation.objects.filter(item__project=coded).aggregate(
            n=Count("id"), changed=Max("updated_at")
        )

    timings = _measure(
        {
            f"data_version, {answers:,} external answers": lambda: data_version(coded),
            "the former count + max(updated_at) (baseline)": old_query,
            "data_version, none": lambda: data_version(plain),
        },
        args.samples,
    )
    for name, values in timings.items():
        print(f"{name:<50} p50 {statistics.median(values):8.2f} ms  p95 {_p95(values):8.2f} ms")
    new, old = (statistics.median(v) for v in list(timings.values())[:2])
    print(f"the former query alone / the whole data version now: {old / new:.1f}x")
    if not args.keep:
        from django.db import connections

        connections.close_all()
        scale_data.drop_database(args.database)


if __name__ == "__main__":
    main()
