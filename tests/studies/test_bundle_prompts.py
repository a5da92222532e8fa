"""Replication bundles hold the prompts their LLM judges used (issue 27, item 5): every prompt
template record (wording, schema, parameters, fingerprint), named in the bundle's study file;
loading treats them as untrusted input and never changes a template of the instance."""

import json

import pytest
from django.core.management import CommandError, call_command

from llm_judges.models import Judge, JudgeResult, JudgeRun, PromptTemplate
from llm_judges.services.prompt_templates import prompt_template_save, shipped_template
from projects.models import Project
from tests import factories
from tests.test_trust_boundaries import rewrite

SCHEMA = {"type": "object", "properties": {"sentences": {"type": "array"}}}


@pytest.fixture
def judged(db):
    project = factories.ProjectFactory(slug=factories.unique("prompted"))
    items = factories.make_items(project, 2)
    paper, _ = prompt_template_save(
        name="paper-wording",
        task_type=project.task_type,
        system="You check citations.",
        template="Claim: {claim}\nSentences:\n{sentences}",
        output_schema=SCHEMA,
        parameters={"temperature": 0.0, "seed": 7},
        note="Paper, appendix B.",
    )
    own = Judge.objects.create(
        project=project, name="gpt-paper", kind="llm", model="m", prompt=paper
    )
    shipped = Judge.objects.create(project=project, name="gpt-shipped", kind="llm", model="m")
    for judge in (own, shipped):
        run = JudgeRun.objects.create(
            judge=judge,
            project=project,
            prompt_version=judge.prompt_version,
            prompt=judge.prompt or shipped_template(task_type=project.task_type),
            status="done",
        )
        JudgeResult.objects.create(
            item=items[0],
            judge=judge,
            run=run,
            prompt_version=judge.prompt_version,
            status="failed",
            error="HTTP 400",
        )
    return project, paper


def written(project, tmp_path):
    out = tmp_path / "bundle"
    call_command("bundle", project.slug, str(out))
    return out


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def forget(project):
    """This instance without the project, its judges and runs."""
    JudgeResult.objects.filter(item__project=project).delete()
    JudgeRun.objects.filter(project=project).delete()
    Judge.objects.filter(project=project).delete()
    project.delete()


def test_a_bundle_holds_every_prompt_record_its_llm_judges_used_named_in_its_study_file(
    judged, tmp_path
):
    project, paper = judged
    out = written(project, tmp_path)
    shipped = shipped_template(task_type=project.task_type)
    records = {(r["name"], r["version"]): r for r in rows(out / "prompts.jsonl")}
    assert set(records) == {("paper-wording", 1), (shipped.name, shipped.version)}
    record = records[("paper-wording", 1)]
    assert record["template"] == paper.template and record["system"] == paper.system
    assert record["output_schema"] == SCHEMA and record["parameters"] == paper.parameters
    assert record["fingerprint"] == paper.fingerprint and record["key"] == "paper-wording@1"
    assert record["judges"] == ["gpt-paper"]
    assert records[(shipped.name, shipped.version)]["builtin"] == "v1"
    study = json.loads((out / "study.json").read_text())
    refs = {j["name"]: j.get("prompt") for j in study["judges"]}
    assert refs == {
        "gpt-paper": {"name": "paper-wording", "version": 1},
        "gpt-shipped": {"name": shipped.name, "version": shipped.version},
    }
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["files"]["prompts.jsonl"]["rows"] == 2
    assert "2 prompt templates" in (out / "README.md").read_text()


def test_a_fresh_instance_gets_the_bundles_prompt_and_its_judge_and_results_use_it(
    judged, tmp_path
):
    project, paper = judged
    out = written(project, tmp_path)
    slug = project.slug
    forget(project)
    paper.delete()  # an instance that never had the wording
    call_command("bundle_load", str(out))
    loaded = Project.objects.get(slug=slug)
    judge = Judge.objects.get(project=loaded, name="gpt-paper")
    assert judge.prompt is not None and judge.prompt.fingerprint == paper.fingerprint
    assert (judge.prompt.name, judge.prompt.version) == ("paper-wording", 1)
    assert judge.prompt.output_schema == SCHEMA and judge.prompt_version == "paper-wording@1"
    result = JudgeResult.objects.get(judge=judge)
    assert result.prompt_version == judge.prompt_version
    assert Judge.objects.get(project=loaded, name="gpt-shipped").prompt_version == "v1"


def test_a_bundle_never_changes_a_template_of_this_instance(judged, tmp_path):
    project, paper = judged
    out = written(project, tmp_path)
    slug = project.slug
    forget(project)
    # Here "paper-wording" version 1 is another wording (another team's record).
    PromptTemplate.objects.filter(pk=paper.pk).update(template="Ours: {claim}", fingerprint="x")
    call_command("bundle_load", str(out))
    mine = PromptTemplate.objects.get(pk=paper.pk)
    assert mine.template == "Ours: {claim}" and mine.fingerprint == "x"
    loaded = Project.objects.get(slug=slug)
    judge = Judge.objects.get(project=loaded, name="gpt-paper")
    assert judge.prompt.name == f"paper-wording ({slug})" and judge.prompt.pk != paper.pk
    assert judge.prompt.fingerprint == paper.fingerprint
    assert JudgeResult.objects.get(judge=judge).prompt_version == judge.prompt.key
    assert not Judge.objects.filter(prompt=mine).exists()


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda r: {**r, "template": "Leak {secret}"}, "placeholder {secret}"),
        (lambda r: {**r, "template": "Claim: {claim} (edited)"}, "fingerprint"),
        (lambda r: {**r, "system": "x" * 100_001}, "system must be text of at most"),
        (lambda r: {**r, "parameters": {"base_url": "http://evil"}}, "parameters.base_url"),
        (lambda r: {**r, "task_type": "stance"}, "task_type"),
        (lambda r: {**r, "output_schema": {"type": 7}}, "output_schema"),
    ],
)
def test_a_crafted_prompt_is_refused_naming_its_line_and_field(judged, tmp_path, change, words):
    project, paper = judged
    out = written(project, tmp_path)
    slug = project.slug
    forget(project)
    before = list(PromptTemplate.objects.values_list("pk", "fingerprint"))

    def crafted(records):
        return [change(r) if r["name"] == "paper-wording" else r for r in records]

    rewrite(out, "prompts.jsonl", crafted)
    with pytest.raises(CommandError, match="prompts.jsonl line") as refused:
        call_command("bundle_load", str(out))
    assert words in str(refused.value) and "Nothing was loaded" in str(refused.value)
    assert not Project.objects.filter(slug=slug).exists()
    assert list(PromptTemplate.objects.values_list("pk", "fingerprint")) == before


def test_a_bundle_written_before_prompts_were_bundled_still_loads(judged, tmp_path):
    project, _ = judged
    out = written(project, tmp_path)
    slug = project.slug
    forget(project)
    (out / "prompts.jsonl").unlink()
    (out / "prompts.parquet").unlink()
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["files"]["prompts.jsonl"], manifest["files"]["prompts.parquet"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    call_command("bundle_load", str(out))
    judge = Judge.objects.get(project__slug=slug, name="gpt-paper")
    assert judge.prompt is None and judge.prompt_version == "paper-wording@1"
