"""What ``campaign --version``, ``--help``, ``status``, ``runs`` and ``senders`` import: never
the web servers, the report's libraries or the dispatcher (issue 32: a command loads what it
uses).

Each command runs as users run it, in its own Python process; the names in ``sys.modules``
when it exits are the modules it imported. FastAPI and uvicorn serve the receiver, the
sandbox and the dashboard; pandas, xlsxwriter and openpyxl write and read reports; the
dispatcher sends: none of them is needed to print a version, the help or a run's status.
``senders`` reads the embedded sandbox's plan limits in process: not its app, its server or
the service client either.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler.ledger.runs import Ledger
from tests.factories import make_run

#: What these commands must not import (a package and its modules).
HEAVY = ("fastapi", "uvicorn", "pandas", "xlsxwriter", "openpyxl",
         "scheduler.dispatch.dispatcher")

#: ``campaign ARGS`` in a fresh interpreter; the imported modules are written, as JSON, to
#: the file named by ``MODULES_OUT`` when it exits (an exit code included).
PROGRAM = """
import json, os, sys
sys.argv = ["campaign", *sys.argv[1:]]
try:
    from scheduler.cli import main
    main()
finally:
    with open(os.environ["MODULES_OUT"], "w", encoding="utf-8") as out:
        json.dump(sorted(sys.modules), out)
"""


def heavy_among(modules: list[str]) -> list[str]:
    """The modules of :data:`HEAVY` packages among ``modules``."""
    return [name for name in modules
            if any(name == heavy or name.startswith(heavy + ".") for heavy in HEAVY)]


def imported_by(args: list[str], tmp_path: Path, ledger_url: str) -> tuple[str, list[str]]:
    """What ``campaign ARGS`` printed and the modules it imported (it must succeed)."""
    out = tmp_path / f"modules-{'-'.join(a.strip('-') for a in args)}.json"
    config = tmp_path / "empty-config.toml"
    config.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    env.update(MODULES_OUT=str(out), CAMPAIGN_CONFIG=str(config),
               CAMPAIGN_DATABASE_URL=ledger_url, COLUMNS="80", NO_COLOR="1")
    done = subprocess.run([sys.executable, "-c", PROGRAM, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("args", "shown"), [
    (["--version"], "campaign "),
    (["--help"], "Usage: campaign"),
    (["status"], "run 1"),
    (["runs"], "test"),
    (["senders"], "plan limits from: the embedded sandbox"),
], ids=["--version", "--help", "status", "runs", "senders"])
def test_the_command_imports_no_server_report_library_or_dispatcher(
        args: list[str], shown: str, ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    make_run(ledger, 20, senders=("s1", "s2"))
    printed, modules = imported_by(args, tmp_path, ledger_url)
    assert shown in printed
    assert "scheduler.cli" in modules  # it read the interpreter's modules
    if args[0] in ("status", "runs"):  # ...after reading the ledger
        assert "scheduler.views.status" in modules
        assert "scheduler.service.responses" not in modules  # no limits read: no wire model
        assert "scheduler.views.senders" not in modules  # campaign senders' view, not a run's
        # a WhatsApp run: no SMS, voice or calls outcomes read (nor the conversation rows)
        assert "scheduler.ledger.outcome_reads" not in modules
    if args[0] == "senders":  # ...after reading the ledger and the sandbox's limits
        assert "scheduler.sandbox.plan_limits" in modules
    assert heavy_among(modules) == []


#: What reading the ledger (and the embedded sandbox's limits) must not import: the web
#: stack (Starlette under FastAPI), the service client (httpx, aiohttp), the sandbox's app,
#: Alembic with Mako (only a ledger behind the code is migrated), the channels with the
#: service's wire models (the views ask ``views.channel_kinds``), phonenumbers (no number
#: is looked up), the A/B tests' statistics (only a run with a test shows them), the
#: service's event models and segno (the sandbox's limits need neither its events nor its
#: QR codes), the ledger's writers (``Ledger``: plans, with the plan writer's thread and the
#: name tables; run control, with the webhook outbox: the readers open its reads alone).
NOT_FOR_READERS = ("scheduler.ledger.runs", "scheduler.ledger.run_control",
                   "scheduler.ledger.planwriter", "scheduler.ledger.outbox",
                   "starlette", "httpx", "aiohttp", "scheduler.sandbox.app",
                   "scheduler.service.client", "alembic", "mako", "scheduler.dispatch.channels",
                   "scheduler.dispatch.channel", "scheduler.service.account_models",
                   "scheduler.service.requests", "scheduler.service.call_models", "phonenumbers",
                   "scheduler.experiments", "scheduler.service.event_data",
                   "scheduler.service.account_events", "segno")


@pytest.mark.parametrize("args", [["status"], ["runs"], ["senders"]],
                         ids=["status", "runs", "senders"])
def test_the_readers_import_no_web_stack_client_or_migrations(
        args: list[str], ledger: Ledger, ledger_url: str, db_backend: str,
        tmp_path: Path) -> None:
    make_run(ledger, 20, senders=("s1", "s2"))
    _, modules = imported_by(args, tmp_path, ledger_url)
    assert [m for m in modules
            if any(m == name or m.startswith(name + ".") for name in NOT_FOR_READERS)] == []
    # a SQLite ledger is read without SQLAlchemy's PostgreSQL dialect (the modules of its
    # four drivers with it; the tables' partial indexes ask for it only on PostgreSQL)
    if db_backend == "sqlite":
        assert [m for m in modules if m.startswith("sqlalchemy.dialects.postgresql")] == []


def test_the_check_names_heavy_modules() -> None:
    assert heavy_among(["fastapi", "fastapi.routing", "uvicorn.server", "pandas.core",
                        "xlsxwriter", "openpyxl.reader", "scheduler.dispatch.dispatcher",
                        "scheduler.dispatch.dispatcher.loop"]) == [
        "fastapi", "fastapi.routing", "uvicorn.server", "pandas.core", "xlsxwriter",
        "openpyxl.reader", "scheduler.dispatch.dispatcher",
        "scheduler.dispatch.dispatcher.loop"]
    assert heavy_among(["fastapi_extra", "pandasx", "scheduler.dispatch.dispatch_cpu",
                        "scheduler.dispatch.windows", "sqlalchemy"]) == []


@pytest.mark.parametrize("args", [["--version"], ["--help"]], ids=["--version", "--help"])
def test_version_and_help_build_no_model_and_open_no_database(
        args: list[str], ledger_url: str, tmp_path: Path) -> None:
    """Printing the version or the help builds no pydantic model and loads no SQLAlchemy:
    option defaults in signatures stay plain values (a settings model imported at a
    command module's top once cost --version a quarter of a second)."""
    _, modules = imported_by(args, tmp_path, ledger_url)
    assert [m for m in modules if m.split(".")[0] in ("pydantic", "sqlalchemy", "sqlmodel")] == []
    # help is plain text: not Typer's Rich panels, with Markdown (markdown-it) and Pygments
    assert [m for m in modules if m.split(".")[0] in ("markdown_it", "pygments", "alembic",
                                                      "mako")
            or m == "typer.rich_utils"] == []
