"""The conditions of steps that follow replies, decided at fixed datetimes (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scheduler.dispatch.conversation.rules import (
    Go,
    Seen,
    SeenReply,
    Skip,
    Wait,
    decide,
    late_note,
)
from scheduler.settings.conversation import StepCondition

SENT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return SENT + timedelta(seconds=seconds)


def cond(kind: str, *, pattern: str | None = None, wait_s: float = 60.0,
         keywords: tuple[str, ...] = ()) -> StepCondition:
    return StepCondition(step=1, looks_at=0, kind=kind, pattern=pattern, wait_s=wait_s,
                         keywords=keywords, text=f"{kind} {pattern or ''}".strip())


def seen(*replies: SeenReply, state: str = "delivered", **kw: object) -> Seen:
    return Seen(state=state, sent_at=SENT, replies=tuple(replies), **kw)  # type: ignore[arg-type]


CONFIRM = cond("reply_matches", pattern=r"^(1|sim)\b")
RESCHEDULE = cond("reply_matches", pattern=r"^(2|reagendar)\b", keywords=("remarcar",))
REMINDER = cond("not_replied", wait_s=30)


def test_a_matching_reply_makes_its_branch_go_and_the_others_skip() -> None:
    reply = SeenReply(7, at(5), "Sim, confirmo")
    assert decide(CONFIRM, seen(reply), at(6)) == Go(
        "replied 'Sim, confirmo': reply_matches ^(1|sim)\\b", 7)
    assert isinstance(decide(RESCHEDULE, seen(reply), at(6)), Skip)
    assert decide(REMINDER, seen(reply), at(6)) == Skip("replied 'Sim, confirmo' within 30 s", 7)


def test_case_and_accents_do_not_matter() -> None:
    accented = cond("reply_matches", pattern=r"^não\b")
    assert isinstance(decide(accented, seen(SeenReply(1, at(1), "NAO quero")), at(2)), Go)
    assert isinstance(decide(CONFIRM, seen(SeenReply(1, at(1), "SÍM")), at(2)), Go)


def test_a_keyword_routes_a_whole_reply() -> None:
    assert isinstance(decide(RESCHEDULE, seen(SeenReply(1, at(1), " Remarcar! ")), at(2)), Go)
    # a keyword inside a sentence is not the keyword
    assert isinstance(decide(RESCHEDULE, seen(SeenReply(1, at(1), "vou remarcar depois")),
                             at(2)), Skip)


def test_nothing_is_decided_before_the_step_is_sent() -> None:
    for state in ("planned", "dispatching", "held"):
        assert decide(REMINDER, Seen(state=state, sent_at=None), at(100)) == Wait(None)
    assert decide(REMINDER, Seen(state="failed", sent_at=None), at(1)) == Skip(
        "step 0 was not sent (failed)")


def test_no_reply_waits_until_the_deadline_then_decides() -> None:
    assert decide(REMINDER, seen(), at(29)) == Wait(at(30))
    assert decide(REMINDER, seen(), at(30)) == Go("no reply within 30 s")
    assert decide(CONFIRM, seen(), at(59)) == Wait(at(60))
    assert decide(CONFIRM, seen(), at(61)) == Skip("no reply within 1 min")


def test_a_late_reply_does_not_count_and_is_said() -> None:
    late = SeenReply(3, at(45), "1")  # stored before the decision, sent after the wait
    decision = decide(REMINDER, seen(late), at(50))
    assert decision == Go("no reply within 30 s (the reply '1' came after the wait: "
                          "not counted)")
    note = late_note(SeenReply(4, at(90), "2"), at(50), "go")
    assert "not undone" in note and "stays sent" in note


def test_replies_stored_out_of_order_decide_by_when_they_were_sent() -> None:
    first, second = SeenReply(9, at(3), "2"), SeenReply(8, at(4), "1")
    # id 8 was stored first, but the recipient sent "2" first
    assert decide(CONFIRM, seen(second, first), at(5)) == Skip(
        "replied '2': not reply_matches ^(1|sim)\\b", 9)
    assert isinstance(decide(RESCHEDULE, seen(second, first), at(5)), Go)
    # the same decision whatever the order the ledger lists them in
    assert decide(CONFIRM, seen(first, second), at(5)) == decide(CONFIRM, seen(second, first),
                                                                 at(5))


def test_poll_votes_and_buttons_match_on_their_choices() -> None:
    vote = SeenReply(1, at(2), "Reagendar", choices=("Reagendar",))
    assert isinstance(decide(RESCHEDULE, seen(vote), at(3)), Go)
    button = SeenReply(2, at(2), "Quero confirmar", choices=("sim",))
    assert isinstance(decide(CONFIRM, seen(button), at(3)), Go)
    # a changed vote later is a later reply: the first vote decided
    changed = SeenReply(3, at(8), "Confirmar", choices=("1",))
    assert isinstance(decide(CONFIRM, seen(vote, changed), at(9)), Skip)


def test_an_opt_out_is_not_a_reply_and_an_opted_out_number_gets_nothing() -> None:
    stop = SeenReply(1, at(2), "SAIR", opt_out=True)
    assert decide(REMINDER, seen(stop, suppressed=True), at(40)) == Skip("the number opted out")
    assert decide(REMINDER, seen(stop), at(40)) == Go("no reply within 30 s")


def test_read_and_click_conditions() -> None:
    unread = cond("not_read", wait_s=6 * 3600)
    assert decide(unread, seen(read_at=at(60)), at(70)) == Skip("read within 6 h")
    assert decide(unread, seen(), at(3600)) == Wait(at(6 * 3600))
    assert decide(unread, seen(read_at=at(7 * 3600)), at(8 * 3600)) == Go(
        "not read within 6 h")
    clicked = cond("clicked", wait_s=600)
    assert decide(clicked, seen(clicked_at=at(10)), at(11)) == Go("clicked within 10 min")
    assert decide(clicked, seen(), at(600)) == Skip("not clicked within 10 min")


def test_nothing_happened_is_decided_once_the_events_had_their_chance() -> None:
    """After a restart, a reply sent before the deadline may still be on its way (the
    service retries webhooks nobody heard): "no reply" waits until ``heard(deadline)``."""
    def heard(deadline: datetime) -> datetime:
        return deadline + timedelta(seconds=20)

    assert decide(REMINDER, seen(), at(31), heard) == Wait(at(50))
    assert decide(REMINDER, seen(SeenReply(1, at(2), "oi")), at(31), heard) == Skip(
        "replied 'oi' within 30 s", 1)  # a reply decides as soon as it is in
    assert decide(REMINDER, seen(), at(50), heard) == Go("no reply within 30 s")


def test_the_dispatch_waits_the_retry_horizon_for_deadlines_before_it_started() -> None:
    from scheduler.dispatch.conversation.decisions import Decisions

    decisions = Decisions(None, None, (0.0,), retry_horizon_s=60)
    decisions.start(at(100))
    assert decisions.heard(at(200)) == at(202)  # heard while listening: the grace only
    assert decisions.heard(at(90)) == at(160)  # before the start: the service's retries
