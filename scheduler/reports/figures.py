"""One run's funnel for the terminal (``campaign status``): the same counts and rates as
the report's Summary, by the one definition in :mod:`scheduler.ledger.funnel`."""

from __future__ import annotations

from typing import Any

from scheduler.ledger import funnel as fn


def funnel_of(channel: str, counts: dict[str, int], digits: int = 0) -> dict[str, Any]:
    """``{"counts": {planned, sent, …}, "rates": {label: share or None}, "line": text}``
    from the run's funnel counts (read by the caller in its snapshot); ``digits``: calls
    where keys were pressed (voice: from the channel's own outcomes)."""
    counts = {**counts, "digits": digits}
    wanted = {stage.key for stage in fn.stages(channel)} | {"skipped"}
    shown = {key: n for key, n in counts.items() if key in wanted}
    return {"counts": shown,
            "rates": {r.label: r.value for r in fn.rates(channel, counts)},
            "line": fn.funnel_line(channel, counts)}  # fmt: skip
