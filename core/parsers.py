"""The API's JSON parser: DRF's, plus a clear 400 for JSON nested too deeply to parse (Python's
parser raises RecursionError, which DRF would let through as a 500) and for huge integers."""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class SafeJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply.") from None
        except ValueError as exc:  # e.g. an integer with more digits than Python converts
            raise ParseError(f"JSON parse error - {exc}") from None
