"""Demo: argument structures for causal claims, one editing project and one review project.

SYNTHETIC DEMO CONTENT. No CheckWhy data ships with Concord, so these causal claims, evidence
statements and structures were written for the demo (the "drafts" imitate an LLM-generated
structure, with the kind of mistakes the check catches); they are not CheckWhy records.
"""

import io
import json

from studies.demos import demo_project, register
from studies.services.imports import import_items

EDIT_GUIDELINES = """\
## Your task
Each item is a **causal claim** ("X happened because of Y") with a verdict label and **evidence**
statements. Build the chain of reasoning that leads from the evidence to the claim.

**Stage 1 · Edit the texts.** Fix wording that is wrong or unclear, **delete** evidence that plays
no part in the reasoning and **add** a statement that is missing (it gets the next id, e.g. `E7`).

**Stage 2 · Build the structure.** A *step* joins premises to a conclusion:
- one-to-one: `E3 -> E5` (one statement supports another);
- many-to-one: `(E1, E2) -> E3` (several statements *together* support one);
- one-to-many: a statement used as a premise of several steps.

In the graph, click the premises, then **Shift-click** (or double-click) the conclusion; clicking
the claim concludes at once. You can also edit the list of steps or type the compact form
`(E1, E2) -> E3 -> E6; (E5, E6) -> claim`. The **check** lists every problem (unknown ids, steps
without premises, cycles, statements that do not lead to the claim, disconnected parts, the claim
used as a premise); you can submit once it is empty.
"""

REVIEW_GUIDELINES = """\
## Your task
**Retain or discard** each item: answer yes or no for *faithfulness* (the statements are faithful
to the claim and evidence), *fluency* (clear, grammatical text) and *validity* (every step follows
from its premises and the chain leads to the claim), then decide.

When two structures **A** and **B** are shown, they explain the same claim; their order is random.
Say whether each one is valid and which one explains the claim better (or a tie).
"""

EDIT_ITEMS = [
    {
        "id": "demo-drought",
        "claim": "Wheat prices in the region rose in 2022 because the drought ruined the harvest.",
        "cause": "the 2022 drought",
        "effect": "higher wheat prices",
        "label": "supports",
        "evidence": [
            {"id": "E1", "text": "Rainfall in spring 2022 was 60% below the long-term average."},
            {"id": "E2", "text": "Most wheat in the region is grown without irrigation."},
            {"id": "E3", "text": "The 2022 wheat harvest was about half of the usual one."},
            {"id": "E4", "text": "Demand for wheat stayed the same as in previous years."},
            {"id": "E5", "text": "Local mills had to buy scarce wheat and bid against each other."},
            {"id": "E6", "text": "The region's football team won the regional cup in 2022."},
        ],
        "structure": "(E1, E2) -> E3 -> E5; (E4, E5) -> claim",
        "structure_source": "synthetic-draft",
        "reference_structure": "(E1, E2) -> E3; (E3, E4) -> E5 -> claim",
    },
    {
        "id": "demo-bus-lane",
        "claim": "Bus journeys on Main Street got faster because the new bus lane keeps buses out "
        "of car traffic.",
        "cause": "the new bus lane",
        "effect": "faster bus journeys",
        "label": "supports",
        "evidence": [
            {"id": "E1", "text": "A bus lane opened on Main Street in May."},
            {"id": "E2", "text": "Cars are not allowed to drive in the bus lane at peak hours."},
            {
                "id": "E3",
                "text": "Before May, buses spent a third of their time queuing behind cars.",
            },
            {"id": "E4", "text": "Buses no longer queue behind cars on Main Street."},
            {
                "id": "E5",
                "text": "The average bus journey on Main Street fell from 24 to 17 minutes.",
            },
        ],
        "reference_structure": "(E1, E2) -> E4; (E3, E4) -> E5 -> claim",
    },
]

REVIEW_ITEMS = [
    {
        "id": "demo-review-heatwave",
        "claim": "Ice cream sales in the town doubled in July because of the heatwave.",
        "cause": "the July heatwave",
        "effect": "doubled ice cream sales",
        "label": "supports",
        "evidence": [
            {"id": "E1", "text": "Temperatures stayed above 35 °C for twelve days in July."},
            {"id": "E2", "text": "People buy more cold food and drinks in hot weather."},
            {"id": "E3", "text": "Shops sold twice as much ice cream in July as in June."},
        ],
        "structure": "(E1, E2) -> E3 -> claim",
        "structure_source": "synthetic-draft",
    },
    {
        "id": "demo-review-library",
        "claim": "Library visits fell because the library cut its opening hours.",
        "cause": "shorter opening hours",
        "effect": "fewer library visits",
        "label": "supports",
        "evidence": [
            {
                "id": "E1",
                "text": "In January the library stopped opening on evenings and Saturdays.",
            },
            {"id": "E2", "text": "Most visitors used to come on evenings and Saturdays."},
            {
                "id": "E3",
                "text": "Many regular visitors can no longer come when the library is open.",
            },
            {"id": "E4", "text": "Visits fell by 40% between January and June."},
        ],
        "structure": "E1 -> E4; (E2, E4) -> claim",
        "structure_source": "synthetic-draft",
        "reference_structure": "(E1, E2) -> E3 -> E4 -> claim",
    },
]


def _project(slug, name, mode, guidelines, researcher, annotators):
    project = demo_project(
        slug=slug,
        defaults={
            "name": name,
            "task_type": "argument_structure",
            "config": {"mode": mode, "seed": 13},
            "guidelines": guidelines,
            "annotators_per_item": 3,
        },
        researcher=researcher,
        annotators=annotators,
    )
    return project


def _load(project, items) -> str:
    if project.items.exists():
        return f"{project.name}: already loaded ({project.items.count()} items)"
    body = "".join(json.dumps(item) + "\n" for item in items)
    report = import_items(project=project, stream=io.StringIO(body), fmt="jsonl")
    return f"{project.name}: {report.summary()}"


def create(*, researcher, annotators) -> str:
    edit = _project(
        "argument-structure-demo",
        "Argument structure · synthetic causal claims (demo)",
        "edit",
        EDIT_GUIDELINES,
        researcher,
        annotators,
    )
    review = _project(
        "argument-structure-review-demo",
        "Argument structure review · synthetic (demo)",
        "review",
        REVIEW_GUIDELINES,
        researcher,
        annotators,
    )
    return f"{_load(edit, EDIT_ITEMS)}; {_load(review, REVIEW_ITEMS)}"


register(name="argument_structure", task_type="argument_structure", create=create)
