"""The FaStfact replay: the real trial responses, simulated reviewers through the API, and the
paper's figures (operations, agreement with the pipeline, final labels, factuality before and
after revision) checked against an independent computation from the stored answers."""

from collections import Counter, defaultdict
from statistics import fmean

import pytest

from annotation.models import Annotation
from studies.replays import replay_registry

OPERATION = {"keep": "unchanged", "revise": "revised", "remove": "removed", "add": "added"}
FACTUAL = {"supported", "refuted", "conflicting evidence", "not enough evidence", "unsupported"}


@pytest.fixture
def replayed(db):
    result = replay_registry.get("fastfact").run(scale=1, seed=87)
    annotations = list(
        Annotation.objects.filter(item__project=result.project).select_related("item")
    )
    return result, annotations


def factuality(labels):
    verdicts = [label for label in labels if label in FACTUAL]
    return sum(label == "supported" for label in verdicts) / len(verdicts) if verdicts else None


def test_operations_and_agreement_with_the_pipeline_match_the_stored_reviews(replayed):
    result, annotations = replayed
    assert len(annotations) == 2 * 3
    operations, agreements = Counter(), Counter()
    for annotation in annotations:
        for decision in annotation.answer["claims"]:
            operations[OPERATION[decision["action"]]] += 1
            if decision["action"] in ("keep", "revise"):
                agreements[decision.get("agreement")] += 1
    everything = next(r for r in result.tables["operations"]["rows"] if r["group"] == "All")
    for name in ("unchanged", "revised", "removed", "added"):
        assert everything[name] == operations[name]
    assert everything["agreed"] == agreements["agree"]
    assert everything["disagreed_corrected"] == agreements["disagree"]
    assert operations["unchanged"] > operations["removed"]  # mostly kept, as in FaStfact


def test_factuality_per_response_before_and_after_revision(replayed):
    result, annotations = replayed
    after = defaultdict(list)
    before = {}
    for annotation in annotations:
        item = annotation.item
        system = {c["id"]: c.get("system_label") for c in item.payload["claims"]}
        before[item.external_id] = factuality(system.values())
        labels = []
        for d in annotation.answer["claims"]:
            if d["action"] == "remove":
                continue
            if d["action"] != "add" and d.get("agreement") == "agree":
                labels.append(system[d["id"]])
            else:
                labels.append(d["label"])
        after[item.external_id].append(factuality(labels))
    rows = {r["response"]: r for r in result.tables["factuality"]["rows"]}
    for response, scores in after.items():
        assert rows[response]["before"] == pytest.approx(before[response])
        assert rows[response]["after"] == pytest.approx(fmean(s for s in scores if s is not None))
