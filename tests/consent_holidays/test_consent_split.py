"""An A/B test's share is counted over the recipients the plan keeps: a row skipped for want
of consent, because its number was erased at the person's request, or because it is on the
ledger's suppression list, takes no variant's place (the test holds exactly
round(share × kept) recipients, split by weight)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from scheduler.campaign.plan import build_plan
from scheduler.experiments.exact import exact_split
from scheduler.ledger.privacy_key import number_hash
from scheduler.privacy.erased import ErasedNumbers

N = 60


def _project(root: Path) -> tuple[Path, list[str], list[str]]:
    """A campaign testing A against B on 50%: every third row has no opt-in. Returns the
    path, the numbers that consented and those that did not."""
    lines, yes, no = ["nome,telefone,optin_em"], [], []
    for i in range(N):
        digits = f"55119{i:08d}"
        optin = "" if i % 3 == 0 else "2026-03-01 10:00"
        (no if i % 3 == 0 else yes).append(digits)
        lines.append(f"P{i},+{digits},{optin}")
    (root / "data").mkdir()
    (root / "data" / "r.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "campaigns").mkdir()
    path = root / "campaigns" / "ab.toml"
    path.write_text(
        'name = "ab"\nsenders = ["s1"]\n'
        '[recipients]\nfile = "data/r.csv"\nconsent = "required"\nconsent_column = "optin_em"\n'
        '[[steps]]\ntype = "text"\ntext = "base"\n'
        'variants = [{name = "A", text = "A {{ nome }}"}, {name = "B", text = "B {{ nome }}"}]\n'
        '[experiment]\ntest_share = "50%"\nwait = "2h"\n', encoding="utf-8")
    return path, yes, no


def _tested(rows: list[dict[str, object]]) -> Counter[object]:
    return Counter(r["variant"] for r in rows if r["state"] == "planned")


def test_rows_without_consent_take_no_variants_share(tmp_path: Path) -> None:
    path, yes, no = _project(tmp_path)
    # counted over every row, the test would have held fewer consenting recipients
    everyone = exact_split("ab", [*yes, *no], 0.5, [("A", 1), ("B", 1)])
    assert sum(everyone.assign(d)[1] for d in yes) != len(yes) // 2
    plan = build_plan(path)
    rows = [r for chunk in plan.chunks() for r in chunk]
    assert plan.stats.no_consent == len(no)
    assert _tested(rows) == {"A": len(yes) // 4, "B": len(yes) // 4}  # 20 = 40 × 50%
    assert plan.stats.variant_recipients == _tested(rows)
    assert plan.stats.held_recipients == len(yes) // 2
    assert all(r["state"] == "skipped" for r in rows if r["to"] in no)


def test_erased_numbers_take_no_variants_share(tmp_path: Path) -> None:
    path, yes, _no = _project(tmp_path)
    key = b"k" * 32
    gone = yes[:8]
    erased = ErasedNumbers(key, {number_hash(key, d): "erased at the person's request on "
                                 "2026-11-01" for d in gone})
    plan = build_plan(path, erased=erased.reason)
    rows = [r for chunk in plan.chunks() for r in chunk]
    kept = len(yes) - len(gone)
    assert plan.stats.erased == len(gone) and plan.stats.valid == kept
    assert sum(_tested(rows).values()) == kept // 2
    assert _tested(rows) == {"A": kept // 4, "B": kept // 4}
    assert {r["reason"] for r in rows if r["to"] in gone} == {
        "erased at the person's request on 2026-11-01"}


def test_numbers_on_the_ledgers_list_take_no_variants_share(tmp_path: Path) -> None:
    path, yes, no = _project(tmp_path)
    listed = frozenset([*yes[:8], no[0]])  # an opt-out without consent stays no_consent
    plan = build_plan(path, listed=listed)
    rows = [r for chunk in plan.chunks() for r in chunk]
    kept = len(yes) - 8
    assert (plan.stats.suppressed, plan.stats.suppressed_ledger) == (8, 8)
    assert plan.stats.no_consent == len(no) and plan.stats.valid == kept
    assert _tested(rows) == {"A": kept // 4, "B": kept // 4}  # 16 = 32 × 50%
    assert plan.stats.held_recipients == kept // 2
    assert {r["reason"] for r in rows if r["to"] in yes[:8]} == {"suppressed"}
