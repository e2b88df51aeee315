"""Figure V1: calls in progress of a voice run never over its limit, from the sandbox's clock.

The sandbox runs in ANOTHER process (seeded, calls in time at ``--time-scale`` wall seconds
per simulated second; its own allowance of calls in progress set well above the campaign's,
so that the limit measured is the scheduler's, not a 429 of the sandbox). A project folder
in a temporary directory holds a voice campaign: an IVR ``flowId`` with per-recipient
``variables`` from the CSV, ``maxAttempts = 2`` (busy, no answer and ring time-out are dialled
again and hold their place meanwhile), ``[pace] rate = "50/s"``, ``batch = 10`` and
``max_calls`` (default 10). A real ``campaign run FILE`` (another process, with
``CAMPAIGN_BASE_URL``/``CAMPAIGN_API_KEY`` of the sandbox) sends it: ``voice/bulk`` requests
with ``recipients: [{phone, variables}]``, calls counted in progress from their request
until its receiver applies ``call.ended``.

From the sandbox's ``/sandbox/outcomes?channel=voice`` (per call the real ``startedAt`` of
its first dial and ``endedAt``, epoch seconds): ``value`` = the peak number of calls in
progress at any instant (a sweep over the intervals, an end before a start at the same
instant), which must not exceed ``max_calls``; the time-weighted mean in progress; calls
per minute over the span from the first start to the last end; the ``campaign run``
process's wall time; recipients called more than once or not at all; the ledger's final
states. ``utilisation`` = mean in progress / ``max_calls`` (the engine counts a call from
its claim until its receiver applied ``call.ended``, a little longer than the sandbox's
call). One JSON line per round and a summary line (``"figure": "V1"``). ``--quick``
shrinks the run for CI.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _harness import (
    campaign_env,
    emit,
    kill_group,
    log,
    number,
    spawn_run,
    start_sandbox,
    stop_process,
)

STORES = ("Paulista", "Savassi", "Boa Viagem", "Moinhos", "Batel")


def write_project(root: Path, recipients: int, max_calls: int) -> Path:
    """A project folder with one voice campaign of ``recipients`` people; its file."""
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    lines = ["nome;telefone;loja;pedido"] + [
        f"Pessoa {i};{number(i)};{STORES[i % len(STORES)]};{10_000 + i}"
        for i in range(recipients)
    ]
    (root / "data" / "voz.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = root / "campaigns" / "voice_bench.toml"
    path.write_text(
        'name = "voice-bench"\nchannel = "voice"\n'
        '[recipients]\nfile = "data/voz.csv"\nphone_column = "telefone"\n'
        'default_country = "BR"\n'
        '[schedule]\ntimezone = "UTC"\nwindow = "00:00-00:00"\ndays = "*"\n'
        f'[pace]\nrate = "50/s"\nbatch = 10\nmax_calls = {max_calls}\n'
        '[[steps]]\nflowId = "flow-pesquisa"\nmaxAttempts = 2\n'
        'variables = { nome = "{{ nome }}", loja = "{{ loja }}", pedido = "{{ pedido }}" }\n',
        encoding="utf-8",
    )
    return path


def voice_outcomes(base_url: str) -> list[dict[str, Any]]:
    """The sandbox's calls (``/sandbox/outcomes?channel=voice``)."""
    import httpx

    with httpx.Client(base_url=base_url, timeout=60, trust_env=False) as http:
        response = http.get("/sandbox/outcomes", params={"channel": "voice"})
        response.raise_for_status()
        data = response.json()
    return data["outcomes"] if isinstance(data, dict) else data


def in_progress(calls: list[tuple[float, float]]) -> tuple[int, float]:
    """Peak and time-weighted mean of calls in progress over ``(start, end)`` intervals."""
    marks = sorted([(start, 1) for start, _ in calls] + [(end, -1) for _, end in calls])
    # at one instant an end (-1) sorts before a start (+1): a call that ends as another
    # starts does not count twice
    level = peak = 0
    area = 0.0
    last = marks[0][0] if marks else 0.0
    for at, step in marks:
        area += level * (at - last)
        last = at
        level += step
        peak = max(peak, level)
    span = marks[-1][0] - marks[0][0] if marks else 0.0
    return peak, (area / span if span > 0 else 0.0)


def ledger_counts(state_dir: Path) -> dict[str, int]:
    """The final states of the campaign's deliveries, summed over its runs."""
    from scheduler.ledger.db import open_ledger
    from scheduler.ledger.runs import Ledger

    ledger = Ledger(open_ledger(f"sqlite:///{state_dir / 'campaign.db'}"))
    try:
        total: Counter[str] = Counter()
        for run in ledger.list_runs():
            total.update(ledger.counts(run.id or 0))
        return dict(total)
    finally:
        ledger.engine.dispose()


def one_round(args: argparse.Namespace, round_no: int, workdir: Path) -> dict[str, Any]:
    """A fresh sandbox and project, one ``campaign run``; the round's figures."""
    seed = args.seed + round_no
    proc, base_url = start_sandbox({
        "seed": seed, "voice_time_scale": args.time_scale,
        "voice_max_calls_in_progress": args.sandbox_allowance,
        "webhook_retry_base_s": 0.2,
    })
    try:
        root = workdir / f"round-{round_no}"
        campaign = write_project(root, args.recipients, args.max_calls)
        env = campaign_env(base_url, root, CAMPAIGN_VERIFY_GRACE_S="5")
        started = time.perf_counter()
        with open(root / "run.log", "wb") as out:
            run = spawn_run(campaign, env, out)
            try:
                code = run.wait(timeout=args.timeout)
            except subprocess.TimeoutExpired:
                kill_group(run)
                raise SystemExit(f"campaign run did not finish in {args.timeout} s; "
                                 f"see {root / 'run.log'}") from None
        wall = time.perf_counter() - started
        if code != 0:
            raise SystemExit(f"campaign run exited {code}:\n"
                             + (root / "run.log").read_text(errors="replace")[-2000:])
        calls = voice_outcomes(base_url)
        counts = ledger_counts(root / "state")
    finally:
        stop_process(proc)
    spans = [(c["startedAt"], c["endedAt"]) for c in calls
             if c.get("startedAt") is not None and c.get("endedAt") is not None]
    peak, mean = in_progress(spans)
    per_number = Counter(str(c["to"]) for c in calls)
    first = min(s for s, _ in spans)
    last = max(e for _, e in spans)
    outcome = Counter(str(c["outcome"]) for c in calls)
    line = {
        "figure": "V1-round", "round": round_no + 1, "value": peak, "unit": "calls",
        "max_calls": args.max_calls, "over_limit": peak > args.max_calls,
        "mean_in_progress": round(mean, 2), "utilisation": round(mean / args.max_calls, 3),
        "calls": len(calls), "ended": len(spans),
        "calls_per_min": round(60 * len(spans) / (last - first), 1),
        "span_s": round(last - first, 2), "wall_s": round(wall, 2),
        "recipients": args.recipients,
        "called_twice": sum(1 for n in per_number.values() if n > 1),
        "not_called": args.recipients - len(per_number),
        "mean_call_s": round(statistics.mean(e - s for s, e in spans), 3),
        "sandbox_outcomes": dict(outcome), "ledger": counts, "seed": seed,
    }
    log(f"round {round_no + 1}: peak {peak} of {args.max_calls} (mean {mean:.2f}), "
        f"{line['calls_per_min']} calls/min, {len(spans)} calls in {line['span_s']} s, "
        f"campaign run {wall:.1f} s")
    return line


def main() -> None:
    """Parse the flags, run the rounds, print one line per round and the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a quick look")
    parser.add_argument("--recipients", type=int, default=None, help="recipients per run")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (fresh sandboxes)")
    parser.add_argument("--max-calls", type=int, default=10, help="the campaign's max_calls")
    parser.add_argument("--time-scale", type=float, default=None,
                        help="sandbox wall seconds per simulated second (default 0.05: a "
                             "40 s call takes 2 s; --quick 0.02)")
    parser.add_argument("--sandbox-allowance", type=int, default=100,
                        help="the sandbox's own calls-in-progress allowance (429 above it)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the first round")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run")
    args = parser.parse_args()
    args.recipients = args.recipients or (60 if args.quick else 300)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.time_scale = args.time_scale or (0.02 if args.quick else 0.05)
    lines = []
    with tempfile.TemporaryDirectory(prefix="bench-v1-") as tmp:
        for round_no in range(args.rounds):
            lines.append(one_round(args, round_no, Path(tmp)))
            emit(lines[-1])
    rates = [line["calls_per_min"] for line in lines]
    walls = [line["wall_s"] for line in lines]
    emit({
        "figure": "V1", "value": max(line["value"] for line in lines), "unit": "calls",
        "max_calls": args.max_calls,
        "over_limit": any(line["over_limit"] for line in lines),
        "mean_in_progress": round(statistics.median(line["mean_in_progress"]
                                                    for line in lines), 2),
        "utilisation": round(statistics.median(line["utilisation"] for line in lines), 3),
        "calls_per_min": round(statistics.median(rates), 1),
        "calls_per_min_spread": [min(rates), max(rates)],
        "wall_s": round(statistics.median(walls), 2), "wall_s_spread": [min(walls), max(walls)],
        "recipients": args.recipients, "rounds": args.rounds, "time_scale": args.time_scale,
        "called_twice": sum(line["called_twice"] for line in lines),
        "not_called": sum(line["not_called"] for line in lines),
    })


if __name__ == "__main__":
    main()
