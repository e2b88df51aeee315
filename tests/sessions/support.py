"""Helpers of the ``campaign sessions`` tests: the ``campaign`` command line, the sandbox
process handle, and what a command run printed."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from scheduler.sandbox.config import DEFAULT_API_KEY

_SCRIPT = Path(sys.executable).with_name("campaign")
CAMPAIGN = (
    [str(_SCRIPT)]
    if _SCRIPT.exists()
    else [sys.executable, "-c", "from scheduler.cli import main; main()"]
)


@dataclass
class SandboxProcess:
    """A sandbox served by another process: its address, key and inspection endpoints."""

    base_url: str
    api_key: str = DEFAULT_API_KEY

    def scan(self, session_id: str) -> None:
        """The phone reads the session's QR code (``POST /sandbox/sessions/{id}/scan``)."""
        response = httpx.post(f"{self.base_url}/sandbox/sessions/{session_id}/scan", timeout=10)
        response.raise_for_status()

    def disconnect(self, session_id: str) -> None:
        """The phone drops the session (``POST /sandbox/sessions/{id}/disconnect``)."""
        response = httpx.post(
            f"{self.base_url}/sandbox/sessions/{session_id}/disconnect", timeout=10
        )
        response.raise_for_status()


def clean_env() -> dict[str, str]:
    """The environment without any ``CAMPAIGN_*`` setting of the machine running the tests."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    env["PYTHONIOENCODING"] = "utf-8"
    env.pop("COLUMNS", None)
    return env


@dataclass
class CliResult:
    """What a ``campaign`` run printed and its exit code."""

    code: int
    out: str
    err: str

    @property
    def both(self) -> str:
        """stdout and stderr together."""
        return self.out + self.err


Cli = Callable[..., CliResult]
