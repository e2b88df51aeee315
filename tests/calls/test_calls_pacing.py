"""One WhatsApp call at a time per session, inside the window: the sender pool's hold (pure,
fixed datetimes) and a rehearsal of a calls campaign on a simulated clock."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scheduler.dispatch.senders import SenderPool
from scheduler.usecases.rehearsal import rehearse_campaign
from tests.calls.support import calls_project

T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
HOLD = timedelta(minutes=10)


def _pool() -> SenderPool:
    pool = SenderPool(["a", "b"], rate=10.0, rng=random.Random(1), tz=UTC, now=T0)
    pool.call_hold = HOLD
    return pool


def test_a_session_with_a_call_under_way_places_no_other_until_it_ends() -> None:
    pool = _pool()
    first, ready = pool.pick(T0)
    assert first is not None and ready is not None
    pool.on_claim(first, ready, T0)
    later = T0 + timedelta(seconds=1)  # the pace would allow both again
    second, ready = pool.pick(later)
    assert second is not None and second.name != first.name and ready is not None
    pool.on_claim(second, ready, later)
    nobody, wake = pool.pick(T0 + timedelta(seconds=2))
    assert nobody is None and wake == T0 + HOLD  # both hold until their call's time-out
    # the ledger shows the first call ended: that session calls again at once
    pool.follow_calls({second.name: later})
    again, _ = pool.pick(T0 + timedelta(seconds=3))
    assert again is first and pool.holding_calls()
    # a call whose end never came stops holding its session at the time-out
    pool.follow_calls({first.name: T0 - HOLD, second.name: later})
    assert pool.senders[first.name].ready_at(T0 + timedelta(seconds=4)) <= \
        T0 + timedelta(seconds=4)


def test_without_a_hold_the_pool_ignores_calls() -> None:
    pool = SenderPool(["a"], rate=10.0, rng=random.Random(1), tz=UTC, now=T0)
    state, ready = pool.pick(T0)
    assert state is not None and ready is not None
    pool.on_claim(state, ready, T0)
    pool.follow_calls({"a": T0})
    assert state.call_until is None and not pool.holding_calls()


@pytest.mark.parametrize("record", [True, False])
def test_a_rehearsal_places_calls_one_at_a_time_per_session_inside_the_window(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: bool) -> None:
    monkeypatch.setenv("CAMPAIGN_STATE_DIR", str(tmp_path / "real-state"))
    path = calls_project(tmp_path / "p", 6, senders=("a", "b"), record=record,
                         rate="10/s")
    text = path.read_text(encoding="utf-8").replace(
        '[schedule]\ntimezone = "UTC"\n',
        '[schedule]\ntimezone = "UTC"\nwindow = "09:00-09:03"\ndays = "mon-fri"\n')
    path.write_text(text, encoding="utf-8")
    # without events a call counts for voice_call_estimate_s (90 s): two calls a session
    # fit in the three minutes of Monday's window, the last two wait for Tuesday's
    rehearsal = rehearse_campaign(path, start=T0 - timedelta(minutes=10))
    notes = [e.what for e in rehearsal.timeline]
    assert any("paused until 2026-11-23 09:00" in n for n in notes)
    assert any("paused until 2026-11-24 09:00" in n for n in notes), notes
    assert rehearsal.sends == 6 and rehearsal.per_sender == {"a": 3, "b": 3}
    assert rehearsal.finish.date().isoformat() == "2026-11-24"
