"""How long a piece of long work (a judge run, an import) has taken, how fast it goes and how long
it still needs, from its stored start and end times and its progress counters alone: nothing is
counted over the items, so a page showing it costs no query more."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime

from django.utils import timezone

# Below this many seconds (or units done) a rate is noise: none is shown, nor a time remaining.
MIN_SECONDS = 1.0


@dataclass(frozen=True)
class Pace:
    """``elapsed_seconds``: since the work started (to its end, once finished); ``rate``: units
    (``unit``: "items", "records") per second; ``remaining_seconds``: the time still needed at
    that rate, only while the work runs and its remaining share is known."""

    elapsed_seconds: float | None
    rate: float | None
    remaining_seconds: float | None
    unit: str

    def as_dict(self) -> dict:
        return asdict(self)


def work_pace(
    *,
    started_at: datetime | None,
    finished_at: datetime | None,
    done: int,
    unit: str,
    remaining_share: float | None = None,
    now: datetime | None = None,
) -> Pace:
    """The pace of work that started at ``started_at`` (None: not yet) and has done ``done``
    units. ``remaining_share``: the part still to do over the part done (remaining units over
    done units, or bytes still to read over bytes read), for the time remaining; None when
    unknown or finished."""
    if started_at is None:
        return Pace(elapsed_seconds=None, rate=None, remaining_seconds=None, unit=unit)
    end = finished_at or now or timezone.now()
    elapsed = max((end - started_at).total_seconds(), 0.0)
    if elapsed < MIN_SECONDS or done <= 0:
        return Pace(elapsed_seconds=elapsed, rate=None, remaining_seconds=None, unit=unit)
    remaining = None
    if finished_at is None and remaining_share is not None:
        remaining = max(remaining_share, 0.0) * elapsed
    return Pace(
        elapsed_seconds=elapsed, rate=done / elapsed, remaining_seconds=remaining, unit=unit
    )


def duration_words(seconds: float | None) -> str:
    """ "under 1 s", "45 s", "3 min 05 s", "2 h 04 min"; "" for None."""
    if seconds is None:
        return ""
    if seconds < 1:
        return "under 1 s"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def rate_words(rate: float | None, unit: str) -> str:
    """ "25 items/s", "2.5 items/s"; per minute below one a second ("30 items/min"), per hour
    below one a minute; "" for None."""
    if rate is None:
        return ""
    value, per = rate, "s"
    if value < 1:
        value, per = rate * 60, "min"
    if value < 1:
        value, per = rate * 3600, "h"
    return f"{value:.0f} {unit}/{per}" if value >= 10 else f"{value:.1f} {unit}/{per}"


def pace_words(pace: Pace | dict | None) -> str:
    """One line for a page: "2 min 05 s · 3.1 items/s · about 40 s left"."""
    if not pace:
        return ""
    if isinstance(pace, dict):
        pace = Pace(**pace)
    parts = [duration_words(pace.elapsed_seconds), rate_words(pace.rate, pace.unit)]
    if pace.remaining_seconds is not None:
        parts.append(f"about {duration_words(pace.remaining_seconds)} left")
    return " · ".join(part for part in parts if part)
