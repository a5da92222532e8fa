"""Demo: a questionnaire over two chatbot answers to health questions, with every question kind.

SYNTHETIC DEMO CONTENT: the prompts and responses were written for the demo to exercise the
interface; they are not model outputs and not medical advice.
"""

import io
import json
from pathlib import Path

from studies.demos import load_demo_project, register

from .task import Questionnaire

STUDY_FILE = Path(__file__).resolve().parent / "study.yaml"


def study() -> dict:
    """The demo's study file (``study.yaml`` beside this module): the project's settings."""
    import yaml

    return yaml.safe_load(STUDY_FILE.read_text(encoding="utf-8"))


CONFIG = study()["config"]

ITEMS = [
    {
        "id": "demo-ibuprofen",
        "prompt": "Is it safe to take ibuprofen when I have a cold?",
        "response_a": "For most adults, **yes**. Ibuprofen eases aches, sore throat and fever.\n\n"
        "- Take it with food.\n- Avoid it with stomach ulcers, kidney disease or in late "
        "pregnancy.\n\nAsk a pharmacist if you take other medicines.",
        "response_b": "Ibuprofen cures a cold faster, so take the highest dose you can.",
        "system_a": "synthetic-careful",
        "system_b": "synthetic-overconfident",
    },
    {
        "id": "demo-spinach",
        "prompt": "Is spinach a good source of iron?",
        "response_a": "Spinach contains iron, but much of it is poorly absorbed.",
        "response_b": "Spinach has some iron (about 2.7 mg per 100 g), but it is *non-haem* "
        "iron, which the body absorbs less well than the iron in meat. Eating it with vitamin "
        "C, such as lemon juice, helps absorption.",
        "system_a": "synthetic-short",
        "system_b": "synthetic-detailed",
    },
    {
        "id": "demo-antibiotics",
        "prompt": "Should I ask for antibiotics for the flu?",
        "response_a": "No. Flu is caused by a virus, and antibiotics only work against "
        "bacteria. Rest, fluids and fever relief help; see a doctor if you struggle to breathe.",
        "response_b": "Antibiotics do not treat flu, which is viral. Doctors may prescribe them "
        "only for a bacterial complication such as pneumonia.",
        "system_a": "synthetic-careful",
        "system_b": "synthetic-detailed",
    },
]


def create(*, researcher, annotators) -> str:
    """The demo project as its study file (``study.yaml`` beside this module) describes it."""
    settings = study()
    body = "".join(json.dumps(item) + "\n" for item in ITEMS)
    return load_demo_project(
        slug=settings["slug"],
        defaults={
            "name": settings["name"],
            "task_type": settings["task_type"],
            "config": settings["config"],
            "guidelines": settings["guidelines"],
            "annotators_per_item": settings["annotators_per_item"],
        },
        researcher=researcher,
        annotators=annotators,
        open_items=lambda: io.StringIO(body),
        fmt="jsonl",
    )


register(name=Questionnaire.slug, task_type=Questionnaire.slug, create=create)
