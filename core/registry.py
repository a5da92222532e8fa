"""A registry of named things, filled at start-up by ``autodiscover_modules`` in an app's
``ready()`` (the pattern of Django admin's ``AdminSite``).

Each core app owns one registry object: task types (``annotation``), judge prompts
(``llm_judges``), report sections (``agreement``), demo projects and study replays
(``studies``). A task-type package fills them by defining ``task.py``, ``judging.py``,
``report.py``, ``demo.py`` and ``replay.py``; ``studies/checks.py`` checks that they name each
other's task types.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class AlreadyRegistered(ValueError):
    """A second entry under a key that is taken."""


class NotRegistered(LookupError):
    """No entry under that key; the message names what is registered."""


class Registry(Generic[T]):
    """Entries by key (a task type's slug). ``register`` refuses duplicates, ``get`` names what
    is missing and what exists."""

    def __init__(self, what: str) -> None:
        self.what = what  # "task type", "judge prompt"…, for messages
        # named as Django admin's AdminSite names it, so that
        # ``autodiscover_modules(…, register_to=registry)`` puts it back as it was when a
        # module fails half-way through its import
        self._registry: dict[str, T] = {}

    def register(self, key: str, entry: T) -> T:
        if key in self._registry:
            raise AlreadyRegistered(f"A {self.what} for {key!r} is already registered.")
        self._registry[key] = entry
        return entry

    def unregister(self, key: str) -> None:
        if key not in self._registry:
            raise NotRegistered(f"No {self.what} is registered for {key!r}.")
        del self._registry[key]

    def get(self, key: str) -> T:
        try:
            return self._registry[key]
        except KeyError:
            known = ", ".join(sorted(self._registry)) or "none"
            raise NotRegistered(
                f"No {self.what} is registered for {key!r} (registered: {known})."
            ) from None

    def find(self, key: str) -> T | None:
        return self._registry.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._registry

    def __iter__(self) -> Iterator[T]:
        return iter([self._registry[key] for key in sorted(self._registry)])

    def keys(self) -> list[str]:
        return sorted(self._registry)
