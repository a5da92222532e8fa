"""The shape of an inline citation marker in generated explanations: ``[9]``, ``[1, 2]``,
``[ 3 ]``. Shared by the sentence splitter (which keeps markers with the sentence they close)
and the task types that parse or remove markers, so they all agree on what a marker is.

Accepted: a ``[`` followed by one or more decimal ids separated by commas and closed by ``]``,
with optional spaces or tabs anywhere inside. Not markers: ranges (``[1-31]``), words
(``[verbatim]``), labelled lists (``[Works Cited: 24, 25]``) and unclosed brackets.
"""

__all__ = ["MARKER_PATTERN"]

#: Regular expression source for one citation marker, e.g. ``[9]``, ``[1, 2]`` or ``[ 3 ]``.
MARKER_PATTERN = r"\[[ \t]*\d+(?:[ \t]*,[ \t]*\d+)*[ \t]*\]"
