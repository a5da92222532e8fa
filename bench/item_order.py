"""Item order benchmark (issue 30): the next item in each annotator's random order against the
import order, on the same project, in the same run.

    .venv/bin/python bench/item_order.py [--quick] [--items 100000] [--samples 40]
        [--database concord_order_bench] [--keep]

Builds a citation-recovery project in a scratch PostgreSQL database (``bench/scale_data.py``:
100k items, ``--quick`` 10k; N = 3) and fills it in bulk to 0, 50, 90 and 99 % of its items full.
At each level, ``--samples`` next calls (through the API, in process) per order, interleaved
sample by sample (the project's ``assignment_strategy`` is switched between them, untimed), each
reserved item submitted untimed; two warm-up rounds. Prints, per level, the p50 of a next in the
random order against the import order (target ≤ 1.2×), the queries per next of each, and the
plan of the random order's lookup (it must read ``item_open_shuffle_idx``, never scan the items).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # noqa: E402  (timers, next calls, query capture)
import scale_data  # noqa: E402

ORDERS = ("in_order", "random")


def samples_per_order(project, groups: dict, samples: int) -> dict[str, list[float]]:
    from projects.models import Project

    times: dict[str, list[float]] = {order: [] for order in ORDERS}
    for k in range(samples + 2):
        orders = ORDERS if k % 2 == 0 else ORDERS[::-1]  # neither always first
        for order in orders:
            Project.objects.filter(pk=project.pk).update(crowd={"assignment_strategy": order})
            annotator = groups[order][k % len(groups[order])]
            ms, response = scale.timed(annotator.next)
            if response.status_code != 200:
                raise RuntimeError(f"next answered {response.status_code} ({order})")
            if k >= 2:
                times[order].append(ms)
            annotator.submit(response.data["id"])
    return times


def plan_of_random(project, annotator) -> str:
    from annotation import services
    from projects.crowd import crowd_settings
    from projects.models import Membership, Project

    project = Project.objects.get(pk=project.pk)
    project.crowd = {"assignment_strategy": "random"}
    seed = Membership.objects.get(project=project, user=annotator.user).order_seed
    (first, _) = services._free_items(project, annotator.user, crowd_settings(project), seed=seed)
    return first[:1].explain()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k items")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--database", default="concord_order_bench")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = parser.parse_args()
    items = 10_000 if args.quick else args.items
    url = scale_data.scratch_database(args.database)
    scale_data.setup_django(url)
    try:
        project = scale_data.build_project("order-bench", items)
        groups = {order: scale.timers(project, 12) for order in ORDERS}
        print(f"{items} items, N = 3, {args.samples} samples per order and level")
        for level in (0.0, 0.5, 0.9, 0.99):
            scale_data.fill_to(project, int(items * level))
            times = samples_per_order(project, groups, args.samples)
            base, random_ = (statistics.median(times[o]) for o in ORDERS)
            print(
                scale.ratio_row(
                    f"next p50 at {round(100 * level)} % full, random vs import order",
                    random_,
                    base,
                    "ms",
                    "≤ 1.2×",
                )
            )
            print(
                f"    p95 random {scale.p95(times['random']):.1f} ms, "
                f"import order {scale.p95(times['in_order']):.1f} ms"
            )
        from projects.models import Project

        counts = {}
        for order in ORDERS:
            Project.objects.filter(pk=project.pk).update(crowd={"assignment_strategy": order})
            annotator = groups[order][0]
            counts[order] = len(scale.queries_of(annotator.next))
        print(
            scale.ratio_row(
                "queries per next at 99 %, random vs import order",
                counts["random"],
                counts["in_order"],
                "queries",
                "1.0×",
            )
        )
        plan = plan_of_random(project, groups["random"][1])
        print("plan of the random order's lookup:\n    " + plan.replace("\n", "\n    "))
        if "item_open_shuffle_idx" not in plan or "Seq Scan on annotation_item" in plan:
            sys.exit("the random order did not read item_open_shuffle_idx")
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            scale_data.drop_database(args.database)


if __name__ == "__main__":
    main()
