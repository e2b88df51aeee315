"""The test share counted, not drawn: exactly round(share × N) recipients in the test.

:func:`~scheduler.experiments.assignment.in_test_share` draws each recipient on their own,
so "50%" of 400 may be 220. Here the plan first lists every recipient it keeps (N of them,
its first pass), and :func:`exact_split` ranks them by a number from SHA-256:

- ``d = SHA-256("test-share\\0" + campaign + "\\0" + recipient_key)``; its first 16 bytes
  rank the recipients, and the ``k = round(share × N)`` lowest (half up) are the test:
  the cut is the k-th lowest value, and a recipient is in the test when theirs is at or
  below it (16 bytes: two different recipients never share a value);
- inside the test, the variants get ``k`` split by their weights with the largest
  remainder (Hamilton's method: each gets the whole part of its quota, the remainders
  go one each to the largest fractions, ties to the earlier variant), and the test's
  recipients, ranked by the last 16 bytes of ``d`` (independent of the first), are cut
  into consecutive runs of those sizes, in the variants' order.

Nothing is random and nothing depends on the CSV's order, the chunk size or the process:
the same recipients give the same test and the same variants on every re-plan. Memory:
32 bytes per recipient kept (32 MB for a million), in one numpy array, sorted in place.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .assignment import SHARE_PREFIX, check_weights, variant_of
from .exceptions import AssignmentError


def digest(campaign: str, recipient_key: str) -> bytes:
    """The 32 bytes a recipient is ranked by (test share, then variant)."""
    return hashlib.sha256(f"{SHARE_PREFIX}{campaign}\0{recipient_key}".encode()).digest()


def share_size(share: float, total: int) -> int:
    """round(share × total), halves up: the number of recipients in the test."""
    if not 0.0 <= share <= 1.0:
        raise AssignmentError(f"test share {share} must be between 0 and 1 (0.2 for 20%)")
    return min(total, math.floor(share * total + 0.5 + 1e-9))


def apportion(total: int, weights: Sequence[float]) -> list[int]:
    """``total`` split by ``weights`` with the largest remainder (ties: the earlier one);
    the parts sum to ``total`` and each is within one of its quota."""
    whole = math.fsum(weights)
    quotas = [total * w / whole for w in weights]
    parts = [math.floor(q + 1e-9) for q in quotas]
    order = sorted(range(len(weights)), key=lambda i: (-(quotas[i] - parts[i]), i))
    for i in order[: total - sum(parts)]:
        parts[i] += 1
    return parts


@dataclass(frozen=True)
class ExactSplit:
    """Who is in a campaign's test, and their variant (see the module)."""

    campaign: str
    variants: tuple[tuple[str, float], ...]
    #: The highest first-16-bytes value in the test (None: nobody is).
    cut: bytes | None
    #: Per variant, the highest last-16-bytes value of its recipients (b"" when it has none).
    variant_cuts: tuple[bytes, ...]
    #: Recipients kept (N), in the test (k), and per variant in the test.
    total: int
    test: int
    counts: tuple[int, ...]

    def assign(self, recipient_key: str) -> tuple[str, bool]:
        """(variant, in the test): a recipient outside the test gets the variant drawn by
        :func:`~scheduler.experiments.variant_of`, whose body their held rows keep."""
        d = digest(self.campaign, recipient_key)
        if self.cut is None or d[:16] > self.cut:
            return variant_of(self.campaign, recipient_key, self.variants), False
        index = bisect.bisect_left(self.variant_cuts, d[16:])
        if index >= len(self.variants):  # a recipient the first pass did not count
            return variant_of(self.campaign, recipient_key, self.variants), True
        return self.variants[index][0], True


def exact_split(campaign: str, keys: Iterable[str], share: float,
                variants: Sequence[tuple[str, float]]) -> ExactSplit:
    """The test of ``campaign`` over ``keys`` (every recipient the plan keeps, each once)."""
    import numpy as np

    check_weights(variants)
    ranked = np.fromiter((digest(campaign, key) for key in keys), dtype="S32")
    total = len(ranked)
    k = share_size(share, total)
    counts = apportion(k, [w for _n, w in variants])
    if k == 0:
        return ExactSplit(campaign, tuple(variants), None, (b"",) * len(variants), total, 0,
                          tuple(counts))
    ranked.sort()  # by the first 16 bytes first: the test is the k lowest
    cut = _full(ranked[k - 1], 32)[:16]
    table = ranked.view(np.uint8).reshape(total, 32)
    inside = np.ascontiguousarray(table[:k, 16:]).view("S16").ravel()
    del ranked, table
    inside.sort()
    cuts: list[bytes] = []
    seen = 0
    for count in counts:
        seen += count
        cuts.append(_full(inside[seen - 1], 16) if count else (cuts[-1] if cuts else b""))
    return ExactSplit(campaign, tuple(variants), cut, tuple(cuts), total, k, tuple(counts))


def _full(item: bytes, size: int) -> bytes:
    """An item of a numpy bytes array as its ``size`` bytes (numpy drops trailing NULs)."""
    return bytes(item).ljust(size, b"\0")
