"""Citation markers: which shapes count, in which order ids come back, how removal tidies up."""

import pytest

from task_types.citation_recovery.citations import (
    parse_citations,
    remove_all_citations,
    remove_citation,
)


@pytest.mark.parametrize(
    ("sentence", "ids"),
    [
        ("Students may receive vouchers [9].", [9]),
        ("Both passages agree [1, 2].", [1, 2]),
        ("French's memo hinted at it[25][26].", [25, 26]),
        ("The memo was leaked[8][15].", [8, 15]),
        ("No space after the comma [1,2].", [1, 2]),
        ("Spaces inside the brackets [ 3 ].", [3]),
        ("Spaced group [ 4 , 5 ].", [4, 5]),
        ("Spaced cluster [1] [2] [3].", [1, 2, 3]),
        ("A three-digit id [104].", [104]),
    ],
)
def test_parse_citations_reads_every_marker_shape(sentence, ids):
    assert parse_citations(sentence) == ids


def test_parse_citations_keeps_order_of_appearance_not_numeric_order():
    assert parse_citations("Officials clarified it[47][42], others did not [11][5].") == [
        47,
        42,
        11,
        5,
    ]


def test_parse_citations_reports_a_repeated_id_once_at_its_first_position():
    assert parse_citations("Cited here [14][15] and again here [15].") == [14, 15]
    assert parse_citations("Reason[5] indicates that he works there [5].") == [5]


def test_parse_citations_finds_markers_anywhere_in_the_sentence():
    assert parse_citations("[5] the ad, as Reason[3] says, was fake [7].") == [5, 3, 7]


@pytest.mark.parametrize(
    "sentence",
    [
        'He "never spoke to [his] son" about it.',
        "The claim lacks support.[verbatim]",
        "The claim lacks support.[1-31].",
        "In conclusion, it is false.[Works Cited: 24, 25, 28]",
        "The numbers in square brackets [x] are reasons.",
        "The claim is false.[ verify ]",
        "Photos are not from Australia[",
        "An empty pair [] and a lone number 12.",
    ],
)
def test_parse_citations_ignores_brackets_that_are_not_markers(sentence):
    assert parse_citations(sentence) == []


def test_removing_the_second_of_adjacent_markers_keeps_the_first():
    assert remove_citation("[25][26]", 26) == "[25]"
    assert remove_citation("It hinted at this[25][26].", 26) == "It hinted at this[25]."


def test_removing_the_first_of_adjacent_markers_keeps_the_second():
    assert remove_citation("It hinted at this [25][26].", 25) == "It hinted at this [26]."


def test_removing_one_id_from_a_comma_group_keeps_the_rest():
    assert remove_citation("[1, 2]", 1) == "[2]"
    assert remove_citation("Both agree [1, 2, 3].", 2) == "Both agree [1, 3]."
    assert remove_citation("Both agree [1,2,3].", 3) == "Both agree [1,2]."


def test_removing_the_only_marker_leaves_nothing_of_it():
    assert remove_citation("[9]", 9) == ""


def test_removing_a_marker_before_the_period_leaves_no_space_before_the_period():
    assert remove_citation("Students may receive [9].", 9) == "Students may receive."


def test_removing_a_marker_after_the_period_keeps_one_space_before_the_next_sentence():
    assert remove_citation("It may receive.[9] Such vouchers", 9) == "It may receive. Such vouchers"


def test_removing_a_mid_sentence_marker_keeps_one_space_between_words():
    assert remove_citation("According to [32] emails, it was not shared.", 32) == (
        "According to emails, it was not shared."
    )
    assert remove_citation("Reason[5] indicates that", 5) == "Reason indicates that"
    assert remove_citation("Reason[5]: it is", 5) == "Reason: it is"


def test_removing_a_marker_that_opens_the_sentence_drops_the_space_after_it():
    assert remove_citation("[3] Stone's claim was smaller.", 3) == "Stone's claim was smaller."


def test_removing_a_marker_keeps_a_closing_quote_in_place():
    assert remove_citation('It "screamed bogus."[14] The', 14) == 'It "screamed bogus." The'


def test_removing_an_id_removes_all_of_its_markers_in_the_sentence():
    sentence = "Positive statements [43], but also criticism [43]."
    assert remove_citation(sentence, 43) == "Positive statements, but also criticism."


def test_removing_one_marker_of_a_spaced_cluster_keeps_the_others_spacing():
    assert remove_citation("It is false.[8] [13] [17].", 13) == "It is false.[8] [17]."


def test_removing_an_id_that_is_not_cited_returns_the_sentence_unchanged():
    sentence = "Spacing  stays   as it was [1, 2] here."
    assert remove_citation(sentence, 7) == sentence


def test_removing_a_citation_leaves_brackets_that_are_not_markers_alone():
    assert remove_citation('He said "[his] son" [26].', 26) == 'He said "[his] son".'


def test_remove_all_citations_strips_every_marker_and_tidies_whitespace():
    sentence = "Holcombe [11][5][18] disagrees, others [43] agree [1, 2]. Fine.[7]"
    assert remove_all_citations(sentence) == "Holcombe disagrees, others agree. Fine."


def test_remove_all_citations_leaves_sentences_without_markers_unchanged():
    sentence = "The claim that a photo shows CNN chyrons is false."
    assert remove_all_citations(sentence) == sentence


def test_removing_a_marker_that_opens_a_paragraph_drops_the_line_break_after_it():
    assert remove_citation("[37]\n\nTwo programs were created.", 37) == "Two programs were created."


def test_removing_a_marker_before_a_line_break_keeps_the_line_break():
    assert remove_citation("Sources: [1]\n[2] News.", 1) == "Sources:\n[2] News."
