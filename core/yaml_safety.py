"""YAML from people (study files, prompt files): plain data, no aliases, bounded size and depth.

``yaml.safe_load`` builds no objects, but it expands aliases: a file of a kilobyte whose anchors
refer to each other eight levels deep becomes gigabytes in memory ("billion laughs"). Study and
prompt files have no need for anchors, so an alias is refused with its line, and so is a file
larger than :data:`MAX_BYTES` or nested deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_BYTES = 5 * 1024 * 1024
MAX_DEPTH = 64


class UnsafeYAML(ValueError):
    """YAML this server does not read (an alias, too large, too deep) or cannot parse."""


class _PlainLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases and deep nesting while composing (before any expansion)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise UnsafeYAML(
                f"line {event.start_mark.line + 1}: aliases (*{event.anchor}) are not allowed; "
                "write the value out"
            )
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise UnsafeYAML(f"line {mark.line + 1}: nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        """A key given twice is refused (the last one would win without a word)."""
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (str, int, float, bool)) or key is None:
                if key in seen:
                    raise UnsafeYAML(
                        f"line {key_node.start_mark.line + 1}: the key {key!r} is given twice"
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _size_check(text: str) -> None:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise UnsafeYAML(f"larger than {MAX_BYTES // (1024 * 1024)} MB")


def _not_valid(exc: yaml.YAMLError) -> UnsafeYAML:
    """``line L, column C: not valid YAML: <the problem>`` (one line, not PyYAML's excerpt)."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return UnsafeYAML(f"{where}not valid YAML: {problem}")


def yaml_load(text: str) -> Any:
    """The data of a YAML document from an untrusted source; ``UnsafeYAML`` saying why not."""
    _size_check(text)
    try:
        return yaml.load(text, Loader=_PlainLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise _not_valid(exc) from None
    except UnsafeYAML:  # an alias, a key given twice, too deep: its own message
        raise
    except ValueError as exc:  # an integer of thousands of digits
        raise UnsafeYAML(f"a number cannot be read ({_first_words(exc)})") from None


def yaml_load_all(text: str) -> list[Any]:
    """The data of every document of a YAML stream (``---`` between documents), as above."""
    _size_check(text)
    try:
        return list(yaml.load_all(text, Loader=_PlainLoader))  # noqa: S506
    except yaml.YAMLError as exc:
        raise _not_valid(exc) from None
    except UnsafeYAML:  # an alias, a key given twice, too deep: its own message
        raise
    except ValueError as exc:  # an integer of thousands of digits
        raise UnsafeYAML(f"a number cannot be read ({_first_words(exc)})") from None


def _first_words(exc: Exception) -> str:
    """Python's message without its advice to raise the limit ("use sys.set_int_max_str…")."""
    return str(exc).split(";")[0]


class _PlainDumper(yaml.SafeDumper):
    """SafeDumper that writes every value out (no anchors), so what it writes reads back here."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def yaml_dump(data: Any) -> str:
    """YAML of plain data that :func:`yaml_load` reads back (keys in order, Unicode as is)."""
    return yaml.dump(data, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True)
