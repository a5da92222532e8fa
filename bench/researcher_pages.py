"""Researcher pages at 100 vs 100k items (issue 31): every page a researcher waits on.

    .venv/bin/python bench/researcher_pages.py [--items 100000] [--samples 15] [--keep]
        [--database concord_researcher_pages_bench]

Builds, in a scratch PostgreSQL database (``bench/scale_data.py``; dropped at the end unless
``--keep``), the item browser benchmark's projects (``bench/item_browser.py``'s ``build``: a
citation-recovery project filled to 60 % with N = 3, one answer in three of every third filled
item differing, and a judge verdict on every item) at ``--items`` items and at 100 items, with
ANALYZE after the bulk writes (this PostgreSQL runs no autovacuum). Each page is requested by a
researcher through Django's test client, the two projects interleaved sample by sample, after one
untimed visit each (which may refresh cached figures). Prints p50 and p95 at both sizes, the p95
ratio big / small (flat: ≈ 1; looked into above 3×) and the queries per page at both sizes.

Pages: project (with its import jobs), items list (first page), item browser (second page, by
cursor; filtered by agreement with a common value, a value no item has, and with a status no item
of that agreement has; the open items), item page, quality, review (open and all), judges, judge
validation, members, agreement dashboard, audit log, settings.

``bench/scale.py`` prints these rows too (``rows``), against its own database.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_data  # noqa: E402

FLAT = 3.0


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def page_urls(project) -> dict[str, str]:
    from annotation.models import Item
    from studies.selectors.item_browser import ItemFilter, item_page

    base = f"/p/{project.slug}"
    first = item_page(project=project, item_filter=ItemFilter())
    middle = Item.objects.filter(project=project).order_by("position")
    item = middle[middle.count() // 2 - 1] if middle.exists() else None
    return {
        "project (with imports)": f"{base}/",
        "items list (first page)": f"{base}/items/",
        "item browser (second page)": f"{base}/items/?after={first.next_after}",
        "item browser (filtered, by agreement)": (
            f"{base}/items/?status=complete&agreement_max=0.5&sort=agreement"
        ),
        # a value no item has (agreements here are 1/3 and 1): the figures' index finds none
        "item browser (filtered, rare agreement)": (
            f"{base}/items/?agreement_min=0.4&agreement_max=0.5&sort=agreement"
        ),
        # no open item has an agreement: a page looks at SEARCH_SPAN items and leads on
        "item browser (filtered, open by agreement)": (
            f"{base}/items/?status=open&agreement_max=0.5&sort=agreement"
        ),
        "item browser (open items)": f"{base}/items/?status=open",
        "item page": f"{base}/items/{item.pk}/",
        "quality": f"{base}/quality/",
        "review (open)": f"{base}/review/",
        "review (all)": f"{base}/review/?show=all",
        "judges": f"{base}/judges/",
        "judge validation": f"{base}/agreement/judges/",
        "members": f"{base}/members/",
        "agreement dashboard": f"{base}/agreement/",
        "audit log": f"{base}/audit/",
        "settings": f"{base}/settings/",
    }


def _plain_static() -> None:
    from django.conf import settings

    # Static files are not collected here: plain storage instead of the manifest.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


def measure(big, small, *, samples: int, each=None) -> list[dict]:
    """One dict per page: p50/p95 ms at both sizes, the p95 ratio and the queries (``each``:
    called with every page's dict as soon as it is measured)."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from item_browser import RESEARCHER

    _plain_static()
    client = Client()
    client.force_login(get_user_model().objects.get(username=RESEARCHER))
    big_urls, small_urls = page_urls(big), page_urls(small)
    results = []
    for name in big_urls:
        pair = (("small", small_urls[name]), ("big", big_urls[name]))
        times: dict[str, list[float]] = {"big": [], "small": []}
        queries: dict[str, int] = {}
        for _which, url in pair:  # the first visit may refresh cached figures
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
        for k in range(samples):
            for which, url in pair if k % 2 else reversed(pair):
                with CaptureQueriesContext(connection) as captured:
                    started = time.perf_counter()
                    response = client.get(url)
                    times[which].append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200, (url, response.status_code)
                queries[which] = len(captured)
        row = {
            "page": name,
            "big_p50": statistics.median(times["big"]),
            "big_p95": p95(times["big"]),
            "small_p50": statistics.median(times["small"]),
            "small_p95": p95(times["small"]),
            "big_queries": queries["big"],
            "small_queries": queries["small"],
        }
        row["ratio"] = row["big_p95"] / row["small_p95"]
        results.append(row)
        if each is not None:
            each(row)
    return results


def header(items: int) -> str:
    size = f"{items // 1000}k" if items >= 1000 else str(items)
    return (
        f"{'researcher page':40} {'p50 ' + size:>9} {'p95 ' + size:>9} {'p50 100':>8} "
        f"{'p95 100':>8} {'ratio':>6} {'queries':>9}  load"
    )


def line(r: dict) -> str:
    flag = "" if r["ratio"] <= FLAT else f"  > {FLAT:.0f}×: look"
    return (
        f"{r['page']:40} {r['big_p50']:7.1f}ms {r['big_p95']:7.1f}ms {r['small_p50']:6.1f}ms "
        f"{r['small_p95']:6.1f}ms {r['ratio']:5.2f}× {r['big_queries']:>4} vs "
        f"{r['small_queries']:<4} {_load()}{flag}"
    )


def lines(results: list[dict], items: int) -> list[str]:
    return [header(items)] + [line(r) for r in results]


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def rows(*, items: int, quick: bool = False, **_ignored) -> list[str]:
    """The researcher pages' rows for ``bench/scale.py``: builds its own pair of projects (the
    browser's fill and judge) in the current database, measures, and returns the lines."""
    from item_browser import build

    started = time.monotonic()
    big, _ = build(f"pages-big-{int(time.time())}", items)
    small, _ = build(f"pages-small-{int(time.time())}", 100)
    built = time.monotonic() - started
    results = measure(big, small, samples=8 if quick else 15)
    return [f"# researcher pages: built {items} + 100 items in {built:.0f} s"] + lines(
        results, items
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--database", default="concord_researcher_pages_bench")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    url = scale_data.scratch_database(args.database)
    scale_data.setup_django(url)
    from django.conf import settings

    settings.DEBUG = False
    try:
        from item_browser import build

        started = time.monotonic()
        big, _ = build("pages-big", args.items)
        small, _ = build("pages-small", 100)
        print(f"built {args.items} + 100 items in {time.monotonic() - started:.0f} s", flush=True)
        print(header(args.items), flush=True)
        measure(big, small, samples=args.samples, each=lambda r: print(line(r), flush=True))
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            scale_data.drop_database(args.database)


if __name__ == "__main__":
    main()
