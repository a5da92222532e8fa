"""Translation catalogues without GNU gettext: read a ``.po`` file and write its ``.mo``.

The compiled ``.mo`` files are committed next to their ``.po`` files, so a fresh machine needs
nothing but Python (``make install``); ``manage.py compile_catalogs`` rewrites them after a
``.po`` changes, and a test checks that every committed ``.mo`` is what its ``.po`` compiles to.
The writer follows Python's ``Tools/i18n/msgfmt.py``: fuzzy and untranslated entries are left
out, contexts join their message with ``\\x04`` and plural forms with ``\\x00``, no hash table.
Extracting strings (``manage.py makemessages``) still needs GNU ``xgettext``; only developers
adding strings run it.
"""

from __future__ import annotations

import ast
import struct
from dataclasses import dataclass, field
from pathlib import Path

MO_MAGIC = 0x950412DE


@dataclass
class Entry:
    msgid: str = ""
    msgid_plural: str | None = None
    msgctxt: str | None = None
    msgstr: dict[int, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    line: int = 0

    @property
    def translated(self) -> bool:
        return bool(self.msgstr) and all(self.msgstr.values()) and "fuzzy" not in self.flags


class PoError(ValueError):
    """A ``.po`` file that cannot be read; the message names its line."""


def _string(text: str, path: str, number: int) -> str:
    text = text.strip()
    if not (len(text) >= 2 and text[0] == text[-1] == '"'):
        raise PoError(f"{path}:{number}: expected a quoted string, found {text[:40]!r}")
    try:
        return ast.literal_eval(text)
    except (SyntaxError, ValueError):
        raise PoError(f"{path}:{number}: bad string {text[:40]!r}") from None


def parse_po(text: str, *, path: str = "<po>") -> list[Entry]:
    """The entries of a ``.po`` file (obsolete ``#~`` entries left out), header first."""
    entries: list[Entry] = []
    entry = Entry()
    target: tuple[str, int] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#~"):
            continue
        keyword, _, rest = line.partition(" ")
        # A comment or a new message after a msgstr starts the next entry.
        if entry.msgstr and (line.startswith("#") or keyword in ("msgctxt", "msgid")):
            entries.append(entry)
            entry, target = Entry(), None
        if line.startswith("#"):
            if line.startswith("#,"):
                entry.flags.update(flag.strip() for flag in line[2:].split(","))
            continue
        if line.startswith('"'):
            if target is None:
                raise PoError(f"{path}:{number}: a string continues nothing")
            name, index = target
            value = _string(line, path, number)
            if name == "msgstr":
                entry.msgstr[index] += value
            else:
                setattr(entry, name, (getattr(entry, name) or "") + value)
            continue
        value = _string(rest, path, number)
        if keyword in ("msgctxt", "msgid", "msgid_plural"):
            entry.line = entry.line or number
            setattr(entry, keyword, value)
            target = (keyword, 0)
        elif keyword == "msgstr" or (keyword.startswith("msgstr[") and keyword.endswith("]")):
            index = int(keyword[7:-1]) if keyword != "msgstr" else 0
            entry.msgstr[index] = value
            target = ("msgstr", index)
        else:
            raise PoError(f"{path}:{number}: unknown keyword {keyword[:20]!r}")
    if entry.msgstr:
        entries.append(entry)
    return entries


def compile_mo(entries: list[Entry]) -> bytes:
    """The ``.mo`` bytes of ``entries``: the header and every translated, non-fuzzy entry."""
    messages: dict[bytes, bytes] = {}
    for entry in entries:
        header = entry.msgid == "" and entry.msgctxt is None
        if not header and not entry.translated:
            continue
        key = entry.msgid
        if entry.msgid_plural is not None:
            key += "\x00" + entry.msgid_plural
        if entry.msgctxt is not None:
            key = entry.msgctxt + "\x04" + key
        value = "\x00".join(entry.msgstr[i] for i in sorted(entry.msgstr))
        messages[key.encode("utf-8")] = value.encode("utf-8")
    keys = sorted(messages)
    ids = strs = b""
    offsets = []
    for raw in keys:
        offsets.append((len(ids), len(raw), len(strs), len(messages[raw])))
        ids += raw + b"\x00"
        strs += messages[raw] + b"\x00"
    count = len(keys)
    key_start = 7 * 4 + 16 * count
    value_start = key_start + len(ids)
    key_table: list[int] = []
    value_table: list[int] = []
    for key_offset, key_length, value_offset, value_length in offsets:
        key_table += [key_length, key_offset + key_start]
        value_table += [value_length, value_offset + value_start]
    head = struct.pack("Iiiiiii", MO_MAGIC, 0, count, 7 * 4, 7 * 4 + count * 8, 0, 0)
    tables = struct.pack(f"{len(key_table)}i", *key_table)
    tables += struct.pack(f"{len(value_table)}i", *value_table)
    return head + tables + ids + strs


def po_files(root: Path) -> list[Path]:
    """Every ``.po`` of the project's catalogues: ``locale/`` and each app's ``locale/``."""
    found = []
    for path in sorted(root.glob("**/locale/*/LC_MESSAGES/*.po")):
        if not {".venv", "node_modules", ".git"} & set(path.relative_to(root).parts):
            found.append(path)
    return found


def compile_file(po: Path) -> bytes:
    return compile_mo(parse_po(po.read_text(encoding="utf-8"), path=str(po)))
