"""The API's JSON parser: DRF's, plus a clear 400 for JSON nested too deeply to parse (Python's
parser raises RecursionError, which DRF would let through as a 500), naming the top-level key it
was under, for huge integers, and for an object that gives a key twice (JSON keeps the last one
without a word, so what a person reviewed would not be what is applied)."""

from __future__ import annotations

import io
import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from core.errors import Refusal
from core.json_safety import MAX_DEPTH, string_end


class SafeJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        body = stream.read() if stream is not None else b""
        try:
            data = super().parse(io.BytesIO(body), media_type, parser_context)
        except RecursionError:
            raise Refusal(
                f"JSON parse error - nested too deeply (at most {MAX_DEPTH} levels).",
                field=top_level_key(body.decode("utf-8", "replace")),
            ) from None
        except (ValueError, ParseError) as exc:  # e.g. an integer of more digits than Python reads
            # Python's own advice ("; use sys.set_int_max_str_digits()") is not for the sender.
            message = str(exc.detail if isinstance(exc, ParseError) else exc).split(";")[0]
            if not message.startswith("JSON parse error"):
                message = f"JSON parse error - {message}"
            raise ParseError(message) from None
        if body.count(b'"') > 3:  # two keys at least: could one be given twice?
            json.loads(body, object_pairs_hook=_refuse_a_key_twice)
        return data


def _refuse_a_key_twice(pairs: list[tuple[str, object]]) -> dict:
    found: dict = {}
    for key, value in pairs:
        if key in found:
            raise Refusal(f"JSON parse error - the key {key!r} is given twice.", field=key)
        found[key] = value
    return found


def top_level_key(text: str, *, max_depth: int = MAX_DEPTH) -> str:
    """The top-level key under which the JSON ``text`` first nests deeper than ``max_depth``
    (NUL and lone surrogates spelled as escapes); "" when the top level is not an object. A scan
    of the raw text, for a body too deep to parse."""
    depth, index, last_string, key = 0, 0, "", ""
    while index < len(text):
        char = text[index]
        if char == '"':
            end = string_end(text, index + 1)
            last_string = text[index + 1 : end] if depth == 1 else last_string
            index = end + 1
            continue
        if char in "[{":
            if depth == 0 and char == "[":
                return ""
            depth += 1
            if depth > max_depth:
                break
        elif char in "]}":
            depth -= 1
        elif char == ":" and depth == 1:
            key = last_string
        index += 1
    try:
        key = json.loads(f'"{key}"')
    except ValueError:
        pass
    return key.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
