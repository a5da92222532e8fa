"""Item browser benchmark (issue 26, item 3): pages of a 100k-item project's table.

    .venv/bin/python bench/item_browser.py [--quick] [--items 100000] [--samples 30] [--keep]
        [--database concord_item_browser_bench]

Builds, in a scratch PostgreSQL database (``bench/scale_data.py``; dropped at the end unless
``--keep``), a citation-recovery project of ``--items`` items (``--quick``: 10k) with N = 3,
filled to 60 % of its items (180k answers at 100k; one answer in three of every third filled
item differs, so agreement varies) and a judge that answered every item, and a 100-item project
filled the same way: the baseline, measured in the same run, sample by sample interleaved (this
machine is shared; ratios move much less than times). Prints, for each page, the p50 and p95 of a
researcher's request through Django's test client (the whole view: permission, the figures'
freshness check, the rows, the template) at 100k, its ratio against the 100-item project (goal
≤ 1.5x for pages that walk an index; the full-sort pages are listed as they are), and the
queries per page (target: equal):

- the first page (queue order), the second page (its cursor);
- a filtered page: complete items with agreement ≤ 0.5, sorted by agreement;
- judge vs humans: items where the judge and the humans' majority differ;
- text search for one item's external id; a reference ("#XBSVYF") search;
- the figures refresh (the whole project's agreement, gold and judge figures), once.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_data  # noqa: E402

RESEARCHER = "bench-researcher"
FILL = 0.6


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def build(slug: str, items: int):
    from django.contrib.auth import get_user_model
    from django.db import connection

    from llm_judges.models import Judge
    from projects.models import Membership

    project = scale_data.build_project(slug, items)
    scale_data.fill_to(project, int(items * FILL))
    researcher, _ = get_user_model().objects.get_or_create(username=RESEARCHER)
    Membership.objects.create(project=project, user=researcher, role="researcher")
    judge = Judge.objects.create(project=project, name=f"judge-{slug}", kind="llm", model="m")
    with connection.cursor() as cursor:
        # Every third filled item: one answer of three chooses another sentence.
        cursor.execute(
            """
            UPDATE annotation_annotation a SET answer = '{"sentences": [2], "none": false,
                "helpfulness": 40}'::jsonb
            FROM annotation_item i
            WHERE a.item_id = i.id AND i.project_id = %s AND i.position %% 3 = 0
              AND a.id = (SELECT min(b.id) FROM annotation_annotation b WHERE b.item_id = i.id)
            """,
            [project.pk],
        )
        cursor.execute(
            """
            INSERT INTO llm_judges_judgeresult (item_id, judge_id, prompt_version, setting,
                presentation, status, answer, raw, detail, finish_reason, error, error_class,
                error_excerpt, attempts, created_at)
            SELECT i.id, %s, %s, 'sample', '', 'ok',
                CASE WHEN i.position %% 5 = 0 THEN '{"sentences": [2], "none": false}'::jsonb
                     ELSE '{"sentences": [1], "none": false}'::jsonb END,
                '', '{}'::jsonb, 'stop', '', '', '', 1, now()
            FROM annotation_item i WHERE i.project_id = %s
            """,
            [judge.pk, judge.prompt_version, project.pk],
        )
    scale_data.analyze()
    return project, judge


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="10k items, 15 samples")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--database", default="concord_item_browser_bench")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.items, args.samples = 10_000, 15
    url = scale_data.scratch_database(args.database)
    scale_data.setup_django(url)
    try:
        run(args)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            scale_data.drop_database(args.database)


def run(args) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from annotation.references import item_reference
    from studies.selectors.item_browser import ItemFilter, item_page
    from studies.services.item_figures import item_figures_refresh

    started = time.monotonic()
    big, big_judge = build("browser-big", args.items)
    small, small_judge = build("browser-small", 100)
    print(f"built {args.items} + 100 items in {time.monotonic() - started:.0f} s", flush=True)

    refresh = {}
    for name, project in (("small", small), ("big", big)):
        t = time.perf_counter()
        item_figures_refresh(project=project)
        refresh[name] = time.perf_counter() - t

    from django.conf import settings

    # Static files are not collected here: plain storage instead of the manifest.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    client = Client()
    client.force_login(get_user_model().objects.get(username=RESEARCHER))

    def pages(project, judge, items: int) -> dict[str, str]:
        base = f"/p/{project.slug}/items/"
        one = items // 2 + 7  # a filled item
        first = item_page(project=project, item_filter=ItemFilter())
        return {
            "first page": base,
            "second page": f"{base}?after={first.next_after}",
            "filtered (complete, agreement ≤ 0.5, by agreement)": (
                f"{base}?status=complete&agreement_max=0.5&sort=agreement"
            ),
            "judge vs humans: differs": f"{base}?judge={judge.name}&verdict=disagrees",
            "search an external id": f"{base}?q=claim-{one}",
            "search a reference": (
                f"{base}?q=%23{item_reference(item_id=_item_id(project, one))[1:]}"
            ),
        }

    big_pages, small_pages = pages(big, big_judge, args.items), pages(small, small_judge, 100)
    print(
        f"\n{'page':52} {'p50 100k':>9} {'p95 100k':>9} {'p95 100':>8} {'ratio':>6} {'queries':>8}"
    )
    for name in big_pages:
        times = {"big": [], "small": []}
        queries = {}
        for _ in range(args.samples):
            for which, url in (("small", small_pages[name]), ("big", big_pages[name])):
                with CaptureQueriesContext(connection) as captured:
                    t = time.perf_counter()
                    response = client.get(url)
                    times[which].append(time.perf_counter() - t)
                assert response.status_code == 200, (url, response.status_code)
                queries[which] = len(captured)
        big95, small95 = p95(times["big"]), p95(times["small"])
        print(
            f"{name:52} {1000 * statistics.median(times['big']):7.1f}ms {1000 * big95:7.1f}ms "
            f"{1000 * small95:6.1f}ms {big95 / small95:5.2f}x {queries['big']:>3} vs "
            f"{queries['small']}",
            flush=True,
        )
    print(
        f"\nfigures refresh: {refresh['big']:.1f} s at {args.items} items "
        f"({int(args.items * FILL) * 3} answers), {refresh['small']:.2f} s at 100"
    )


def _item_id(project, position: int) -> int:
    from annotation.models import Item

    return Item.objects.get(project=project, position=position).pk


if __name__ == "__main__":
    main()
