"""Waiting in tests: for the very condition a test then reads, and processes that end with it.

- :func:`wait_for` polls a predicate until it holds (returns its value) or fails after
  ``timeout`` naming what it waited for (and whatever ``details()`` adds: a log, a state).
  A test waits for what it reads next (the log line it parses, the row it counts, the
  port it connects to), never for a proxy of it (a live worker row for its log line).
- :func:`wait_for_async`: the same inside a coroutine, without blocking its loop.
- :func:`log_lines`: the lines of a log file starting with a prefix (the file may not
  exist yet): what :func:`wait_for` waits on before a test parses a process's log.
- :func:`running`: a ``subprocess.Popen`` that is killed (if still running) and reaped,
  its pipes closed, when the ``with`` block ends, whatever happened inside it.
- :func:`leaked`: the warnings (``ResourceWarning``) a full garbage collection raises now (what
  ``pytest --leaks`` checks after every test).
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def _message(what: str, timeout: float, last: Any,
             details: Callable[[], str] | None) -> str:
    text = f"timed out after {timeout:g} s waiting for {what} (last value: {last!r})"
    if details is not None:
        text += "\n" + details()
    return text


def wait_for(predicate: Callable[[], T], timeout: float = 30.0, what: str = "the condition",
             *, every: float = 0.05, details: Callable[[], str] | None = None) -> T:
    """Poll ``predicate()`` every ``every`` s until it is truthy and return that value;
    raise :class:`AssertionError` naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(_message(what, timeout, value, details))
        time.sleep(every)


async def wait_for_async(predicate: Callable[[], T | Awaitable[T]], timeout: float = 30.0,
                         what: str = "the condition", *, every: float = 0.05,
                         details: Callable[[], str] | None = None) -> T:
    """:func:`wait_for` in a coroutine: ``predicate`` may be sync or async; the loop runs
    between polls."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value) or isinstance(value, Awaitable):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(_message(what, timeout, value, details))
        await asyncio.sleep(every)


def log_lines(path: Path, prefix: str = "") -> list[str]:
    """The lines of ``path`` that start with ``prefix`` ([] while the file does not exist)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    return [line for line in text.splitlines() if line.startswith(prefix)]


@contextmanager
def running(args: Sequence[str], *, stop_timeout: float = 20.0,
            **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """``subprocess.Popen(args, **popen)``; on exit it is killed if still running, waited
    for, and its pipes are closed (no process nor file left behind by a failing test)."""
    proc: subprocess.Popen[Any] = subprocess.Popen(list(args), **popen)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        try:
            proc.communicate(timeout=stop_timeout)
        except (ValueError, OSError):  # pipes already read and closed by the test
            proc.wait(timeout=stop_timeout)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()


def leaked() -> list[str]:
    """Collect garbage and return the ``ResourceWarning`` messages it raised (unclosed
    sockets, files, transports, database connections nobody closed)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
