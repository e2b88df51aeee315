"""Fixtures shared by every test folder: a real sandbox and a real webhook sink on loopback.

- ``sandbox``: a fresh sandbox (seed 1, no faults, silent recipients) served by uvicorn;
  a :class:`~scheduler.sandbox.testing.SandboxHandle` (``base_url``, ``api_key``, ``app``,
  ``state``, ``sends()``, ``scan()``, ``set_faults()``, ``create_session()``, ``send()`` ...).
- ``make_sandbox(**config)``: the same with settings changed (all stopped after the test).
- ``service_factory(**config)``: a sandbox served in this process, as a
  :class:`~tests.factories.Service` (client and state), stopped after the test.
- ``webhook_sink``: a :class:`~scheduler.sandbox.testing.WebhookSink` that records every JSON
  POSTed to it (``url``, ``events``, ``wait_for(predicate, count, timeout)``).
- ``ledger_url``: the URL of a fresh ledger for this test, SQLite or PostgreSQL depending on
  the pass (``CAMPAIGN_TEST_DATABASE_URL`` / ``--database-url``, see ``tests/databases.py``);
  ``make_ledger_url(name)`` for more than one; ``db_backend`` says which. A subprocess test
  passes the URL on as ``CAMPAIGN_DATABASE_URL``. ``@pytest.mark.sqlite_only(reason=...)``
  marks a test that is about SQLite itself (skipped on the PostgreSQL pass);
  ``@pytest.mark.pg_covered_by("tests/x.py::test_y", ..., reason=...)`` one whose own point
  is a rendering (LibreOffice, a browser) while the tests named run its PostgreSQL path on
  that pass (left out there; the names are checked at collection).
- ``clock``: a :class:`~tests.factories.FakeClock` at ``T0``; ``ledger``: a migrated ledger
  on ``ledger_url`` whose clock is ``clock``.

Servers of one test are stopped in parallel at its end. Area-specific fixtures belong in
each folder's own ``conftest.py``; what tests build (projects, runs, clocks) is in
``tests/factories.py``, and no test imports a conftest.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from scheduler.core.httpserver import BackgroundServer
from scheduler.ledger.runs import Ledger
from scheduler.sandbox import SandboxConfig
from scheduler.sandbox.testing import QUIET_SANDBOX, SandboxHandle, WebhookSink
from tests.databases import ENV as DATABASE_ENV
from tests.databases import LedgerUrls
from tests.factories import FakeClock, Service, open_test_ledger, start_service
from tests.waiting import leaked

# Property tests check behaviour, not speed: no per-example deadline (a loaded CI machine
# would otherwise fail them at random).
settings.register_profile("project", deadline=None)
settings.load_profile("project")


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--database-url``: the PostgreSQL server of this pass (default: the environment's)."""
    parser.addoption("--database-url", default=os.environ.get(DATABASE_ENV) or None,
                     help=f"admin URL of a PostgreSQL server for the ledgers (else SQLite); "
                          f"default ${DATABASE_ENV}")
    parser.addoption("--leaks", action="store_true", default=False,
                     help="after each test, collect garbage and fail the test that left a "
                          "socket, file or transport open (ResourceWarning) instead of the "
                          "later test whose run the collector happens to fall in")


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``sqlite_only`` marker and the ledger URL factory of this session."""
    config.addinivalue_line("markers", "sqlite_only(reason): about SQLite itself; skipped "
                                       "on the PostgreSQL pass")
    config.addinivalue_line("markers", "pg_covered_by(*tests, reason): what the test adds "
                                       "is not about the database (LibreOffice's or a "
                                       "browser's rendering); the PostgreSQL pass leaves it "
                                       "out, its PostgreSQL path being run there by the "
                                       "tests named ('tests/x.py::test_y')")
    config.stash[_URLS] = LedgerUrls(config.getoption("--database-url"))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Drop the PostgreSQL databases of the session."""
    urls = config.stash.get(_URLS, None)
    if urls is not None:
        urls.close()


def pytest_report_header(config: pytest.Config) -> str:
    """Which database this pass runs on."""
    return config.stash[_URLS].describe()


#: The fixtures through which a test reaches the pass's database (directly or through
#: ``ledger_url``, ``ledger``...): a test using none of them runs the same on both passes.
_DATABASE_FIXTURES = frozenset({"make_ledger_url", "ledger_urls", "db_backend"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the PostgreSQL pass, leave out the tests that open no ledger of the pass (they
    ran, identically, on the SQLite pass) and those marked ``pg_covered_by`` (a rendering
    whose PostgreSQL path other tests run there), and skip the ones marked ``sqlite_only``
    (with their reason)."""
    covered = _covered_elsewhere(config, items)
    if config.stash[_URLS].backend == "sqlite":
        return
    same = [item for item in items
            if _DATABASE_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))
            or item in covered]
    if same:
        config.hook.pytest_deselected(items=same)
        left_out = set(same)
        items[:] = [item for item in items if item not in left_out]
    for item in items:
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None:
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {reason}"))


_URLS = pytest.StashKey[LedgerUrls]()


def _covered_elsewhere(config: pytest.Config, items: list[pytest.Item]) -> set[pytest.Item]:
    """The items marked ``pg_covered_by``, after checking that every test they name exists
    (a renamed or deleted covering test is an error on both passes, not a silent hole)."""
    covered: set[pytest.Item] = set()
    for item in items:
        marker = item.get_closest_marker("pg_covered_by")
        if marker is None:
            continue
        if not marker.args or not marker.kwargs.get("reason"):
            raise pytest.UsageError(f"{item.nodeid}: pg_covered_by needs the covering tests "
                                    "and a reason")
        for named in marker.args:
            path, _, name = str(named).partition("::")
            source = Path(config.rootpath, path)
            if not name or not source.is_file() or not re.search(
                    rf"^(async )?def {re.escape(name)}\(", source.read_text(encoding="utf-8"),
                    re.MULTILINE):
                raise pytest.UsageError(f"{item.nodeid}: pg_covered_by names {named!r}, "
                                        "which is not a test")
        covered.add(item)
    return covered


@pytest.fixture(autouse=True)
def _no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """With ``--leaks``: what this test left open (found by a full collection after its
    other fixtures ended) fails this test, by name (see :func:`tests.waiting.leaked`)."""
    yield
    if request.config.getoption("--leaks"):
        found = leaked()
        assert not found, "left open by this test:\n" + "\n".join(found)


@pytest.fixture
def db_backend(request: pytest.FixtureRequest) -> str:
    """``sqlite`` or ``postgresql``: the database of this pass."""
    return request.config.stash[_URLS].backend


@pytest.fixture(scope="session")
def ledger_urls(request: pytest.FixtureRequest) -> LedgerUrls:
    """The session's :class:`~tests.databases.LedgerUrls` (module-scoped fixtures use
    ``new(folder, lasting=True)``)."""
    return request.config.stash[_URLS]


@pytest.fixture
def make_ledger_url(request: pytest.FixtureRequest,
                    tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Factory: ``make_ledger_url(name="ledger", empty=False, copy_of=None)`` → the URL of a
    fresh ledger (``tmp_path/<name>.db``, or a new PostgreSQL database dropped after the
    test); ``copy_of`` copies a closed ledger."""
    urls = request.config.stash[_URLS]

    def new(name: str = "ledger", *, empty: bool = False, copy_of: str | None = None) -> str:
        return urls.new(tmp_path, name, empty=empty, copy_of=copy_of)

    yield new
    urls.drop_created()


@pytest.fixture
def ledger_url(make_ledger_url: Callable[..., str]) -> str:
    """The URL of a fresh ledger for this test (SQLite or PostgreSQL); ``open_ledger`` it."""
    return make_ledger_url()


@pytest.fixture
def clock() -> FakeClock:
    """A simulated clock at ``T0`` that moves when the code sleeps on it or a test sets it."""
    return FakeClock()


@pytest.fixture
def ledger(ledger_url: str, clock: FakeClock) -> Iterator[Ledger]:
    """A migrated ledger (an SQLite file, or PostgreSQL on that pass) on ``clock``."""
    with open_test_ledger(ledger_url, clock) as opened:
        yield opened


class ServerReaper:
    """Stops servers in parallel (each uvicorn takes a few tenths of a second to stop)."""

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []

    def stop(self, close: Callable[[], None]) -> None:
        """Start ``close()`` in a thread; :meth:`join` waits for all of them."""
        thread = threading.Thread(target=close, name="server-reaper", daemon=True)
        thread.start()
        self._threads.append(thread)

    def join(self) -> None:
        """Wait until every server given to :meth:`stop` has stopped."""
        for thread in self._threads:
            thread.join(timeout=15)


@pytest.fixture
def server_reaper() -> Iterator[ServerReaper]:
    """Collects the servers of one test and stops them together after it."""
    reaper = ServerReaper()
    yield reaper
    reaper.join()


@pytest.fixture
def make_sandbox(server_reaper: ServerReaper) -> Iterator[Callable[..., SandboxHandle]]:
    """Factory: ``make_sandbox(**config)`` starts a sandbox (``QUIET_SANDBOX`` + ``config``)."""
    handles: list[SandboxHandle] = []

    def start(**config: Any) -> SandboxHandle:
        handle = SandboxHandle(SandboxConfig(**{**QUIET_SANDBOX, **config}))
        handles.append(handle)
        return handle

    yield start
    for handle in handles:
        server_reaper.stop(handle.close)


@pytest.fixture
def sandbox(make_sandbox: Callable[..., SandboxHandle]) -> SandboxHandle:
    """A fresh sandbox with the quiet test settings, served on a free loopback port."""
    return make_sandbox()


@pytest.fixture
def webhook_sink(server_reaper: ServerReaper) -> Iterator[WebhookSink]:
    """A real webhook receiver; ``.url`` to register, ``.wait_for(...)`` to poll its events."""
    sink = WebhookSink()
    yield sink
    server_reaper.stop(sink.close)


@pytest.fixture
def service_factory() -> Iterator[Callable[..., Service]]:
    """Start sandboxes with a given config; all are stopped at the end of the test."""
    servers: list[BackgroundServer] = []

    def start(**config: Any) -> Service:
        service, server = start_service(**config)
        servers.append(server)
        return service

    yield start
    for server in servers:
        server.stop()
