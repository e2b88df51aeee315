"""Which variant a recipient gets, and whether they are in the test share (pure, stable).

Both answers are drawn from SHA-256, never from Python's ``hash()`` (salted per process)
nor a random generator, so the same campaign and recipient give the same answer in every
process, worker, resume after ``kill -9`` and ``--replan``, on every machine:

- the **variant**: ``u = SHA-256(campaign + "\\0" + recipient_key)``, its first 8 bytes read
  as a big-endian integer and divided by 2⁶⁴, a number uniform in [0, 1); the variants'
  weights, normalised to sum to 1 and taken in the order given, cut [0, 1) into
  consecutive buckets, and ``u`` falls in one;
- the **test share**: the same recipe with the prefix ``"test-share\\0"`` before the
  campaign, giving a second number independent of the first; the recipient is in the
  share when it is below the share. A variant's recipients are thus spread evenly over the
  test share and the rest: being in the test never depends on the variant.

The plan counts the test share instead of drawing it (:mod:`.exact`: exactly round(share ×
N) recipients, the variants split by weight within one); a plain split (no
``[experiment]``) keeps :func:`variant_of`'s draw.

The recipient key should be the normalised address (the E.164 number), so one person
listed twice gets one variant. Changing the weights, the variants' order or the campaign's
name moves some recipients to another variant: the run stores each recipient's variant in
the ledger when it plans, and that stored variant is what it sends.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

from .exceptions import AssignmentError

#: 2⁶⁴: the first 8 bytes of a digest divided by it are uniform in [0, 1).
_SPAN = float(1 << 64)
#: What sets the test-share draw apart from the variant draw.
SHARE_PREFIX = "test-share\0"


def uniform(text: str) -> float:
    """A number in [0, 1) from SHA-256 of ``text`` (UTF-8): the same on every machine."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / _SPAN


def check_weights(variants: Sequence[tuple[str, float]]) -> None:
    """Raise an :class:`AssignmentError` naming what is wrong with ``(name, weight)``
    pairs: none, a name twice, a weight negative or not finite, or all weights zero."""
    if not variants:
        raise AssignmentError("a split needs at least one variant")
    names = [name for name, _weight in variants]
    for name, weight in variants:
        if names.count(name) > 1:
            raise AssignmentError(f"variant {name!r} is named twice")
        if not math.isfinite(weight) or weight < 0:
            raise AssignmentError(f"variant {name!r}: weight {weight} must be a number of "
                                  "0 or more")
    if not any(weight > 0 for _name, weight in variants):
        raise AssignmentError("every variant has weight 0: at least one must be above 0")


def variant_of(campaign: str, recipient_key: str,
               variants: Sequence[tuple[str, float]]) -> str:
    """The variant of ``recipient_key`` in ``campaign``, from ``(name, weight)`` pairs
    (weights in any unit: ``[("A", 1), ("B", 1)]`` is an even split)."""
    check_weights(variants)
    u = uniform(f"{campaign}\0{recipient_key}")
    total = math.fsum(weight for _name, weight in variants)
    cumulative = 0.0
    for name, weight in variants:
        cumulative += weight
        if weight > 0 and u < cumulative / total:
            return name
    # rounding can leave u just above the last bound: it belongs to the last real bucket
    return [name for name, weight in variants if weight > 0][-1]


def in_test_share(campaign: str, recipient_key: str, share: float) -> bool:
    """Whether ``recipient_key`` is in the test share of ``campaign`` (``share`` a fraction
    in [0, 1]: 0.2 for "20%"), drawn independently of :func:`variant_of`."""
    if not 0.0 <= share <= 1.0:
        raise AssignmentError(f"test share {share} must be between 0 and 1 (0.2 for 20%)")
    return uniform(f"{SHARE_PREFIX}{campaign}\0{recipient_key}") < share
