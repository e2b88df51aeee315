"""Helpers of the real-use tests: the `campaign` command in a subprocess, from folders a user
would use (no fixtures here: the shared ones are in `tests/conftest.py`)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests import waiting

CAMPAIGN = [sys.executable, "-m", "scheduler.cli"]


def clean_env(**values: str) -> dict[str, str]:
    """The environment without any CAMPAIGN_* setting of the machine, plus ``values``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    env["COLUMNS"] = "200"  # one message per line in captured output
    env.update(values)
    return env


def cli(
    env: dict[str, str], *args: str, cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``campaign ARGS`` in ``cwd`` and capture what it prints."""
    return subprocess.run(
        [*CAMPAIGN, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0,
             what: str = "the condition") -> None:
    """Poll ``predicate`` until it holds (:func:`tests.waiting.wait_for`)."""
    waiting.wait_for(predicate, timeout, what)


def text_sends(sends: list[dict]) -> list[dict]:
    """The sandbox's accepted text sends."""
    return [s for s in sends if s.get("path", "").endswith("/messages/send/text")]
