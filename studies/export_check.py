"""Is a downloaded export complete? (issue 34: a 100k export cut off by a worker timeout looked
like a complete file: HTTP 200, 43.8 of 53.1 MB, every line whole.)

Every export Concord streams (the API's ``/api/projects/SLUG/export/``, the project page's
download, ``manage.py export_annotations``) ends with one trailer line, written only after the
last row, carrying the number of rows and the sha256 of every byte before the trailer:

- JSONL: ``{"concord_export_end":{"rows":N,"sha256":"HEX"}}``
- CSV:   ``# concord_export_end rows=N sha256=HEX`` (after the CSV's own ``\\r\\n``)

A file without it, or whose bytes do not match it, is incomplete, wherever it was cut. Check a
file before reading it::

    python -m studies.export_check annotations.jsonl     # exit 0: complete, 1: not
    # or, in Python (this module needs nothing but the standard library; copy it freely):
    from studies.export_check import check_export, export_body
    check_export("annotations.csv")          # ExportCheck(complete=True, rows=..., ...)
    body = export_body(downloaded_bytes)     # the rows without the trailer, or IncompleteExport

Read the rows without the trailer: ``export_body`` (bytes in memory), or pandas'
``read_csv(path, skipfooter=1, engine="python")`` / ``read_json(path, lines=True)[:-1]``
after the check.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

END_KEY = "concord_export_end"
_CSV_END = re.compile(rb"# concord_export_end rows=(\d+) sha256=([0-9a-f]{64})\r?\n")
_TAIL = 512  # bytes read from the end to find the trailer (it is ~130)


class IncompleteExport(ValueError):
    """The export is not the complete file Concord wrote (the message says why)."""


@dataclass(frozen=True)
class ExportCheck:
    complete: bool
    problem: str  # empty when complete
    fmt: str | None  # "jsonl" or "csv", from the trailer
    rows: int | None  # rows the trailer announces
    sha256: str | None  # what the trailer announces
    body_bytes: int  # bytes before the trailer (the whole file when there is none)


def trailer(*, fmt: str, rows: int, sha256: str) -> str:
    """The trailer line of an export of ``rows`` rows whose bytes before it hash to ``sha256``."""
    if fmt == "jsonl":
        return json.dumps({END_KEY: {"rows": rows, "sha256": sha256}}, separators=(",", ":")) + "\n"
    return f"# {END_KEY} rows={rows} sha256={sha256}\r\n"


def with_end_line(chunks: Iterable[bytes], *, fmt: str, rows: Callable[[], int]) -> Iterator[bytes]:
    """``chunks``, then their end line (:func:`trailer`): the sha256 of every byte before it
    and ``rows()``, asked once the chunks are out (the rows they held)."""
    digest = hashlib.sha256()
    for data in chunks:
        digest.update(data)
        yield data
    yield trailer(fmt=fmt, rows=rows(), sha256=digest.hexdigest()).encode()


def _parse_trailer(tail: bytes) -> tuple[str, int, str, int] | None:
    """(fmt, rows, sha256, length of the trailer line) when ``tail`` ends with one."""
    if not tail.endswith(b"\n"):
        return None
    start = tail.rfind(b"\n", 0, len(tail) - 1) + 1
    line = tail[start:]
    match = _CSV_END.fullmatch(line)
    if match:
        return "csv", int(match.group(1)), match.group(2).decode(), len(line)
    try:
        value = json.loads(line)
    except ValueError:
        return None
    end = value.get(END_KEY) if isinstance(value, dict) and len(value) == 1 else None
    if not isinstance(end, dict) or set(end) != {"rows", "sha256"}:
        return None
    rows, digest = end["rows"], end["sha256"]
    if not isinstance(rows, int) or not isinstance(digest, str):
        return None
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        return None
    return "jsonl", rows, digest, len(line)


class _Prefix(io.RawIOBase):
    """The first ``size`` bytes of ``stream`` (from where it stands)."""

    def __init__(self, stream: BinaryIO, size: int):
        self.stream, self.left = stream, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.left <= 0:
            return 0
        data = self.stream.read(min(len(buffer), self.left))
        buffer[: len(data)] = data
        self.left -= len(data)
        return len(data)


def _count_rows(stream: BinaryIO, size: int, fmt: str) -> tuple[str, int]:
    """(sha256, rows) of the first ``size`` bytes of ``stream``: JSON lines, or CSV records
    after the header (a quoted cell may hold line breaks)."""
    digest = hashlib.sha256()

    class Hashing(_Prefix):
        def readinto(self, buffer) -> int:
            read = super().readinto(buffer)
            digest.update(memoryview(buffer)[:read])
            return read

    body = io.BufferedReader(Hashing(stream, size), buffer_size=1 << 20)
    if fmt == "jsonl":
        rows = sum(chunk.count(b"\n") for chunk in iter(lambda: body.read(1 << 20), b""))
    else:
        text = io.TextIOWrapper(body, encoding="utf-8", newline="")
        rows = max(sum(1 for _ in csv.reader(text)) - 1, 0)  # less the header
    return digest.hexdigest(), rows


def check_export(source: str | os.PathLike | bytes | BinaryIO) -> ExportCheck:
    """Check a downloaded export (a path, the bytes, or a seekable binary file) against its
    trailer: complete only when the trailer is there and the rows and sha256 before it match."""
    if isinstance(source, bytes | bytearray):
        return check_export(io.BytesIO(source))
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as stream:
            return check_export(stream)
    stream = source
    size = stream.seek(0, io.SEEK_END)
    stream.seek(max(size - _TAIL, 0))
    found = _parse_trailer(stream.read())
    if found is None:
        return ExportCheck(
            False,
            "no end line: the export was cut off before Concord finished writing it",
            None,
            None,
            None,
            size,
        )
    fmt, rows, expected, length = found
    stream.seek(0)
    actual, counted = _count_rows(stream, size - length, fmt)
    problem = ""
    if actual != expected:
        problem = "the bytes before the end line do not match its sha256 (changed or mixed up)"
    elif counted != rows:
        problem = f"{counted} rows where the end line announces {rows}"
    return ExportCheck(not problem, problem, fmt, rows, expected, size - length)


def export_body(data: bytes) -> bytes:
    """The rows of a complete export held in memory (``data``) without its trailer line;
    ``IncompleteExport`` naming the problem otherwise."""
    check = check_export(data)
    if not check.complete:
        raise IncompleteExport(check.problem)
    return bytes(data[: check.body_bytes])


def main(argv: list[str] | None = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m studies.export_check EXPORT_FILE...", file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        check = check_export(path)
        if check.complete:
            print(f"{path}: complete, {check.rows} rows, sha256 {check.sha256}")
        else:
            print(f"{path}: INCOMPLETE: {check.problem}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
