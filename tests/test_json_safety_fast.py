"""``core.json_safety.loads`` parses with orjson where a scan of the text proves the result is the
one ``json.loads`` and the safety check give (``_checked_loads``, the code as it was): for any
text, the same value (same types: int is not float, -0.0 is not 0.0, same key order) or the same
exception with the same message, position and path."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core import json_safety
from core.json_safety import MAX_DEPTH, MAX_SAFE_INTEGER, UnsafeJSON

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))

ANY_CHAR = st.characters(codec=None, blacklist_categories=())
ODD_STRINGS = st.text(ANY_CHAR, max_size=12) | st.sampled_from(
    [
        "\x00",
        "a\x00",
        "\ud800",
        "\udfff x",
        "\ud83d\ude00",
        "😀",
        "\u2028\u2029",
        "\ufeff",
        "\x7f",
        "\\u0000",
        "1234567890123456",
        "[[{{",
        "é",
        "\t\n\r\x0b\x0c",
    ]
)
NUMBERS = (
    st.integers(min_value=-(10**40), max_value=10**40)
    | st.integers(min_value=-(2**64 + 5), max_value=2**64 + 5)
    | st.sampled_from(
        [
            MAX_SAFE_INTEGER,
            MAX_SAFE_INTEGER + 1,
            -MAX_SAFE_INTEGER - 1,
            10**15 - 1,
            10**15,
            10**16,
            2**63,
            -(2**63) - 1,
            2**64,
            10**20,
            10**21,
            0,
            -0.0,
            1e16,
            1e400,
        ]
    )
    | st.floats(allow_nan=True, allow_infinity=True)
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | NUMBERS | ODD_STRINGS,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(ODD_STRINGS, children, max_size=5)
    ),
    max_leaves=30,
)
# Raw number literals, valid and not: leading zeros, long mantissas, huge exponents.
LITERALS = st.from_regex(
    r"-?(0|[0-9]{1,25})(\.[0-9]{0,25})?([eE][-+]?[0-9]{1,4})?|NaN|-?Infinity", fullmatch=True
)
# Text from JSON's own alphabet, so that near-misses of the grammar are common.
TOKENS = st.text(
    st.sampled_from(list('{}[]",: \t\n\r0123456789.eE-+\\u/truefalsnNIy\x00\ud800\ufeffé\x0c')),
    max_size=40,
)


def dumped(value, ensure_ascii: bool) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii)


TEXTS = st.one_of(
    st.text(ANY_CHAR, max_size=60),
    TOKENS,
    LITERALS,
    st.lists(LITERALS, max_size=6).map(lambda parts: "[" + ", ".join(parts) + "]"),
    st.builds(dumped, JSON_VALUES, st.booleans()),
    st.builds(
        lambda text, pad: pad + text + pad,
        st.builds(dumped, JSON_VALUES, st.booleans()),
        st.sampled_from(["", " ", "\n", "\r\n", "\t", "\x0c", "\ufeff", "\x00"]),
    ),
    st.integers(min_value=0, max_value=80).map(lambda n: "[" * n + "1" + "]" * n),
    st.integers(min_value=0, max_value=80).map(lambda n: '{"a":' * n + "[]" + "}" * n),
    st.integers(min_value=1000, max_value=5000).map(lambda n: "[" * n + "]" * n),
)


def shape(value):
    """A value with its types spelled out, so that 1 == 1.0 == True and 0.0 == -0.0 differ."""
    if isinstance(value, dict):
        return ("dict", [(key, shape(child)) for key, child in value.items()])
    if isinstance(value, list):
        return ("list", [shape(child) for child in value])
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else repr(value))
    return (type(value).__name__, value)


def outcome(function, text: str, max_depth: int):
    try:
        return ("value", shape(function(text, max_depth=max_depth)))
    except json.JSONDecodeError as exc:
        return ("JSONDecodeError", exc.msg, exc.pos, exc.lineno, exc.colno)
    except UnsafeJSON as exc:
        return ("UnsafeJSON", exc.message, exc.path)


def check(text: str, max_depth: int = MAX_DEPTH) -> None:
    old = outcome(json_safety._checked_loads, text, max_depth)
    assert outcome(json_safety.loads, text, max_depth) == old
    fast = json_safety._fast_loads(text, max_depth=max_depth)
    if fast is not json_safety._DECLINED:
        assert ("value", shape(fast)) == old


@SETTINGS
@given(TEXTS)
@example('{"a": 1, "a": 2.0, "b": [1, 2], "a": 3}')
@example('{"b": 1, "a": 2, "b": {"c": -0}}')
@example("123456789012345678901234567890")
@example("18446744073709551616")
@example("9007199254740992")
@example("999999999999999")
@example("[1e400, 1]")
@example("-1e400")
@example("1e-400")
@example("NaN")
@example('"\\u0000"')
@example('{"\\u0000": 1}')
@example('"\\ud800"')
@example('"\\udc00\\ud800"')
@example('"\\ud83d\\ude00"')
@example('"\ud800"')
@example('"a\x00b"')
@example('"a\x01b"')
@example("\ufeff{}")
@example('"\u2028"')
@example("0.30000000000000004")
@example("1.7976931348623159e308")
def test_loads_gives_what_the_checked_path_gives(text):
    check(text)


@SETTINGS
@given(TEXTS, st.integers(min_value=0, max_value=70))
def test_loads_gives_what_the_checked_path_gives_at_any_depth_limit(text, max_depth):
    check(text, max_depth)


def test_the_fast_path_takes_ordinary_records():
    line = json.dumps(
        {"id": "c-1", "claim": "Taxes rose 3.5% [1].", "evidence": [{"id": 1, "text": "é 😀"}]}
    )
    assert json_safety._fast_loads(line, max_depth=MAX_DEPTH) is not json_safety._DECLINED
    wide = json.dumps({"evidence": [{"id": n, "text": "t"} for n in range(200)]})
    assert json_safety._fast_loads(wide, max_depth=MAX_DEPTH) is not json_safety._DECLINED


def test_a_value_too_deep_is_named_alike_whether_or_not_python_could_parse_it():
    """Found by the hypothesis test above (n = 1987, in a deeper call stack): text too deep for
    ``json.loads`` was named by ``deep_path`` (no list indices after the last key) and the same
    text parsed by ``first_problem`` (every index): the path depended on the stack's depth."""
    for text in ("[" * 70 + "]" * 70, '{"a": ' + "[" * 70 + "]" * 70 + "}"):
        parsed = json_safety.first_problem(json.loads(text), max_depth=64)
        assert parsed == (
            json_safety.deep_path(text, max_depth=64),
            "nested more than 64 levels deep",
        )
    assert json_safety.first_problem(json.loads('{"a": ' + "[" * 70 + "]" * 70 + "}"))[0] == ["a"]


def test_the_raw_scans_skip_brackets_and_escaped_quotes_inside_strings():
    """``deep_path`` and the API parser's ``top_level_key`` scan raw text: brackets and escaped
    quotes inside a string are not structure, a key is unescaped (NUL shown as an escape for the
    parser), list indices count commas, a top-level list has no key, an unterminated string ends
    the scan. Reference values from the single-loop scans these were split from."""
    from core.parsers import top_level_key

    cases = [
        ('{"a\\"[{": [1, {"b": [[[[]]]]}]}', ['a"[{', "1", "b"], 'a"[{'),
        ('{"k": "x]}", "nul\\u0000": {"c": [0, 1, [[[ ]]]]}}', ["nul\x00", "c"], "nul\\x00"),
        ('[[[[[{"a": 1}]]]]]', [], ""),
        ('{"x": "unterminated [[[[', ["x"], "x"),
    ]
    for text, path, key in cases:
        assert json_safety.deep_path(text, max_depth=3) == path
        assert top_level_key(text, max_depth=3) == key
