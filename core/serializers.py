"""Serializer pieces shared by the apps."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from rest_framework import serializers


class KnownKeysOnly(serializers.Serializer):
    """Refuses a key the object does not have, naming it (``unknown_message`` takes the known
    keys as ``{known}``): a misspelt or misplaced key would otherwise be dropped without a word."""

    unknown_message = "Unknown key; known ones: {known}."
    # Keys people write that the object does not have, with what to write instead.
    key_hints: dict[str, str] = {}

    def to_internal_value(self, data: Any) -> dict:
        if isinstance(data, Mapping):
            unknown = sorted(set(data) - set(self.fields), key=str)
            if unknown:
                hinted = [key for key in unknown if key in self.key_hints]
                if hinted:
                    raise serializers.ValidationError({hinted[0]: self.key_hints[hinted[0]]})
                message = self.unknown_message.format(known=", ".join(self.fields))
                close = difflib.get_close_matches(str(unknown[0]), list(self.fields), n=1)
                if close:
                    message = f"Unknown key; did you mean {close[0]!r}? {message}"
                raise serializers.ValidationError({unknown[0]: message})
        return super().to_internal_value(data)
