"""Citation recovery's judges: the prompt, the reply parser, the NLI and similarity rules."""

from types import SimpleNamespace

import pytest

from annotation import task_types
from llm_judges import prompts
from llm_judges.prompts import Unparseable

CR = prompts.get("citation_recovery")


def cr_item(masked: int = 1):
    task_type = task_types.get("citation_recovery")
    payload = task_type.validate_payload({**task_type.demo_payload(), "masked_evidence": masked})
    (prepared,) = task_type.prepare(dict(payload), config={"masking": "sample"})
    return SimpleNamespace(payload=prepared.payload, prepared=prepared.prepared, gold=prepared.gold)


def test_an_unknown_prompt_version_is_refused_with_the_known_ones():
    with pytest.raises(LookupError, match=r"'v9'.*v1"):
        CR.version("v9")


def test_the_prompt_shows_the_masked_evidence_and_numbered_sentences():
    item = cr_item(masked=1)
    text = CR.messages(item, "v1")[1]["content"]
    assert "Masked evidence passage:\nThe 2023 report lists 40 km of new lanes." in text
    assert "1. The city added 40 km of lanes in 2023." in text
    assert "3. So the network grew by half, not double [2]." in text  # other markers stay
    assert "Most new lanes are painted" not in text
    assert "Claim: The city doubled its bike lanes in 2023." in text
    assert "Veracity: half-true" in text


def test_the_fingerprint_is_the_full_sha256_of_the_wording():
    import hashlib
    import json

    v1 = CR.version("v1")
    text = json.dumps(
        {
            "system": v1.system,
            "template": v1.user,
            "variants": {},
            "output_schema": None,
            "parameters": {},
        },
        ensure_ascii=False,
        sort_keys=True,
    )
    assert CR.fingerprint("v1") == hashlib.sha256(text.encode()).hexdigest()
    assert len(CR.fingerprint("v1")) == 64


@pytest.mark.parametrize(
    ("reply", "sentences", "none"),
    [
        ('{"sentences": [1, 3]}', [0, 2], False),
        ('{"sentences": [3, 1, 3]}', [0, 2], False),
        ('{"sentences": [-1]}', [], True),
        ('{"sentences": []}', [], True),
        ("[2]", [1], False),
        ("2", [1], False),
        ("-1", [], True),
        ("1, 3", [0, 2], False),
        ("[1 and 3].", [0, 2], False),
        ('```json\n{"sentences": [4]}\n```', [3], False),
        ('\n  {"sentences": [4]}  \n', [3], False),
        ("```\n2, 4\n```", [1, 3], False),
    ],
)
def test_replies_are_read_into_zero_based_sentences(reply, sentences, none):
    assert CR.parse(reply, cr_item()) == {"sentences": sentences, "none": none}


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("The second sentence.", "neither JSON"),
        ('{"answer": [1]}', "no 'sentences' field"),
        ('{"sentences": "1"}', "not a list"),
        ('{"sentences": [1.5]}', "not a sentence number"),
        ('{"sentences": [true]}', "not a sentence number"),
        ('{"sentences": [-1, 2]}', "mixed"),
        ('{"sentences": [5]}', "sentence 5 does not exist (the explanation has 4)"),
        ('{"sentences": [0]}', "sentence 0 does not exist"),
        ('{"sentences": [1', "neither JSON"),  # cut off by max_tokens
        ("", "neither JSON"),
        # Strict: an answer is the whole reply, never picked out of prose (issue 11).
        ('Sure! Here is my answer: {"sentences": [2]} Hope it helps.', "neither JSON"),
        ("random words [] more words", "neither JSON"),
        ("Clinton 16 [2] years", "neither JSON"),
        ('```json\n{"sentences": [2]}\n``` and sentence 3 too', "neither JSON"),
    ],
)
def test_replies_that_cannot_be_read_say_why(reply, reason):
    with pytest.raises(Unparseable, match=reason.replace("(", r"\(").replace(")", r"\)")):
        CR.parse(reply, cr_item())


def test_nli_pairs_put_the_masked_evidence_against_each_sentence_without_markers():
    pairs = CR.pairs(cr_item(masked=1), "v1")
    assert pairs[0] == (
        "The 2023 report lists 40 km of new lanes.",
        "The city added 40 km of lanes in 2023.",
    )
    assert pairs[2][1] == "So the network grew by half, not double."
    assert len(pairs) == 4


def test_nli_keeps_the_entailed_sentences_and_similarity_the_close_ones():
    item = cr_item()
    labels = ["entailment", "neutral", "entailment", "contradiction"]
    assert CR.from_nli(item, labels, [{}] * 4) == {"sentences": [0, 2], "none": False}
    assert CR.from_nli(item, ["neutral"] * 4, [{}] * 4) == {"sentences": [], "none": True}
    assert CR.from_similarity(item, [0.7, 0.2, 0.5, 0.49], 0.5) == {
        "sentences": [0, 2],
        "none": False,
    }


def test_the_setting_is_the_projects_masking_mode():
    assert CR.setting({"masking": "full"}) == "full"
    assert CR.setting({}) == "sample"
