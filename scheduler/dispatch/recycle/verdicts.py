"""What a watched row's outcome means for the recipient: another attempt, the fallback,
wait, or nothing more (pure types, kept with the ledger's rows so that its recycle
transaction reads them as they are; :func:`scheduler.dispatch.recycle.judge.judge`
decides)."""

from __future__ import annotations

from scheduler.ledger.rows import Fallback, Final, RecycleVerdict, Retry, Wait

#: A verdict on a watched row.
Verdict = RecycleVerdict

__all__ = ["Fallback", "Final", "Retry", "Verdict", "Wait"]
