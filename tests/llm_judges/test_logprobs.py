"""Issue 27: an LLM judge's token log-probabilities, where the server returns them, give the
probability of its answer (stored on the result) and its uncertainty for active sampling; a
server without them, or that refuses the parameter, keeps the judge working as before."""

import math

import pytest

from llm_judges.backends.logprobs import answer_probability, uncertainty, value_spans
from llm_judges.models import JudgeCall, JudgeResult, JudgeRun
from llm_judges.services import item_uncertainties
from tests.llm_judges.conftest import make_llm_judge, start
from tests.llm_judges.stub_llm import Reply, claim_of, error_body

REPLY = '{"sentences": [2]}'


def tokens_for(p: float) -> list[tuple[str, float]]:
    """The tokens of REPLY, the value "2" with probability ``p``; the keys and punctuation are
    given probabilities below 1 too, which must not count (the schema fixes them)."""
    return [
        ('{"', math.log(0.9)),
        ("sent", math.log(0.8)),
        ("ences", 0.0),
        ('":', 0.0),
        (" [", math.log(0.95)),
        ("2", math.log(p)),
        ("]}", 0.0),
    ]


def test_value_spans_are_the_values_not_the_keys_nor_the_quotes():
    text = '{"stance": "supports", "scores": [1, -2.5], "ok": true, "note": null}'
    assert [text[a:b] for a, b in value_spans(text)] == ["supports", "1", "-2.5", "true", "null"]
    assert value_spans("The answer is 2.") is None  # not JSON: nothing read


def test_the_answer_probability_is_the_product_over_its_values_tokens():
    assert answer_probability(text=REPLY, tokens=tokens_for(0.7)) == {
        "label_probability": pytest.approx(0.7),
        "values": [pytest.approx(0.7)],
    }
    two = '{"stance": "supports", "n": 3}'
    tokens = [('{"stance": "', 0.0), ("supp", math.log(0.5)), ("orts", math.log(0.8))]
    tokens += [('", "n": ', math.log(0.1)), ("3", math.log(0.5)), ("}", 0.0)]
    found = answer_probability(text=two, tokens=tokens)
    assert found["values"] == [pytest.approx(0.4), pytest.approx(0.5)]
    assert found["label_probability"] == pytest.approx(0.2)
    assert uncertainty({"logprobs": found}) == pytest.approx(0.8)


def test_no_probability_without_tokens_or_when_they_do_not_spell_the_reply():
    assert answer_probability(text=REPLY, tokens=None) is None
    assert answer_probability(text=REPLY, tokens=[("{", 0.0)]) is None
    assert answer_probability(text="maybe", tokens=[("maybe", -0.1)]) is None
    assert uncertainty({}) is None
    assert uncertainty({"logprobs": {"label_probability": 7}}) is None  # not a probability


@pytest.fixture
def judge(stub, api_key, project):
    return make_llm_judge(stub, project)


PROBABILITY = {"0": 0.99, "1": 0.6, "2": 0.3, "3": 0.95, "4": 0.5}


def number_of(request) -> str:
    return claim_of(request).split()[2]  # "Claim number 3 is accurate."


def by_claim(request):
    return Reply(content=REPLY, logprobs=tokens_for(PROBABILITY[number_of(request)]))


def test_a_server_with_logprobs_gives_each_result_its_answers_probability_and_uncertainty(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    stub.responder = by_claim
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE and run.answered_count == 5
    body = stub.chat_requests()[0]["json"]
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    stored = {
        result.item.external_id: result.detail["logprobs"]["label_probability"]
        for result in JudgeResult.objects.filter(run=run).select_related("item")
    }
    assert stored == {f"claim-{c}": pytest.approx(p) for c, p in PROBABILITY.items()}
    # Active sampling: one LLM judge, no disagreement to count: 1 − p is the item's uncertainty.
    ids = {item.pk: item.external_id.split("-")[1] for item in items}
    assert item_uncertainties(project_id=project.pk) == {
        pk: pytest.approx(1 - PROBABILITY[claim]) for pk, claim in ids.items()
    }


def test_a_server_without_logprobs_keeps_todays_results_and_no_uncertainty(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    run = start(judge, project, django_capture_on_commit_callbacks)  # "logprobs": null

    assert run.status == JudgeRun.Status.DONE and run.answered_count == 5
    assert all("logprobs" not in r.detail for r in JudgeResult.objects.filter(run=run))
    assert item_uncertainties(project_id=project.pk) == {}  # one judge, nothing to go by


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "logprobs is not supported with this model."),  # OpenAI's reasoning models
        (422, "Extra inputs are not permitted"),  # a strict pydantic server
        (400, "Unknown parameter: 'top_logprobs'."),
    ],
)
def test_a_server_that_refuses_logprobs_gets_the_call_again_without_them(
    project, items, stub, api_key, django_capture_on_commit_callbacks, status, message
):
    def refusing(request):
        if "logprobs" in request["json"] or "top_logprobs" in request["json"]:
            return Reply(status=status, body=error_body(status, message))
        return Reply(content=REPLY)

    stub.responder = refusing
    judge = make_llm_judge(stub, project, name=f"refused-{status}")
    run = start(judge, project, django_capture_on_commit_callbacks)

    assert run.status == JudgeRun.Status.DONE
    assert (run.answered_count, run.failed_count) == (5, 0)
    asked = [("logprobs" in r["json"]) for r in stub.chat_requests()]
    assert asked == [True, False, False, False, False, False]  # refused once, then not asked
    assert set(JudgeCall.objects.filter(run=run).values_list("outcome", flat=True)) == {"ok"}


def test_zero_top_logprobs_asks_for_none(
    project, items, stub, api_key, django_capture_on_commit_callbacks
):
    judge = make_llm_judge(stub, project, top_logprobs=0)
    start(judge, project, django_capture_on_commit_callbacks, filters={"external_ids": ["claim-0"]})
    (request,) = stub.chat_requests()
    assert "logprobs" not in request["json"] and "top_logprobs" not in request["json"]


def test_an_item_specific_400_is_not_taken_for_a_refusal_of_logprobs(
    project, items, judge, stub, django_capture_on_commit_callbacks
):
    def too_long(request):
        if number_of(request) == "1":
            message = "This model's maximum context length is 4096 tokens."
            return Reply(status=400, body=error_body(400, message))
        return by_claim(request)

    stub.responder = too_long
    run = start(judge, project, django_capture_on_commit_callbacks)
    assert (run.answered_count, run.failed_count) == (4, 1)
    assert all("logprobs" in r["json"] for r in stub.chat_requests())  # still asked
    assert len(stub.chat_requests()) == 5
