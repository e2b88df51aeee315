"""A run's variants and A/B test as ``campaign status`` shows them (JSON and text).

The JSON (``status --json``'s ``experiment`` key) holds the test's settings, sizes and
times (UTC, ISO 8601) and, once decided, the decision with all its numbers (rates,
Wilson intervals, differences with Newcombe intervals, raw and Holm-adjusted p-values,
sizes: :class:`scheduler.experiments.Decision`); the text shows them in the campaign's
zone. A run with variants and no ``[experiment]`` (a plain split) shows its sends per
variant.
"""

from __future__ import annotations

from typing import Any

from scheduler.core.time_words import iso_utc, local_time
from scheduler.ledger import access
from scheduler.ledger.access import Connection, Engine
from scheduler.ledger.experiment_reads import ExperimentReads
from scheduler.ledger.states import SENT_STATES
from scheduler.ledger.states import DeliveryState as S


def experiment_of_run(engine: Engine, run_id: int) -> dict[str, Any] | None:
    """:func:`read_experiment` in a read of its own."""
    with access.read(engine, f"read the variants of run {run_id}") as conn:
        return read_experiment(conn, run_id)


def read_experiment(conn: Connection, run_id: int) -> dict[str, Any] | None:
    """The run's variants and test, JSON-ready (None: the run has no variants).

    Reads the run's definition, and only for a run planned with variants the
    ``experiments`` row and the run's rows per variant and state (one ``GROUP BY`` over the
    run's rows: a stated scan, on the dashboard's run page too)."""
    reads = ExperimentReads(conn)
    if not reads.has_variants(run_id):
        return None  # most runs: no scan of the run's rows per variant
    split = reads.variant_split(run_id)
    row = reads.experiment(run_id)
    named = {name: states for name, states in split.items() if name is not None}
    if row is None and not named:
        return None
    variants = {name: {"sent": sum(n for state, n in states.items() if state in SENT_STATES),
                       "rows": sum(states.values())}
                for name, states in sorted(named.items())}
    held = sum(n for states in split.values() for state, n in states.items()
               if state == S.HELD)
    out: dict[str, Any] = {"variants": variants, "held": held}
    if row is None:
        return out
    decided = row.decided_at is not None and row.decision is not None
    out.update({
        "control": row.control, "weights": dict(row.variants),
        "metric": row.settings.get("metric"), "guardrail": row.settings.get("guardrail"),
        "test_share": row.settings.get("test_share"), "wait_s": row.wait_s,
        "confidence": row.settings.get("confidence"),
        "min_per_variant": row.settings.get("min_per_variant"),
        "test_size": row.test_size, "rest_size": row.rest_size,
        "test_sent_at": iso_utc(row.test_sent_at), "decide_at": iso_utc(row.decide_at),
        "decided_at": iso_utc(row.decided_at) if decided else None,
        "state": "decided" if decided else ("waiting" if row.decide_at else "testing"),
        "winner": row.winner if decided else None, "goes": row.goes if decided else None,
        "decision": row.decision if decided else None,
    })
    return out


def experiment_lines(info: dict[str, Any] | None, zone: str, width: int = 80) -> list[str]:
    """``status``'s lines for :func:`read_experiment`'s answer (times in ``zone``), cut at
    spaces to ``width``, a continuation indented under its line."""
    import textwrap

    out: list[str] = []
    for line in _lines(info, zone):
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        out += textwrap.wrap(line, width, subsequent_indent=indent) or [""]
    return out


def _lines(info: dict[str, Any] | None, zone: str) -> list[str]:
    if info is None:
        return []
    sent = " · ".join(f"{name} {v['sent']:,} sent" for name, v in info["variants"].items())
    if "metric" not in info:
        return [f"variants (a plain split): {sent}"]
    # the A/B test's words, with the experiments package (its pydantic models): only for a
    # run that has a test, not for every ``campaign status`` (issue 32)
    from scheduler.experiments.decision import rate_name

    rate = rate_name(str(info["metric"]))
    lines = [f"A/B test on the {rate}: test share {info['test_share']:.0%} "
             f"({info['test_size']:,} recipients), the rest {info['rest_size']:,}; "
             f"{sent}"]
    if info["state"] == "testing":
        lines.append("  sending the test share; the rest wait for the winner")
    elif info["state"] == "waiting":
        lines.append(f"  the test decides at {_local(info['decide_at'], zone)}; "
                     f"{info['held']:,} deliveries wait for the winner")
    else:
        decision = info["decision"]
        lines.append(f"  decided {_local(info['decided_at'], zone)}: {decision['reason']}")
        lines += _arm_lines(decision, rate)
    return lines


def _local(text: str | None, zone: str) -> str:
    from datetime import datetime

    return local_time(datetime.fromisoformat(text) if text else None, zone)


def _arm_lines(decision: dict[str, Any], rate: str) -> list[str]:
    """One line per arm: its sends, rate with interval and, for a variant, the test."""
    from scheduler.experiments.decision import format_p, percent, points

    alpha = 1.0 - float(decision["confidence"])
    tests = {c["variant"]: c for c in decision["comparisons"]}
    out = []
    for arm in decision["arms"]:
        line = (f"  {arm['name']}: {arm['successes']:,}/{arm['sends']:,} {rate} "
                f"{percent(arm['rate'])} (CI {percent(arm['rate_low'])}–"
                f"{percent(arm['rate_high'])})")
        if decision.get("guardrail"):
            line += f", opt-outs {arm['guardrail_events']:,}"
        test = tests.get(arm["name"])
        if arm["is_control"]:
            line += " · control"
        elif test is not None:
            line += (f" · {points(test['difference'])} points, p "
                     f"{format_p(test['p_value'], alpha)}")
            if len(tests) > 1:
                line += f" (Holm {format_p(test['p_adjusted'], alpha)})"
        out.append(line)
    return out
