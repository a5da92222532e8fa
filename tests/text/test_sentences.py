"""Sentence splitting rules for generated explanations with inline citation markers."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.text import split_sentences, split_sentences_many
from annotation.text.markers import MARKER_PATTERN
from annotation.text.sentences import get_nlp

REPO = Path(__file__).resolve().parents[2]


def test_marker_before_period_stays_with_its_sentence():
    text = "Students in towns without schools may receive [9]. Such vouchers are rare."
    assert split_sentences(text) == [
        "Students in towns without schools may receive [9].",
        "Such vouchers are rare.",
    ]


def test_marker_glued_after_period_stays_with_its_sentence():
    text = "Students in towns without schools may receive.[9] Such vouchers are rare."
    assert split_sentences(text) == [
        "Students in towns without schools may receive.[9]",
        "Such vouchers are rare.",
    ]


def test_marker_after_period_and_space_stays_with_its_sentence():
    text = "He declined to provide the study. [33] Without it, the claim is unclear. [37]"
    assert split_sentences(text) == [
        "He declined to provide the study. [33]",
        "Without it, the claim is unclear. [37]",
    ]


@pytest.mark.parametrize("group", ["[8][15]", "[25] [26]", "[1, 2]", "[1,2]", "[ 3 ]"])
@pytest.mark.parametrize("glue", ["", " "])
def test_marker_group_after_period_is_never_split(group, glue):
    text = f"The memo was leaked.{glue}{group} French called it a discussion starter."
    assert split_sentences(text) == [
        f"The memo was leaked.{glue}{group}",
        "French called it a discussion starter.",
    ]


@pytest.mark.parametrize("group", ["[8][15]", "[1, 2]"])
def test_marker_group_before_period_is_never_split(group):
    text = f"The memo was leaked {group}. French called it a discussion starter."
    assert split_sentences(text) == [
        f"The memo was leaked {group}.",
        "French called it a discussion starter.",
    ]


def test_markers_mid_sentence_stay_where_they_are():
    text = (
        "Holcombe cited a memo[19] and a report [20], while others [43] disagreed[11][5]. "
        "According to [32] emails, it was not shared."
    )
    assert split_sentences(text) == [
        "Holcombe cited a memo[19] and a report [20], while others [43] disagreed[11][5].",
        "According to [32] emails, it was not shared.",
    ]


def test_marker_after_closing_quote_stays_with_its_sentence():
    text = 'The paper concluded, "everything screamed bogus."[14] The campaign did not respond.'
    assert split_sentences(text) == [
        'The paper concluded, "everything screamed bogus."[14]',
        "The campaign did not respond.",
    ]


def test_marker_after_abbreviation_period_ends_the_sentence():
    text = "It involved the Development Corp.[12] In 2018, Stone accused Booker."
    assert split_sentences(text) == [
        "It involved the Development Corp.[12]",
        "In 2018, Stone accused Booker.",
    ]


def test_no_split_after_et_al():
    text = "The study by Smith et al. Found no such effect. It was replicated."
    assert split_sentences(text) == [
        "The study by Smith et al. Found no such effect.",
        "It was replicated.",
    ]


def test_no_split_after_fig_with_a_number():
    text = "The spike is shown in Fig. 3 of the report. It is large."
    assert split_sentences(text) == ["The spike is shown in Fig. 3 of the report.", "It is large."]


@pytest.mark.parametrize(
    "sentence",
    [
        "Some states, e.g. Vermont, offer tuition vouchers.",
        "The program, i.e. Act 46, merged districts.",
        "The claim came from Dr. Smith of the CDC.",
        "The claim came from Mr. Jones and Mrs. Jones.",
        "The U.S. Department of Education disputes it.",
        "It was Roe vs. Wade that they cited.",
        "The Lt. Col. Vindman testimony was public.",
        "Sen. Sanders and Rep. Omar and Gov. Scott spoke.",
    ],
)
def test_no_split_after_common_abbreviations(sentence):
    assert split_sentences(f"{sentence} The claim is false.") == [sentence, "The claim is false."]


def test_no_split_after_no_with_a_number():
    text = "The bill was No. 5 on the agenda. It failed."
    assert split_sentences(text) == ["The bill was No. 5 on the agenda.", "It failed."]


def test_no_split_after_initials():
    text = "J. K. Rowling never said it. George W. Bush did not either."
    assert split_sentences(text) == [
        "J. K. Rowling never said it.",
        "George W. Bush did not either.",
    ]


def test_no_split_after_month_abbreviation_before_a_date():
    text = "Manchin tweeted it on Oct. 29, 2019[3]. The company filed for bankruptcy."
    assert split_sentences(text) == [
        "Manchin tweeted it on Oct. 29, 2019[3].",
        "The company filed for bankruptcy.",
    ]


def test_no_split_inside_decimals():
    text = "Unemployment fell 3.5 percent in 2019. It rose later."
    assert split_sentences(text) == ["Unemployment fell 3.5 percent in 2019.", "It rose later."]


def test_no_split_inside_dollar_amounts():
    text = "Bush lifted it to $1.2 trillion[32]. Obama halved it to $600 billion[35]."
    assert split_sentences(text) == [
        "Bush lifted it to $1.2 trillion[32].",
        "Obama halved it to $600 billion[35].",
    ]


@pytest.mark.parametrize("quote", ['"', "”"])
def test_period_inside_closing_quote_keeps_the_quote(quote):
    opening = '"' if quote == '"' else "“"
    text = (
        f"Asked about it, he said, {opening}It never happened.{quote} The record shows otherwise."
    )
    assert split_sentences(text) == [
        f"Asked about it, he said, {opening}It never happened.{quote}",
        "The record shows otherwise.",
    ]


def test_question_mark_inside_quote_mid_sentence_does_not_split():
    text = 'The claim that he said, "Would you want a president like that?" is false [1]. Next.'
    assert split_sentences(text) == [
        'The claim that he said, "Would you want a president like that?" is false [1].',
        "Next.",
    ]


def test_exclamation_inside_quote_before_lowercase_does_not_split():
    text = 'The ad stated, "Minorities welcome!" which seemed unusual. It was fake.'
    assert split_sentences(text) == [
        'The ad stated, "Minorities welcome!" which seemed unusual.',
        "It was fake.",
    ]


def test_opening_quote_starts_the_next_sentence():
    text = 'Medicaid helps access to care[47]. "Comparing these beneficiaries," says Garfield[52].'
    assert split_sentences(text) == [
        "Medicaid helps access to care[47].",
        '"Comparing these beneficiaries," says Garfield[52].',
    ]


def test_opening_parenthesis_starts_the_next_sentence():
    text = "Bush 43 lifted it to $1.2 trillion[32]. (Barack) Obama halved this[35]."
    assert split_sentences(text) == [
        "Bush 43 lifted it to $1.2 trillion[32].",
        "(Barack) Obama halved this[35].",
    ]


@pytest.mark.parametrize(
    "sentence",
    [
        "If you believe this... then you have been had.",
        "He was trying to … turn the country around.",
        "They backed Obama and Biden...I was there both times.",
    ],
)
def test_ellipsis_inside_a_sentence_does_not_split(sentence):
    assert split_sentences(f"{sentence} It is false.") == [sentence, "It is false."]


def test_ellipsis_before_a_capitalised_word_ends_the_sentence():
    text = "They dig in their purse for something to cut with... Once distracted, boom!"
    assert split_sentences(text) == [
        "They dig in their purse for something to cut with...",
        "Once distracted, boom!",
    ]


def test_sentence_final_abbreviation_before_a_sentence_opener_splits():
    text = (
        "People can send cards to Walter Reed in Washington, D.C. However, this claim is false. "
        "It involves the Development Corp. However, Booker was not charged."
    )
    assert split_sentences(text) == [
        "People can send cards to Walter Reed in Washington, D.C.",
        "However, this claim is false.",
        "It involves the Development Corp.",
        "However, Booker was not charged.",
    ]


def test_us_at_the_end_of_a_sentence_splits_but_before_a_title_does_not():
    text = "Damage in the U.S. Therefore, U.S. President Bush acted."
    assert split_sentences(text) == ["Damage in the U.S.", "Therefore, U.S. President Bush acted."]


def test_lowercase_word_after_a_period_continues_the_sentence():
    text = 'Mail addressed to "Any Soldier, Sailor, etc." is not delivered[11]. It is returned.'
    assert split_sentences(text) == [
        'Mail addressed to "Any Soldier, Sailor, etc." is not delivered[11].',
        "It is returned.",
    ]


def test_paragraph_break_ends_a_sentence():
    text = "He never used the term[17]\n\nMartin Luther King Jr. did endorse it[2]."
    assert split_sentences(text) == [
        "He never used the term[17]",
        "Martin Luther King Jr. did endorse it[2].",
    ]


def test_reference_list_entries_are_separate_sentences():
    text = "The claim is false.\n\nSources:\n[1] Twitter post.\n[3] News article."
    assert split_sentences(text) == [
        "The claim is false.",
        "Sources:",
        "[1] Twitter post.",
        "[3] News article.",
    ]


def test_bulleted_lines_are_separate_sentences():
    text = "Rating:\n* Accuracy: 1/5\n* Coherence: 4/5"
    assert split_sentences(text) == ["Rating:", "* Accuracy: 1/5", "* Coherence: 4/5"]


def test_trailing_marker_only_line_joins_the_last_sentence():
    text = "The claim lacks evidence.[12][14]\n[1][2][3]"
    assert split_sentences(text) == ["The claim lacks evidence.[12][14]\n[1][2][3]"]


def test_sentences_are_stripped_and_blank_text_gives_no_sentences():
    assert split_sentences("  First one.   Second one.\n") == ["First one.", "Second one."]
    assert split_sentences("") == []
    assert split_sentences(" \n\n ") == []


def test_text_without_end_punctuation_is_one_sentence():
    assert split_sentences("The claim is half-true [4]") == ["The claim is half-true [4]"]


def test_split_sentences_many_matches_split_sentences_item_by_item():
    texts = [
        "One [1]. Two.[2] Three [3][4].",
        "",
        "Dr. Who said it. Fig. 3 shows it.",
        "He said, “Done.” Then left.",
    ]
    assert split_sentences_many(texts, batch_size=2) == [split_sentences(t) for t in texts]


def test_split_sentences_many_accepts_a_generator():
    assert split_sentences_many(f"Item {i}. Done [{i}]." for i in range(3)) == [
        [f"Item {i}.", f"Done [{i}]."] for i in range(3)
    ]


def test_text_package_does_not_import_django():
    code = "import sys, annotation.text; sys.exit('django' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True)
    assert result.returncode == 0, result.stderr.decode()


def test_split_sentences_many_in_worker_processes_matches_one_process():
    texts = [
        f"Claim {i} is false [{i}]. Dr. Smith said so.[{i + 1}] Next one." for i in range(2500)
    ]
    assert split_sentences_many(texts, n_process=2) == split_sentences_many(texts)


def test_doc_sents_of_the_shared_pipeline_follow_the_rules():
    text = 'He may receive.[9] Such "vouchers." [3] Lt. Col. Vindman was not fired[27].'
    doc = get_nlp()(text)
    assert [sent.text.strip() for sent in doc.sents] == split_sentences(text)


_ATOMS = [
    "Dr.",
    "U.S.",
    "the",
    "claim",
    "is",
    "False",
    ".",
    "!",
    "?",
    '"',
    "“",
    "”",
    "(",
    ")",
    "[1]",
    "[2, 3]",
    "[ 4 ]",
    "[5][6]",
    "\n",
    "\n\n",
    "...",
    "…",
    "e.g.",
    "No.",
    "5",
    "3.5",
    "Fig.",
    "J.",
    "Such",
    "However",
    "et al.",
    "[",
    "]",
    ",",
    "'",
    "’",
    "*",
    "$1.2",
    "D.C.",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_ATOMS), st.sampled_from(["", " ", " ", "  "])), max_size=30)
)
def test_splitting_keeps_all_text_and_every_marker_whole(pieces):
    text = "".join(atom + space for atom, space in pieces)
    sentences = split_sentences(text)
    assert all(sentence and sentence == sentence.strip() for sentence in sentences)
    assert "".join("".join(sentences).split()) == "".join(text.split())
    marker = re.compile(MARKER_PATTERN)
    assert [m for sentence in sentences for m in marker.findall(sentence)] == marker.findall(text)


def test_long_runs_of_punctuation_split_in_linear_time():
    # A nested quantifier once made '!!!...!x' take exponential time; a subprocess with a
    # timeout turns such a regression into a failure instead of a hung test run.
    code = (
        "from annotation.text import split_sentences; "
        "print(split_sentences('Wow' + '!' * 60 + 'x. Done.'))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    assert "Done." in result.stdout.decode()


_MORE_ATOMS = [
    *_ATOMS,
    *("Ünïcode", "。", "！", "‼", "\t", "\u00a0", "\r\n", " \n", "\n ", "Sen.", "a.m.", ":)", "—"),
    *("(:", "<3", "U.S.A.", "www.example.com.", "a@b.co.", "10%.", "'s", "n't.", "…!", '."', "?)"),
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.sampled_from(_MORE_ATOMS), st.sampled_from(["", " ", " ", "  ", "\n"])),
            max_size=30,
        ).map(lambda pieces: "".join(atom + space for atom, space in pieces)),
        max_size=4,
    )
)
def test_batched_splitting_equals_the_spacy_pipeline(texts):
    # split_sentences_many finds the sentencizer's proposals from the token columns instead of
    # running it, and skips mirroring the result on the tokens: the sentences must not differ
    # from the shared pipeline's (tokenizer, sentencizer, rules component), on any text.
    assert split_sentences_many(texts) == [split_sentences(text) for text in texts]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_MORE_ATOMS), st.sampled_from(["", " ", "  ", "\n"])),
        max_size=30,
    )
)
def test_proposals_equal_the_sentencizers(pieces):
    from annotation.text.sentences import _proposals

    text = "".join(atom + space for atom, space in pieces)
    nlp = get_nlp()
    doc = nlp.make_doc(text)
    (guesses,) = nlp.get_pipe("sentencizer").predict([doc])
    expected = [doc[i].idx for i, guess in enumerate(guesses) if guess][1:]
    assert _proposals(text) == expected
