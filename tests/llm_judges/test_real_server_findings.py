"""What running the LLM judge against real OpenAI-compatible servers (transformers serve,
llama-cpp-python's server, a tiny random model) found, each case reproduced with the stub
chat-completions server over HTTP through the real openai client, on PostgreSQL (issue 11)."""

import pytest

from llm_judges import selectors
from llm_judges.backends import llm as llm_module
from llm_judges.models import JudgeCall, JudgeResult, JudgeRun
from llm_judges.parameters import clean_parameters
from llm_judges.services.batch_engine import REFUSED_ITEMS, TRUNCATED
from llm_judges.services.safe_text import db_safe_text, db_safe_value
from tests.llm_judges.conftest import make_llm_judge, start
from tests.llm_judges.stub_llm import Reply, claim_of

CLAIM = "Claim number {} is accurate."


def result_of(run, n: int) -> JudgeResult:
    return JudgeResult.objects.get(run=run, item__external_id=f"claim-{n}")


# --- NUL bytes and lone surrogates ---------------------------------------------------------------


def test_a_reply_with_nul_bytes_and_lone_surrogates_is_stored_cleaned_and_the_batch_ends(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    """PostgreSQL refused the whole batch's write ("A string literal cannot contain NUL"): the
    valid answers of the batch were lost and the run stayed running."""
    judge = make_llm_judge(stub, project, concurrency=3)
    replies = {
        CLAIM.format(1): "random\x00 words \ud800 and \x00more",
        CLAIM.format(2): '{"sentences": [2]}\x00',  # NUL after the JSON: not the clean reply
    }
    stub.responder = lambda request: (
        Reply(content=replies[claim_of(request)]) if claim_of(request) in replies else Reply()
    )
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE
    assert (run.answered_count, run.unparseable_count, run.failed_count) == (3, 2, 0)
    garbage = result_of(run, 1)
    assert garbage.status == JudgeResult.Status.UNPARSEABLE
    assert garbage.raw == "random words \ufffd and more"
    assert garbage.detail == {"raw_cleaned": {"nul": 2, "lone_surrogates": 1}}
    trailing = result_of(run, 2)
    assert trailing.status == JudgeResult.Status.UNPARSEABLE
    assert trailing.raw == '{"sentences": [2]}'
    assert trailing.detail == {"raw_cleaned": {"nul": 1}}
    assert result_of(run, 0).detail == {}  # nothing recorded when nothing was removed
    assert selectors.judge_answers(project=project, judge=judge)["claim-0"] == {
        "sentences": [1],
        "none": False,
    }


def test_nul_and_lone_surrogates_are_removed_from_answers_and_counted():
    assert db_safe_text(text="plain") == ("plain", {})
    value, found = db_safe_value(value={"a\x00": ["x\x00y", "\udfff", 3, None], "b": {"c": "\x00"}})
    assert value == {"a": ["xy", "\ufffd", 3, None], "b": {"c": ""}}
    assert found == {"nul": 3, "lone_surrogates": 1}


def test_a_server_message_with_a_nul_is_stored_without_it(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project)
    stub.responder = lambda request: Reply(
        status=400, body={"error": {"message": "bad\x00 prompt"}}
    )
    run = start(
        judge, project, django_capture_on_commit_callbacks, filters={"external_ids": ["claim-0"]}
    )
    result = result_of(run, 0)
    assert (result.error, result.error_excerpt) == (
        "HTTP 400: request refused for this item",
        "bad prompt",
    )


# --- the server's own error message --------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message", "error"),
    [
        (
            {"detail": "The prompt is too long for this item."},
            "The prompt is too long for this item.",
            "HTTP 400: the prompt is too long for the model",
        ),
        (
            {
                "error": {
                    "message": "This model's maximum context length is 4096 tokens.",
                    "type": "x",
                }
            },
            "This model's maximum context length is 4096 tokens.",
            "HTTP 400: the prompt is too long for the model",
        ),
        (
            {"error": "prompt rejected"},
            "prompt rejected",
            "HTTP 400: request refused for this item",
        ),
        (
            {"detail": [{"loc": ["body", "messages"], "msg": "too long"}, {"msg": "really"}]},
            "too long; really",
            "HTTP 400: the prompt is too long for the model",
        ),
    ],
)
def test_a_per_item_error_keeps_the_servers_own_message_for_staff(
    project, items, stub, api_key, django_capture_on_commit_callbacks, body, message, error
):
    """The server's words are kept (sanitised) for staff; researchers see the status and our
    error class (issue 24)."""
    judge = make_llm_judge(stub, project)
    stub.responder = lambda request: (
        Reply(status=400, body=body) if claim_of(request) == CLAIM.format(1) else Reply()
    )
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE
    assert (run.answered_count, run.failed_count) == (4, 1)
    result = result_of(run, 1)
    assert (result.error, result.error_excerpt) == (error, message)
    call = JudgeCall.objects.get(run=run, item__external_id="claim-1")
    assert (call.outcome, call.http_status, call.error, call.error_excerpt) == (
        "permanent",
        400,
        error,
        message,
    )


# --- a request the server refuses as a whole -----------------------------------------------------


def test_a_wrong_model_name_fails_the_run_once_with_the_servers_message(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    """transformers serve pinned to one model answers 400 with FastAPI's {"detail": …}."""
    judge = make_llm_judge(stub, project)
    pinned = "Server is pinned to 'tiny-random'; requested 'stub-model'."
    stub.responder = lambda request: Reply(status=400, body={"detail": pinned})
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.FAILED
    assert run.error == "HTTP 400: the model name is refused (item claim-0)"
    assert run.error_excerpt == pinned
    assert len(stub.chat_requests()) == 1  # not item by item
    assert JudgeCall.objects.get(run=run).outcome == "fatal"


def test_an_unknown_model_in_openais_words_fails_the_run_once(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project)
    stub.responder = lambda request: Reply(
        status=400, body={"error": {"message": "The model `stub-model` does not exist."}}
    )
    run = start(judge, project, django_capture_on_commit_callbacks)
    assert run.status == JudgeRun.Status.FAILED
    assert run.error == "HTTP 400: the model name is refused (item claim-0)"
    assert run.error_excerpt == "The model `stub-model` does not exist."
    assert len(stub.chat_requests()) == 1


def test_the_same_refusal_on_the_first_items_fails_the_run_once(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project)
    stub.responder = lambda request: Reply(status=422, body={"detail": "Bad request."})
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.FAILED
    assert run.error.startswith(
        "HTTP 422: request refused for this item (refused for the first 3 items alike)"
    )
    assert run.error_excerpt == "Bad request."
    assert len(stub.chat_requests()) == REFUSED_ITEMS  # of 5 items
    assert run.failed_count == REFUSED_ITEMS


def test_the_same_prompt_too_long_error_on_the_first_items_fails_them_one_by_one(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project)
    stub.responder = lambda request: Reply(
        status=400, body={"error": {"message": "The prompt is too long."}}
    )
    run = start(judge, project, django_capture_on_commit_callbacks)

    # every item failed (one by one): the run failed, and says why (issue 32)
    assert run.status == JudgeRun.Status.FAILED
    assert run.error.startswith(
        "Every item judged failed: 5 × the prompt is too long for the model"
    )
    assert run.failed_count == 5
    assert len(stub.chat_requests()) == 5


def test_refusals_after_a_reply_fail_item_by_item(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project)
    stub.responder = lambda request: (
        Reply()
        if claim_of(request) == CLAIM.format(0)
        else Reply(status=422, body={"detail": "Bad request."})
    )
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE
    assert (run.answered_count, run.failed_count) == (1, 4)
    assert len(stub.chat_requests()) == 5


@pytest.mark.parametrize(
    ("status", "message", "refused"),
    [
        (400, "Server is pinned to 'a'; requested 'b'.", True),
        (400, "The model `m` does not exist", True),
        (400, "unknown model served here: stub-model", True),
        (400, "This model's maximum context length is 4096 tokens.", False),
        (400, "stub error 400", False),
        (500, "response_format: Input should be 'text' or 'json_object'", True),
        (500, "1 validation error for CreateChatCompletionRequest", True),
        (500, "CUDA out of memory", False),
        (503, "loading", False),
        (401, "bad key", True),
    ],
)
def test_which_errors_refuse_the_request_as_a_whole(status, message, refused):
    assert (
        llm_module.refuses_the_request(status=status, message=message, model="stub-model")
        is refused
    )


# --- finish reason -------------------------------------------------------------------------------


def test_the_finish_reason_is_recorded_and_a_truncated_reply_is_unparseable_unless_complete(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project)
    replies = {
        CLAIM.format(1): Reply(content='{"sentences": [2, ', finish_reason="length"),
        CLAIM.format(2): Reply(content='{"sentences": [3]}', finish_reason="length"),
        CLAIM.format(3): Reply(content="2, 3 and then it goes on", finish_reason="length"),
    }
    stub.responder = lambda request: replies.get(claim_of(request), Reply())
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE
    assert (run.answered_count, run.unparseable_count) == (3, 2)
    cut = result_of(run, 1)
    assert (cut.status, cut.finish_reason, cut.raw) == (
        "unparseable",
        "length",
        '{"sentences": [2, ',
    )
    assert cut.error.startswith(TRUNCATED)
    complete = result_of(run, 2)
    assert (complete.status, complete.finish_reason) == ("ok", "length")
    assert complete.answer == {"sentences": [2], "none": False}
    assert result_of(run, 3).status == "unparseable"
    assert result_of(run, 0).finish_reason == "stop"
    reasons = dict(
        JudgeCall.objects.filter(run=run).values_list("item__external_id", "finish_reason")
    )
    assert reasons == {
        "claim-0": "stop",
        "claim-1": "length",
        "claim-2": "length",
        "claim-3": "length",
        "claim-4": "stop",
    }
    assert selectors.run_usage(run=run)["truncated"] == 3


# --- structured output modes ---------------------------------------------------------------------


def test_json_object_schema_sends_llama_cpps_response_format(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project, structured_output="json_object_schema")
    run = start(
        judge, project, django_capture_on_commit_callbacks, filters={"external_ids": ["claim-0"]}
    )

    sent = stub.chat_requests()[0]["json"]["response_format"]
    assert sent["type"] == "json_object"
    assert sent["schema"]["required"] == ["sentences"]
    assert sent["schema"]["properties"]["sentences"]["items"]["enum"] == [-1, 1, 2, 3, 4]
    assert run.structured_output == "json_object_schema"


@pytest.mark.parametrize(
    ("given", "mode"), [(True, "json_schema"), (False, "none"), ("none", "none")]
)
def test_the_structured_output_setting_is_a_mode_and_old_yes_no_values_still_read(given, mode):
    parameters = clean_parameters("llm", {"structured_output": given})
    assert parameters["structured_output"] == mode


def test_an_unknown_structured_output_mode_is_refused():
    from rest_framework import serializers

    with pytest.raises(serializers.ValidationError, match="structured_output"):
        clean_parameters("llm", {"structured_output": "grammar"})


def test_the_run_counts_the_replies_that_matched_the_schema(
    project, items, stub, api_key, django_capture_on_commit_callbacks, client, researcher
):
    """transformers serve ignores response_format: its replies are valid answers in the bare
    format, or JSON in a fence, but not what the schema asked for; the run shows it."""
    judge = make_llm_judge(stub, project)
    replies = {
        CLAIM.format(1): Reply(content="2"),  # the bare format: an answer, not the schema
        CLAIM.format(2): Reply(content='```json\n{"sentences": [2]}\n```'),
        CLAIM.format(3): Reply(content='{"sentences": [2], "why": "extra"}'),  # extra field
    }
    stub.responder = lambda request: replies.get(claim_of(request), Reply())
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert (run.answered_count, run.schema_valid_count) == (5, 2)
    valid = dict(
        JudgeResult.objects.filter(run=run).values_list("item__external_id", "schema_valid")
    )
    assert valid == {
        "claim-0": True,
        "claim-1": False,
        "claim-2": False,
        "claim-3": False,
        "claim-4": True,
    }
    (listed,) = selectors.runs_for_project(project=project)
    progress = selectors.progress_of(run=listed)
    assert (progress["structured_output"], progress["schema_valid"], progress["done"]) == (
        "json_schema",
        2,
        5,
    )
    client.force_login(researcher)
    page = client.get(f"/p/{project.slug}/judges/").content.decode()
    assert "structured output json_schema" in page
    assert '<span class="schema-valid">2</span> of <span class="schema-replies">5</span>' in page


def test_a_500_refusing_the_response_format_fails_the_run_once_without_retries(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    """llama-cpp-python answers response_format json_schema with HTTP 500."""
    judge = make_llm_judge(stub, project, max_attempts=4)
    message = "response_format.type: Input should be 'text' or 'json_object'"
    stub.responder = lambda request: Reply(status=500, body={"error": {"message": message}})
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.FAILED
    assert run.error == "HTTP 500: structured output refused (item claim-0)"
    assert run.error_excerpt == message
    assert len(stub.chat_requests()) == 1


# --- seed ----------------------------------------------------------------------------------------


def test_the_seed_is_sent_and_recorded_with_the_run_and_each_result(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project, seed=1234)
    run = start(
        judge,
        project,
        django_capture_on_commit_callbacks,
        filters={"external_ids": ["claim-0", "claim-1"]},
    )

    assert [r["json"]["seed"] for r in stub.chat_requests()] == [1234, 1234]
    assert run.seed == 1234
    assert set(JudgeResult.objects.filter(run=run).values_list("seed", flat=True)) == {1234}


def test_without_a_seed_none_is_sent(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project)
    run = start(
        judge, project, django_capture_on_commit_callbacks, filters={"external_ids": ["claim-0"]}
    )
    assert "seed" not in stub.chat_requests()[0]["json"]
    assert run.seed is None
