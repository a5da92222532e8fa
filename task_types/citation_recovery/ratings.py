"""The Transparent-FCExp helpfulness ratings as annotations collected elsewhere
(``studies.services.external_annotations``): ``utility_ratings_raw.csv`` has the columns
``worker_id,instance,rating_score``, one 0–100 rating per row, where ``instance`` is
``<claim id>_<generator>``. Each row becomes the answer ``{"helpfulness": score}`` of the
external coder ``worker_id`` on the item of that claim and generator: the item whose external id
is ``<generator>:<claim id>`` (projects that hold several generators) or ``<claim id>`` with that
generator (a project per generator, as the release files import)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import IO

from annotation.task_types import PayloadError

COLUMNS = ("worker_id", "instance", "rating_score")


def read_utility_ratings(stream: IO[str]) -> Iterator[tuple[str, dict]]:
    reader = csv.DictReader(stream)
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise PayloadError(
            f"expected the columns {', '.join(COLUMNS)}; {missing[0]!r} is missing",
            location="line 1",
        )
    for row in reader:
        location = f"line {reader.line_num}"
        claim, _, generator = (row["instance"] or "").rpartition("_")
        if not claim or not generator:
            raise PayloadError(
                "expected <claim id>_<generator>", field="instance", location=location
            )
        try:
            score = int(row["rating_score"])
        except (TypeError, ValueError):
            raise PayloadError(
                "a whole number from 0 to 100", field="rating_score", location=location
            ) from None
        yield (
            location,
            {
                "item": [f"{generator}:{claim}", claim],
                "expect": {"generator": generator},
                "coder": row["worker_id"],
                "answer": {"helpfulness": score},
                "source": "Transparent-FCExp utility ratings",
            },
        )
