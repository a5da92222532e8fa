"""The citation-marker parser and remover against the real Transparent-FCExp explanations, whose
``gen_cit[<model>]`` lists the ids each sentence cites (the data and its loader are shared with
the splitter's tests in ``tests/text/test_real_explanations.py``)."""

import re

import pytest

from task_types.citation_recovery.citations import (
    parse_citations,
    remove_all_citations,
    remove_citation,
)
from tests.text.test_real_explanations import MODELS, explanations

# The dataset writes [-1] for a sentence whose only markers its own parser could not read:
# comma groups such as "[5,3]" or "[21, 29]".
UNPARSED_GROUP = [-1]
_COMMA_GROUP = re.compile(r"\[\s*\d+\s*,")


@pytest.mark.parametrize("model", MODELS)
def test_parse_citations_gives_the_datasets_citations_in_order(model):
    """Ordered equality holds once the dataset's repeats are dropped ([14, 15, 15] -> [14, 15])."""
    mismatches = []
    for claim_id, sentences, cited in explanations(model):
        for sentence, ids in zip(sentences, cited, strict=True):
            if ids == UNPARSED_GROUP:
                continue
            if parse_citations(sentence) != list(dict.fromkeys(ids)):
                mismatches.append((claim_id, sentence, ids, parse_citations(sentence)))
    assert not mismatches, mismatches[:5]


@pytest.mark.parametrize("model", MODELS)
def test_parse_citations_reads_comma_groups_the_dataset_could_not(model):
    groups = [
        sentence
        for _, sentences, cited in explanations(model)
        for sentence, ids in zip(sentences, cited, strict=True)
        if ids == UNPARSED_GROUP
    ]
    for sentence in groups:
        assert _COMMA_GROUP.search(sentence), sentence
        ids = parse_citations(sentence)
        assert len(ids) >= 2, sentence
        assert all(re.search(rf"\b{number}\b", sentence) for number in ids)


def test_parse_citations_reads_the_llama_comma_groups_exactly():
    sentence = "Andrew Yang made similar claims, and a thousand economists endorsed it [5,3]."
    assert parse_citations(sentence) == [5, 3]
    assert parse_citations("There is no warning in the letter [21, 29].") == [21, 29]


@pytest.mark.parametrize("model", MODELS)
def test_removing_citations_from_real_sentences_leaves_tidy_text(model):
    """No new space before punctuation, double space, or outer whitespace; nothing else lost."""
    untidy = re.compile(r" [.,;:!?]|  |^\s|\s$")
    for claim_id, sentences, _ in explanations(model):
        for sentence in (s.strip() for s in sentences):
            ids = parse_citations(sentence)
            results = [(i, remove_citation(sentence, i)) for i in ids]
            results.append((None, remove_all_citations(sentence)))
            for removed, result in results:
                assert len(untidy.findall(result)) <= len(untidy.findall(sentence)), (
                    claim_id,
                    sentence,
                    removed,
                )
                assert parse_citations(result) == [i for i in ids if removed not in (None, i)]
