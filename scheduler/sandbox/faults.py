"""Seeded request faults: latency, 5xx, 429 and time-outs (some accepted before hanging).

Outcomes are drawn from their own random stream, one draw per send in arrival order, so two
sandboxes with the same seed answer the same sequence of sends the same way. Latency draws
come from another stream, so turning latency on does not shift the outcomes.
"""

from __future__ import annotations

import asyncio
from enum import StrEnum

from starlette.requests import Request

from scheduler.core.timeutil import monotonic
from scheduler.sandbox.common import seeded
from scheduler.sandbox.config import SandboxConfig


class SendFate(StrEnum):
    """What the sandbox does with one send that passed validation."""

    OK = "ok"
    THROTTLE = "throttle"
    FAIL = "fail"
    TIMEOUT = "timeout"
    TIMEOUT_ACCEPTED = "timeout-accepted"


class FaultInjector:
    """Draws latency and outcomes from seeded streams."""

    def __init__(self, seed: int | None) -> None:
        self._outcomes = seeded(seed, "faults")
        self._latency = seeded(seed, "latency")

    def latency_s(self, cfg: SandboxConfig) -> float:
        """How long to hold this request before handling it (0 when latency is off)."""
        low, high = cfg.latency_ms
        if high <= 0:
            return 0.0
        return self._latency.uniform(low, high) / 1000

    def outcome(self, cfg: SandboxConfig) -> SendFate:
        """The fate of one send: ok, 429, 5xx or a time-out (maybe accepted first)."""
        if not (cfg.throttle_rate or cfg.fail_rate or cfg.timeout_rate):
            return SendFate.OK
        draw = self._outcomes.random()
        if draw < cfg.throttle_rate:
            return SendFate.THROTTLE
        draw -= cfg.throttle_rate
        if draw < cfg.fail_rate:
            return SendFate.FAIL
        draw -= cfg.fail_rate
        if draw < cfg.timeout_rate:
            if self._outcomes.random() < cfg.timeout_after_accept:
                return SendFate.TIMEOUT_ACCEPTED
            return SendFate.TIMEOUT
        return SendFate.OK


async def hang(request: Request, seconds: float) -> None:
    """Hold a request for ``seconds``, or until the client gives up and disconnects."""
    deadline = monotonic() + seconds
    while (left := deadline - monotonic()) > 0:
        await asyncio.sleep(min(left, 0.1))
        if await request.is_disconnected():
            return
