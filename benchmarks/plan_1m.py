"""Figure P1: plan a 1,000,000-row CSV (normalise, dedupe, render, store).

Generates a semicolon CSV of Brazilian recipients in messy formats (2 % invalid numbers,
1 % duplicates written in another format) in a temporary folder, with a two-step campaign
(a text from a template file, then an image with a caption), and times
``build_plan`` + reading every chunk, then storing them in a ledger (``--no-store`` skips
that): a new SQLite file by default, the database of ``--database-url URL`` (default
``$CAMPAIGN_BENCH_DATABASE_URL``; an empty database, e.g. PostgreSQL's
``postgresql+psycopg://user@host/db``), or, with ``--postgres``, a throwaway PostgreSQL
server started on loopback by ``scripts/pg-test-server`` (durable settings: fsync on).
Prints JSON lines::

    {"figure": "P1", "value": <wall s>, "unit": "s", "rows": ..., "peak_rss_mb": ...,
     "rows_per_s": ..., "stored": true|false, "database": "sqlite"|"postgresql", ...}
    {"figure": "P1-plan-only", ...}                 # without the ledger (when storing)
    {"figure": "P1-vs-read_csv", "value": <ratio>, "unit": "ratio", ...}

The baseline is a bare ``pandas.read_csv(path, sep=";", dtype=str)`` of the same file. Peak
RSS is measured in a fresh child process per phase, so one phase cannot inflate another
(a PostgreSQL server's own memory is not in it).
CPU seconds (``cpu_s``) are printed beside wall seconds: on a shared machine the wall time
follows the load (``load_avg_1m``), the CPU time much less.
``--rows N`` shrinks the run; ``--quick`` is ``--rows 50000``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _harness import peak_rss_mb
from sqlalchemy.engine import make_url

_FIRST_NAMES = (
    "Ana Maria João José Francisca Antônio Carlos Paulo Pedro Lucas Luiz Marcos Gabriel "
    "Rafael Daniel Marcelo Bruno Eduardo Felipe Rodrigo Juliana Márcia Fernanda Patrícia "
    "Aline Adriana Sandra Camila Amanda Bruna Jéssica Letícia Júlia Luciana Vanessa "
    "Mariana Gabriela Beatriz Larissa Conceição Sebastião Thiago Vinícius Caio"
)
FIRST = _FIRST_NAMES.split()
_LAST_NAMES = (
    "Silva Santos Oliveira Souza Rodrigues Ferreira Alves Pereira Lima Gomes Costa Ribeiro "
    "Martins Carvalho Almeida Lopes Soares Fernandes Vieira Barbosa Rocha Dias Nascimento "
    "Andrade Moreira Nunes Marques Machado Mendes Freitas Cardoso Ramos Gonçalves Araújo"
)
LAST = _LAST_NAMES.split()
CITIES = [
    ("São Paulo", "11"),
    ("Campinas", "19"),
    ("Rio de Janeiro", "21"),
    ("Niterói", "21"),
    ("Belo Horizonte", "31"),
    ("Curitiba", "41"),
    ("Porto Alegre", "51"),
    ("Salvador", "71"),
    ("Recife", "81"),
    ("Fortaleza", "85"),
    ("Belém", "91"),
    ("Manaus", "92"),
    ("Goiânia", "62"),
    ("Brasília", "61"),
    ("Florianópolis", "48"),
]
INVALID = ("1234", "(11) 1234-567", "sem telefone", "", "+55 (00) 98765-4321", "99999")
CAMPAIGN = """
name = "p1"
senders = ["s1", "s2"]
[recipients]
file = "data/recipients.csv"
phone_column = "telefone"
default_country = "BR"
[pace]
rate = "30/min"
[[steps]]
type = "text"
text_file = "p1.txt.j2"
[[steps]]
type = "image"
image = "https://example.com/p1.jpg"
caption = "{{ nome|first_name }}, até 40% de desconto em {{ cidade }}!"
"""
TEMPLATE = (
    "Olá, {{ nome|first_name }}! Sua fatura de {{ valor|brl }} vence em "
    "{{ vencimento|date_br }}.\nResponda SAIR para não receber mais mensagens.\n"
)


def _fmt(rng: random.Random, ddd: str, num: str) -> str:
    a, b = num[:5], num[5:]
    return (
        f"({ddd}) {a}-{b}",
        f"+55 {ddd} {a}-{b}",
        f"0{ddd} {a}-{b}",
        f"55 {ddd} {num}",
        f"{ddd}{num}",
        f"+55{ddd}{num}",
        f"{ddd} {a} {b}",
    )[rng.randrange(7)]


def generate(root: Path, rows: int, seed: int = 1) -> Path:
    """Write the project (campaign, template, CSV) under ``root``; return the campaign."""
    rng = random.Random(seed)
    for folder in ("campaigns", "templates", "data"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "templates" / "p1.txt.j2").write_text(TEMPLATE, encoding="utf-8")
    campaign = root / "campaigns" / "p1.toml"
    campaign.write_text(CAMPAIGN, encoding="utf-8")
    numbers: list[tuple[str, str]] = []
    with (root / "data" / "recipients.csv").open("w", encoding="utf-8", newline="") as out:
        out.write("Nome;Telefone;Cidade;Valor;Vencimento\n")
        lines = []
        for _ in range(rows):
            city, ddd = CITIES[rng.randrange(len(CITIES))]
            roll = rng.random()
            if roll < 0.02:
                phone = INVALID[rng.randrange(len(INVALID))]
            elif roll < 0.03 and numbers:
                ddd_n, num = numbers[rng.randrange(len(numbers))]
                phone = _fmt(rng, ddd_n, num)
            else:
                num = f"9{rng.randrange(60_000_000, 100_000_000)}"
                numbers.append((ddd, num))
                phone = _fmt(rng, ddd, num)
            name = f"{FIRST[rng.randrange(len(FIRST))]} {LAST[rng.randrange(len(LAST))]}"
            value = f"{rng.randrange(1000, 200000) / 100:.2f}".replace(".", ",")
            day = f"{rng.randrange(1, 29):02d}/{rng.randrange(1, 13):02d}/2025"
            lines.append(f"{name};{phone};{city};{value};{day}\n")
            if len(lines) >= 10_000:
                out.writelines(lines)
                lines.clear()
        out.writelines(lines)
    return campaign


def _phase_plan(campaign: Path, store: bool, database_url: str | None, queue: Any) -> None:
    from scheduler.campaign.plan import build_plan

    start, cpu = time.perf_counter(), time.process_time()
    plan = build_plan(campaign)
    stored = 0
    if store:
        from datetime import UTC, datetime

        from scheduler.ledger.db import open_ledger
        from scheduler.ledger.runs import Ledger

        url = database_url or f"sqlite:///{campaign.parent.parent / 'ledger.db'}"
        ledger = Ledger(open_ledger(url))
        spec = plan.campaign.spec
        run_id = ledger.create_run(
            campaign_name=spec.name,
            channel=spec.channel,
            definition_path=str(campaign),
            definition=spec.model_dump(mode="json"),
            delivery_mode=spec.delivery,
            timezone=spec.schedule.timezone,
            fire_time=None,
        )
        stored = ledger.store_plan(run_id, plan.chunks(), start_at=datetime.now(UTC))
        ledger.engine.dispose()
    else:
        for _rows in plan.chunks():
            pass
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    stats = plan.stats
    queue.put(
        {
            "wall": wall,
            "cpu": cpu,
            "peak_rss_mb": peak_rss_mb(),
            "read": stats.read,
            "valid": stats.valid,
            "duplicates": stats.duplicates,
            "invalid": stats.invalid_total,
            "stored": stored,
        }
    )


def _phase_read_csv(csv: Path, queue: Any) -> None:
    import pandas as pd

    start, cpu = time.perf_counter(), time.process_time()
    frame = pd.read_csv(csv, sep=";", dtype=str)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    queue.put({"wall": wall, "cpu": cpu, "peak_rss_mb": peak_rss_mb(), "read": len(frame)})


def _run(target: Any, *args: Any) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    process = ctx.Process(target=target, args=(*args, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def _ledger_available() -> bool:
    try:
        from scheduler.ledger.runs import Ledger
    except ImportError:
        return False
    return hasattr(Ledger, "store_plan")


@contextlib.contextmanager
def _postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL server (``scripts/pg-test-server start --durable``)."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "pg-test-server"
    folder = tempfile.mkdtemp(prefix="p1-pg-")
    try:
        started = subprocess.run(["bash", str(script), "start", "--durable", folder],
                                 check=True, capture_output=True, text=True)
        yield started.stdout.strip()
    finally:
        subprocess.run(["bash", str(script), "stop", folder], check=False)


def main(argv: list[str] | None = None) -> int:
    """Generate, plan, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="same as --rows 50000")
    parser.add_argument("--no-store", action="store_true", help="do not store in the ledger")
    parser.add_argument("--database-url", default=os.environ.get("CAMPAIGN_BENCH_DATABASE_URL"),
                        help="store in this (empty) database instead of a new SQLite file")
    parser.add_argument("--postgres", action="store_true",
                        help="store in a throwaway PostgreSQL server on loopback")
    args = parser.parse_args(argv)
    rows = 50_000 if args.quick else args.rows
    store = not args.no_store and _ledger_available()
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(_postgres_server()) if args.postgres else args.database_url
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="p1-"))
        campaign = generate(Path(tmp), rows)
        csv = Path(tmp) / "data" / "recipients.csv"
        base = _run(_phase_read_csv, csv)
        plan_only = _run(_phase_plan, campaign, False, None)
        full = _run(_phase_plan, campaign, True, url) if store else plan_only
    database = make_url(url).get_backend_name() if url else "sqlite"
    context = {
        "rows": rows,
        "valid": full["valid"],
        "duplicates": full["duplicates"],
        "invalid": full["invalid"],
        "steps": 2,
        "cpus": multiprocessing.cpu_count(),
    }
    print(
        json.dumps(
            {
                "figure": "P1",
                "value": round(full["wall"], 3),
                "unit": "s",
                **context,
                "peak_rss_mb": round(full["peak_rss_mb"], 1),
                "rows_per_s": round(rows / full["wall"]),
                "cpu_s": round(full["cpu"], 3),
                "load_avg_1m": round(os.getloadavg()[0], 2),
                "stored": store,
                "database": database,
                "deliveries_stored": full["stored"],
            }
        )
    )
    if store:
        print(
            json.dumps(
                {
                    "figure": "P1-plan-only",
                    "value": round(plan_only["wall"], 3),
                    "unit": "s",
                    **context,
                    "peak_rss_mb": round(plan_only["peak_rss_mb"], 1),
                    "rows_per_s": round(rows / plan_only["wall"]),
                    "cpu_s": round(plan_only["cpu"], 3),
                }
            )
        )
    else:
        why = "--no-store" if args.no_store else "scheduler.ledger has no store_plan"
        print(json.dumps({"note": f"P1 excludes storing ({why})"}))
    print(
        json.dumps(
            {
                "figure": "P1-vs-read_csv",
                "value": round(full["wall"] / base["wall"], 2),
                "unit": "ratio",
                "rows": rows,
                "read_csv_s": round(base["wall"], 3),
                "read_csv_cpu_s": round(base["cpu"], 3),
                "cpu_ratio": round(full["cpu"] / base["cpu"], 2),
                "read_csv_peak_rss_mb": round(base["peak_rss_mb"], 1),
                "plan_s": round(full["wall"], 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
