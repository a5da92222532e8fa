"""Claim-review statistics: FaStfact's annotation_stats.json shape from plain per-claim rows."""

import json

import pytest

from metrics.claim_review import AGREEMENTS, OPERATIONS, claim_review_stats
from tests.conftest import REPO

PUBLISHED_STATS = REPO / "data" / "fastfact" / "annotation_stats.json"


def claim(action, agreement=None, label=None, reason=None):
    return {
        "action": action,
        "agreement": agreement,
        "annotator_label": label,
        "removal_reason": reason,
    }


SAMPLES = [
    {
        "model": "gpt-4o",
        "prompt_source": "freshQA",
        "claims": [
            claim("unchanged", "agreed", "refuted"),
            claim("revised", "disagreed_corrected", "supported"),
            claim("added", None, "supported"),
            claim("removed", None, "redundant", "redundant"),
        ],
    },
    {
        "model": "gpt-4o",
        "prompt_source": "longfact",
        "claims": [
            claim("unchanged", "agreed", "supported"),
            claim("removed", None, "not a claim", "not a claim"),
        ],
    },
    {
        "model": "DeepSeek-R1",
        "prompt_source": "freshQA",
        "claims": [claim("unchanged", None, None)],  # FaStfact data can hold unverified claims
    },
]


def test_overall_counts_follow_fastfact_conventions():
    stats = claim_review_stats(SAMPLES)
    assert stats["metadata"] == {"total_samples": 3, "total_claims": 7}
    assert stats["overall"] == {
        "count": 3,
        "annotator_labels": {"supported": 3, "refuted": 1, "redundant": 1, "not a claim": 1},
        # only kept extracted claims (unchanged or revised) count toward agreement
        "agreements": {"agreed": 2, "disagreed_corrected": 1, "verification_pending": 1},
        "operations": {"unchanged": 3, "removed": 2, "added": 1, "revised": 1},
        "reasons": {"redundant": 1, "not a claim": 1},
    }


def test_groups_by_model_by_prompt_source_and_by_both():
    grouped = claim_review_stats(SAMPLES)["grouped"]
    assert list(grouped["by_model"]) == ["gpt-4o", "DeepSeek-R1"]
    assert list(grouped["by_prompt_source"]) == ["freshQA", "longfact"]
    assert list(grouped["by_model_prompt_source"]) == [
        "gpt-4o_freshQA",
        "gpt-4o_longfact",
        "DeepSeek-R1_freshQA",
    ]
    assert grouped["by_model"]["gpt-4o"]["count"] == 2
    assert grouped["by_model"]["gpt-4o"]["operations"] == {
        "unchanged": 2,
        "removed": 2,
        "added": 1,
        "revised": 1,
    }
    assert grouped["by_prompt_source"]["freshQA"]["agreements"]["verification_pending"] == 1
    assert grouped["by_model_prompt_source"]["gpt-4o_longfact"]["annotator_labels"] == {
        "supported": 1,
        "not a claim": 1,
    }


def test_the_output_has_the_keys_of_fastfacts_published_statistics():
    published = json.loads(PUBLISHED_STATS.read_text())
    ours = claim_review_stats(SAMPLES)
    assert set(published["grouped"]) == set(ours["grouped"])
    block = published["overall"]
    assert set(block["agreements"]) == set(AGREEMENTS) == set(ours["overall"]["agreements"])
    assert set(block["operations"]) == set(OPERATIONS) == set(ours["overall"]["operations"])
    assert {"count", "annotator_labels", "agreements", "operations", "reasons"} <= set(block)
    # FaStfact's bookkeeping that ours mirrors: agreements cover exactly the kept claims, and the
    # removed claims appear among the annotator labels under their reasons.
    assert (
        sum(block["agreements"].values())
        == block["operations"]["unchanged"] + block["operations"]["revised"]
    )
    assert (
        block["annotator_labels"]["redundant"] + block["annotator_labels"]["not a claim"]
        == block["operations"]["removed"]
    )


def test_empty_input_and_unknown_values():
    empty = claim_review_stats([])
    assert empty["overall"]["count"] == 0 and empty["grouped"]["by_model"] == {}
    assert empty["overall"]["operations"] == dict.fromkeys(OPERATIONS, 0)
    with pytest.raises(ValueError, match="unknown claim action 'kept'"):
        claim_review_stats([{"claims": [claim("kept")]}])
    with pytest.raises(ValueError, match="unknown agreement 'maybe'"):
        claim_review_stats([{"claims": [claim("unchanged", "maybe")]}])
    missing = claim_review_stats([{"claims": []}])
    assert list(missing["grouped"]["by_model"]) == ["unknown"]


# --- factuality per response (before and after human revision) -----------------------------------


def test_factuality_is_the_share_of_supported_among_factual_verdicts():
    from metrics.claim_review import factuality

    # 3 supported of 5 verdicts; "irrelevant" says nothing about facts, "unsure" is no verdict.
    labels = [
        "supported",
        "supported",
        "refuted",
        "unsupported",
        "supported",
        "irrelevant",
        "unsure",
        None,
    ]
    assert factuality(labels) == 3 / 5
    assert factuality(["irrelevant", "unsure"]) is None  # nothing to score


def test_response_factuality_before_uses_the_pipeline_and_after_the_reviewed_claims():
    from metrics.claim_review import response_factuality

    claims = [
        # the pipeline said supported, the annotator agreed
        {"action": "unchanged", "system_label": "supported", "annotator_label": "supported"},
        # the pipeline said supported, the annotator corrected to refuted
        {"action": "revised", "system_label": "supported", "annotator_label": "refuted"},
        # removed as not a claim: counts before (the pipeline scored it), not after
        {"action": "removed", "system_label": "unsupported", "annotator_label": "not a claim"},
        # added by the annotator: no pipeline label, counts after
        {"action": "added", "system_label": None, "annotator_label": "supported"},
    ]
    # before: supported, supported, unsupported -> 2/3; after: supported, refuted, supported -> 2/3
    assert response_factuality(claims) == {"before": 2 / 3, "after": 2 / 3}
    claims[3]["annotator_label"] = "not enough evidence"
    assert response_factuality(claims) == {"before": 2 / 3, "after": 1 / 3}
