"""The judge services' refusal."""

from __future__ import annotations

from core.errors import Refusal


class JudgeError(Refusal):
    """A request the judge services refuse; the message is shown to the researcher.

    A :class:`~core.errors.Refusal`: its ``code`` gives the HTTP status (``"invalid"``, the
    default, for a judge, filter or setting that cannot work; ``"conflict"`` for a run already
    running or a pre-selection the project's set-up rules out) and DRF's exception handler turns
    it into ``{"detail", "code", "field"}``."""
