"""The test share counted, not drawn: exactly round(share × N) recipients in the test, the
same ones on every re-plan, the variants split by weight within one recipient.

Item 5 of issue 31: ``test_share = "50%"`` over 400 recipients sent the test to 220. Here
the pure split (:mod:`scheduler.experiments.exact`) is checked for N = 7, 400 and 10,000,
then the plan of a real campaign file (with invalid, duplicate and opted-out numbers that
are not recipients, in small chunks and in a process pool) is counted row by row.
"""

from __future__ import annotations

import random
from collections import Counter
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from scheduler.campaign.plan import build_plan
from scheduler.experiments.exact import apportion, exact_split
from scheduler.experiments.exact import share_size as size_of
from tests.factories import Project

WEIGHTS = [("A", 1.0), ("B", 1.0)]
UNEVEN = [("A", 5.0), ("B", 3.0), ("C", 2.0)]


def _keys(n: int) -> list[str]:
    return [f"55119{i:08d}" for i in range(n)]


def _counted(split_keys: list[str], share: float, weights: list[tuple[str, float]]
             ) -> tuple[int, Counter[str], set[str]]:
    """(recipients in the test, per variant, who) as :meth:`ExactSplit.assign` says."""
    split = exact_split("primavera", split_keys, share, weights)
    inside: Counter[str] = Counter()
    who = set()
    for key in split_keys:
        variant, in_test = split.assign(key)
        if in_test:
            inside[variant] += 1
            who.add(key)
    return len(who), inside, who


@pytest.mark.parametrize("n", [7, 400, 10_000])
@pytest.mark.parametrize("share", [0.5, 0.2, 0.33])
@pytest.mark.parametrize("weights", [WEIGHTS, UNEVEN], ids=["1:1", "5:3:2"])
def test_the_test_share_is_exact_and_split_by_weight_within_one(
        n: int, share: float, weights: list[tuple[str, float]]) -> None:
    test, per_variant, _who = _counted(_keys(n), share, weights)
    exact = (Decimal(str(share)) * n).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    assert test == int(exact)  # halves round up: 50% of 7 is 4
    total = sum(w for _n, w in weights)
    for name, weight in weights:
        assert abs(per_variant[name] - test * weight / total) < 1, per_variant
    assert sum(per_variant.values()) == test


def test_400_at_50_percent_is_200_with_100_per_variant() -> None:
    test, per_variant, _who = _counted(_keys(400), 0.5, WEIGHTS)
    assert (test, per_variant) == (200, Counter({"A": 100, "B": 100}))


def test_the_same_recipients_in_any_order_give_the_same_test() -> None:
    keys = _keys(10_000)
    shuffled = keys[:]
    random.Random(7).shuffle(shuffled)
    first = exact_split("primavera", keys, 0.2, UNEVEN)
    again = exact_split("primavera", shuffled, 0.2, UNEVEN)
    assert first == again
    assert [first.assign(k) for k in keys] == [again.assign(k) for k in keys]


def test_another_campaign_draws_another_test() -> None:
    _n, _v, one = _counted(_keys(1000), 0.5, WEIGHTS)
    other = exact_split("outono", _keys(1000), 0.5, WEIGHTS)
    assert one != {k for k in _keys(1000) if other.assign(k)[1]}


@pytest.mark.parametrize(("share", "n", "size"), [
    (0.5, 7, 4), (0.5, 5, 3), (0.2, 10, 2), (0.0, 10, 0), (1.0, 10, 10), (0.5, 0, 0),
    (0.07, 10_000, 700), (0.3, 1, 0)])
def test_the_size_is_round_half_up(share: float, n: int, size: int) -> None:
    assert size_of(share, n) == size


@pytest.mark.parametrize(("total", "weights", "parts"), [
    (4, [1, 1], [2, 2]), (3, [1, 1], [2, 1]), (7, [5, 3, 2], [4, 2, 1]),
    (10, [1, 0, 1], [5, 0, 5]), (1, [1, 3], [0, 1]), (0, [1, 1], [0, 0])])
def test_largest_remainder(total: int, weights: list[float], parts: list[int]) -> None:
    assert apportion(total, weights) == parts


def test_nobody_and_everybody() -> None:
    assert _counted(_keys(50), 0.0, WEIGHTS)[0] == 0
    test, per_variant, _who = _counted(_keys(50), 1.0, WEIGHTS)
    assert (test, per_variant) == (50, Counter({"A": 25, "B": 25}))


# ------------------------------------------------------------------ a campaign's plan


STEPS = ('[[steps]]\ntype = "text"\ntext = "base {{ nome }}"\n'
         'variants = [{name = "A", text = "A: {{ nome }}"}, {name = "B", text = "B: {{ nome }}"}]\n'
         '[[steps]]\ntype = "text"\ndelay = "1h"\ntext = "depois"\n')


def _campaign(tmp_path: Path, n: int, share: str) -> Path:
    """A campaign over ``n`` recipients, plus rows that are not recipients: an invalid
    number, a duplicate and an opted-out number."""
    project = Project.empty(tmp_path)
    lines = [f"P{i};+55 11 9{i:08d}" for i in range(n)]
    lines += ["Inválido;123", f"Repetido;+55 11 9{0:08d}", "Saiu;+55 11 977776666"]
    project.write("data/optout.txt", "5511977776666\n")
    path = project.basic(STEPS, csv="nome;telefone\n" + "\n".join(lines) + "\n")
    text = path.read_text(encoding="utf-8").replace(
        'phone_column = "telefone"\n',
        'phone_column = "telefone"\nsuppression = ["data/optout.txt"]\n')
    path.write_text(text + f'\n[experiment]\ntest_share = "{share}"\nwait = "2h"\n',
                    encoding="utf-8")
    return path


def _plan(path: Path, **kw: object) -> tuple[list[tuple[str, str, str | None]], object]:
    plan = build_plan(path, **kw)  # type: ignore[arg-type]
    rows = [(r["to"], r["state"], r.get("variant")) for chunk in plan.chunks() for r in chunk
            if r["step"] == 0]
    return rows, plan.stats


@pytest.mark.parametrize(("n", "share", "expected"), [
    (7, "50%", 4), (400, "50%", 200), (10_000, "20%", 2000)])
def test_a_planned_campaign_sends_the_test_to_exactly_its_share(
        tmp_path: Path, n: int, share: str, expected: int) -> None:
    path = _campaign(tmp_path, n, share)
    rows, stats = _plan(path, chunk_rows=97)  # many chunks: the count spans them
    states = Counter(state for _to, state, _v in rows)
    assert stats.valid == n  # type: ignore[attr-defined]
    assert states["planned"] == expected
    assert states["held"] == n - expected
    variants = Counter(v for _to, state, v in rows if state == "planned")
    assert abs(variants["A"] - variants["B"]) <= 1
    assert stats.variant_recipients == variants  # type: ignore[attr-defined]
    assert stats.held_recipients == n - expected  # type: ignore[attr-defined]
    again, _stats = _plan(path)  # a re-plan, in one chunk: the same test, the same variants
    assert again == rows


def test_the_process_pool_plans_the_same_test(tmp_path: Path) -> None:
    path = _campaign(tmp_path, 400, "50%")
    one, _ = _plan(path)
    two, _ = _plan(path, workers=2, chunk_rows=50)
    assert one == two
    assert Counter(state for _to, state, _v in two)["planned"] == 200
