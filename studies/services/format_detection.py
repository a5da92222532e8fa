"""Which import format a file is in, judged from its beginning.

The import form's default is "detect the format": the first ``SAMPLE_CHARACTERS`` of the file
are read once and every format of the task type tries to read a first record from them that the
task type accepts (``validate_payload``). The same check names the format a file looks like when
the chosen one cannot read it ("line 1: not valid JSON … This file looks like the
transparent-fcexp format"), or reads no record at all from it.

A format whose reader needs the whole file (one JSON document) cannot be judged from a sample
of a larger file: such a file is detected only when it fits in the sample; otherwise the
researcher chooses its format (the message says so).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO

from annotation.task_types import TaskType

# The header and first records of line-based formats take a few KiB; a format that is one JSON
# document (Transparent-FCExp's release files are 2.8 MB) is judged only if it fits whole. The
# rest of the file is read once, by the import itself.
SAMPLE_CHARACTERS = 4 * 1024 * 1024

Reader = Callable[[IO[str]], Iterator[tuple[str, dict]]]


class SampledText(io.TextIOBase):
    """A text stream whose first characters were read ahead (``sample``): it hands them out
    again, then the rest of ``stream``, so a reader sees the whole file once. The sample is let
    go as soon as it has been read."""

    def __init__(self, *, sample: str, stream: IO[str]):
        self._sample: str | None = sample
        self._at = 0
        self._stream = stream

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        if self._sample is None:
            return self._stream.read(-1 if size is None else size)
        if size is None or size < 0:
            text, self._sample = self._sample[self._at :], None
            return text + self._stream.read()
        text = self._sample[self._at : self._at + size]
        self._at += len(text)
        if self._at >= len(self._sample):
            self._sample = None
        return text + self._stream.read(size - len(text)) if len(text) < size else text

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        if self._sample is None:
            return self._stream.readline()
        end = self._sample.find("\n", self._at)
        if end >= 0:
            line, self._at = self._sample[self._at : end + 1], end + 1
            return line
        line, self._sample = self._sample[self._at :], None  # the sample ended inside this line
        return line + self._stream.readline()


def sample_of(*, stream: IO[str]) -> tuple[str, bool, SampledText]:
    """The file's first characters (at least its first line, however long: a JSON Lines record
    may be larger than the sample), whether they are the whole file, and the file as a stream
    that starts again from its beginning."""
    sample = stream.read(SAMPLE_CHARACTERS)
    complete = len(sample) < SAMPLE_CHARACTERS
    if not complete and "\n" not in sample:
        rest = stream.readline()
        sample += rest
        complete = not rest.endswith("\n")  # the first line ran to the end of the file
    return sample, complete, SampledText(sample=sample, stream=stream)


def starts_as_json(*, sample: str) -> bool:
    """Whether the file starts like a JSON value spread over the file (an array or an object):
    no CSV header starts so."""
    return sample.lstrip("\ufeff \t\r\n")[:1] in ("[", "{")


def shape_hint(*, sample: str) -> str:
    """What the file is, when it is one JSON document rather than JSON Lines ("" otherwise)."""
    start = sample.lstrip("\ufeff \t\r\n")
    if start[:1] == "[":
        return (
            "The file is one JSON array; JSON Lines (jsonl) has one record, a JSON object, per "
            "line."
        )
    if start[:1] == "{" and not _one_line_object(start.split("\n", 1)[0]):
        return (
            "The file is one JSON object written over several lines; JSON Lines (jsonl) has one "
            "record per line."
        )
    return ""


def semicolon_problem(*, header: str) -> str:
    """What is wrong with a CSV file whose header line ``header`` has no comma and no tab but
    semicolons between two or more names (European Excel's "CSV", written where a decimal comma
    is the custom), else "". Such a file is refused with this sentence rather than read with
    ";": guessing the separator could cut up the one column of a comma-separated file."""
    line = header.lstrip("\ufeff").rstrip("\r\n")
    if "," in line or "\t" in line:
        return ""
    names = [name.strip().strip('"').strip() for name in line.split(";")]
    if len(names) < 2 or not all(names):
        return ""
    shown = line if len(line) <= 60 else line[:59] + "…"
    return (
        f"this file seems to use ';' as separator (its header is {shown!r}); save it as "
        "comma-separated: in Excel, “CSV UTF-8 (Comma delimited)”"
    )


def semicolon_hint(*, sample: str) -> str:
    """:func:`semicolon_problem` of the file's first line, as a sentence of its own."""
    problem = semicolon_problem(header=sample.split("\n", 1)[0])
    return problem[:1].upper() + problem[1:]


def _one_line_object(line: str) -> bool:
    """Whether the line is a whole JSON document (a line nested too deeply for the parser is
    one: its record is refused for its depth, not called a multi-line object)."""
    try:
        json.loads(line)
    except ValueError:
        return False
    except RecursionError:  # found by the probe: a 500-like "Unexpected error" in the import
        return True
    return True


@dataclass(frozen=True)
class Detection:
    """What the formats make of a file's beginning, each list in the order the formats were
    tried: ``valid`` read a first record the task type accepts; ``readable`` read a first record
    at all (the format to report a problem in when no format's first record is valid)."""

    valid: list[str]
    readable: list[str]


def formats_matching(
    *, task_type: TaskType, readers: Mapping[str, Reader], sample: str
) -> Detection:
    """Try every reader on ``sample``: does it read a first record, and does the task type
    accept it? A file that starts like a JSON document is not read as generic CSV (whose
    "record" would be the document's second line)."""
    valid, readable = [], []
    for fmt, reader in readers.items():
        if fmt == "csv" and starts_as_json(sample=sample):
            continue
        record = _first_record(reader=reader, sample=sample)
        if record is None:
            continue
        readable.append(fmt)
        try:
            task_type.validate_payload(record)
        except Exception:  # noqa: BLE001, S112 - a refused record means "not this format"
            continue
        valid.append(fmt)
    return Detection(valid=valid, readable=readable)


def _first_record(*, reader: Reader, sample: str) -> dict | None:
    try:
        for _, record in reader(io.StringIO(sample)):
            return record
    except Exception:  # noqa: BLE001 - any failure of a foreign format's reader means "not this one"
        return None
    return None


def looks_like(*, formats: list[str], chosen: str) -> str:
    """The sentence naming the formats a file looks like, other than ``chosen``; empty if none."""
    others = [fmt for fmt in formats if fmt != chosen]
    if not others:
        return ""
    names = " or ".join(others)
    return f"This file looks like the {names} format: choose it, or “detect the format”."


def sentences(*parts: str) -> str:
    """``parts`` as one text, each ending with a full stop, the empty ones left out."""
    return " ".join(p if p.endswith((".", "!", "?", "”")) else p + "." for p in parts if p)
