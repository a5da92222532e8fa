"""Study files: apply → export → apply is a no-op; a malformed file changes nothing and names the
path; dry runs; the same through the API; the JSON Schema accepts what export writes."""

import json

import jsonschema
import pytest
import yaml
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from projects.models import Membership, Project
from studies.study_files import study_export, study_json_schema
from tests import factories

STUDY = {
    "slug": "pilot-citations",
    "name": "Citation recovery pilot",
    "task_type": "citation_recovery",
    "annotators_per_item": 3,
    "guidelines_file": "guidelines.md",
    "config": {"masking": "sample", "seed": 7, "control_quota": {"positive": 2, "negative": 1}},
    "crowd": {"batch_size": 3, "controls_per_batch": 3, "reward_per_batch": "2.50"},
    "members": [
        {"username": "ann", "role": "annotator"},
        {"username": "rita", "role": "researcher"},
    ],
}


@pytest.fixture
def accounts(db):
    return [factories.UserFactory(username=name) for name in ("ann", "rita")]


def write(tmp_path, data, name="study.yaml"):
    (tmp_path / "guidelines.md").write_text("## Your task\nFind the citing sentences.\n")
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def apply(path, *extra):
    from io import StringIO

    out = StringIO()
    call_command("study", "apply", str(path), *extra, stdout=out)
    return out.getvalue()


def test_apply_export_apply_is_a_no_op(accounts, tmp_path):
    first = apply(write(tmp_path, STUDY))
    assert "created" in first and "crowd:" in first
    project = Project.objects.get(slug="pilot-citations")
    assert project.guidelines.startswith("## Your task")
    assert Membership.objects.get(project=project, user__username="rita").role == "researcher"
    exported = tmp_path / "exported.yaml"
    call_command("study", "export", "pilot-citations", "--out", str(exported))
    before = study_export(project=project)
    assert apply(exported).strip() == "pilot-citations: no changes."
    project.refresh_from_db()
    assert study_export(project=project) == before
    as_json = tmp_path / "exported.json"
    call_command("study", "export", "pilot-citations", "--out", str(as_json))
    assert apply(as_json).strip() == "pilot-citations: no changes."
    jsonschema.validate(json.loads(as_json.read_text()), study_json_schema())


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"crowd": {"controls_per_batch": -1}}, "crowd.controls_per_batch:"),
        ({"config": {"masking": "everything"}}, "config.masking:"),
        ({"members": [{"username": "ann"}, {"username": "nobody"}]}, "members[1].username:"),
        ({"annotators_per_item": 0}, "annotators_per_item:"),
        ({"colour": "blue"}, "colour:"),
        ({"task_type": "poetry"}, "task_type:"),
    ],
)
def test_a_malformed_study_file_changes_nothing_and_names_the_path(
    accounts, tmp_path, change, path
):
    apply(write(tmp_path, STUDY))
    before = study_export(project=Project.objects.get(slug="pilot-citations"))
    bad = {**STUDY, **change}
    with pytest.raises(CommandError) as refused:
        apply(write(tmp_path, bad, "bad.yaml"))
    assert path in str(refused.value) and "nothing changed" in str(refused.value)
    assert study_export(project=Project.objects.get(slug="pilot-citations")) == before


def test_a_dry_run_shows_the_changes_and_applies_none(accounts, tmp_path):
    apply(write(tmp_path, STUDY))
    changed = {
        **STUDY,
        "annotators_per_item": 5,
        "members": [{"username": "ann", "role": "reviewer"}],
    }
    out = apply(write(tmp_path, changed, "changed.yaml"), "--dry-run")
    assert "would change" in out and "annotators_per_item: 3 → 5" in out
    assert "members.ann: annotator → reviewer" in out
    project = Project.objects.get(slug="pilot-citations")
    assert project.annotators_per_item == 3
    assert Membership.objects.get(project=project, user__username="ann").role == "annotator"


def test_the_task_type_of_a_project_with_items_cannot_change(accounts, tmp_path):
    apply(write(tmp_path, STUDY))
    factories.make_items(Project.objects.get(slug="pilot-citations"), 1)
    with pytest.raises(CommandError) as refused:
        apply(write(tmp_path, {**STUDY, "task_type": "ranking", "config": {}}, "other.yaml"))
    assert "task_type" in str(refused.value)


def test_the_api_creates_and_updates_a_project_from_a_study(accounts, tmp_path):
    staff = factories.UserFactory(is_staff=True)
    client = APIClient()
    client.force_authenticate(staff)
    study = {k: v for k, v in STUDY.items() if k != "guidelines_file"}
    created = client.post("/api/projects/", study, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["study"]["crowd"]["reward_per_batch"] == "2.50"
    project = Project.objects.get(slug="pilot-citations")
    assert Membership.objects.get(project=project, user=staff).role == "researcher"
    again = client.post("/api/projects/", study, format="json")
    assert again.status_code == 400 and again.json()["field"] == "slug"
    bad = client.put(
        "/api/projects/pilot-citations/", {**study, "crowd": {"batch_size": -2}}, format="json"
    )
    assert bad.status_code == 400 and bad.json()["field"] == "crowd.batch_size"
    updated = client.put(
        "/api/projects/pilot-citations/", {**study, "name": "Renamed"}, format="json"
    )
    assert updated.status_code == 200 and updated.json()["changes"] == [
        'name: "Citation recovery pilot" → "Renamed"'
    ]
    # An annotator may neither create projects nor change this one.
    annotator = APIClient()
    annotator.force_authenticate(accounts[0])
    assert (
        annotator.post("/api/projects/", {**study, "slug": "x2"}, format="json").status_code == 403
    )
    assert annotator.put("/api/projects/pilot-citations/", study, format="json").status_code == 404


def test_the_questionnaire_demos_study_file_applies_and_matches_the_demo(db, tmp_path):
    from pathlib import Path

    from task_types.questionnaire import demo

    out = apply(Path(demo.STUDY_FILE))
    assert "questionnaire-demo: created" in out
    project = Project.objects.get(slug="questionnaire-demo")
    assert project.config == demo.CONFIG and project.guidelines.startswith("## Your task")
    assert apply(Path(demo.STUDY_FILE)).strip() == "questionnaire-demo: no changes."


def test_a_study_file_cannot_demote_the_last_researcher_and_changes_nothing(accounts, tmp_path):
    apply(write(tmp_path, STUDY))
    demoted = {**STUDY, "name": "Renamed", "members": [{"username": "rita", "role": "annotator"}]}
    with pytest.raises(CommandError) as refused:
        apply(write(tmp_path, demoted, "demoted.yaml"))
    assert "members[0]" in str(refused.value) and "researcher" in str(refused.value)
    project = Project.objects.get(slug="pilot-citations")
    assert project.name == "Citation recovery pilot"  # the whole apply was undone
    assert Membership.objects.get(project=project, user__username="rita").role == "researcher"


def test_settings_a_file_leaves_out_keep_their_values_on_an_existing_project(db):
    """Found by the outside probe: a file of only slug, name and task type reset the guidelines,
    the config and N of the project it was applied to. What a file leaves out now stays, as
    members and judges it does not list do; a new project still gets the defaults."""
    from studies.study_files import study_apply

    project = study_apply(
        data={
            "slug": "kept-settings",
            "name": "Kept",
            "task_type": "citation_recovery",
            "guidelines": "Do it.",
            "annotators_per_item": 2,
            "config": {"masking": "sample", "seed": 5},
        }
    )["project"]
    result = study_apply(
        data={"slug": "kept-settings", "name": "Kept, renamed", "task_type": "citation_recovery"}
    )
    project.refresh_from_db()
    assert project.name == "Kept, renamed"
    assert (project.guidelines, project.annotators_per_item) == ("Do it.", 2)
    assert project.config["seed"] == 5
    changed = str(result["changes"])
    assert "name" in changed
    assert not any(key in changed for key in ("guidelines", "config", "annotators_per_item"))
    study_apply(
        data={
            "slug": "kept-settings",
            "name": "Kept",
            "task_type": "citation_recovery",
            "guidelines": "",
        }
    )
    project.refresh_from_db()
    assert project.guidelines == "" and project.annotators_per_item == 2
