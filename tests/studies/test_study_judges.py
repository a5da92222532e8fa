"""Judges in study files: a project's own judges, created on apply and written back on export,
apply(export(p)) a no-op; an LLM judge names a model endpoint staff opened to the project, never
a URL or a key; bad entries named by path; a judge that has run keeps its settings; another
project's judge of the same name (or the staff catalogue's) is never touched."""

import copy

import jsonschema
import pytest

from llm_judges.models import Judge, JudgeRun, ModelEndpoint
from projects.models import Project
from studies.study_files import study_apply, study_export, study_json_schema
from tests import factories

NAMES = ("gpt-judge", "minilm")  # beside the catalogue's baseline judge

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
            "endpoint": "vllm-internal",
            "parameters": {"temperature": 0},
            "description": "The paper's GPT judge.",
        },
        {"name": "minilm", "kind": "embedding", "model": "all-MiniLM-L6-v2"},
    ],
}


@pytest.fixture
def endpoint(db):
    """The endpoint staff opened to every project (a study creating its project can name only
    those: the project does not exist yet)."""
    return ModelEndpoint.objects.create(
        name="vllm-internal",
        base_url="http://vllm.internal:8000/v1",
        api_key_env="VLLM_API_KEY",
        all_projects=True,
    )


def refused(data, path: str, **kwargs):
    from core.errors import Refusal

    with pytest.raises(Refusal) as exc:
        study_apply(data=data, **kwargs)
    assert exc.value.field == path, exc.value.message
    return exc.value.message


def test_apply_creates_the_projects_own_judges_and_export_writes_them_back(endpoint):
    result = study_apply(data=STUDY)
    project = result["project"]
    assert "judges.gpt-judge: added" in result["changes"]
    llm = Judge.objects.get(name="gpt-judge")
    assert llm.project == project and llm.endpoint == endpoint
    assert "base_url" not in llm.parameters and "api_key_env" not in llm.parameters
    assert llm.parameters["temperature"] == 0 and "timeout" in llm.parameters  # defaults
    assert llm.description == "The paper's GPT judge."
    assert set(Judge.objects.filter(project=project).values_list("name", flat=True)) == {
        "gpt-judge",
        "minilm",
    }
    assert Judge.objects.get(name="minilm").endpoint is None
    exported = study_export(project=project)
    entry = next(j for j in exported["judges"] if j["name"] == "gpt-judge")
    assert entry["endpoint"] == "vllm-internal"
    assert "base_url" not in entry and "api_key_env" not in entry
    assert "base_url" not in entry["parameters"] and entry["parameters"]["temperature"] == 0
    minilm = next(j for j in exported["judges"] if j["name"] == "minilm")
    assert "endpoint" not in minilm  # only LLM judges call one
    jsonschema.validate(exported, study_json_schema())

    again = study_apply(data=exported)
    assert again["changes"] == [] and not again["created"]
    assert study_export(project=project) == exported
    assert Judge.objects.filter(name__in=NAMES).count() == 2


def test_every_judge_of_the_project_is_exported_and_no_other_projects(endpoint):
    project = study_apply(data={**STUDY, "judges": []})["project"]
    ran = Judge.objects.create(project=project, name="ran-here", kind="nli", model="/models/nli")
    JudgeRun.objects.create(judge=ran, project=project, prompt_version="v1")  # no defaults above
    other = factories.ProjectFactory()
    Judge.objects.create(project=other, name="theirs", kind="nli", model="/models/nli")
    names = [j["name"] for j in study_export(project=project)["judges"]]
    assert names == ["ran-here"]
    assert study_apply(data=study_export(project=project))["changes"] == []


ENDPOINT_HINT = "never names a server or a key"


@pytest.mark.parametrize(
    "change, path, words",
    [
        ({"kind": "oracle"}, "judges[0].kind", "not a valid choice"),
        # Where a judge's calls go is staff's: a URL or a key variable is refused with the hint.
        ({"base_url": "https://collector.example/v1"}, "judges[0].base_url", ENDPOINT_HINT),
        ({"api_key_env": "OPENAI_API_KEY"}, "judges[0].api_key_env", ENDPOINT_HINT),
        (
            {"parameters": {"base_url": "https://collector.example/v1"}},
            "judges[0].parameters.base_url",
            "Not a judge parameter",
        ),
        (
            {"parameters": {"api_key_env": "OPENAI_API_KEY"}},
            "judges[0].parameters.api_key_env",
            "Not a judge parameter",
        ),
        ({"endpoint": ""}, "judges[0].endpoint", "needs a model endpoint (available: vllm"),
        ({"endpoint": "nope"}, "judges[0].endpoint", "No model endpoint 'nope'"),
        ({"parameters": {"temprature": 0}}, "judges[0].parameters.temprature", "Unknown parameter"),
        (
            {"parameters": {"temperature": 9}},
            "judges[0].parameters.temperature",
            "less than or equal",
        ),
        ({"model": " "}, "judges[0].model", ""),
        ({"name": "minilm"}, "judges[1].name", "listed twice"),
        # A key the judge entry does not have (the schema's additionalProperties: false) was
        # dropped without a word.
        ({"temperature": 0}, "judges[0].temperature", "Unknown key; a judge"),
        ({"prompt": {"name": "p", "version": 1, "v": 2}}, "judges[0].prompt.v", "Unknown key"),
    ],
)
def test_a_bad_judge_entry_names_its_path_and_changes_nothing(endpoint, change, path, words):
    data = copy.deepcopy(STUDY)
    data["judges"][0].update(change)
    message = refused(data, path)
    assert words in message
    assert not Project.objects.filter(slug=STUDY["slug"]).exists()
    assert not Judge.objects.filter(name__in=NAMES).exists()


def test_an_embedding_judge_names_no_endpoint(endpoint):
    data = copy.deepcopy(STUDY)
    data["judges"][1]["endpoint"] = "vllm-internal"
    assert "Only LLM judges" in refused(data, "judges[1].endpoint")
    data["judges"][1].pop("endpoint")
    data["judges"][1]["base_url"] = "http://x/v1"
    assert ENDPOINT_HINT in refused(data, "judges[1].base_url")


def test_a_judge_nothing_depends_on_changes_and_one_that_has_run_does_not(endpoint):
    newer = ModelEndpoint.objects.create(
        name="vllm-newer", base_url="http://vllm-2.internal:8000/v1", all_projects=True
    )
    project = study_apply(data=STUDY)["project"]
    changed = copy.deepcopy(study_export(project=project))
    changed["judges"][0]["model"] = "gpt-4o"
    changed["judges"][0]["description"] = "Newer model."
    changed["judges"][0]["endpoint"] = "vllm-newer"
    result = study_apply(data=changed)
    assert any(c.startswith("judges.gpt-judge.model:") for c in result["changes"])
    assert any(c.startswith("judges.gpt-judge.endpoint:") for c in result["changes"])
    judge = Judge.objects.get(project=project, name="gpt-judge")
    assert (judge.model, judge.endpoint) == ("gpt-4o", newer)

    JudgeRun.objects.create(judge=judge, project=project, prompt_version="v1")
    changed["judges"][0]["model"] = "gpt-5"
    message = refused(changed, "judges[0].model")
    assert "has run" in message and "new name" in message
    changed["judges"][0]["model"] = "gpt-4o"
    changed["judges"][0]["endpoint"] = "vllm-internal"  # results are kept by judge
    message = refused(changed, "judges[0].endpoint")
    assert "has run" in message
    judge.refresh_from_db()
    assert (judge.model, judge.endpoint) == ("gpt-4o", newer)
    # The description alone may still change.
    changed["judges"][0]["endpoint"] = "vllm-newer"
    changed["judges"][0]["description"] = "Kept."
    study_apply(data=changed)
    assert Judge.objects.get(project=project, name="gpt-judge").description == "Kept."


def test_another_projects_study_makes_its_own_judges_and_never_changes_these(endpoint):
    mine = study_apply(data=STUDY)["project"]
    minilm = Judge.objects.get(project=mine, name="minilm")
    JudgeRun.objects.create(judge=minilm, project=mine, prompt_version="v1")
    other = copy.deepcopy(STUDY)
    other["slug"] = "other-study"
    result = study_apply(data=other)
    assert {"judges.gpt-judge: added", "judges.minilm: added"} <= set(result["changes"])
    theirs = result["project"]
    assert Judge.objects.filter(name__in=NAMES).count() == 4  # each project's own two
    # Their judge of the same name has not run: its settings are theirs to change, and mine
    # (which has run) stays as it was.
    other["judges"][1]["parameters"] = {"threshold": 0.9}
    other["judges"][1]["description"] = "Theirs."
    study_apply(data=other)
    assert Judge.objects.get(project=theirs, name="minilm").parameters["threshold"] == 0.9
    minilm.refresh_from_db()
    assert (minilm.parameters["threshold"], minilm.description) == (0.6, "")
    assert study_apply(data=study_export(project=mine))["changes"] == []


def test_a_dry_run_creates_no_judge(endpoint):
    result = study_apply(data=STUDY, dry_run=True)
    assert "judges.minilm: added" in result["changes"]
    assert not Judge.objects.filter(name__in=NAMES).exists()
    assert not Project.objects.filter(slug=STUDY["slug"]).exists()


def test_the_api_put_round_trips_judges(endpoint):
    from tests.conftest import client_for

    researcher = factories.UserFactory(username="judge-researcher")
    project = study_apply(data=STUDY)["project"]
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    client = client_for(researcher)
    study = client.get(f"/api/projects/{project.slug}/").json()
    assert [j["name"] for j in study["judges"]] == ["gpt-judge", "minilm"]
    assert study["judges"][0]["endpoint"] == "vllm-internal"
    response = client.put(f"/api/projects/{project.slug}/", study, format="json")
    assert response.status_code == 200 and response.json()["changes"] == []
    study["judges"][0]["parameters"] = {"temperature": "hot"}
    response = client.put(f"/api/projects/{project.slug}/", study, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == "judges[0].parameters.temperature"


def test_a_catalogue_judges_name_makes_the_projects_own_judge_and_leaves_the_catalogue(db):
    baseline = Judge.objects.get(project=None, name="minilm-similarity")  # staff's catalogue
    data = copy.deepcopy(STUDY)
    data["judges"] = [
        {
            "name": baseline.name,
            "kind": "embedding",
            "model": baseline.model,
            "parameters": baseline.parameters,
            "description": "Mine now.",
        }
    ]
    project = study_apply(data=data)["project"]
    own = Judge.objects.get(project=project, name="minilm-similarity")
    assert own.pk != baseline.pk and own.description == "Mine now."
    data["slug"] = "another-study"
    data["judges"][0]["parameters"] = {"threshold": 0.9}
    another = study_apply(data=data)["project"]
    assert Judge.objects.get(project=another, name=baseline.name).parameters["threshold"] == 0.9
    own.refresh_from_db()
    assert own.parameters["threshold"] == 0.6
    catalogue = Judge.objects.get(project=None, name="minilm-similarity")
    assert (catalogue.description, catalogue.parameters) == (
        baseline.description,
        baseline.parameters,
    )


def with_prompt(prompt):
    data = copy.deepcopy(STUDY)
    data["judges"][0]["prompt"] = prompt
    return data


def test_a_judge_names_its_prompt_template_and_export_writes_it_back(endpoint):
    from llm_judges.services.prompt_templates import prompt_template_save

    paper, _ = prompt_template_save(
        name="xing-paper",
        task_type="citation_recovery",
        template="Claim: {claim}\nEvidence:\n{evidence}\nExplanation:\n{sentences}\nWhich sentences cite it?",
    )
    project = study_apply(data=with_prompt({"name": "xing-paper", "version": paper.version}))[
        "project"
    ]
    judge = Judge.objects.get(project=project, name="gpt-judge")
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
def test_a_prompt_that_does_not_exist_or_fits_another_task_type_is_refused(endpoint, prompt, words):
    from llm_judges.services.prompt_templates import shipped_template

    shipped_template(task_type="ranking")
    message = refused(with_prompt(prompt), "judges[0].prompt")
    assert words in message
    assert not Project.objects.filter(slug=STUDY["slug"]).exists()
    assert not Judge.objects.filter(name="gpt-judge").exists()


def test_a_prompt_on_a_judge_that_is_not_an_llm_is_refused(endpoint):
    data = copy.deepcopy(STUDY)
    data["judges"][1]["prompt"] = {"name": "citation_recovery", "version": 1}
    assert "LLM judges" in refused(data, "judges[1].prompt")


def test_a_researchers_study_file_names_only_an_endpoint_open_to_the_project(endpoint):
    """A researcher's study file must not send a judge's calls (and the organisation's key) to a
    server of their choosing: it names one of the endpoints staff opened to the project, and
    neither a URL nor a key variable nor another project's endpoint is accepted."""
    from django.contrib.auth.models import Permission

    from tests.conftest import client_for

    researcher = factories.UserFactory(username="endpoint-researcher")
    researcher.user_permissions.add(Permission.objects.get(codename="add_project"))
    client = client_for(researcher)
    elsewhere = factories.ProjectFactory()
    theirs = ModelEndpoint.objects.create(
        name="theirs-keyed", base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY"
    )
    theirs.projects.add(elsewhere)

    for change, field in [
        ({"base_url": "https://collector.example/v1"}, "judges[0].base_url"),
        (
            {"parameters": {"temperature": 0, "api_key_env": "OPENAI_API_KEY"}},
            "judges[0].parameters.api_key_env",
        ),
        ({"endpoint": "theirs-keyed"}, "judges[0].endpoint"),
    ]:
        study = copy.deepcopy(STUDY)
        study["judges"][0].update(change)
        response = client.post("/api/projects/", study, format="json")
        assert response.status_code == 400, response.content
        assert response.json()["field"] == field
        assert not Project.objects.filter(slug=STUDY["slug"]).exists()
    assert "(available: vllm-internal)" in response.json()["detail"]  # theirs is not offered
    assert not Judge.objects.filter(name__in=NAMES).exists()

    response = client.post("/api/projects/", STUDY, format="json")
    assert response.status_code == 201, response.content
    project = Project.objects.get(slug=STUDY["slug"])
    assert Judge.objects.get(project=project, name="gpt-judge").endpoint == endpoint

    # Another project's endpoint stays refused on a change; once staff open it to this project,
    # the study file may choose it.
    study = client.get(f"/api/projects/{project.slug}/").json()
    study["judges"][0]["endpoint"] = "theirs-keyed"
    response = client.put(f"/api/projects/{project.slug}/", study, format="json")
    assert response.status_code == 400 and response.json()["field"] == "judges[0].endpoint"
    assert Judge.objects.get(project=project, name="gpt-judge").endpoint == endpoint
    theirs.projects.add(project)
    response = client.put(f"/api/projects/{project.slug}/", study, format="json")
    assert response.status_code == 200, response.content
    assert Judge.objects.get(project=project, name="gpt-judge").endpoint == theirs


# --- issue 27, item 5: a built-in judge by its name ---------------------------------------------


def test_a_study_file_takes_a_built_in_judge_by_its_name_without_copying_its_description(db):
    catalogue = Judge.objects.get(project=None, name="minilm-similarity")
    assert catalogue.description  # what a file had to copy word for word before
    study = {
        **STUDY,
        "judges": [
            {"builtin": "minilm-similarity"},
            {"builtin": "minilm-similarity", "name": "baseline"},
        ],
    }
    result = study_apply(data=study)
    project = result["project"]
    assert "judges.minilm-similarity: added" in result["changes"]
    for name in ("minilm-similarity", "baseline"):
        judge = Judge.objects.get(project=project, name=name)
        assert (judge.kind, judge.model, judge.parameters, judge.description) == (
            catalogue.kind,
            catalogue.model,
            catalogue.parameters,
            catalogue.description,
        )
    # applied again, or as exported, nothing changes; the catalogue's judge is untouched
    assert study_apply(data=study)["changes"] == []
    exported = study_export(project=project)
    jsonschema.validate(exported, study_json_schema())
    assert study_apply(data=exported)["changes"] == []
    assert Judge.objects.get(pk=catalogue.pk).project is None


def test_a_project_that_copied_the_built_in_judge_links_it_by_name_with_no_change(db):
    from llm_judges.services import judge_copy

    project = study_apply(data={**STUDY, "judges": []})["project"]
    catalogue = Judge.objects.get(project=None, name="minilm-similarity")
    judge_copy(judge=catalogue, project=project)
    result = study_apply(data={**STUDY, "judges": [{"builtin": "minilm-similarity"}]})
    assert result["changes"] == []


@pytest.mark.parametrize(
    "entry, path, words",
    [
        ({"builtin": "gpt-5-judge"}, "judges[0].builtin", "built-in: minilm-similarity"),
        (
            {"builtin": "minilm-similarity", "description": "mine"},
            "judges[0].description",
            "gives its description",
        ),
        (
            {"builtin": "minilm-similarity", "parameters": {"threshold": 0.3}},
            "judges[0].parameters",
            "describe the judge in full",
        ),
        ({"kind": "embedding", "model": "all-MiniLM-L6-v2"}, "judges[0].name", "required"),
        ({"name": "x", "model": "all-MiniLM-L6-v2"}, "judges[0].kind", "builtin"),
    ],
)
def test_a_bad_built_in_reference_is_refused_naming_the_key(db, entry, path, words):
    message = refused({**STUDY, "judges": [entry]}, path)
    assert f"{path}:" in message and words in message, message
    assert not Project.objects.filter(slug=STUDY["slug"]).exists()
