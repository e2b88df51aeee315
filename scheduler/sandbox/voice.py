"""Automated voice calls (URA) in the sandbox: seeded outcomes, calls in time, the wallet.

Each recipient of ``voice/call`` or ``voice/bulk`` gets one ``callId`` and a plan drawn from
the ``"{seed}:voice-outcomes"`` stream in arrival order: per attempt a ring time
(``voice_ring_s``), answered or not (``voice_answer_rate``); answered, a talk time
(``voice_talk_s``, at most ``audioSecs`` for an audio) and, in an IVR flow (``flowId``), 0 to
2 keys from ``voice_digits``; not answered, a Q.850 cause from ``voice_unanswered_causes``.
A number listed in ``voice_outcomes_by_number`` takes its scripted outcome instead, one dial
per call (:mod:`scheduler.sandbox.scripted`).
Busy (17), no answer (19) and ring time-out (150) are dialled again, ``voice_retry_gap_s``
later, up to ``maxAttempts`` (default 1); rejected (21) and voicemail (151) are final.

The calls then happen in time (simulated seconds x ``voice_time_scale`` of wall time):
``call.started`` at each dial, ``call.answered`` after the ring, one ``call.dtmf`` per key
during the talk, and one ``call.ended`` per recipient with the final outcome. A call holds
one of ``voice_max_calls_in_progress`` from its request to its ``call.ended``; a request
that would exceed it is 429 with ``Retry-After`` (ours). The wallet reserves
``voice_reserve_micro`` per call and charges ``voice_price_micro_per_minute`` per started
minute of talk (at most the reservation) when it ends. Real start and end instants
(``startedAt``, ``endedAt``, epoch seconds) are kept for concurrency checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from scheduler.core.timeutil import epoch_s, monotonic
from scheduler.sandbox.account import AccountHooks, Wallet, insufficient_balance
from scheduler.sandbox.common import ApiError, iso_ms, seeded
from scheduler.sandbox.scripted import Script, scripted_call
from scheduler.service.account_models import (
    VOICE_BULK_PATH,
    VOICE_CALL_PATH,
    VoiceBulkBody,
    VoiceCallBody,
)

if TYPE_CHECKING:
    from scheduler.sandbox.world_view import WorldView

#: Q.850 cause descriptions (150 and 151 are the service's own).
CAUSE_DESCRIPTIONS: dict[int, str] = {
    16: "Normal call clearing",
    17: "User busy",
    19: "No answer from user (user alerted)",
    21: "Call rejected",
    150: "Ring time-out",
    151: "Voicemail",
}
REDIALLED = frozenset({17, 19, 150})
NORMAL_CLEARING = 16
TIER = "standard"


@dataclass(slots=True)
class Attempt:
    """One dial of a call: how long it rang, and what came of it."""

    ring_s: float
    answered: bool
    cause: int
    talk_s: int = 0
    digits: str = ""


@dataclass
class Call:
    """One recipient's call: its outcome entry and the events still to happen."""

    entry: dict[str, Any]
    reserved: int
    scale: float
    steps: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)


class VoiceDesk:
    """Dials calls, plays them out in time, reports them on the ``voice`` account webhook."""

    #: The ``channel`` its events carry (and ``/sandbox/outcomes`` asks for).
    channel = "voice"

    def __init__(
        self, sandbox: WorldView, wallet: Wallet, hooks: AccountHooks, seed: int | None
    ) -> None:
        self._sandbox = sandbox
        self._wallet = wallet
        self._hooks = hooks
        self._draws = seeded(seed, "voice-outcomes")
        self._ids = seeded(seed, "voice-ids")
        self._script = Script()
        #: Expected end (event-loop time) of every call in progress, by ``callId``.
        self._ends: dict[str, float] = {}
        #: One entry per recipient, in arrival order (``GET /sandbox/outcomes?channel=voice``).
        self.outcomes: list[dict[str, Any]] = []

    @property
    def in_progress(self) -> int:
        """Calls requested and not yet ended."""
        return len(self._ends)

    # ------------------------------------------------------------------ requests

    def call(self, body: VoiceCallBody, received: dict[str, Any]) -> dict[str, Any]:
        """``POST /api/v1/voice/call``: 402 when the wallet cannot reserve, 429 when full."""
        reserve = self._sandbox.config.voice_reserve_micro
        if not self._wallet.affordable(reserve, 1):
            raise insufficient_balance()
        self._admit(1, "to")
        self._wallet.reserve(reserve)
        call_id = self._dial(body, body.to, None, None, 0.0)
        self._sandbox.world.record_send(
            path=VOICE_CALL_PATH, session_id=None, to=body.to, body=received,
            message_id=call_id, at=self._sandbox.now(),
        )
        return {"success": True, "callId": call_id, "reservedMicroReais": reserve, "tier": TIER}

    def bulk(self, body: VoiceBulkBody, received: dict[str, Any]) -> dict[str, Any]:
        """``POST /api/v1/voice/bulk``: the first recipients the wallet pays for are dialled,
        the rest ``skipped``; 429 when they would exceed the calls allowed in progress."""
        cfg = self._sandbox.config
        if body.recipients is not None:
            people = [(r.phone, r.variables) for r in body.recipients]
            where = "recipients"
        else:
            people = [(number, None) for number in body.numbers or ()]
            where = "numbers"
        if len(people) > cfg.voice_bulk_max:
            raise ApiError(400, f"Invalid request body: {where}: at most {cfg.voice_bulk_max} "
                                "recipients per request")
        delay = self._delay_until(body.scheduledAt)
        reserve = cfg.voice_reserve_micro
        dialled = self._wallet.affordable(reserve, len(people))
        if dialled:
            self._admit(dialled, where)
        bulk_id = f"bulk_{self._ids.getrandbits(64):016x}"
        call_ids: list[str | None] = []
        for n, (phone, variables) in enumerate(people):
            if n < dialled:
                self._wallet.reserve(reserve)
                call_ids.append(self._dial(body, phone, variables, bulk_id, delay))
            else:
                call_ids.append(None)
                self.outcomes.append(self._entry(None, bulk_id, phone, variables, 0)
                                     | {"outcome": "skipped", "costMicroReais": 0})
        self._sandbox.world.record_send(
            path=VOICE_BULK_PATH, session_id=None, to=[p for p, _ in people], body=received,
            message_id=None, at=self._sandbox.now(), bulkId=bulk_id, callIds=call_ids,
        )
        answer: dict[str, Any] = {
            "success": True,
            "bulkId": bulk_id,
            "dialed": dialled,
            "skipped": len(people) - dialled,
            "reservedMicroReais": dialled * reserve,
            "tier": TIER,
        }
        if body.scheduledAt is not None:
            answer["scheduled"] = delay > 0
            answer["scheduledAt"] = body.scheduledAt
        return answer

    def _admit(self, count: int, where: str) -> None:
        """400 if ``count`` calls can never fit; 429 with ``Retry-After`` if not now."""
        allowed = self._sandbox.config.voice_max_calls_in_progress
        if count > allowed:
            raise ApiError(400, f"Invalid request body: {where}: {count} calls exceed the "
                                f"{allowed} calls allowed in progress")
        over = self.in_progress + count - allowed
        if over > 0:
            ends = sorted(self._ends.values())
            wait = ends[over - 1] - monotonic()
            raise ApiError(
                429,
                f"Too many calls in progress ({self.in_progress} of {allowed}); "
                f"{count} more do not fit",
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )

    def _delay_until(self, scheduled_at: str | None) -> float:
        """Real seconds until ``scheduledAt`` (sandbox clock); 0 when absent or past."""
        if scheduled_at is None:
            return 0.0
        try:
            when = datetime.fromisoformat(scheduled_at)
        except ValueError:
            raise ApiError(400, "Invalid request body: scheduledAt: not an ISO 8601 date-time"
                           ) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - self._sandbox.now()).total_seconds())

    # ------------------------------------------------------------------ one call

    def _entry(self, call_id: str | None, bulk_id: str | None, to: str,
               variables: dict[str, Any] | None, reserved: int) -> dict[str, Any]:
        return {
            "index": len(self.outcomes), "callId": call_id, "bulkId": bulk_id, "to": to,
            "variables": variables, "outcome": None, "answered": None, "talkSeconds": None,
            "digits": None, "cause": None, "causeDescription": None, "attempts": 0,
            "reservedMicroReais": reserved, "costMicroReais": None,
            "startedAt": None, "endedAt": None,
        }

    def _plan(self, flow: bool, audio_secs: int | None, max_attempts: int) -> list[Attempt]:
        """The attempts of one call, drawn in a fixed order from the outcome stream."""
        cfg = self._sandbox.config
        draws = self._draws
        attempts: list[Attempt] = []
        for _ in range(max_attempts):
            ring = draws.uniform(*cfg.voice_ring_s)
            if draws.random() < cfg.voice_answer_rate:
                talk = round(draws.uniform(*cfg.voice_talk_s))
                if audio_secs is not None and not flow:
                    talk = min(talk, audio_secs)
                keys = draws.randrange(3) if flow and cfg.voice_digits else 0
                digits = "".join(draws.choice(cfg.voice_digits) for _ in range(keys))
                attempts.append(Attempt(ring, True, NORMAL_CLEARING, talk, digits))
                break
            cause = draws.choice(cfg.voice_unanswered_causes)
            attempts.append(Attempt(ring, False, cause))
            if cause not in REDIALLED:
                break
        return attempts

    def _scripted(self, to: str, flow: bool, audio_secs: int | None) -> list[Attempt] | None:
        """The one dial ``voice_outcomes_by_number`` scripts for ``to`` (None: not scripted):
        it rings the shortest ``voice_ring_s``; answered, it talks the scripted seconds (else
        the middle of ``voice_talk_s``, at most ``audioSecs``), with its keys in a flow."""
        cfg = self._sandbox.config
        text = self._script.next(cfg.voice_outcomes_by_number, to)
        if text is None:
            return None
        call = scripted_call(text)
        ring = cfg.voice_ring_s[0]
        if not call.answered:
            return [Attempt(ring, False, call.cause)]
        talk = call.talk_s
        if talk is None:
            talk = round(sum(cfg.voice_talk_s) / 2)
            if audio_secs is not None and not flow:
                talk = min(talk, audio_secs)
        return [Attempt(ring, True, NORMAL_CLEARING, talk, call.keys if flow else "")]

    def _dial(self, body: VoiceCallBody | VoiceBulkBody, to: str,
              variables: dict[str, Any] | None, bulk_id: str | None, delay: float) -> str:
        """Decide one recipient's call, log it, and start it after ``delay`` seconds."""
        cfg = self._sandbox.config
        call_id = f"call_{self._ids.getrandbits(64):016x}"
        flow = body.flowId is not None
        attempts = (self._scripted(to, flow, body.audioSecs)
                    or self._plan(flow, body.audioSecs, body.maxAttempts or 1))
        final = attempts[-1]
        entry = self._entry(call_id, bulk_id, to, variables, cfg.voice_reserve_micro)
        entry.update(
            outcome="answered" if final.answered else "not_answered",
            answered=final.answered, talkSeconds=final.talk_s, digits=final.digits or None,
            cause=final.cause, causeDescription=CAUSE_DESCRIPTIONS.get(final.cause),
            attempts=len(attempts),
        )
        self.outcomes.append(entry)
        call = Call(entry, cfg.voice_reserve_micro, cfg.voice_time_scale,
                    self._timeline(entry, attempts))
        length = call.steps[-1][0] * call.scale
        self._ends[call_id] = monotonic() + delay + length
        self._sandbox.webhooks.call_later(delay, self._step, call, 0)
        return call_id

    def _timeline(self, entry: dict[str, Any], attempts: list[Attempt]
                  ) -> list[tuple[float, str, dict[str, Any]]]:
        """The events of one call at their simulated offsets (seconds from the first dial)."""
        gap = self._sandbox.config.voice_retry_gap_s
        steps: list[tuple[float, str, dict[str, Any]]] = []
        at = 0.0
        for n, attempt in enumerate(attempts):
            steps.append((at, "call.started", {}))
            at += attempt.ring_s
            if attempt.answered:
                steps.append((at, "call.answered", {"answered": True}))
                keys = attempt.digits
                for k, key in enumerate(keys):
                    moment = at + attempt.talk_s * (k + 1) / (len(keys) + 1)
                    steps.append((moment, "call.dtmf", {"answered": True, "digits": key}))
                at += attempt.talk_s
            elif n + 1 < len(attempts):
                at += gap
        final = {key: entry[key] for key in
                 ("answered", "talkSeconds", "digits", "cause", "causeDescription")}
        steps.append((at, "call.ended", final))
        return steps

    def _step(self, call: Call, index: int) -> None:
        """Emit the call's event ``index`` and schedule the next one (or end the call)."""
        entry = call.entry
        at, event, fields = call.steps[index]
        if index == 0:
            entry["startedAt"] = epoch_s()
        if event == "call.ended":
            self._end(call)
        self._hooks.emit(self.channel, event, {
            "callId": entry["callId"], "bulkCallId": entry["bulkId"], "to": entry["to"],
            "answered": None, "talkSeconds": None, "digits": None, "cause": None,
            "causeDescription": None, **fields, "timestamp": iso_ms(self._sandbox.now()),
        })
        if index + 1 < len(call.steps):
            wait = (call.steps[index + 1][0] - at) * call.scale
            self._sandbox.webhooks.call_later(wait, self._step, call, index + 1)

    def _end(self, call: Call) -> None:
        entry = call.entry
        entry["endedAt"] = epoch_s()
        self._ends.pop(entry["callId"], None)
        price = self._sandbox.config.voice_price_micro_per_minute
        cost = math.ceil(entry["talkSeconds"] / 60) * price
        entry["costMicroReais"] = self._wallet.settle(call.reserved, cost)
