"""What the hidden-tab harness concludes from a page's timers (codap_relay_tooling.testing.hidden_tab.TimerReport):
a 1-second interval that ran once a second, then, as Chrome runs a hidden tab's chained timers after its first
minute, once a minute."""

from __future__ import annotations

from codap_relay_tooling.testing.hidden_tab import TimerReport

# Once a second for a minute, then at each minute's turn (2 s into it, as Chrome aligns its wake-ups).
THROTTLED = TimerReport(ticks=[*range(1, 60), 62.0, 122.0, 182.0], span=190.0, frames=0, visibility="hidden")


def test_the_gaps_include_the_wait_from_the_last_run_to_the_reading() -> None:
    assert THROTTLED.gaps()[:2] == [1.0, 1.0]
    assert THROTTLED.gaps()[-4:] == [3.0, 60.0, 60.0, 8.0]


def test_runs_per_minute_before_and_after_the_slowing() -> None:
    assert THROTTLED.per_minute(0, 50) == 60 * 49 / 50
    assert THROTTLED.per_minute(90) == 60 * 2 / 100


def test_where_the_timers_slowed_and_where_they_never_did() -> None:
    assert THROTTLED.slowed_at() == 62.0  # the first gap of 10 s or more: from 62 to 122
    steady = TimerReport(ticks=[float(t) for t in range(1, 100)], span=100.0, frames=0, visibility="hidden")
    assert steady.slowed_at() is None
    stopped = TimerReport(ticks=[1.0, 2.0], span=30.0, frames=0, visibility="hidden")
    assert stopped.slowed_at() == 2.0  # nothing since: the wait to the reading counts
