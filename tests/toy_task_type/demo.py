from __future__ import annotations

import io
import json

from studies.demos import load_demo_project, register

STATEMENTS = [
    ("toy-1", "Water boils at 100 °C at sea level.", True),
    ("toy-2", "The Moon is larger than the Earth.", False),
]


def create(*, researcher, annotators) -> str:
    lines = "".join(
        json.dumps({"id": i, "statement": s, "gold": g}) + "\n" for i, s, g in STATEMENTS
    )
    return load_demo_project(
        slug="yes-no-demo",
        defaults={"name": "Yes or no (toy)", "task_type": "yes_no"},
        researcher=researcher,
        annotators=annotators,
        open_items=lambda: io.StringIO(lines),
        fmt="jsonl",
    )


register(name="yes_no", task_type="yes_no", create=create)
