"""What the dispatcher needs of the ledger for steps that follow replies (a protocol; the
ledger's :class:`scheduler.ledger.conversation_store.ConversationStore` is one)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from scheduler.ledger.conversation_rows import DecisionWrite, GatedRow


class ConversationStore(Protocol):
    """Gate a run's conditional steps, read the rows waiting, store decisions once."""

    def gate(self, steps: Sequence[int]) -> int: ...
    def gated(self, looks: Mapping[int, int], *, limit: int = 2000, after_id: int = 0,
              clicks: bool = False) -> list[GatedRow]: ...
    def decide(self, writes: Sequence[DecisionWrite], now: datetime
               ) -> list[DecisionWrite]: ...
