"""Shared set-up of the page tests: a project of any task type filled from its demo payload."""

from __future__ import annotations

import io
import json
from pathlib import Path

from annotation import task_types
from studies.services.imports import import_items
from tests import factories

# Screenshots the browser tests write (ignored by git; looked at before an issue is resolved).
SCREENSHOTS = Path(__file__).resolve().parents[2] / "bench" / "out" / "pages"

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


def demo_project(slug: str, *, items: int = 1, config: dict | None = None, per_item: int = 1):
    """A project of task type ``slug`` with ``items`` copies of its demo payload, a researcher and
    an annotator (both with factories.PASSWORD)."""
    task_type = task_types.get(slug)
    project = factories.ProjectFactory(
        task_type=slug,
        config=config or {},
        annotators_per_item=per_item,
        guidelines="## Guide\nRead the item, then answer.",
    )
    researcher = factories.UserFactory()
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    payload = task_type.demo_payload()
    lines = [json.dumps({**payload, "id": f"{payload['id']}-{n}"}) for n in range(items)]
    if lines:
        import_items(project=project, stream=io.BytesIO("\n".join(lines).encode()), fmt="jsonl")
    return project, researcher, annotator


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
