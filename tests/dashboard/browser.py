"""What the dashboard's browser tests build: Debian's Chromium driven by Playwright, the
dashboard, a sandbox and a real ``campaign run`` each in a process of its own.

- :func:`chromium`: a headless Chromium (``/usr/bin/chromium``, launched through Playwright's
  ``executable_path``: no browser is ever downloaded); the test is skipped, saying why, only
  when Chromium is missing and ``scripts/ensure-chromium`` cannot install it.
- :func:`open_page`: a page of a given viewport that records every dialog (an ``alert``
  from injected script would be one) and every script error.
- :func:`dashboard_process`: ``campaign dashboard --port 0`` in a project folder.
- :func:`run_process`: ``campaign run CAMPAIGN`` in a project folder, against a sandbox
  process (``tests/channels/support.py``'s :func:`sandbox_process`).
- :func:`live_project`: a project whose text campaign is slow enough to watch.
- :func:`ledger_counts`, :class:`CountsWatch`, :func:`run_row`: what the ledger holds, read
  by a plain scan (not the tallies the dashboard reads).

No fixtures here (the test modules wrap these in their own); no test imports a conftest.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Dialog,
    Page,
    ViewportSize,
    sync_playwright,
)
from sqlalchemy import func, select

from scheduler.ledger import access
from scheduler.ledger.queries.tables import deliveries, runs
from scheduler.sandbox.testing import text_project_phone
from tests.app.support import CAMPAIGN, clean_env
from tests.factories import REPO, open_test_ledger

#: Debian's package puts the browser here (``scripts/ensure-chromium`` prints the path).
CHROMIUM = "/usr/bin/chromium"
ENSURE = REPO / "scripts" / "ensure-chromium"

#: The viewports the pages are checked at: a laptop, and a phone 390 CSS pixels wide.
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


# --------------------------------------------------------------------------- the browser


def chromium_executable() -> str:
    """The path of Debian's Chromium, installed by ``scripts/ensure-chromium`` when missing
    (one installer at a time: pytest-xdist workers share a lock file); skips the test when
    it is missing and cannot be installed."""
    check = subprocess.run(["bash", str(ENSURE), "--check"], capture_output=True, text=True,
                           check=False)
    if check.returncode == 0:
        return check.stdout.strip().splitlines()[-1]
    lock = Path(tempfile.gettempdir()) / "ensure-chromium.lock"
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        done = subprocess.run(["bash", str(ENSURE)], capture_output=True, text=True,
                              check=False, timeout=900)
    if done.returncode != 0:
        pytest.skip(f"no Chromium for the browser tests: {done.stderr.strip()}")
    return done.stdout.strip().splitlines()[-1]


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium (Debian's, through ``executable_path``), closed on exit.

    Chromium's sandbox needs user namespaces, which root cannot use for it: as root (CI)
    it runs with ``--no-sandbox``; the pages it opens are ours, on loopback."""
    path = chromium_executable()
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, headless=True,
                                             args=[*args, "--disable-dev-shm-usage"])
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Watched:
    """What a page did that it should not: dialogs opened, script errors thrown, console
    errors (a CSP refusal is one)."""

    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)


@contextmanager
def open_page(browser: Browser, base_url: str, viewport: dict[str, int] = DESKTOP,
              *, storage_state: Any = None) -> Iterator[tuple[Page, Watched]]:
    """A page of its own context (its own cookies) at ``viewport``; every dialog is
    recorded and dismissed, every uncaught error and console error recorded."""
    context = browser.new_context(base_url=base_url, viewport=ViewportSize(**viewport),
                                  storage_state=storage_state)
    context.set_default_timeout(15_000)  # a missing element fails in seconds, not 30 s
    page = context.new_page()
    watched = Watched()

    def on_dialog(dialog: Dialog) -> None:
        watched.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            watched.console.append(message.text)

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda error: watched.errors.append(str(error)))
    page.on("console", on_console)
    try:
        yield page, watched
    finally:
        context.close()


def horizontal_overflow(page: Page) -> int:
    """How many CSS pixels the page is wider than its viewport (0: no sideways scrolling)."""
    return int(page.evaluate(
        "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
        " - document.documentElement.clientWidth"))


# --------------------------------------------------------------------------- processes


@dataclass
class Process:
    """A ``campaign`` command running in another process; ``log`` once it has stopped."""

    proc: subprocess.Popen[str]
    url: str = ""
    log: str = ""


def _stop(proc: subprocess.Popen[str], *, first: int = signal.SIGTERM) -> str:
    """Stop ``proc`` (``first``, then SIGKILL after 20 s); what it printed."""
    if proc.poll() is None:
        with suppress(ProcessLookupError):
            proc.send_signal(first)
    try:
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return (out or "") + (err or "")


@contextmanager
def dashboard_process(root: Path, env: dict[str, str], *args: str) -> Iterator[Process]:
    """``campaign dashboard --port 0 ARGS`` in ``root``, answering at ``.url``; stopped on
    exit (its output in ``.log``)."""
    proc = subprocess.Popen([*CAMPAIGN, "dashboard", "--port", "0", *args], cwd=root,
                            env={**env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    process = Process(proc)
    try:
        process.url = _address(proc)
        with httpx.Client(base_url=process.url, timeout=5) as http:
            deadline = time.monotonic() + 30
            while True:  # listening already: wait until the app answers
                try:
                    if http.get("/").status_code < 500:
                        break
                except httpx.TransportError:
                    pass
                assert proc.poll() is None, f"the dashboard stopped: {_stop(proc)}"
                assert time.monotonic() < deadline, "the dashboard did not answer in 30 s"
                time.sleep(0.05)
        yield process
    finally:
        process.log = _stop(proc)


def _address(proc: subprocess.Popen[str]) -> str:
    """The ``http://host:port`` a starting server prints among its first lines."""
    assert proc.stdout is not None
    seen = []
    for _ in range(20):
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        found = re.search(r"https?://[^\s/]+", line)
        if found:
            return found.group(0)
    raise AssertionError(f"the dashboard printed no address: {''.join(seen)}{_stop(proc)}")


@contextmanager
def run_process(campaign: Path, env: dict[str, str]) -> Iterator[Process]:
    """``campaign run CAMPAIGN`` from the campaign's project folder; on exit it is
    interrupted (Ctrl-C: the run pauses) and then killed if it has not stopped in 20 s."""
    proc = subprocess.Popen([*CAMPAIGN, "run", str(campaign)], cwd=campaign.parents[1],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    process = Process(proc)
    try:
        yield process
    finally:
        process.log = _stop(proc, first=signal.SIGINT)


def kill_owner(ledger_url: str, run_id: int) -> None:
    """Kill the process that holds the run, if one still does (a ``campaign resume`` the
    dashboard started, detached): a test leaves nothing running."""
    pid = run_row(ledger_url, run_id).get("owner_pid")
    if pid and pid != os.getpid():
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------------- projects


def live_project(root: Path, recipients: int, *, rate: str, names: dict[int, str] | None = None,
                 name: str = "ao-vivo", config: str = "",
                 senders: tuple[str, ...] = ("s1",)) -> Path:
    """A project (config.toml, campaigns/, data/) with one text campaign through
    ``senders`` at ``rate`` each: recipient ``i`` is ``Pessoa i`` unless ``names`` names
    them, at :func:`~scheduler.sandbox.testing.text_project_phone` ``(i)``; its campaign
    file."""
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    named = names or {}
    lines = ["nome;telefone"] + [f"{named.get(i, f'Pessoa {i}')};{text_project_phone(i)}"
                                 for i in range(recipients)]
    (root / "data" / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "config.toml").write_text(config, encoding="utf-8")
    sender_list = ", ".join(f'"{sender}"' for sender in senders)
    path = root / "campaigns" / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nsenders = [{sender_list}]\n'
        f'[recipients]\nfile = "data/{name}.csv"\nphone_column = "telefone"\n'
        'default_country = "BR"\n'
        f'[schedule]\ntimezone = "UTC"\n[pace]\nrate = "{rate}"\njitter = "0"\n'
        '[[steps]]\ntype = "text"\ntext = "Olá {{ nome }}, temos novidades."\n',
        encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the ledger


def ledger_counts(ledger_url: str, run_id: int) -> dict[str, int]:
    """The run's deliveries by state, by a plain GROUP BY over its rows (not the tallies
    the dashboard reads): the truth the page is compared with."""
    d = deliveries.c
    with open_test_ledger(ledger_url) as ledger, access.read(ledger.engine) as conn:
        found = conn.execute(select(d.state, func.count()).where(d.run_id == run_id)
                             .group_by(d.state)).all()
    return {state: n for state, n in found}


class CountsWatch:
    """The run's counts by state as the ledger had them, sampled by a plain scan every few
    milliseconds in a thread while the test reads the page: :meth:`had` says whether the
    ledger held given counts lately (a page's counts must be a state the ledger really
    had, not a mix of two moments)."""

    def __init__(self, ledger_url: str, run_id: int) -> None:
        self.ledger_url, self.run_id = ledger_url, run_id
        #: Each distinct state seen: [counts, first seen, last seen] (monotonic seconds).
        self.states: list[list[Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="counts-watch", daemon=True)

    def __enter__(self) -> CountsWatch:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _sample(self) -> None:
        d = deliveries.c
        query = (select(d.state, func.count()).where(d.run_id == self.run_id)
                 .group_by(d.state))
        with open_test_ledger(self.ledger_url) as ledger:
            while not self._stop.is_set():
                with access.read(ledger.engine) as conn:
                    counts = {state: n for state, n in conn.execute(query).all() if n}
                now = time.monotonic()
                with self._lock:
                    if self.states and self.states[-1][0] == counts:
                        self.states[-1][2] = now
                    else:
                        self.states.append([counts, now, now])
                self._stop.wait(0.02)

    def had(self, counts: dict[str, int], *, within_s: float) -> bool:
        """Whether the ledger held exactly ``counts`` at some moment of the last
        ``within_s`` seconds."""
        since = time.monotonic() - within_s
        with self._lock:
            return any(seen == counts and last >= since for seen, _first, last in self.states)

    def latest(self) -> dict[str, int]:
        """The counts of the newest sample."""
        with self._lock:
            return dict(self.states[-1][0]) if self.states else {}


def run_row(ledger_url: str, run_id: int | None = None) -> dict[str, Any]:
    """The run's row (the newest run when ``run_id`` is None; ``{}`` when there is none)."""
    r = runs.c
    query = select(runs).order_by(r.id.desc()).limit(1)
    if run_id is not None:
        query = select(runs).where(r.id == run_id)
    with open_test_ledger(ledger_url) as ledger, access.read(ledger.engine) as conn:
        row = conn.execute(query).mappings().first()
    return dict(row) if row else {}


def service_env(base_url: str, api_key: str, ledger_url: str, **more: str) -> dict[str, str]:
    """The environment of the ``campaign`` processes of a test: the sandbox, the ledger."""
    return clean_env(CAMPAIGN_BASE_URL=base_url, CAMPAIGN_API_KEY=api_key,
                     CAMPAIGN_DATABASE_URL=ledger_url, **more)
