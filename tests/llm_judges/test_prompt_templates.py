"""Prompts as data: shipped records, placeholders checked on every save path, versions that a
run freezes, loading from a file, preview, and a paper's prompt run end to end against the
stub chat-completions server with no code change."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from llm_judges import prompts, selectors, services
from llm_judges.models import Judge, JudgeResult, JudgeRun, PromptTemplate, PromptUsed
from studies.services.exports import export_stream
from tests import factories
from tests.conftest import client_for
from tests.llm_judges.conftest import make_llm_judge, start, stub_endpoint
from tests.llm_judges.stub_llm import Reply, user_message
from tests.llm_judges.test_pages import page_client

PAPER_PROMPT = """\
You are given a claim, an explanation split into numbered sentences and one evidence passage.
Claim: {claim}
Evidence: {evidence}
Sentences:
{sentences}
Which of the {sentence_count} sentences should cite the evidence? Reply with JSON like
{{"sentences": [1, 2]}} or {{"sentences": [-1]}}.
"""


@pytest.fixture
def judge(stub, api_key, project):
    return make_llm_judge(stub, project)


def _expected_fingerprint(**content) -> str:
    text = json.dumps(
        {
            "system": content.get("system", ""),
            "template": content["template"],
            "variants": content.get("variants", {}),
            "output_schema": content.get("output_schema"),
            "parameters": content.get("parameters", {}),
        },
        ensure_ascii=False,
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


# --- shipped records --------------------------------------------------------------------------


def test_the_shipped_v1_record_is_created_once_and_renders_exactly_the_builtin_prompt(
    project, items
):
    first = services.shipped_template(task_type="citation_recovery")
    again = services.shipped_template(task_type="citation_recovery", version="v1")
    assert first.pk == again.pk and PromptTemplate.objects.count() == 1
    assert (first.name, first.version, first.key, first.builtin) == (
        "citation_recovery",
        1,
        "v1",
        "v1",
    )
    builtin = prompts.get("citation_recovery")
    assert (
        first.fingerprint
        == builtin.fingerprint("v1")
        == _expected_fingerprint(
            system=builtin.version("v1").system, template=builtin.version("v1").user
        )
    )
    item = items[0]
    preview = selectors.prompt_preview(template=first, item=item)
    assert preview["error"] == ""
    assert preview["messages"] == builtin.messages(item, "v1")
    assert preview["response_format"] == builtin.response_format(item, "v1")


@pytest.mark.parametrize("slug", prompts.prompt_registry.keys())
def test_every_shipped_record_renders_the_builtin_messages_for_the_demo_item(db, slug):
    from tests.factories import demo_item

    item = demo_item(slug)
    record = services.shipped_template(task_type=slug)
    prompt = prompts.get(slug)
    from llm_judges.services.prompt_templates import template_messages

    assert template_messages(template=record, prompt=prompt, item=item) == prompt.messages(
        item, "v1"
    )


def test_an_existing_judge_without_a_template_runs_the_shipped_v1_and_records_it(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    assert judge.prompt is None
    run = start(judge, project, django_capture_on_commit_callbacks)
    shipped = PromptTemplate.objects.get(task_type="citation_recovery", builtin="v1")
    assert (run.prompt, run.prompt_version, run.status) == (shipped, "v1", "done")
    assert run.prompt_fingerprint == shipped.fingerprint and len(run.prompt_fingerprint) == 64
    assert "Masked evidence passage:" in user_message(stub.chat_requests()[0])


# --- placeholders refused at save time, naming them --------------------------------------------


def test_the_service_refuses_a_placeholder_the_task_type_does_not_provide(db):
    with pytest.raises(services.JudgeError) as refused:
        services.prompt_template_save(
            name="typo", task_type="citation_recovery", template="Claim: {claim}\n{evidnce}"
        )
    assert refused.value.field == "template"
    assert "{evidnce}" in refused.value.message
    assert "{evidence}" in refused.value.message  # the ones it provides are listed
    assert not PromptTemplate.objects.exists()


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("{claim.__class__}", "not a named placeholder"),
        ("{0}", "not a named placeholder"),
        ("{claim!r}", "conversion or format spec"),
        ("a { b", "stray brace"),
    ],
)
def test_malformed_placeholders_are_refused_with_a_clear_error(db, template, says):
    with pytest.raises(services.JudgeError, match=says):
        services.prompt_template_save(name="bad", task_type="stance", template=template)


def test_the_model_clean_the_admin_and_the_loader_refuse_an_unknown_placeholder(db, tmp_path):
    record = PromptTemplate(name="m", version=1, task_type="stance", template="{claim} {verdict}")
    with pytest.raises(ValidationError) as refused:
        record.full_clean()
    assert "{verdict}" in str(refused.value.message_dict["template"])

    admin = page_client(factories.UserFactory(is_staff=True, is_superuser=True))
    response = admin.post(
        "/admin/llm_judges/prompttemplate/add/",
        {
            "name": "typo",
            "task_type": "stance",
            "system": "",
            "template": "Claim: {claim}\nAnswer: {verdict}",
            "variants": "{}",
            "output_schema": "null",
            "parameters": "{}",
            "note": "",
        },
    )
    assert response.status_code == 200  # the form again, with the error
    assert "{verdict}" in response.content.decode()

    path = tmp_path / "p.yaml"
    path.write_text("name: typo\ntask_type: stance\ntemplate: 'Claim: {claim} {verdict}'\n")
    with pytest.raises(CommandError, match=r"prompt 1 \(typo\): template: .*\{verdict\}"):
        call_command("load_prompt", str(path))
    assert not PromptTemplate.objects.exists()


# --- versions: a record a run used is immutable ------------------------------------------------


def test_a_prompt_edited_after_a_run_is_a_new_version_and_the_old_results_keep_their_fingerprint(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    template, what = services.prompt_template_save(
        name="paper", task_type="citation_recovery", template=PAPER_PROMPT
    )
    assert (what, template.version, template.key) == ("created", 1, "paper@1")
    judge = services.judge_create(
        project=project,
        name="paper-judge",
        kind="llm",
        model="stub-model",
        endpoint=stub_endpoint(stub, project),
        parameters={"backoff_base": 0},
        prompt=template,
    )
    old_run = start(judge, project, django_capture_on_commit_callbacks)
    old_fingerprint = template.fingerprint
    assert old_run.prompt_fingerprint == old_fingerprint and old_run.prompt_version == "paper@1"

    # the model itself refuses to change a used record
    template.template = PAPER_PROMPT + "Be brief."
    with pytest.raises(PromptUsed):
        template.save()

    # the admin saves the edit as version 2 and moves the judge to it
    admin = page_client(factories.UserFactory(is_staff=True, is_superuser=True))
    response = admin.post(
        f"/admin/llm_judges/prompttemplate/{template.pk}/change/",
        {
            "system": "",
            "template": PAPER_PROMPT + "Be brief.",
            "variants": "{}",
            "output_schema": "null",
            "parameters": '{"temperature": 0.7}',
            "note": "edited",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert admin.get("/admin/llm_judges/prompttemplate/").status_code == 200
    change = admin.get(f"/admin/llm_judges/prompttemplate/{template.pk}/change/")
    assert change.status_code == 200 and "Render for an item" in change.content.decode()
    v1 = PromptTemplate.objects.get(pk=template.pk)
    v2 = PromptTemplate.objects.get(name="paper", version=2)
    assert v1.template == PAPER_PROMPT and v1.fingerprint == old_fingerprint
    assert v2.template.endswith("Be brief.") and v2.parameters == {"temperature": 0.7}
    assert v2.fingerprint != old_fingerprint
    assert v2.fingerprint == _expected_fingerprint(
        template=PAPER_PROMPT + "Be brief.", parameters={"temperature": 0.7}
    )
    judge.refresh_from_db()
    assert (judge.prompt, judge.prompt_version) == (v2, "paper@2")

    new_run = start(judge, project, django_capture_on_commit_callbacks)
    assert (new_run.prompt, new_run.prompt_fingerprint) == (v2, v2.fingerprint)
    assert stub.chat_requests()[-1]["json"]["temperature"] == 0.7  # the template's parameter
    assert user_message(stub.chat_requests()[-1]).endswith("Be brief.")
    old_run.refresh_from_db()
    assert (old_run.prompt_id, old_run.prompt_fingerprint) == (v1.pk, old_fingerprint)
    assert JudgeResult.objects.filter(run=old_run, prompt_version="paper@1").count() == 5
    assert JudgeResult.objects.filter(run=new_run, prompt_version="paper@2").count() == 5

    rows = [
        json.loads(line)
        for line in "".join(export_stream(project=project, fmt="jsonl", coders="judges")).split(
            "\n"
        )
        if line
    ]
    by_version = {(r["judge_prompt_name"], r["judge_prompt_version"]) for r in rows}
    assert by_version == {("paper", "paper@1"), ("paper", "paper@2")}
    fingerprints = {r["judge_prompt_version"]: r["judge_prompt_fingerprint"] for r in rows}
    assert fingerprints == {"paper@1": old_fingerprint, "paper@2": v2.fingerprint}


def test_an_unused_record_is_edited_in_place_and_an_unchanged_one_is_left_alone(db):
    first, _ = services.prompt_template_save(name="p", task_type="stance", template="{claim}")
    same, what = services.prompt_template_save(name="p", task_type="stance", template="{claim}")
    assert (same.pk, what) == (first.pk, "unchanged")
    edited, what = services.prompt_template_save(
        name="p", task_type="stance", template="{claim}\n{response}"
    )
    assert (edited.pk, edited.version, what) == (first.pk, 1, "updated")
    with pytest.raises(services.JudgeError, match="is a stance prompt"):
        services.prompt_template_save(name="p", task_type="ranking", template="{claim}")


# --- load_prompt and a paper's prompt end to end ----------------------------------------------


def test_a_pasted_paper_prompt_runs_end_to_end_with_no_code_change(
    project, items, judge, stub, tmp_path, django_capture_on_commit_callbacks
):
    stub.responder = lambda request: Reply(content='{"sentences": [1, 3]}')
    path = tmp_path / "xing.yaml"
    path.write_text(
        "name: xing-2024\n"
        "task_type: citation_recovery\n"
        "note: the paper's prompt\n"
        "parameters: {temperature: 0, max_tokens: 40, seed: 7}\n"
        "template: |\n" + "".join(f"  {line}\n" for line in PAPER_PROMPT.splitlines())
    )
    # Another project's judge of the same name is not touched by --project's.
    theirs = make_llm_judge(stub, factories.ProjectFactory(), name=judge.name)
    out = []
    call_command(
        "load_prompt", str(path), judge=judge.name, project=project.slug, stdout=_Writer(out)
    )
    template = PromptTemplate.objects.get(name="xing-2024")
    assert f"xing-2024 v1 (citation_recovery): created · fingerprint {template.fingerprint}" in (
        "".join(out)
    )
    judge.refresh_from_db()
    assert judge.prompt == template
    theirs.refresh_from_db()
    assert theirs.prompt is None and theirs.prompt_version == "v1"

    run = start(judge, project, django_capture_on_commit_callbacks)
    assert (run.status, run.answered_count, run.prompt_fingerprint) == (
        "done",
        5,
        template.fingerprint,
    )
    request = stub.chat_requests()[0]
    body, text = request["json"], user_message(request)
    assert [m["role"] for m in body["messages"]] == ["user"]  # the paper has no system message
    assert text.startswith("You are given a claim, an explanation split into numbered")
    assert 'Reply with JSON like\n{"sentences": [1, 2]}' in text  # {{ }} became braces
    assert "Which of the 4 sentences" in text
    assert (body["max_tokens"], body["seed"]) == (40, 7)
    assert body["response_format"]["json_schema"]["name"] == "citation_recovery"
    result = JudgeResult.objects.filter(run=run).first()
    assert result.answer == {"sentences": [0, 2], "none": False} and result.seed == 7

    # loading the same file again changes nothing; the run's record is never touched
    call_command("load_prompt", str(path), stdout=_Writer(out))
    assert "unchanged" in out[-1] and PromptTemplate.objects.filter(name="xing-2024").count() == 1


class _Writer:
    def __init__(self, lines: list):
        self.lines = lines

    def write(self, text: str) -> None:
        self.lines.append(text)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("missing.yaml", None, "no such file"),
        ("bad.json", '{"name": "x",\n "task_type": }', r"bad\.json, line 2, column \d+: not valid"),
        ("bad.yaml", "name: x\ntemplate: [unclosed\n", r"bad\.yaml, line \d+, column \d+"),
        ("extra.yaml", "name: x\ntask_type: stance\ntemplate: '{claim}'\nmodel: y\n", "'model'"),
        ("nameless.yaml", "task_type: stance\ntemplate: '{claim}'\n", "prompt 1: name is missing"),
        ("type.yaml", "name: x\ntask_type: nope\ntemplate: '{claim}'\n", "'nope'"),
        (
            "params.yaml",
            "name: x\ntask_type: stance\ntemplate: '{claim}'\nparameters: {top_k: 3}\n",
            r"Unknown parameter 'top_k'",
        ),
        (
            "schema.yaml",
            "name: x\ntask_type: stance\ntemplate: '{claim}'\noutput_schema: {type: 12}\n",
            "not a valid JSON schema",
        ),
    ],
)
def test_load_prompt_errors_name_the_line_prompt_and_field(db, tmp_path, name, content, says):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(CommandError, match=says):
        call_command("load_prompt", str(path))
    assert not PromptTemplate.objects.exists()


def test_a_file_with_several_prompts_saves_none_when_one_is_invalid(db, tmp_path):
    path = tmp_path / "two.json"
    path.write_text(
        json.dumps(
            [
                {"name": "ok", "task_type": "stance", "template": "{claim}"},
                {"name": "bad", "task_type": "stance", "template": "{nope}"},
            ]
        )
    )
    with pytest.raises(CommandError, match=r"prompt 2 \(bad\).*\{nope\}"):
        call_command("load_prompt", str(path))
    assert not PromptTemplate.objects.exists()


def test_a_custom_output_schema_is_sent_as_structured_output(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    schema = {
        "type": "object",
        "properties": {"sentences": {"type": "array", "items": {"type": "integer"}}},
        "required": ["sentences"],
    }
    template, _ = services.prompt_template_save(
        name="with schema",
        task_type="citation_recovery",
        template=PAPER_PROMPT,
        output_schema=schema,
    )
    judge.prompt = template
    judge.save()
    start(judge, project, django_capture_on_commit_callbacks, filters={"external_ids": ["claim-0"]})
    sent = stub.chat_requests()[0]["json"]["response_format"]
    assert sent["json_schema"]["name"] == "with_schema" and sent["json_schema"]["schema"] == schema


def test_a_template_for_another_task_type_cannot_run_and_nli_judges_take_no_template(
    project, items, judge
):
    other, _ = services.prompt_template_save(name="s", task_type="stance", template="{claim}")
    judge.prompt = other
    judge.save()
    with pytest.raises(services.JudgeError, match="is for stance, not citation_recovery"):
        services.judge_run_start(judge=judge, project=project, enqueue=False)
    with pytest.raises(services.JudgeError, match="for LLM judges"):
        services.judge_create(project=project, name="n", kind="nli", model="x", prompt=other)


# --- preview ------------------------------------------------------------------------------------


def test_the_judges_page_and_the_admin_preview_a_prompt_for_an_item(
    project, researcher, items, judge
):
    template, _ = services.prompt_template_save(
        name="paper", task_type="citation_recovery", template=PAPER_PROMPT
    )
    judge.prompt = template
    judge.save()
    page = page_client(researcher).post(
        f"/p/{project.slug}/judges/",
        {"action": "preview", "judge": judge.pk, "item": "claim-1"},
    )
    text = page.content.decode()
    assert page.status_code == 200
    assert "Which of the 4 sentences should cite the evidence?" in text
    assert template.fingerprint in text
    missing = page_client(researcher).post(
        f"/p/{project.slug}/judges/", {"action": "preview", "judge": judge.pk, "item": "nope"}
    )
    assert "No item with this id in the project." in missing.content.decode()

    admin = page_client(factories.UserFactory(is_staff=True, is_superuser=True))
    url = f"/admin/llm_judges/prompttemplate/{template.pk}/preview/"
    rendered = admin.get(url, {"item": "claim-1", "project": project.slug}).content.decode()
    assert "Which of the 4 sentences should cite the evidence?" in rendered
    assert "No citation_recovery item" in admin.get(url, {"item": "nope"}).content.decode()


def test_the_admin_preview_only_finds_items_of_projects_the_user_researches(project, items):
    template = services.shipped_template(task_type="citation_recovery")
    staff = factories.UserFactory(is_staff=True)
    from django.contrib.auth.models import Permission

    staff.user_permissions.add(*Permission.objects.filter(content_type__app_label="llm_judges"))
    response = page_client(staff).get(
        f"/admin/llm_judges/prompttemplate/{template.pk}/preview/", {"item": "claim-1"}
    )
    assert "No citation_recovery item" in response.content.decode()


def test_the_api_lists_the_run_prompt_and_its_fingerprint(
    project, researcher, items, judge, django_capture_on_commit_callbacks
):
    run = start(judge, project, django_capture_on_commit_callbacks)
    data = client_for(researcher).get(f"/api/projects/{project.slug}/judge-runs/").json()
    (listed,) = data["results"]
    assert (listed["prompt_name"], listed["prompt_fingerprint"]) == (
        "citation_recovery",
        run.prompt_fingerprint,
    )
    assert JudgeRun.objects.get().prompt.builtin == "v1"
    assert Judge.objects.get(pk=judge.pk).prompt_version == "v1"
