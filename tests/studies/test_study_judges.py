"""Judges in study files: created and linked on apply, written back on export (base URL out of
the parameters), apply(export(p)) a no-op; bad entries named by path; a judge that has run or
that another project uses keeps its settings."""

import copy

import jsonschema
import pytest

from llm_judges.models import Judge, JudgeRun
from projects.models import Project
from studies.models import StudyJudge
from studies.study_files import study_apply, study_export, study_json_schema
from tests import factories

NAMES = ("gpt-judge", "minilm")  # beside the migration's baseline judge

STUDY = {
    "slug": "judged-study",
    "name": "Judged study",
    "task_type": "citation_recovery",
    "config": {"masking": "sample"},
    "judges": [
        {
            "name": "gpt-judge",
            "kind": "llm",
            "model": "gpt-4o-mini",
            "base_url": "http://vllm.internal:8000/v1",
            "parameters": {"temperature": 0},
            "description": "The paper's GPT judge.",
        },
        {"name": "minilm", "kind": "embedding", "model": "all-MiniLM-L6-v2"},
    ],
}


def refused(data, path: str):
    from core.errors import Refusal

    with pytest.raises(Refusal) as exc:
        study_apply(data=data)
    assert exc.value.field == path, exc.value.message
    return exc.value.message


def test_apply_creates_and_links_the_judges_and_export_writes_them_back(db):
    result = study_apply(data=STUDY)
    project = result["project"]
    assert "judges.gpt-judge: added" in result["changes"]
    llm = Judge.objects.get(name="gpt-judge")
    assert llm.parameters["base_url"] == "http://vllm.internal:8000/v1"
    assert llm.parameters["temperature"] == 0 and "api_key_env" in llm.parameters  # defaults
    assert llm.description == "The paper's GPT judge."
    assert set(
        StudyJudge.objects.filter(project=project).values_list("judge__name", flat=True)
    ) == {
        "gpt-judge",
        "minilm",
    }
    exported = study_export(project=project)
    entry = next(j for j in exported["judges"] if j["name"] == "gpt-judge")
    assert entry["base_url"] == "http://vllm.internal:8000/v1"
    assert "base_url" not in entry["parameters"] and entry["parameters"]["temperature"] == 0
    minilm = next(j for j in exported["judges"] if j["name"] == "minilm")
    assert "base_url" not in minilm  # only LLM judges have one
    jsonschema.validate(exported, study_json_schema())

    again = study_apply(data=exported)
    assert again["changes"] == [] and not again["created"]
    assert study_export(project=project) == exported
    assert Judge.objects.filter(name__in=NAMES).count() == 2


def test_a_judge_that_has_run_on_the_project_is_exported_too(db):
    project = study_apply(data={**STUDY, "judges": []})["project"]
    ran = Judge.objects.create(name="ran-here", kind="nli", model="/models/nli")  # no defaults
    JudgeRun.objects.create(judge=ran, project=project, prompt_version="v1")
    names = [j["name"] for j in study_export(project=project)["judges"]]
    assert names == ["ran-here"]
    assert study_apply(data=study_export(project=project))["changes"] == []


@pytest.mark.parametrize(
    "change, path, words",
    [
        ({"kind": "oracle"}, "judges[0].kind", "not a valid choice"),
        ({"base_url": ""}, "judges[0].base_url", "required"),
        ({"parameters": {"temprature": 0}}, "judges[0].parameters.temprature", "Unknown parameter"),
        (
            {"parameters": {"temperature": 9}},
            "judges[0].parameters.temperature",
            "less than or equal",
        ),
        ({"model": " "}, "judges[0].model", ""),
        ({"name": "minilm"}, "judges[1].name", "listed twice"),
        # A key the judge entry does not have (the schema's additionalProperties: false) was
        # dropped without a word; the outside probe put api_key_env beside parameters.
        ({"api_key_env": "OPENAI_API_KEY"}, "judges[0].api_key_env", "Unknown key; a judge"),
        ({"prompt": {"name": "p", "version": 1, "v": 2}}, "judges[0].prompt.v", "Unknown key"),
    ],
)
def test_a_bad_judge_entry_names_its_path_and_changes_nothing(db, change, path, words):
    data = copy.deepcopy(STUDY)
    data["judges"][0].update(change)
    message = refused(data, path)
    assert words in message
    assert not Project.objects.filter(slug=STUDY["slug"]).exists()
    assert not Judge.objects.filter(name__in=NAMES).exists()


def test_an_embedding_judge_with_a_base_url_is_refused(db):
    data = copy.deepcopy(STUDY)
    data["judges"][1]["base_url"] = "http://x/v1"
    assert "Unknown parameter" in refused(data, "judges[1].base_url")


def test_a_judge_nothing_depends_on_changes_and_one_that_has_run_does_not(db):
    project = study_apply(data=STUDY)["project"]
    changed = copy.deepcopy(study_export(project=project))
    changed["judges"][0]["model"] = "gpt-4o"
    changed["judges"][0]["description"] = "Newer model."
    result = study_apply(data=changed)
    assert any(c.startswith("judges.gpt-judge.model:") for c in result["changes"])
    assert Judge.objects.get(name="gpt-judge").model == "gpt-4o"

    JudgeRun.objects.create(
        judge=Judge.objects.get(name="gpt-judge"), project=project, prompt_version="v1"
    )
    changed["judges"][0]["model"] = "gpt-5"
    message = refused(changed, "judges[0].model")
    assert "has run" in message and "new name" in message
    assert Judge.objects.get(name="gpt-judge").model == "gpt-4o"
    # The description alone may still change.
    changed["judges"][0]["model"] = "gpt-4o"
    changed["judges"][0]["description"] = "Kept."
    study_apply(data=changed)
    assert Judge.objects.get(name="gpt-judge").description == "Kept."


def test_another_projects_study_cannot_change_a_shared_judge(db):
    study_apply(data=STUDY)
    other = copy.deepcopy(STUDY)
    other["slug"] = "other-study"
    assert study_apply(data=other)["changes"]  # the same judges: linked, not changed
    other["judges"][1]["parameters"] = {"threshold": 0.9}
    message = refused(other, "judges[1].parameters")
    assert "another project" in message
    assert Judge.objects.get(name="minilm").parameters["threshold"] == 0.6


def test_a_dry_run_creates_no_judge(db):
    result = study_apply(data=STUDY, dry_run=True)
    assert "judges.minilm: added" in result["changes"]
    assert not Judge.objects.filter(name__in=NAMES).exists() and not StudyJudge.objects.exists()


def test_the_api_put_round_trips_judges(db):
    from tests.conftest import client_for

    researcher = factories.UserFactory(username="judge-researcher")
    project = study_apply(data=STUDY)["project"]  # manage.py study: its keyed judge is allowed
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    client = client_for(researcher)
    study = client.get(f"/api/projects/{project.slug}/").json()
    assert [j["name"] for j in study["judges"]] == ["gpt-judge", "minilm"]
    response = client.put(f"/api/projects/{project.slug}/", study, format="json")
    assert response.status_code == 200 and response.json()["changes"] == []
    study["judges"][0]["parameters"] = {"temperature": "hot"}
    response = client.put(f"/api/projects/{project.slug}/", study, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == "judges[0].parameters.temperature"


def test_a_judge_that_is_not_this_studys_is_linked_as_it_is_but_never_changed(db):
    baseline = Judge.objects.get(name="minilm-similarity")  # the migration's offline baseline
    data = copy.deepcopy(STUDY)
    data["judges"] = [
        {
            "name": baseline.name,
            "kind": "embedding",
            "model": baseline.model,
            "parameters": baseline.parameters,
            "description": baseline.description,
        }
    ]
    project = study_apply(data=data)["project"]
    assert StudyJudge.objects.filter(project=project, judge=baseline).exists()
    data["slug"] = "another-study"
    data["judges"][0]["description"] = "Mine now."
    message = refused(data, "judges[0].description")
    assert "is used by another project" in message
    StudyJudge.objects.all().delete()
    message = refused(data, "judges[0].description")
    assert "is not this study's" in message
    assert Judge.objects.get(name="minilm-similarity").description == baseline.description


def with_prompt(prompt):
    data = copy.deepcopy(STUDY)
    data["judges"][0]["prompt"] = prompt
    return data


def test_a_judge_names_its_prompt_template_and_export_writes_it_back(db):
    from llm_judges.services.prompt_templates import prompt_template_save

    paper, _ = prompt_template_save(
        name="xing-paper",
        task_type="citation_recovery",
        template="Claim: {claim}\nEvidence:\n{evidence}\nExplanation:\n{sentences}\nWhich sentences cite it?",
    )
    project = study_apply(data=with_prompt({"name": "xing-paper", "version": paper.version}))[
        "project"
    ]
    judge = Judge.objects.get(name="gpt-judge")
    assert judge.prompt == paper and judge.prompt_version == paper.key
    exported = study_export(project=project)
    entry = next(j for j in exported["judges"] if j["name"] == "gpt-judge")
    assert entry["prompt"] == {"name": "xing-paper", "version": paper.version}
    assert "prompt" not in next(j for j in exported["judges"] if j["name"] == "minilm")
    jsonschema.validate(exported, study_json_schema())
    assert study_apply(data=exported)["changes"] == []

    # The judge has run: its prompt may still change (results record their prompt version).
    JudgeRun.objects.create(judge=judge, project=project, prompt_version=judge.prompt_version)
    shipped = with_prompt({"name": "citation_recovery", "version": 1})  # created on demand
    changes = study_apply(data=shipped)["changes"]
    assert any(c.startswith("judges.gpt-judge.prompt:") for c in changes)
    judge.refresh_from_db()
    assert judge.prompt.name == "citation_recovery" and judge.prompt.builtin


@pytest.mark.parametrize(
    "prompt, words",
    [
        ({"name": "no-such-prompt", "version": 1}, "load it first"),
        ({"name": "ranking", "version": 1}, "is for ranking"),
    ],
)
def test_a_prompt_that_does_not_exist_or_fits_another_task_type_is_refused(db, prompt, words):
    from llm_judges.services.prompt_templates import shipped_template

    shipped_template(task_type="ranking")
    message = refused(with_prompt(prompt), "judges[0].prompt")
    assert words in message
    assert not Project.objects.filter(slug=STUDY["slug"]).exists()
    assert not Judge.objects.filter(name="gpt-judge").exists()


def test_a_prompt_on_a_judge_that_is_not_an_llm_is_refused(db):
    data = copy.deepcopy(STUDY)
    data["judges"][1]["prompt"] = {"name": "citation_recovery", "version": 1}
    assert "LLM judges" in refused(data, "judges[1].prompt")


def test_only_staff_set_up_a_judge_that_sends_the_servers_api_key(db):
    """A researcher's study file must not send the organisation's key (``api_key_env``) to a
    server of their choosing: new keyed judges and changes of a keyed judge's base URL or key are
    staff's; keyless judges and existing judges named unchanged are anyone's."""
    from django.contrib.auth.models import Permission

    from tests.conftest import client_for

    researcher = factories.UserFactory(username="keyless-researcher")
    researcher.user_permissions.add(Permission.objects.get(codename="add_project"))
    client = client_for(researcher)
    keyed = copy.deepcopy(STUDY)
    keyed["judges"][0]["base_url"] = "https://collector.example/v1"
    response = client.post("/api/projects/", keyed, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"] == "judges[0].parameters.api_key_env"
    assert "OPENAI_API_KEY" in body["detail"] and "only staff" in body["detail"]
    assert not Judge.objects.filter(name__in=NAMES).exists() and not Project.objects.exists()

    keyless = copy.deepcopy(keyed)
    keyless["judges"][0]["parameters"] = {"temperature": 0, "api_key_env": ""}
    response = client.post("/api/projects/", keyless, format="json")
    assert response.status_code == 201, response.content
    assert Judge.objects.get(name="gpt-judge").parameters["api_key_env"] == ""

    # Staff set a key on it; the researcher's file may name it unchanged, not redirect it.
    staff = factories.UserFactory(username="staff-member", is_staff=True)
    study = client.get(f"/api/projects/{keyless['slug']}/").json()
    study["judges"][0]["parameters"]["api_key_env"] = "OPENAI_API_KEY"
    study["judges"][0]["base_url"] = "https://api.openai.com/v1"
    study_apply(data=study, user=staff, slug=keyless["slug"])
    again = client.get(f"/api/projects/{keyless['slug']}/").json()
    response = client.put(f"/api/projects/{keyless['slug']}/", again, format="json")
    assert response.status_code == 200 and response.json()["changes"] == []
    again["judges"][0]["base_url"] = "https://collector.example/v1"
    response = client.put(f"/api/projects/{keyless['slug']}/", again, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == "judges[0].parameters.api_key_env"
    judge = Judge.objects.get(name="gpt-judge")
    assert judge.parameters["base_url"] == "https://api.openai.com/v1"
