"""llm_judges 0010 fills the answer settings and their fingerprint of runs stored before it, from
their judges (frozen once they have runs): an embedding run gets its threshold (issue 27)."""

import hashlib
import json

import pytest

from tests.llm_judges.test_judge_ownership_migration import latest, migrate

BEFORE = ("llm_judges", "0009_judge_run_faults_error_classes_producing_run")


@pytest.fixture
def back_to_latest():
    yield
    migrate(latest())


@pytest.mark.django_db(transaction=True)
def test_runs_stored_before_get_their_judges_settings_and_fingerprint(back_to_latest):
    old = migrate([node for node in latest() if node[0] != "llm_judges"] + [BEFORE])
    Project = old.get_model("projects", "Project")
    Judge = old.get_model("llm_judges", "Judge")
    JudgeRun = old.get_model("llm_judges", "JudgeRun")
    project = Project.objects.create(slug="old", name="Old", task_type="citation_recovery")
    judge = Judge.objects.create(
        project=project,
        name="minilm",
        kind="embedding",
        model="all-MiniLM-L6-v2",
        parameters={"threshold": 0.55, "batch_size": 64, "items_per_task": 200},
    )
    run = JudgeRun.objects.create(judge=judge, project=project, prompt_version="v1")

    new = migrate(latest())
    stored = new.get_model("llm_judges", "JudgeRun").objects.get(pk=run.pk)
    settings = {"kind": "embedding", "model": "all-MiniLM-L6-v2", "threshold": 0.55}
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    assert stored.judge_settings == settings
    assert stored.settings_fingerprint == hashlib.sha256(text.encode()).hexdigest()
