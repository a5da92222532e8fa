"""A questionnaire study answered by simulated annotators, for the tests that walk every task
type's report tables (the questionnaire has no source study to replay; the others use their
replay): the demo's questions (every kind), 24 items, three annotators who answer every item
through the dealing service with seeded answers that mostly agree (a common value per item and
question, replaced by a random one a fifth of the time)."""

from __future__ import annotations

import io
import json
import random

from annotation import services, task_types
from studies.services.imports import import_items
from task_types.questionnaire import demo
from tests import factories

ITEMS = 24
ANNOTATORS = 3


def _values(question: dict) -> list:
    """Every answer a question of this kind takes (a sample of them for texts and sliders)."""
    kind = question["kind"]
    if kind == "pairwise":
        return [-1, 0, 1] if question["allow_tie"] else [-1, 1]
    if kind == "likert":
        return list(range(1, len(question["points"]) + 1))
    if kind == "single":
        return [o["value"] for o in question["options"]]
    if kind == "multiple":
        options = [o["value"] for o in question["options"]]
        top = min(question["max"], len(options))
        return [options[:n] for n in range(question["min"], top + 1)]
    if kind == "slider":
        return [10, 40, 60, 90]
    return ["Clear enough.", "The second answer is vague."]  # text


def _answer(questions: list[dict], common: dict, rng: random.Random) -> dict:
    return {
        q["id"]: common[q["id"]] if rng.random() < 0.8 else rng.choice(_values(q))
        for q in questions
    }


def run(*, seed: int):
    """The project, every item answered by three annotators."""
    rng = random.Random(seed)
    project = factories.ProjectFactory(
        task_type="questionnaire", config=demo.CONFIG, annotators_per_item=ANNOTATORS
    )
    records = [{**demo.ITEMS[n % len(demo.ITEMS)], "id": f"sim-{n}"} for n in range(ITEMS)]
    text = "".join(json.dumps(r) + "\n" for r in records)
    import_items(project=project, stream=io.BytesIO(text.encode()), fmt="jsonl")
    questions = task_types.get("questionnaire").validate_config(project.config)["questions"]
    common: dict[int, dict] = {}
    for _ in range(ANNOTATORS):
        person = factories.UserFactory(username=factories.unique("annotator"))
        factories.MembershipFactory(project=project, user=person, role="annotator")
        while (
            assignment := services.assignment_next(project=project, annotator=person)
        ) is not None:
            shared = common.setdefault(
                assignment.item_id, {q["id"]: rng.choice(_values(q)) for q in questions}
            )
            services.annotation_submit(
                assignment=assignment, answer=_answer(questions, shared, rng)
            )
    return project
