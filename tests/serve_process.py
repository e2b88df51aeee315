"""``campaign serve`` in a process of its own, for tests of what it serves beside its
receiver (the API, ``/metrics``)."""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.app.support import CAMPAIGN, clean_env


@dataclass(frozen=True)
class ServeProcess:
    """A started ``campaign serve``: the URL of what was asked for, its receiver's base URL,
    and the environment it runs in (for other commands on the same project)."""

    url: str
    receiver: str
    env: dict[str, str]


@contextmanager
def serve_process(root: Path, ledger_url: str, config: str, announces: str,
                  **more_env: str) -> Iterator[ServeProcess]:
    """Run ``campaign serve`` in ``root`` with ``config`` as its ``config.toml`` (and
    ``more_env`` in its environment) until it has printed both ``announces`` (e.g. ``"API
    at"``) with a URL and its receiver's address; stopped with SIGINT (as a user's Ctrl-C)
    on leaving."""
    (root / "campaigns").mkdir(exist_ok=True)
    (root / "config.toml").write_text(config, encoding="utf-8")
    env = clean_env(CAMPAIGN_DATABASE_URL=ledger_url, CAMPAIGN_RECEIVER_PORT="0",
                    PYTHONUNBUFFERED="1", **more_env)
    proc = subprocess.Popen([*CAMPAIGN, "serve"], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        url = receiver = None
        for line in proc.stdout:
            lines.append(line)
            url = url or next(iter(re.findall(rf"{re.escape(announces)} (http://\S+)", line)),
                              None)
            receiver = receiver or next(iter(re.findall(r"receiver (http://[^/\s]+)", line)),
                                        None)
            if url and receiver:
                break
        assert url and receiver, "".join(lines)
        yield ServeProcess(url, receiver, env)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
