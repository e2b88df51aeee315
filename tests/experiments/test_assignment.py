"""A recipient's variant and test share: the split follows the weights, the two draws are
independent, and every answer is the same in any process (SHA-256, never ``hash()``)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections import Counter

import pytest

from scheduler.experiments import AssignmentError, in_test_share, variant_of
from scheduler.experiments.assignment import uniform

KEYS = [f"+3361{i:07d}" for i in range(100_000)]
#: Eight recipients of "spring-sale" split 50/30/20, and their test-share draws.
FIXED = {"+33612345678": "B", "+447700900123": "A", "+15551234567": "B",
         "+4915112345678": "B", "+5511987654321": "B", "+819012345678": "A",
         "+27821234567": "C", "+61412345678": "A"}
WEIGHTS = [("A", 50), ("B", 30), ("C", 20)]


def shares(counts: Counter[str], total: int) -> dict[str, float]:
    return {name: round(count / total, 4) for name, count in sorted(counts.items())}


@pytest.mark.parametrize("weights", [[("A", 1), ("B", 1)], WEIGHTS,
                                     [("A", 0.25), ("B", 0.25), ("C", 0.25), ("D", 0.25)]])
def test_the_split_follows_the_weights_over_100000_recipients(weights) -> None:
    """Each variant's share is within one percentage point of its weight (the binomial
    spread at this size is under 0.16 points: one point is over 6 of it)."""
    counts = Counter(variant_of("spring-sale", key, weights) for key in KEYS)
    total = sum(weight for _name, weight in weights)
    for name, weight in weights:
        assert counts[name] / len(KEYS) == pytest.approx(weight / total, abs=0.01), \
            shares(counts, len(KEYS))


def test_the_test_share_is_its_size_and_does_not_lean_to_a_variant() -> None:
    """20% of recipients are in the test share, and inside it (and outside it) the split
    still follows the weights: the two draws are independent."""
    inside = [key for key in KEYS if in_test_share("spring-sale", key, 0.2)]
    assert len(inside) / len(KEYS) == pytest.approx(0.2, abs=0.01)
    outside = set(KEYS) - set(inside)
    for group in (inside, outside):
        counts = Counter(variant_of("spring-sale", key, WEIGHTS) for key in group)
        for name, weight in WEIGHTS:
            assert counts[name] / len(group) == pytest.approx(weight / 100, abs=0.015), \
                shares(counts, len(group))


def test_a_larger_share_keeps_everyone_the_smaller_one_had() -> None:
    """Raising the test share from 20% to 30% only adds recipients."""
    small = {key for key in KEYS[:20_000] if in_test_share("spring-sale", key, 0.2)}
    large = {key for key in KEYS[:20_000] if in_test_share("spring-sale", key, 0.3)}
    assert small < large
    assert not any(in_test_share("spring-sale", key, 0.0) for key in KEYS[:1000])
    assert all(in_test_share("spring-sale", key, 1.0) for key in KEYS[:1000])


def test_fixed_recipients_get_fixed_variants() -> None:
    """The recipe is frozen: a change to it would move recipients of running campaigns."""
    assert {key: variant_of("spring-sale", key, WEIGHTS) for key in FIXED} == FIXED
    assert [key for key in FIXED if in_test_share("spring-sale", key, 0.5)] == [
        "+33612345678", "+27821234567"]
    # another campaign draws again
    assert [variant_of("autumn-sale", key, WEIGHTS) for key in FIXED] != list(FIXED.values())


def test_the_draw_is_the_documented_sha256_recipe() -> None:
    """u = first 8 bytes of SHA-256(campaign + NUL + key), big-endian, over 2⁶⁴."""
    digest = hashlib.sha256(b"spring-sale\x00+33612345678").hexdigest()
    assert uniform("spring-sale\0+33612345678") == int(digest[:16], 16) / 2**64
    u = int(digest[:16], 16) / 2**64
    assert 0.5 <= u < 0.8 and FIXED["+33612345678"] == "B"  # B's bucket is [0.5, 0.8)
    share = hashlib.sha256(b"test-share\x00spring-sale\x00+33612345678").hexdigest()
    assert uniform("test-share\0spring-sale\0+33612345678") == int(share[:16], 16) / 2**64


def test_another_process_with_another_hash_seed_agrees() -> None:
    """A second interpreter (another PYTHONHASHSEED, as in another worker) gives the same
    variants and shares."""
    code = ("from scheduler.experiments import variant_of, in_test_share\n"
            f"keys = {list(FIXED)!r}\n"
            f"print([variant_of('spring-sale', k, {WEIGHTS!r}) for k in keys])\n"
            "print([in_test_share('spring-sale', k, 0.5) for k in keys])\n")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, timeout=60).stdout.splitlines()
    assert out == [repr(list(FIXED.values())),
                   repr([in_test_share("spring-sale", k, 0.5) for k in FIXED])]


def test_a_variant_of_weight_zero_gets_nobody() -> None:
    counts = Counter(variant_of("c", key, [("A", 1), ("B", 0), ("C", 1)])
                     for key in KEYS[:5000])
    assert set(counts) == {"A", "C"}


@pytest.mark.parametrize(("variants", "message"), [
    ([], "at least one variant"),
    ([("A", 1), ("A", 2)], "variant 'A' is named twice"),
    ([("A", 1), ("B", -1)], "variant 'B': weight -1 must be a number of 0 or more"),
    ([("A", 1), ("B", float("nan"))], "variant 'B': weight nan"),
    ([("A", 0), ("B", 0)], "every variant has weight 0"),
])
def test_wrong_weights_are_named(variants, message) -> None:
    with pytest.raises(AssignmentError, match=message.replace("(", r"\(")):
        variant_of("c", "+33612345678", variants)


def test_a_share_outside_0_to_1_is_refused() -> None:
    with pytest.raises(AssignmentError, match=r"test share 20 must be between 0 and 1"):
        in_test_share("c", "+33612345678", 20)
