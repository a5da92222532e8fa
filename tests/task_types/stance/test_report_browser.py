"""The stance dashboard in a real browser: shares and accuracy by presupposition level."""

from __future__ import annotations

import random
from pathlib import Path

from annotation.models import Annotation, Item
from tests import factories
from tests.agreement import helpers
from tests.e2e.conftest import login

SCREENSHOTS = Path(__file__).resolve().parents[3] / "bench" / "out"
CORRECT = {"true": "agree", "false": "disagree", "mixture": "neutral"}


def test_researcher_reads_stance_shares_and_accuracy_by_level(live_server, page, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    rng = random.Random(11)
    researcher = factories.UserFactory()
    project = factories.ProjectFactory(task_type="stance", config={"k": 1}, name="Stance study")
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    annotators = [factories.UserFactory() for _ in range(3)]
    for user in annotators:
        factories.MembershipFactory(project=project, user=user)
    position = 0
    for model, skill in (("model-a", 0.9), ("model-b", 0.75)):
        for claim in range(12):
            veracity = ("true", "false", "mixture")[claim % 3]
            for level in range(5):
                position += 1
                item = Item.objects.create(
                    project=project,
                    external_id=f"{model}-{claim}-{level}",
                    position=position,
                    payload={
                        "id": f"{model}-{claim}-{level}",
                        "claim": "c",
                        "response": "r",
                        "claim_id": f"claim-{claim}",
                        "veracity": veracity,
                        "level": level,
                        "model": model,
                    },
                    prepared={"sentences": ["r"], "targets": [{"index": 0}]},
                    group=f"{model} / level {level}",
                )
                # Presupposition pushes the model towards agreeing as the level rises.
                stance = CORRECT[veracity] if rng.random() < skill - 0.08 * level else "agree"
                for user in annotators:
                    label = stance if rng.random() < 0.85 else rng.choice(list(CORRECT.values()))
                    helpers.answer(item, user, [], 0)
                    Annotation.objects.filter(item=item, annotator=user).update(
                        answer={
                            "label": label,
                            "not_sure": False,
                            "sentences": [{"index": 0, "label": label, "not_sure": False}],
                        }
                    )
    login(page, live_server, researcher.username, factories.PASSWORD)
    page.goto(f"{live_server.url}/p/{project.slug}/agreement/")
    page.wait_for_selector("#block-shares svg")
    assert page.locator("#table-accuracy tbody tr").count() == 3  # two models and all models
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "agreement_stance.png"), full_page=True)
