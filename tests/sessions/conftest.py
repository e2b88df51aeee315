"""Fixtures of the ``campaign sessions`` tests: a sandbox in its own process, the CLI as a user.

``sandbox_process`` runs ``campaign sandbox --port 0`` in another process (the way a user
would run a service next to the scheduler) and waits until it answers; ``cli`` runs the
``campaign`` console script (in this process) from an empty folder, with only the
``CAMPAIGN_*`` variables the test gives it; ``process_cli`` the same in a process of its
own (the journey from an API key to a connected sender starts and ends that way).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.incli import campaign
from tests.sessions.support import CAMPAIGN, Cli, CliResult, SandboxProcess, clean_env


@pytest.fixture(scope="module")
def sandbox_process() -> Iterator[SandboxProcess]:
    """``campaign sandbox --port 0`` in another process, up and answering."""
    env = {**clean_env(), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([*CAMPAIGN, "sandbox", "--port", "0"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline() if proc.stdout else ""
        if "http://" not in first:
            proc.kill()
            _, err = proc.communicate(timeout=20)
            pytest.fail(f"the sandbox did not start: {first}{err}")
        base_url = first.split()[-1]
        with httpx.Client(base_url=base_url, timeout=5) as client:
            for _ in range(200):  # listening already; wait until uvicorn answers
                try:
                    if client.get("/sandbox/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if proc.poll() is not None:
                    pytest.fail("the sandbox process stopped")
                time.sleep(0.05)
        yield SandboxProcess(base_url)
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty folder, outside the project, where the commands run."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


@pytest.fixture
def process_cli(workdir: Path) -> Cli:
    """``process_cli(*args, env={...}, cwd=...)``: run ``campaign`` from ``workdir`` in a
    process of its own, the way a user runs it."""

    def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> CliResult:
        done = subprocess.run([*CAMPAIGN, *args], env={**clean_env(), **(env or {})},
                              cwd=cwd or workdir, capture_output=True, text=True,
                              encoding="utf-8", timeout=120, check=False)
        return CliResult(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture
def cli(workdir: Path) -> Cli:
    """``cli(*args, env={...}, cwd=...)``: the same console script (its ``main()``) with the
    same environment and folder, run in this process (no interpreter start-up per command:
    see :mod:`tests.incli`)."""

    def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> CliResult:
        done = campaign(*args, env={**clean_env(), **(env or {})}, cwd=cwd or workdir)
        return CliResult(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture
def service_env(sandbox_process: SandboxProcess) -> dict[str, str]:
    """The variables that point the CLI at the sandbox process."""
    return {"CAMPAIGN_BASE_URL": sandbox_process.base_url,
            "CAMPAIGN_API_KEY": sandbox_process.api_key}
