"""The ``campaign`` console script run inside the test process, as a subprocess would run it.

:func:`campaign` calls :func:`scheduler.cli.main` (the console script's entry point, with its
"error: ..." line and exit 1 for a user's mistake) with ``sys.argv``, the environment, the
working folder and stdin/stdout/stderr set as ``subprocess.run([campaign, ...], env=...,
cwd=..., capture_output=True, text=True)`` would set them, and restores all of them
after. It returns a :class:`subprocess.CompletedProcess`, so a test can swap one for the
other. A test that is about the process itself (a kill, Ctrl-C, a server it starts, what
the console script imports) keeps the real subprocess; a test that runs a command to read
what it prints calls it here, without paying the interpreter's start-up.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Mapping
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path


def campaign(*args: str, env: Mapping[str, str] | None = None, cwd: Path | str | None = None,
             stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run ``campaign ARGS`` in-process: ``env`` replaces the whole environment (as
    ``subprocess.run(env=...)`` does; ``None`` keeps this one), ``cwd`` is the folder."""
    from scheduler.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd, saved_argv, saved_stdin = (dict(os.environ), os.getcwd(),
                                                     sys.argv, sys.stdin)
    code: int = 0
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = ["campaign", *args]
        sys.stdin = io.StringIO(stdin)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None
                                                                   else 1)
                if not isinstance(exc.code, int | None):
                    print(exc.code, file=sys.stderr)
    finally:
        sys.argv, sys.stdin = saved_argv, saved_stdin
        os.chdir(saved_cwd)
        if env is not None:
            os.environ.clear()
            os.environ.update(saved_env)
    return subprocess.CompletedProcess(["campaign", *args], code, out.getvalue(),
                                       err.getvalue())


def in_process(env: Mapping[str, str], *args: str, cwd: Path | str,
               timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """:func:`campaign` with the signature of the subprocess helpers ``cli(env, *args,
    cwd=...)`` of the test folders (``timeout`` is accepted and not needed here)."""
    del timeout
    return campaign(*args, env=env, cwd=cwd)
