"""Figure CLI1: how long ``campaign`` takes to answer, against ``import typer, rich``.

Each command is run as a user runs it (the virtual environment's ``campaign`` script, a
fresh process, output to /dev/null), ``--runs`` times, and compared with
``python -c "import typer, rich"`` in the same virtual environment (the baseline: a Typer
program can hardly start faster), and with the floor of a read command (:data:`FLOOR`: a
Typer command that prints the ledger's runs with ``sqlite3`` and rich, nothing else).
Commands: ``--version``, ``--help``; ``status``, ``runs``
and ``senders`` on a small ledger; ``validate`` and ``plan`` of ``campaigns/demo.toml``.

The small ledger: a copy of the repository's ``campaigns/``, ``data/`` and ``templates/`` in
a temporary folder, where ``campaign run`` sends ``campaigns/demo.toml`` (about 200
recipients, two steps) through the embedded sandbox, its pace raised so the set-up takes
seconds; the commands run in that folder, with no ``CAMPAIGN_*`` variable and no config file.
Each command runs once untimed first, so that Python's bytecode caches exist, as after an
install (``PYTHONDONTWRITEBYTECODE`` is dropped from the commands' environment).

``--side NAME=REPO`` (repeatable) compares checkouts, each with its own ``REPO/.venv``
(e.g. ``--side before=/work/wt-before --side after=.``): each side gets its own project and
ledger, made by its own ``campaign``, and the runs are interleaved (round by round, command
by command, side by side) so that the machine's load falls on every side alike. Without
``--side``: this checkout, with the interpreter running the script.

One JSON line per side and command (``figure`` CLI1, ``value`` = median seconds, ``min``,
``max``, ``ratio`` = median / the side's baseline median; ``cpu``, ``cpu_min``, ``cpu_max``
and ``cpu_ratio`` the same of the command's CPU time, user + system, which other work on a
shared machine disturbs far less than its wall time), then one with the load average
before and after (other work on the machine makes every figure slower, the ratios less so).
``--quick``: 3 runs (default 10).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _harness import emit, log

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "import typer, rich"
#: The floor of a read command: a Typer program of one command that opens the project's
#: SQLite ledger with the standard library and prints its runs in a rich table, and nothing
#: else (no settings, no checks, no views). No real command can start faster; its ratio
#: says how close the goal of 3x is to what any Typer program pays.
FLOOR = """
import typer
app = typer.Typer(add_completion=False)
@app.command()
def runs(as_json: bool = typer.Option(False, "--json")) -> None:
    import sqlite3
    from rich.console import Console
    from rich.table import Table
    table = Table("run", "campaign", "status")
    with sqlite3.connect("state/campaign.db") as conn:
        for row in conn.execute("SELECT id, campaign_name, status FROM runs ORDER BY id DESC"):
            table.add_row(*map(str, row))
    Console().print(table)
app()
"""
#: Python programs measured beside the commands, by name.
SNIPPETS = {"baseline": BASELINE, "floor": FLOOR}
#: (name, arguments of ``campaign``; None: the snippet of that name).
COMMANDS: tuple[tuple[str, list[str] | None], ...] = (
    ("baseline", None),
    ("floor", None),
    ("--version", ["--version"]),
    ("--help", ["--help"]),
    ("status", ["status"]),
    ("runs", ["runs"]),
    ("senders", ["senders"]),
    ("validate", ["validate", "campaigns/demo.toml"]),
    ("plan", ["plan", "campaigns/demo.toml"]),
)
#: The seed run's pace (the demo's own is 25/s per sender: ~15 s of sending).
SEED_RATE = "400/s"


@dataclass
class Side:
    """One checkout under test: its virtual environment and its project folder."""

    name: str
    repo: Path
    bin: Path
    project: Path

    def argv(self, name: str, args: list[str] | None) -> list[str]:
        """The command line of one measured command (``args`` None: a snippet's)."""
        if args is None:
            return [str(self.bin / "python"), "-c", SNIPPETS[name]]
        return [str(self.bin / "campaign"), *args]


def _env() -> dict[str, str]:
    """The environment of every command: no ``CAMPAIGN_*`` setting, 80 columns, and Python
    writing its bytecode caches as it does for a user (``PYTHONDONTWRITEBYTECODE`` would
    make every run compile the scheduler's modules again)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CAMPAIGN_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(COLUMNS="80", PYTHONUNBUFFERED="1")
    return env


def make_project(side: Side) -> None:
    """The side's project: the repository's campaigns, data and templates, and a ledger
    holding one completed run of the demo campaign (sent by the side's own ``campaign``)."""
    for folder in ("campaigns", "data", "templates"):
        shutil.copytree(side.repo / folder, side.project / folder)
    demo = (side.project / "campaigns" / "demo.toml").read_text(encoding="utf-8")
    seed = re.sub(r'(?m)^rate = "[^"]*"', f'rate = "{SEED_RATE}"', demo)
    seed = re.sub(r'(?m)^name = "demo"', 'name = "demo-seed"', seed)
    (side.project / "campaigns" / "demo_seed.toml").write_text(seed, encoding="utf-8")
    started = time.perf_counter()
    done = subprocess.run(side.argv("run", ["run", "campaigns/demo_seed.toml"]), cwd=side.project,
                          env=_env(), capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{side.name}: campaign run failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    log(f"{side.name}: ledger seeded in {time.perf_counter() - started:.1f} s "
        f"({done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ''})")


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def time_once(side: Side, name: str, args: list[str] | None) -> tuple[float, float]:
    """Wall and CPU seconds of one run of a command (a failing command stops the
    benchmark)."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(side.argv(name, args), cwd=side.project, env=_env(),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
    elapsed = time.perf_counter() - started
    cpu = _children_cpu() - cpu_before
    if done.returncode != 0:
        raise SystemExit(f"{side.name}: {' '.join(side.argv(name, args))} exited "
                         f"{done.returncode}:\n{done.stderr.decode(errors='replace')[-2000:]}")
    return elapsed, cpu


def _sides(specs: list[str], workdir: Path) -> list[Side]:
    """The sides of ``--side NAME=REPO``, or this checkout with this interpreter."""
    if not specs:
        return [Side("this", ROOT, Path(sys.executable).parent, workdir / "this")]
    sides = []
    for spec in specs:
        name, _, repo = spec.partition("=")
        path = Path(repo).resolve()
        if not name or not (path / ".venv" / "bin" / "campaign").exists():
            raise SystemExit(f"--side {spec}: expected NAME=REPO with REPO/.venv/bin/campaign")
        sides.append(Side(name, path, path / ".venv" / "bin", workdir / name))
    return sides


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="3 runs of each command")
    parser.add_argument("--runs", type=int, default=None, help="runs of each command (10)")
    parser.add_argument("--side", action="append", default=[], metavar="NAME=REPO",
                        help="a checkout with its own .venv (repeat to compare, interleaved)")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 10)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="cli1-") as tmp:
        sides = _sides(args.side, Path(tmp))
        for side in sides:
            make_project(side)
        for side in sides:  # once, untimed: the bytecode caches are written
            for name, command in COMMANDS:
                time_once(side, name, command)
        times: dict[tuple[str, str], list[float]] = {}
        cpus: dict[tuple[str, str], list[float]] = {}
        for round_no in range(runs):
            for name, command in COMMANDS:
                for side in sides:
                    wall, cpu = time_once(side, name, command)
                    times.setdefault((side.name, name), []).append(wall)
                    cpus.setdefault((side.name, name), []).append(cpu)
            log(f"round {round_no + 1}/{runs} done (load {os.getloadavg()[0]:.2f})")
    for side in sides:
        base = statistics.median(times[(side.name, "baseline")])
        cpu_base = statistics.median(cpus[(side.name, "baseline")])
        for name, _command in COMMANDS:
            values, used = times[(side.name, name)], cpus[(side.name, name)]
            median, cpu = statistics.median(values), statistics.median(used)
            emit({"figure": "CLI1", "side": side.name, "command": name,
                  "value": round(median, 3), "unit": "s", "min": round(min(values), 3),
                  "max": round(max(values), 3), "ratio": round(median / base, 2),
                  "cpu": round(cpu, 3), "cpu_min": round(min(used), 3),
                  "cpu_max": round(max(used), 3), "cpu_ratio": round(cpu / cpu_base, 2),
                  "runs": runs})
    emit({"figure": "CLI1-load", "load_before": [round(x, 2) for x in load_before],
          "load_after": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()})


if __name__ == "__main__":
    main()
