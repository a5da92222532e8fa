"""JSON that can be stored and read back everywhere (PostgreSQL jsonb, SQLite, exports): no NUL
character, no lone surrogate, only finite numbers, integers within JavaScript's safe range, and a
bounded depth. One check for every JSON a person sends: answers, drafts, imported records."""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

MAX_DEPTH = 64
MAX_SAFE_INTEGER = 2**53 - 1
# Integer literals longer than this are not converted by :func:`loads` (Python refuses to
# convert one of thousands of digits); they are kept as text and reported with their path.
_MAX_INTEGER_DIGITS = 20


class UnsafeJSON(ValueError):
    """JSON that parses but cannot be stored (or is too deep to parse); ``path`` is the list of
    keys (and list indices) leading to the problem, empty at the top."""

    def __init__(self, message: str, *, path: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path or []

    @property
    def field(self) -> str:
        return ".".join(self.path)


class _OversizedInteger(str):
    """An integer literal too long to convert, kept as its text until the check names it."""


def _parse_int(text: str) -> int | _OversizedInteger:
    if len(text.lstrip("-")) > _MAX_INTEGER_DIGITS:
        return _OversizedInteger(text)
    return int(text)


def loads(text: str, *, max_depth: int = MAX_DEPTH, unique_keys: bool = False) -> Any:
    """``json.loads`` and then :func:`json_problem`'s check, for text a person sent (an import
    line, a CSV cell, a whole file). Raises ``json.JSONDecodeError`` for text that is not JSON
    and :class:`UnsafeJSON`, naming the path, for JSON that cannot be stored: nested too deeply
    (even too deeply for Python to parse), NaN or infinity, huge integers, NUL, lone surrogates.
    With ``unique_keys``, an object that gives a key twice (JSON keeps the last silently) is
    refused too, the path ending with that key (a whole file another tool wrote: it is parsed
    by ``json`` alone, which sees every pair).

    Text that :func:`_fast_loads` can vouch for is parsed by orjson; anything else (or anything
    orjson refuses) takes the path below, so values, errors and their paths are the same."""
    if unique_keys:
        return _checked_loads(text, max_depth=max_depth, unique_keys=True)
    value = _fast_loads(text, max_depth=max_depth)
    if value is not _DECLINED:
        return value
    return _checked_loads(text, max_depth=max_depth)


_DECLINED = object()
# Digits mapped to "0", every other byte to a space: a run of _FAST_DIGITS zeros in the
# translation is a run of that many digits somewhere in the text (in a number or a string).
_DIGIT_CLASSES = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_FAST_DIGITS = 16
_DIGIT_RUN = b"0" * _FAST_DIGITS
assert 10 ** (_FAST_DIGITS - 1) - 1 <= MAX_SAFE_INTEGER < 10**_FAST_DIGITS


def _fast_loads(text: Any, *, max_depth: int) -> Any:
    """orjson's value of ``text`` when a scan of the raw text proves that ``json.loads`` gives
    the same value and :func:`first_problem` finds nothing; else ``_DECLINED``. Why each check
    is enough (the hypothesis test in tests/test_json_safety_fast.py holds it to that):

    - a lone surrogate in the text, or escaped (``\\ud800``), and NaN, infinity or a float
      literal that overflows: orjson refuses them (so does a raw control character, NUL too,
      as ``json.loads`` does); an escaped NUL (``\\u0000``) orjson accepts, so it declines;
    - integers: a literal of at most 15 digits is exact and within MAX_SAFE_INTEGER (orjson
      reads a longer one beyond 64 bits as a float, where ``json.loads`` keeps an int); any
      run of 16 digits, in a number or in a string, declines;
    - depth: a value cannot nest deeper than the text has ``[`` and ``{``; more than
      ``max_depth`` of them and the parsed value's containers are measured."""
    if type(text) is not str:
        return _DECLINED
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        return _DECLINED
    if b"\\u0000" in raw or _DIGIT_RUN in raw.translate(_DIGIT_CLASSES):
        return _DECLINED
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _DECLINED
    if raw.count(b"[") + raw.count(b"{") > max_depth and _nests_deeper(value, max_depth):
        return _DECLINED
    return value


def _nests_deeper(value: Any, max_depth: int) -> bool:
    """Whether a value (lists and dicts only) holds something deeper than ``max_depth``, as
    :func:`first_problem` counts depth."""
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if type(node) is dict:
            children: Any = node.values()
        elif type(node) is list:
            children = node
        else:
            continue
        if not children:
            continue
        if depth >= max_depth:
            return True
        stack.extend((child, depth + 1) for child in children if type(child) in (dict, list))
    return False


class _KeyTwice(dict):
    """An object that gave ``twice`` more than once (kept only until its path is found)."""

    twice = ""


def _pairs_once(pairs: list[tuple[str, Any]]) -> dict:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    marked = _KeyTwice(value)
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            marked.twice = key
            break
        seen.add(key)
    return marked


def _key_twice_path(value: Any) -> list[str] | None:
    """The path to the first key given twice (depth first, in document order), or None."""
    stack: list[tuple[Any, list[str]]] = [(value, [])]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _KeyTwice):
            return [*path, node.twice]
        if isinstance(node, dict):
            children = list(node.items())
        elif isinstance(node, list):
            children = list(enumerate(node))
        else:
            continue
        stack.extend((child, [*path, str(key)]) for key, child in reversed(children))
    return None


def _checked_loads(text: str, *, max_depth: int, unique_keys: bool = False) -> Any:
    try:
        value = json.loads(
            text, parse_int=_parse_int, object_pairs_hook=_pairs_once if unique_keys else None
        )
    except RecursionError:
        raise UnsafeJSON(
            f"nested more than {max_depth} levels deep", path=deep_path(text, max_depth=max_depth)
        ) from None
    if unique_keys:
        twice = _key_twice_path(value)
        if twice is not None:
            raise UnsafeJSON(
                f"the key {twice[-1]!r} is given twice in one object (JSON would keep only "
                "the last)",
                path=twice,
            )
    problem = first_problem(value, max_depth=max_depth)
    if problem:
        path, message = problem
        raise UnsafeJSON(message, path=path)
    return value


def deep_path(text: str, *, max_depth: int = MAX_DEPTH) -> list[str]:
    """The object keys leading to where the JSON ``text`` first nests deeper than
    ``max_depth`` (a scan of the raw text, for JSON too deep to parse). List indices between
    keys are kept; those after the last key (a run of nested lists) are left out."""
    frames: list[list[Any]] = []  # [is an object, its current key or index]
    index, last_string = 0, ""
    while index < len(text):
        char = text[index]
        if char == '"':
            end = string_end(text, index + 1)
            last_string = text[index + 1 : end]
            index = end + 1
            continue
        if not _nest(frames, char, last_string, max_depth):
            break
        index += 1
    last_key = max((i for i, (is_object, _) in enumerate(frames) if is_object), default=-1)
    return [str(key) for _, key in frames[: last_key + 1] if key is not None]


def string_end(text: str, start: int) -> int:
    """The offset of the quote closing the JSON string whose body starts at ``start``
    (the text's length if it is never closed)."""
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            return index
    return len(text)


def _nest(frames: list[list[Any]], char: str, last_string: str, max_depth: int) -> bool:
    """Apply one character outside strings to the open ``frames``; False once a container
    would open deeper than ``max_depth``."""
    if char in "[{":
        if len(frames) > max_depth:
            return False
        frames.append([char == "{", None if char == "{" else 0])
    elif char in "]}":
        if frames:
            frames.pop()
    elif char == ":" and frames and frames[-1][0]:
        frames[-1][1] = _unescaped(last_string)
    elif char == "," and frames and not frames[-1][0]:
        frames[-1][1] += 1
    return True


def _unescaped(raw: str) -> str:
    try:
        return json.loads(f'"{raw}"')
    except ValueError:
        return raw


def _printable(key: str) -> str:
    """A key as it can be shown in a message: NUL and lone surrogates as escapes."""
    return key.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (text that is not valid Unicode)"
    return None


def json_problem(value: Any, *, max_depth: int = MAX_DEPTH) -> str | None:
    """None when ``value`` is safe JSON; otherwise "<path>: <what is wrong>" for the first
    problem (the path is empty at the top, else like ``claims.0.text``)."""
    problem = first_problem(value, max_depth=max_depth)
    if problem is None:
        return None
    path, message = problem
    return f"{'.'.join(_printable(key) for key in path)}: {message}" if path else message


def first_problem(value: Any, *, max_depth: int = MAX_DEPTH) -> tuple[list[str], str] | None:
    """None when ``value`` is safe JSON; otherwise the path (keys and list indices) of the first
    problem and what is wrong there (a key that is not safe text ends the path as it is: show
    it with ``repr``). A value nested too deeply is named as :func:`deep_path` names text too
    deep to parse, without the list indices after the last key, so the path does not depend on
    whether Python could parse the text."""
    # (node, depth, path, how much of the path ends with its last object key)
    stack: list[tuple[Any, int, list[str], int]] = [(value, 0, [], 0)]
    while stack:
        node, depth, path, keyed = stack.pop()
        if depth > max_depth:
            return path[:keyed], f"nested more than {max_depth} levels deep"
        if isinstance(node, dict):
            for key, child in node.items():
                if not isinstance(key, str):
                    return path, "keys must be text"
                problem = _text_problem(key)
                if problem:
                    return [*path, key], f"the key {problem}"
                stack.append((child, depth + 1, [*path, key], len(path) + 1))
        elif isinstance(node, list):
            stack.extend((child, depth + 1, [*path, str(i)], keyed) for i, child in enumerate(node))
        else:
            problem = _scalar_problem(node)
            if problem:
                return path, problem
    return None


def _scalar_problem(node: Any) -> str:
    """What is wrong with a JSON scalar ("" when it is safe)."""
    if isinstance(node, _OversizedInteger):
        digits = len(node.lstrip("-"))
        return f"integer out of range ({digits} digits; at most {MAX_SAFE_INTEGER} in size)"
    if isinstance(node, str):
        return _text_problem(node) or ""
    if isinstance(node, bool) or node is None:
        return ""
    if isinstance(node, int):
        return (
            f"integer out of range (at most {MAX_SAFE_INTEGER} in size)"
            if abs(node) > MAX_SAFE_INTEGER
            else ""
        )
    if isinstance(node, float):
        return "" if math.isfinite(node) else "numbers must be finite (no NaN or infinity)"
    return "not a JSON value"
