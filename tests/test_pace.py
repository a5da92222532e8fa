"""core.pace: elapsed time, rate and time remaining of long work, in words."""

from datetime import UTC, datetime, timedelta

from core.pace import duration_words, pace_words, rate_words, work_pace

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_running_job_has_a_rate_and_a_time_left_a_finished_one_no_time_left():
    running = work_pace(
        started_at=START,
        finished_at=None,
        done=30,
        unit="items",
        remaining_share=3.0,
        now=START + timedelta(seconds=60),
    )
    assert (running.elapsed_seconds, running.rate, running.remaining_seconds) == (60, 0.5, 180)
    assert pace_words(running) == "1 min 00 s · 30 items/min · about 3 min 00 s left"
    finished = work_pace(
        started_at=START, finished_at=START + timedelta(hours=2, minutes=4), done=7440, unit="items"
    )
    assert pace_words(finished.as_dict()) == "2 h 04 min · 1.0 items/s"


def test_no_rate_before_a_second_or_before_anything_is_done_and_nothing_before_the_start():
    assert work_pace(started_at=None, finished_at=None, done=0, unit="items").rate is None
    early = work_pace(
        started_at=START, finished_at=None, done=5, unit="items", now=START + timedelta(seconds=0.5)
    )
    assert (early.rate, early.remaining_seconds) == (None, None)
    idle = work_pace(
        started_at=START, finished_at=None, done=0, unit="items", now=START + timedelta(minutes=1)
    )
    assert pace_words(idle) == "1 min 00 s"
    assert pace_words(None) == ""


def test_words():
    assert duration_words(0.4) == "under 1 s" and duration_words(59.4) == "59 s"
    assert duration_words(61) == "1 min 01 s"
    assert rate_words(25.2, "records") == "25 records/s"
    assert rate_words(2.54, "records") == "2.5 records/s"
    assert rate_words(1 / 600, "items") == "6.0 items/h"
