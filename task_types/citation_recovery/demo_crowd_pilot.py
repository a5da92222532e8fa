"""Demo: a crowd pilot on citation recovery (real Transparent-FCExp GPT-4 explanations).

A qualification round of four items, then batches of four items plus three hidden controls in the
pilot's quota: two positive ones and one negative one, built from an ordinary record by removing the
sentences that cite the highlighted passage (so "none" is right). The
summary prints a signed Prolific link with a sample participant filled in, so ``make run`` users
can walk through the whole flow as a crowd worker; the researcher sees it under Quality control.
Registered by :mod:`.demo` as the demo ``crowd_pilot``.
"""

import io
import json
from pathlib import Path

from django.conf import settings

from crowd import services as crowd_services
from studies.demos import demo_project
from studies.services.imports import import_items

from .formats import read_transparent_fcexp

DATA = Path(settings.BASE_DIR) / "data" / "transparent-fcexp" / "gpt4_full_data.json"
SLUG = "crowd-pilot-demo"
STUDY = "DEMOSTUDY"
CROWD = {
    "batch_size": 4,
    "controls_per_batch": 3,
    "min_controls": 3,
    "accuracy_threshold": 0.6,
    "qualification_required": True,
    "qualification_pass_mark": 0.5,
    "qualification_min_seconds": 20,
    "min_seconds_per_item": 5,
    "prolific_completion_code": "DEMOCODE",
}
GUIDELINES = """\
## Your task
Select every explanation sentence that should cite the **highlighted** evidence passage, or choose
**No sentence should cite this evidence**; then rate the explanation's helpfulness.

You start with a short qualification round. Some items in the main batches have a known answer
and check the quality of the work. At the end of a batch you get a completion code.
"""


def _records(limit: int) -> list[dict]:
    from .citations import parse_citations  # lazily: annotation.text loads spaCy

    with DATA.open(encoding="utf-8") as stream:
        records = []
        for _, payload in read_transparent_fcexp(stream):
            explanation = payload["explanation"]
            text = " ".join(explanation) if isinstance(explanation, list) else explanation
            cited = set(parse_citations(text))
            if cited:
                records.append((payload, cited))
            if len(records) >= limit:
                return records
    return records


def create(*, researcher, annotators) -> str:
    project = demo_project(
        slug=SLUG,
        defaults={
            "name": "Crowd pilot · citation recovery",
            "task_type": "citation_recovery",
            "config": {
                "masking": "sample",
                "seed": 13,
                "keep_other_markers": True,
                "control_quota": {"positive": 2, "negative": 1},
            },
            "crowd": CROWD,
            "guidelines": GUIDELINES,
            "annotators_per_item": 3,
        },
        researcher=researcher,
        annotators=annotators,
    )
    if not project.items.exists():
        payloads = []
        for n, (payload, _cited) in enumerate(_records(37)):
            if n < 4:
                payloads.append({**payload, "id": f"qual-{payload['id']}", "kind": "qualification"})
            elif n < 13:
                negative = n % 3 == 0  # one in three: the right answer is "none"
                payloads.append(
                    {
                        **payload,
                        "id": f"check-{payload['id']}",
                        "kind": "control",
                        "negative_control": negative,
                    }
                )
            else:
                payloads.append(payload)
        body = "".join(json.dumps(p) + "\n" for p in payloads)
        import_items(project=project, stream=io.StringIO(body), fmt="jsonl")
    link = crowd_services.entry_link(
        base_url=settings.CONCORD_BASE_URL, project=project, platform="prolific", study=STUDY
    )
    sample = link.replace("{{%PROLIFIC_PID%}}", "demoworker1").replace(
        "{{%SESSION_ID%}}", "demosession1"
    )
    kinds = {
        k: project.items.filter(kind=k).count() for k in ("regular", "control", "qualification")
    }
    return (
        f"{project.name}: {kinds['regular']} items, {kinds['control']} controls, "
        f"{kinds['qualification']} qualification items; try it as a Prolific worker: {sample}"
    )
