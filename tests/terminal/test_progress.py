"""What the progress bar says: why it waits and until when (in the campaign's zone), what
a crash's verification costs, what to do about a sender that is not connected, and
``unknown`` never counted as failed. Pure functions of a state and fixed datetimes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rich.console import Console

from scheduler.core.units import load_zone
from scheduler.dispatch.caps import cap_sentence
from scheduler.dispatch.results import CapWait, TimelineEntry
from scheduler.dispatch.waits import recovered_note
from scheduler.dispatch.windows import SendWindow
from scheduler.usecases.foreground import RunProgress, settled_counts
from scheduler.views.progress import BarState, waiting_line

ZONE = "America/Sao_Paulo"
#: Monday 2026-11-23 21:30 in São Paulo: after the 09:00-20:00 window.
EVENING = datetime(2026, 11, 24, 0, 30, tzinfo=UTC)


def _state(**overrides: object) -> BarState:
    values: dict[str, object] = {"zone": ZONE, "senders": ("loja-01", "loja-02"),
                                 "window": SendWindow.parse("09:00-20:00", "mon-sat", ZONE)}
    values.update(overrides)
    return BarState(**values)  # type: ignore[arg-type]


def test_a_closed_window_says_it_waits_and_until_when_in_the_campaigns_zone() -> None:
    line = waiting_line(_state(), EVENING)
    assert line == ("waiting for the sending window: it opens 2026-11-24 09:00 -03:00 "
                    "(in 11 h 30 min)")
    opened = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)  # 09:00 in São Paulo
    assert waiting_line(_state(), opened) is None
    # Saturday evening: Sunday is not a sending day
    saturday = datetime(2026, 11, 29, 0, 30, tzinfo=UTC)
    assert "opens 2026-11-30 09:00 -03:00 (in 35 h 30 min)" in (waiting_line(_state(), saturday)
                                                                or "")
    # recipients' own zones: the campaign's window does not hold the run
    assert waiting_line(_state(recipient_timezone=True), EVENING) is None


def test_the_engines_window_note_sets_the_wait() -> None:
    state = _state(window=None)
    opens = EVENING + timedelta(hours=2)
    state.take(TimelineEntry(EVENING, "window closed; paused until …", kind="window_closed",
                             until=opens))
    assert waiting_line(state, EVENING + timedelta(minutes=30)) == (
        "waiting for the sending window: it opens 2026-11-23 23:30 -03:00 (in 90 min)")
    state.take(TimelineEntry(opens, "window open; resumed", kind="window_open"))
    assert waiting_line(state, opens) is None


def test_after_a_crash_it_says_what_is_verified_and_for_how_long() -> None:
    until = EVENING + timedelta(seconds=60)
    what = recovered_note({"sent": 3, "unknown": 0, "requeued": 0, "verifying": 1204},
                          EVENING, until, load_zone(ZONE))
    assert what == ("recovered after a crash: 3 proven sent by the service's events; "
                    "1,204 being verified against the service's events until "
                    "21:31:00 -03:00 (up to 60 s)")
    state = _state(window=None)
    state.take(TimelineEntry(EVENING, what, kind="verifying", until=until))
    assert waiting_line(state, EVENING + timedelta(seconds=15)) == (
        "after a crash: verifying 1,204 sends against the service's events (messages.sent) "
        "until 21:31:00 -03:00, 45 s at most; nothing is sent twice meanwhile")
    assert waiting_line(state, until) is None


def test_a_sender_not_connected_says_so_and_what_to_do() -> None:
    state = _state(window=None)
    state.take(TimelineEntry(EVENING, "sender loja-02 paused: 409 session not connected",
                             kind="sender_down", sender="loja-02",
                             why="409 session not connected"))
    line = waiting_line(state, EVENING) or ""
    assert line.startswith("sender loja-02 not connected (409 session not connected): its "
                           "deliveries go to the other senders.")
    assert "`campaign sessions status loja-02`" in line
    assert "`campaign sessions qr loja-02`" in line
    state.take(TimelineEntry(EVENING, "sender loja-01 out of rotation: its session is "
                             "disconnected (connection.status event)", kind="sender_down",
                             sender="loja-01", why="its session is disconnected"))
    line = waiting_line(state, EVENING + timedelta(seconds=30)) or ""
    assert line.startswith("nothing can be sent: senders loja-01, loja-02 not connected "
                           "(its session is disconnected); retrying every 60 s.")
    # a failed send's pause lapses when the sender is not said down again (it sends)...
    later = EVENING + timedelta(minutes=3)
    assert (waiting_line(state, later) or "").startswith("sender loja-01 not connected")
    # ... one out by its session's status stays out until the session connects
    state.take(TimelineEntry(later, "sender loja-01 back in rotation", kind="sender_up",
                             sender="loja-01"))
    assert waiting_line(state, later) is None


def test_unknown_rows_are_not_counted_as_failed() -> None:
    counts = {"sent": 2000, "delivered": 800, "read": 82, "unknown": 118, "skipped": 5}
    assert settled_counts(counts) == "sent 2,882 failed 0 unknown 118"
    assert settled_counts({"failed": 3, "expired": 2, "read": 1}) == \
        "sent 1 failed 3 expired 2"


def test_the_bar_shows_why_it_waits_and_notes_with_their_zone() -> None:
    console = Console(record=True, width=80, force_terminal=False, color_system=None)
    bar = RunProgress(console, 3000, 0, state=_state(), clock=lambda: EVENING)
    bar.update({"sent": 2000, "delivered": 882, "unknown": 118})
    bar.note(TimelineEntry(EVENING, "sender \x1b[31mloja-02 paused: kept failing"),
             ZONE)
    console.print(bar.progress)
    shown = console.export_text()
    assert "sent 2,882 failed 0 unknown 118\n" in shown and "100% left 0" in shown
    assert "ETA" in shown and "…" not in shown
    assert "2026-11-23 21:30:00 -03:00 sender \\x1b[31mloja-02 paused" in shown
    assert "waiting for the sending window: it opens 2026-11-24 09:00 -03:00" in shown
    assert "\x1b" not in shown
    assert max(len(line) for line in shown.splitlines()) <= 80


def test_recipients_own_windows_say_the_run_waits_and_until_when() -> None:
    state = _state(recipient_timezone=True)
    opens = EVENING + timedelta(hours=11, minutes=30)  # 09:00 in São Paulo
    state.take(TimelineEntry(EVENING, "recipients' own time zones: …", kind="recipients_wait",
                             until=opens))
    assert waiting_line(state, EVENING + timedelta(minutes=30)) == (
        "waiting for the recipients' own sending windows (their time zones): the first "
        "opens 2026-11-24 09:00 -03:00 (in 11 h 00 min)")
    state.take(TimelineEntry(opens, "… sending resumed", kind="recipients_resume"))
    assert waiting_line(state, opens) is None


def test_a_sender_at_its_daily_cap_says_its_cap_when_reached_and_when_it_sends_again() -> None:
    morning = datetime(2026, 11, 24, 12, 16, 39, tzinfo=UTC)  # Tuesday 09:16:39 -03:00
    again = datetime(2026, 11, 25, 11, 0, tzinfo=UTC)  # Wednesday 08:00 -03:00
    state = _state(window=None)
    for sender in ("loja-01", "loja-02"):
        wait = CapWait(sender, "daily_cap", 1000, morning, again)
        state.take(TimelineEntry(morning, cap_sentence(wait, ZONE), kind="sender_capped",
                                 sender=sender, until=again, cap=wait))
        if sender == "loja-01":
            assert waiting_line(state, morning + timedelta(minutes=1)) == (
                "sender loja-01 reached its daily cap of 1,000 at 09:16 -03:00; sends again "
                "2026-11-25 08:00 -03:00 (in 22 h 42 min)\n"
                "the other senders send their deliveries meanwhile")
    noon = datetime(2026, 11, 24, 15, 0, tzinfo=UTC)
    assert (waiting_line(state, noon) or "").startswith(
        "nothing can be sent before 2026-11-25 08:00 -03:00: every sender is at its daily "
        "cap or plan limit\nsender loja-01 reached its daily cap of 1,000 at 09:16 -03:00")
    assert waiting_line(state, again) is None  # the wait is over
    console = Console(record=True, width=80, force_terminal=False, color_system=None)
    bar = RunProgress(console, 1500, 1000, state=state, clock=lambda: noon)
    bar.update({"sent": 2000})
    console.print(bar.progress)
    shown = console.export_text()
    assert "sender loja-02 reached its daily cap of 1,000 at 09:16 -03:00; sends again" in \
        shown.replace("\n", " ")
    assert max(len(line) for line in shown.splitlines()) <= 80


# ---------------------------------------------------------------------- sender care
# The engine's sentences (scheduler/dispatch/dispatcher/care.py) as the bar receives them.

OPT_OUTS = "opt-outs passed 3% of the day's sends (7 of 190)"


def _held(name: str, state: str, why: str) -> TimelineEntry:
    return TimelineEntry(EVENING, f"sender {name} {state}: {why}; no sends through it",
                         kind="sender_down", sender=name, why=why, state=state)


def test_a_sender_paused_by_its_profile_says_why_and_how_to_resume_it() -> None:
    state = _state(window=None)
    state.take(_held("loja-02", "paused", OPT_OUTS))
    line = waiting_line(state, EVENING) or ""
    assert line == (f"sender loja-02 paused ({OPT_OUTS}): its deliveries go to the other "
                    "senders; resume it with `campaign senders resume loja-02 --reason TEXT`")
    # held until it is back, however long (not a failed send's cool-off)
    assert waiting_line(state, EVENING + timedelta(hours=5)) == line
    state.take(TimelineEntry(EVENING, "sender loja-02 back in rotation (healthy: resumed)",
                             kind="sender_up", sender="loja-02"))
    assert waiting_line(state, EVENING) is None


def test_a_failed_sends_pause_is_not_taken_for_a_profile_hold() -> None:
    state = _state(window=None)
    state.take(TimelineEntry(EVENING, "sender loja-02 paused: kept failing (timeout)",
                             kind="sender_down", sender="loja-02", why="kept failing"))
    assert (waiting_line(state, EVENING) or "").startswith("sender loja-02 not connected")
    assert waiting_line(state, EVENING + timedelta(minutes=3)) is None  # its cool-off lapsed


def test_every_sender_held_says_the_run_waits_and_what_to_do() -> None:
    state = _state(window=None)
    state.take(_held("loja-01", "logged_out", "its session is logged_out (connection.status)"))
    assert "reconnect it with `campaign sessions qr loja-01`" in (
        waiting_line(state, EVENING) or "")
    state.take(_held("loja-02", "retired", "number given back"))
    state.take(TimelineEntry(EVENING, "every sender is held back (…): the run waits; …",
                             kind="senders_held"))
    assert waiting_line(state, EVENING + timedelta(hours=1)) == (
        "nothing can be sent: every sender is held back (loja-01 logged_out: its session is "
        "logged_out (connection.status); loja-02 retired: number given back); the run "
        "waits. Resume one with `campaign senders resume loja-02 --reason TEXT` or "
        "reconnect loja-01 with `campaign sessions qr loja-01` and scan the QR code with "
        "its phone")


def test_a_throttled_sender_and_a_warming_one_are_said_until_they_change() -> None:
    state = _state(window=None)
    state.take(TimelineEntry(EVENING, "loja-01 warming: day 3 of 8, 65 today",
                             kind="warming", sender="loja-01"))
    state.take(TimelineEntry(EVENING, "sender loja-02 throttled to 50% of its rate: 429s "
                             "(12 in the window)", kind="sender_throttled", sender="loja-02",
                             why="429s (12 in the window)"))
    assert waiting_line(state, EVENING) == (
        "sender loja-02 throttled to 50% of its rate (429s (12 in the window)): the other "
        "senders take a larger share; it speeds up again step by step while its signals "
        "stay good\nloja-01 warming: day 3 of 8, 65 today")
    state.take(TimelineEntry(EVENING, "sender loja-02 back to full speed", kind="sender_up",
                             sender="loja-02"))
    assert waiting_line(state, EVENING) == "loja-01 warming: day 3 of 8, 65 today"
    console = Console(record=True, width=80, force_terminal=False, color_system=None)
    bar = RunProgress(console, 100, 0, state=state, clock=lambda: EVENING)
    bar.note(_held("loja-02", "paused", OPT_OUTS), ZONE)
    console.print(bar.progress)
    shown = console.export_text()
    flat = " ".join(line.strip() for line in shown.splitlines())
    assert f"-03:00 sender loja-02 paused: {OPT_OUTS}; no sends through it" in flat
    assert "resume it with `campaign senders resume loja-02 --reason TEXT`" in flat
    assert max(len(line) for line in shown.splitlines()) <= 80
