"""Figure B1: what a ``[blanks]`` table costs the plan, in CPU seconds per row.

Writes two CSVs of N recipients (a name, a due date, an amount): one without blank cells,
one with 10 % of the dates and 20 % of the names blank. Plans (``build_plan`` + every chunk,
nothing stored), in alternation, ``--rounds`` times:

- ``plain``: the full CSV, a plain template, no ``[blanks]``;
- ``checked``: the same with ``[blanks] default = "error"``, ``vencimento = "skip"``,
  ``nome = { default = "cliente" }``: every row is checked, none changes (the overhead);
- ``if``: the CSV with blanks, no ``[blanks]``, the template testing them with
  ``{% if %}`` (what campaigns had to do);
- ``blanks``: the CSV with blanks and the ``[blanks]`` table, the plain template.

Prints JSON lines::

    {"figure": "B1-plain", "value": <CPU µs per row>, "unit": "us/row", ...}   # and the others
    {"figure": "B1-overhead", "value": <checked / plain>, "unit": "ratio", ...}
    {"figure": "B1-vs-if", "value": <blanks / if>, "unit": "ratio", ...}

CPU time (``time.process_time``) of this process, medians of the rounds: the machine's load
moves the wall time much more than the CPU time. ``--quick`` is ``--rows 20000 --rounds 3``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from _harness import emit, log

from scheduler.campaign.plan import build_plan

STEP = '[[steps]]\ntype = "text"\ntext = "{text}"\n'
WITH_IF = ("Oi {% if nome %}{{ nome|first_name }}{% else %}cliente{% endif %}, "
           "vence {{ vencimento|date_br }}: {{ valor|brl }}")
PLAIN = "Oi {{ nome|first_name }}, vence {{ vencimento|date_br }}: {{ valor|brl }}"


BLANKS = '[blanks]\ndefault = "error"\nvencimento = "skip"\nnome = { default = "cliente" }\n'
#: without [blanks] a blank date must be tested in the template, else its row fails
WITH_IF = WITH_IF.replace(
    "{{ vencimento|date_br }}",
    "{% if vencimento %}{{ vencimento|date_br }}{% else %}em breve{% endif %}")


def write_project(root: Path, rows: int) -> dict[str, Path]:
    """The two CSVs and the four campaigns, by name."""
    (root / "data").mkdir()
    (root / "campaigns").mkdir()
    for csv, holes in (("full", False), ("holes", True)):
        lines = ["nome;telefone;vencimento;valor"]
        for i in range(rows):
            name = "" if holes and i % 5 == 0 else f"MARIA {i} DA SILVA"
            due = "" if holes and i % 10 == 3 else f"{1 + i % 28:02d}/12/2026"
            lines.append(f"{name};+55 11 9{80000000 + i};{due};{i % 997},{i % 100:02d}")
        (root / "data" / f"{csv}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    paths = {}
    for name, csv, table, text in (("plain", "full", "", PLAIN),
                                   ("checked", "full", BLANKS, PLAIN),
                                   ("if", "holes", "", WITH_IF),
                                   ("blanks", "holes", BLANKS, PLAIN)):
        path = paths[name] = root / "campaigns" / f"{name}.toml"
        path.write_text(f'name = "b1"\nsenders = ["s1"]\n[recipients]\nfile = "data/{csv}.csv"\n'
                        + table + STEP.format(text=text), encoding="utf-8")
    return paths


def plan_cpu(path: Path) -> tuple[float, int]:
    """CPU seconds to plan ``path`` (every chunk read, nothing stored) and rows read."""
    start = time.process_time()
    plan = build_plan(path)
    stats = plan.consume()
    return time.process_time() - start, stats.read


def main() -> None:
    """Run the rounds and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.rounds = 20_000, 3
    with tempfile.TemporaryDirectory(prefix="b1-") as folder:
        paths = write_project(Path(folder), args.rows)
        plan_cpu(paths["plain"])  # warm-up: imports, filters' caches
        times: dict[str, list[float]] = {name: [] for name in paths}
        for round_ in range(args.rounds):
            for name, path in paths.items():
                cpu, read = plan_cpu(path)
                times[name].append(cpu / read * 1e6)
                log(f"round {round_ + 1}: {name} {cpu:.2f} s CPU for {read:,} rows")
    load = os.getloadavg()[0]
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        emit({"figure": f"B1-{name}", "value": round(medians[name], 2), "unit": "us/row",
              "rows": args.rows, "rounds": args.rounds,
              "range": [round(min(values), 2), round(max(values), 2)],
              "load_avg_1m": round(load, 2)})
    for figure, over, under in (("B1-overhead", "checked", "plain"),
                                ("B1-vs-if", "blanks", "if")):
        emit({"figure": figure, "value": round(medians[over] / medians[under], 3),
              "unit": "ratio", "rows": args.rows, "rounds": args.rounds,
              "load_avg_1m": round(load, 2)})


if __name__ == "__main__":
    main()
