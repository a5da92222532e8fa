"""Judge prompts: the per-task-type registry (each task type's own rules are tested in its
package's tests, e.g. ``tests/task_types/citation_recovery/test_judging.py``)."""

from types import SimpleNamespace

import pytest

from annotation import task_types
from llm_judges import prompts

ALL_TASK_TYPES = task_types.all_task_types()


@pytest.mark.parametrize("task_type", ALL_TASK_TYPES, ids=lambda t: t.slug)
def test_every_task_type_has_a_judge_prompt_whose_default_version_exists(task_type):
    prompt = prompts.get(task_type.slug)
    prompt.version(prompt.default_version)
    assert "llm" in prompt.kinds


@pytest.mark.parametrize("task_type", ALL_TASK_TYPES, ids=lambda t: t.slug)
def test_every_judge_prompt_builds_messages_and_a_schema_for_the_demo_item(task_type):
    prompt = prompts.get(task_type.slug)
    config = task_type.validate_config({})
    payload = task_type.validate_payload(task_type.demo_payload())
    prepared = task_type.prepare(dict(payload), config=config)[0]
    item = SimpleNamespace(payload=prepared.payload, prepared=prepared.prepared, gold=prepared.gold)
    messages = prompt.messages(item, prompt.default_version)
    assert messages[-1]["role"] == "user" and messages[-1]["content"].strip()
    response_format = prompt.response_format(item, prompt.default_version)
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["schema"]["type"] == "object"
    # the prompt never shows the gold answer
    assert "gold" not in repr(messages).lower()


def test_asking_for_a_task_type_without_a_prompt_names_the_known_ones():
    with pytest.raises(prompts.PromptNotFound, match=r"'nope'.*citation_recovery"):
        prompts.get("nope")


@pytest.mark.parametrize("task_type", ALL_TASK_TYPES, ids=lambda t: t.slug)
def test_every_task_type_declares_its_placeholders_and_provides_each_for_the_demo_item(task_type):
    """Prompts as data: a template may use exactly the placeholders the task type declares,
    and ``fields(item)`` gives every one of them a value for any item."""
    prompt = prompts.get(task_type.slug)
    assert prompt.fields is not None and prompt.placeholders
    config = task_type.validate_config({})
    payload = task_type.validate_payload(task_type.demo_payload())
    prepared = task_type.prepare(dict(payload), config=config)[0]
    item = SimpleNamespace(
        payload=prepared.payload,
        prepared=prepared.prepared,
        gold=prepared.gold,
        project=SimpleNamespace(config=config),
    )
    assert set(prompt.fields(item)) == set(prompt.placeholders)
    shipped = prompt.version(prompt.default_version)
    for text in (shipped.system, shipped.user, *shipped.variants.values()):
        assert not prompts.unknown_placeholders(text, prompt.placeholders)


def test_rendering_replaces_named_placeholders_only():
    assert prompts.render("{a} {{b}} {a}", {"a": 1}) == "1 {b} 1"
    with pytest.raises(prompts.PlaceholderError, match=r"\{b\}"):
        prompts.render("{b}", {"a": 1})
    assert prompts.placeholders_in("{x}{y}{x}") == ["x", "y"]


def _bare_prompt(**overrides) -> prompts.JudgePrompt:
    wording = prompts.PromptVersion(system="", user="Claim: {claim}")
    fields = {
        "task_type": "nowhere",
        "versions": {"v1": wording},
        "default_version": "v1",
        "response_format": lambda item, version: {},
        "parse": lambda text, item: {},
        "placeholders": {"claim": "the claim"},
        "fields": lambda item: {"claim": item.claim},
        **overrides,
    }
    return prompts.JudgePrompt(**fields)


def test_a_judge_prompt_without_placeholders_or_fields_is_refused():
    with pytest.raises(TypeError, match="fields"):
        prompts.JudgePrompt(
            task_type="nowhere",
            versions={},
            default_version="v1",
            response_format=lambda item, version: {},
            parse=lambda text, item: {},
            placeholders={},
        )
    with pytest.raises(ValueError, match="nowhere: the judge prompt declares no placeholders"):
        prompts.register(_bare_prompt(placeholders={}))
    with pytest.raises(ValueError, match=r"nowhere v1: placeholder \{claim\} is not declared"):
        prompts.register(_bare_prompt(placeholders={"evidence": "the evidence"}))
    assert "nowhere" not in prompts.prompt_registry


def test_a_presentation_is_passed_to_the_task_type_never_set_on_the_item():
    """Issue 25: ``item_fields``, ``item_response_format``, ``parse_reply`` and ``messages`` pass
    a declared presentation on as the keyword ``presentation``; the usual one ("") calls the task
    type's functions as they are, so task types without presentations need no parameter."""

    def fields(item, *, presentation=""):
        return {"claim": item.claim[::-1] if presentation == "mirrored" else item.claim}

    def response_format(item, version, *, presentation=""):
        return {"presentation": presentation}

    def parse(text, item, *, presentation=""):
        return {"text": text, "presentation": presentation}

    prompt = _bare_prompt(
        fields=fields, response_format=response_format, parse=parse, presentations=("mirrored",)
    )
    item = SimpleNamespace(claim="abc")
    assert prompt.messages(item, "v1", presentation="mirrored") == [
        {"role": "user", "content": "Claim: cba"}
    ]
    assert prompt.item_fields(item) == {"claim": "abc"}
    assert prompt.item_response_format(item, "v1", presentation="mirrored") == {
        "presentation": "mirrored"
    }
    assert prompt.parse_reply("x", item, presentation="mirrored")["presentation"] == "mirrored"
    assert vars(item) == {"claim": "abc"}  # nothing set on the item
    with pytest.raises(LookupError, match="no presentation 'sideways' \\(known: mirrored\\)"):
        prompt.item_fields(item, presentation="sideways")
    plain = _bare_prompt()  # no presentations: its one-argument functions are called as is
    assert plain.messages(item, "v1") == [{"role": "user", "content": "Claim: abc"}]
    with pytest.raises(LookupError, match="no presentation 'mirrored' \\(known: none\\)"):
        plain.parse_reply("x", item, presentation="mirrored")


def test_a_prompt_with_presentations_whose_functions_cannot_take_one_is_refused():
    with pytest.raises(ValueError, match="nowhere: .* its fields must take .* presentation"):
        prompts.register(_bare_prompt(presentations=("mirrored",)))
    assert "nowhere" not in prompts.prompt_registry


def test_messages_are_derived_from_the_version_the_fields_and_the_items_variant():
    wording = prompts.PromptVersion(
        system="Judge {claim}.", user="Main: {claim}", variants={"short": "Short: {claim}"}
    )
    prompt = _bare_prompt(versions={"v1": wording}, variant=lambda item: item.mode)
    main, short = SimpleNamespace(claim="a", mode=""), SimpleNamespace(claim="b", mode="short")
    assert prompt.messages(main, "v1") == [
        {"role": "system", "content": "Judge a."},
        {"role": "user", "content": "Main: a"},
    ]
    assert prompt.messages(short, "v1")[1] == {"role": "user", "content": "Short: b"}
    with pytest.raises(LookupError, match="no version 'v2'"):
        prompt.messages(main, "v2")
