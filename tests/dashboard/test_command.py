"""``campaign dashboard`` and ``campaign serve`` serving the pages: the address printed, a
busy port and an open address refused with a clear message."""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from scheduler.core.errors import ConfigError
from scheduler.core.httpserver import try_bind
from scheduler.ledger.runs import Ledger
from tests.app.support import CAMPAIGN, clean_env, cli
from tests.dashboard.web_support import hooks, project_settings
from tests.factories import make_run


@contextmanager
def started(args: list[str], cwd: Path,
            env: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``campaign ARGS`` in another process until it prints the dashboard's address: (the
    address, the process, whose output can be read on); interrupted (Ctrl-C) on exit."""
    proc = subprocess.Popen([*CAMPAIGN, *args], cwd=cwd, env={**env, "PYTHONUNBUFFERED": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            found = re.search(r"dashboard at (http://[^\s]+)", line)
            if found:
                yield found.group(1), proc
                break
        else:
            raise AssertionError("no address printed:\n" + "".join(lines))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def _project(root: Path, config: str = "") -> Path:
    (root / "campaigns").mkdir(parents=True, exist_ok=True)
    (root / "config.toml").write_text(config, encoding="utf-8")
    return root


@pytest.mark.slow
def test_campaign_dashboard_prints_its_address_and_serves_the_ledgers_runs(
        ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    run = make_run(ledger, 3, name="vitrine")
    root = _project(tmp_path)
    env = clean_env(CAMPAIGN_DATABASE_URL=ledger_url)
    with started(["dashboard", "--port", "0"], root, env) as (url, _proc):
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0/")
        page = httpx.get(url, timeout=20)
        run_page = httpx.get(f"{url}runs/{run}", timeout=20)
    assert page.status_code == 200 and str(run) in hooks(page.text, "data-run")
    assert hooks(run_page.text, "id")["run-status"] == "planned"
    assert "vitrine" in page.text


def test_a_busy_port_is_an_error_naming_it(tmp_path: Path, ledger_url: str) -> None:
    taken = try_bind("127.0.0.1", 0)
    assert taken is not None
    taken.listen()
    port = taken.getsockname()[1]
    try:
        done = cli(clean_env(CAMPAIGN_DATABASE_URL=ledger_url), "dashboard", "--port",
                   str(port), cwd=_project(tmp_path))
    finally:
        taken.close()
    assert done.returncode == 1
    said = " ".join(done.stderr.split())
    assert f"cannot serve the dashboard on 127.0.0.1:{port}: the port is in use" in said
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_an_open_address_without_logins_is_refused(tmp_path: Path, ledger_url: str) -> None:
    done = cli(clean_env(CAMPAIGN_DATABASE_URL=ledger_url), "dashboard", "--host", "0.0.0.0",
               "--port", "0", cwd=_project(tmp_path))
    assert done.returncode == 1
    said = " ".join(done.stderr.split())
    assert "refusing to serve the dashboard on 0.0.0.0" in said and "[dashboard.users" in said


def test_the_dashboard_never_takes_the_receivers_port(ledger: Ledger, ledger_url: str,
                                                      tmp_path: Path) -> None:
    from scheduler.commands.dashboard import serve_alongside

    settings = project_settings(tmp_path, ledger_url,
                                "receiver_port = 8791\n[dashboard]\nserve = true\nport = 8791\n")
    with pytest.raises(ConfigError, match="receiver's"), serve_alongside(settings, ledger):
        pass
    off = project_settings(tmp_path, ledger_url)
    with serve_alongside(off, ledger) as address:
        assert address is None  # `[dashboard] serve` is off unless config.toml turns it on


@pytest.mark.slow
def test_campaign_serve_serves_the_pages_on_their_own_port_not_the_receivers(
        ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    run = make_run(ledger, 2)
    ledger.request(run, "pause")  # nothing for the serve to send
    root = _project(tmp_path, "[dashboard]\nserve = true\nport = 0\n")
    env = clean_env(CAMPAIGN_DATABASE_URL=ledger_url)
    with started(["serve"], root, env) as (url, proc):
        page = httpx.get(f"{url}runs/{run}", timeout=20)
        assert page.status_code == 200
        assert hooks(page.text, "id")["run-status"] == "paused"
        assert proc.stdout is not None
        receiver = next(found.group(1) for line in proc.stdout
                        if (found := re.search(r"receiver (http://[^/\s]+)", line)))
        assert receiver not in url  # its own port
        elsewhere = httpx.get(f"{receiver}/runs/{run}", timeout=20)
        assert elsewhere.status_code == 404 and "run-status" not in elsewhere.text
