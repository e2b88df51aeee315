"""Figure C1: what retry rules buy on a seeded voice list: recipients reached with and
without them, attempts per recipient, calls made and the time to finish.

A project folder in a temporary directory holds a voice campaign (an IVR ``flowId``) to
``--recipients`` generated mobiles (default 1,000; a third each in São Paulo, Manaus and Rio
Branco, so the rules' windows fall at three local times), in São Paulo's zone, sent
09:00-20:00, ``rate = "2/s"``, ``max_calls = 30``. It is rehearsed twice
(:func:`scheduler.usecases.rehearsal.rehearse_campaign`: the simulated clock from Monday 09:00 in
São Paulo, the embedded sandbox seeded with ``--seed``, each call answered with
``--answer-rate``, else a cause drawn among busy, no answer, rejected, ring time-out and
voicemail), once as it is and once with

    retry = [{ on = "no_answer", delay = "2h", max_attempts = 3, window = "09:00-20:00" },
             { on = "busy", delay = "10m", max_attempts = 5 }]

The calls are read from the rehearsal sandbox's record of accepted requests (each number
of a ``voice/bulk`` it gave a ``callId``) and the outcome it decided for each call: a
recipient is reached when one of their calls was answered. One JSON line per variant
(``"figure": "C1"``: ``reached``, its share, attempts per recipient (mean, max), calls,
the rehearsal clock's time to finish in hours, wall seconds, the 1-minute load), then a
summary line (``"figure": "C1-lift"``). ``--quick``: 200 recipients.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _harness import emit, log

#: Monday 2027-03-08 09:00 in São Paulo (-03:00).
START = datetime(2027, 3, 8, 12, 0, tzinfo=UTC)
RULES = ('[\n  { on = "no_answer", delay = "2h", max_attempts = 3, window = "09:00-20:00" },\n'
         '  { on = "busy", delay = "10m", max_attempts = 5 },\n]\n')
#: Area codes of the list: São Paulo (-03:00), Manaus (-04:00), Rio Branco (-05:00).
AREAS = ("11", "92", "68")


def phone(i: int) -> str:
    """Recipient ``i``'s mobile, in international format."""
    return f"+55{AREAS[i % len(AREAS)]}98{i:07d}"


def write_project(root: Path, recipients: int, *, rules: bool) -> Path:
    """The project folder with the voice campaign (with or without retry rules); its file."""
    name = "c1-rules" if rules else "c1-plain"
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    rows = ["nome;telefone"] + [f"Pessoa {i};{phone(i)}" for i in range(recipients)]
    (root / "data" / "lista.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    path = root / "campaigns" / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nchannel = "voice"\n\n'
        '[recipients]\nfile = "data/lista.csv"\nphone_column = "telefone"\n\n'
        '[schedule]\ntimezone = "America/Sao_Paulo"\nwindow = "09:00-20:00"\n\n'
        '[pace]\nrate = "2/s"\nbatch = 10\nmax_calls = 30\n\n'
        '[[steps]]\nflowId = "flow-cobranca"\nvariables = { nome = "{{ nome }}" }\n'
        + (f"retry = {RULES}" if rules else ""),
        encoding="utf-8")
    return path


@contextlib.contextmanager
def sandbox_settings(settings: dict[str, Any]) -> Iterator[list[Any]]:
    """Rehearsals inside get ``settings`` on top of their sandbox's own; yields the list
    receiving each rehearsal's sandbox, to read its record afterwards."""
    from scheduler.usecases import rehearsal

    real = rehearsal.service_target
    seen: list[Any] = []

    @contextlib.contextmanager
    def wrapped(*args: Any, sandbox_config: dict[str, Any] | None = None,
                **kwargs: Any) -> Iterator[Any]:
        with real(*args, sandbox_config={**(sandbox_config or {}), **settings},
                  **kwargs) as target:
            seen.append(target.sandbox.state.sandbox)
            yield target

    rehearsal.service_target = wrapped  # type: ignore[assignment]
    try:
        yield seen
    finally:
        rehearsal.service_target = real  # type: ignore[assignment]


def calls_of(sandbox: Any) -> tuple[Counter[str], set[str]]:
    """Calls per number, and the numbers some call of which was answered."""
    answered = {call["callId"] for call in sandbox.account.voice.outcomes if call["answered"]}
    calls: Counter[str] = Counter()
    reached: set[str] = set()
    for send in sandbox.world.sends:
        if "/voice/" not in send["path"]:
            continue
        pairs = (zip(send["to"], send.get("callIds") or [], strict=False)
                 if isinstance(send["to"], list) else [(send["to"], send["messageId"])])
        for to, call_id in pairs:
            if call_id:
                calls[to] += 1
                if call_id in answered:
                    reached.add(to)
    return calls, reached


def rehearse(root: Path, recipients: int, *, rules: bool, seed: int,
             answer_rate: float) -> dict[str, Any]:
    """One rehearsal of the list; its C1 line."""
    from scheduler.usecases.rehearsal import rehearse_campaign

    path = write_project(root / ("rules" if rules else "plain"), recipients, rules=rules)
    os.environ["CAMPAIGN_STATE_DIR"] = str(root / "state")
    began = time.perf_counter()
    with sandbox_settings({"voice_answer_rate": answer_rate, "voice_time_scale": 0.001,
                           "voice_max_calls_in_progress": 60}) as boxes:
        result = rehearse_campaign(path, start=START, seed=seed)
    wall = time.perf_counter() - began
    calls, reached = calls_of(boxes[0])
    per_recipient = [calls.get(phone(i).lstrip("+"), 0) for i in range(recipients)]
    took_h = (result.finish - result.start).total_seconds() / 3600
    line = {
        "figure": "C1", "variant": "with rules" if rules else "without rules",
        "value": len(reached), "unit": "recipients reached", "recipients": recipients,
        "reached_share": round(len(reached) / recipients, 4),
        "attempts_mean": round(statistics.fmean(per_recipient), 3),
        "attempts_max": max(per_recipient), "calls": sum(per_recipient),
        "not_called": per_recipient.count(0),
        "finish_h": round(took_h, 2), "wall_s": round(wall, 1),
        # without rules the rehearsal hears no event: each call counts for the estimate
        "call_ends": "events" if rules else "estimated (voice_call_estimate_s)",
        "seed": seed, "answer_rate": answer_rate,
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    log(f"{line['variant']}: {len(reached):,} of {recipients:,} reached, "
        f"{line['calls']:,} calls, finished after {took_h:.1f} h (simulated), {wall:.1f} s")
    return line


def main() -> None:
    """Rehearse the list without and with the rules; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipients", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--answer-rate", type=float, default=0.4)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.recipients = 200
    with tempfile.TemporaryDirectory(prefix="c1-") as folder:
        lines = [rehearse(Path(folder), args.recipients, rules=rules, seed=args.seed,
                          answer_rate=args.answer_rate) for rules in (False, True)]
    for line in lines:
        emit(line)
    plain, ruled = lines
    emit({"figure": "C1-lift", "value": ruled["value"] - plain["value"],
          "unit": "more recipients reached", "recipients": args.recipients,
          "reached_share": [plain["reached_share"], ruled["reached_share"]],
          "calls_ratio": round(ruled["calls"] / max(plain["calls"], 1), 3),
          "finish_h": [plain["finish_h"], ruled["finish_h"]], "seed": args.seed,
          "load_avg_1m": round(os.getloadavg()[0], 2)})


if __name__ == "__main__":
    main()
