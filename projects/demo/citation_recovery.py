"""Demo: citation recovery on the 120 Transparent-FCExp claims of the human evaluation (GPT-4)."""

import io
import json
from pathlib import Path

from django.conf import settings

from projects.demo import add_members
from projects.models import Project
from projects.services.imports import import_items

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
    project, created = Project.objects.get_or_create(
        slug="citation-recovery-gpt4",
        defaults={
            "name": "Citation recovery · GPT-4 explanations",
            "task_type": "citation_recovery",
            "config": {"masking": "sample", "seed": 13, "keep_other_markers": True},
            "guidelines": GUIDELINES,
            "annotators_per_item": 3,
            "created_by": researcher,
        },
    )
    add_members(project, researcher, annotators)
    if project.items.exists():
        return f"{project.name}: already loaded ({project.items.count()} items)"
    keys = json.loads((DATA / "hit_sample_keys.json").read_text())
    records = json.loads((DATA / "gpt4_full_data.json").read_text())
    subset = {key: records[key] for key in keys if key in records}
    report = import_items(project=project, stream=io.StringIO(json.dumps(subset)), fmt="transparent-fcexp")
    return f"{project.name}: {report.summary()}"
