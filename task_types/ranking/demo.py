"""Demo: rank the GPT-4, GPT-3.5 and Llama-2-70B explanations of 40 PolitiHop claims on the four
criteria of Atanasova et al. (2020)."""

from pathlib import Path

from django.conf import settings

from studies.demos import load_demo_project, register

from .serializers import DEFAULT_CRITERIA

DATA = Path(settings.BASE_DIR) / "data" / "explanation-ranking"

GUIDELINES = """\
## Your task
You see a **claim**, its veracity label and three **explanations** of that verdict, written by
different systems (you are not told which). Rank the explanations on each criterion:

- **1** is the best. Every explanation gets a rank on every criterion.
- Explanations of equal quality **share a rank**, and the next rank skips the shared places: two
  explanations tied for best and one behind are ranked **1, 1, 3**; one best and two tied behind it
  are **1, 2, 2**.
- The criteria and their definitions are listed on the left of each rank row.

Click a rank, or move with the arrow keys and type `1`–`3` (the next explanation is selected
automatically). Press **Enter** or **Submit** when all rows are ranked.
"""


def create(*, researcher, annotators) -> str:
    return load_demo_project(
        slug="ranking-explanations",
        defaults={
            "name": "Ranking · fact-checking explanations",
            "task_type": "ranking",
            "config": {
                "criteria": DEFAULT_CRITERIA,
                "systems": ["gpt4", "gpt35", "llama2-70b"],
                "seed": 87,
            },
            "guidelines": GUIDELINES,
        },
        researcher=researcher,
        annotators=annotators,
        open_items=lambda: open(DATA / "explanations.jsonl", "rb"),
        fmt="jsonl",
    )


register(name="ranking", task_type="ranking", create=create)
