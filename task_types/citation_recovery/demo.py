"""Demos of citation recovery: the 120 Transparent-FCExp claims of the human evaluation (GPT-4),
and a crowd pilot on the same explanations (:mod:`.demo_crowd_pilot`)."""

import io
import json
from pathlib import Path

from django.conf import settings

from studies.demos import load_demo_project, register

from . import demo_crowd_pilot

DATA = Path(settings.BASE_DIR) / "data" / "transparent-fcexp"

GUIDELINES = """\
## Your task
You see a **claim**, its veracity label, the **evidence** passages a fact-checking system used, and
the system's **explanation** of the verdict. One evidence passage is **highlighted**: its citation
markers (like `[9]`) were removed from the explanation.

1. Select every explanation sentence that should cite the highlighted evidence — click a sentence or
   press its number key. Several sentences may be chosen.
2. If no sentence should cite it, choose **No sentence should cite this evidence** (key `0`).
3. Rate how helpful the explanation is in clarifying the truthfulness of the claim (0–100). Move the
   slider at least once.
4. Press **Enter** or **Submit**. You can reopen previous items from *Previous items*.

Other citation markers stay in the text: they refer to the other passages by their numbers.
"""


def create(*, researcher, annotators) -> str:
    def open_items():
        keys = json.loads((DATA / "hit_sample_keys.json").read_text())
        records = json.loads((DATA / "gpt4_full_data.json").read_text())
        return io.StringIO(json.dumps({key: records[key] for key in keys if key in records}))

    return load_demo_project(
        slug="citation-recovery-gpt4",
        defaults={
            "name": "Citation recovery · GPT-4 explanations",
            "task_type": "citation_recovery",
            "config": {"masking": "sample", "seed": 13, "keep_other_markers": True},
            "guidelines": GUIDELINES,
        },
        researcher=researcher,
        annotators=annotators,
        open_items=open_items,
        fmt="transparent-fcexp",
    )


register(name="citation_recovery", task_type="citation_recovery", create=create)
register(name="crowd_pilot", task_type="citation_recovery", create=demo_crowd_pilot.create)
