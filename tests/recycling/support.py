"""Builders of the second-chance tests (issue 25): voice and WhatsApp projects with retry
rules or a fallback, the rehearsal's sandbox given scripted outcomes per number, and the
calls each number got, read from the sandbox's record.

No fixtures here: the shared ones are in ``tests/conftest.py``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from scheduler.usecases import rehearsal


def phone(i: int) -> str:
    """The CSV phone number of recipient ``i`` (a São Paulo mobile, national format)."""
    return f"119{87_650_000 + i:08d}"


def number(i: int) -> str:
    """The number (digits, with country code) the service sees for recipient ``i``."""
    return "55" + phone(i)


def write_voice_project(root: Path, people: list[str], *, retry: str, min_talk: str | None = None,
                        window: str | None = "08:00-22:00", opt_out_digit: str | None = None,
                        rate: str = "5/s", pace: str = "", extra: str = "",
                        timezone: str = "America/Sao_Paulo", name: str = "ura-retry") -> Path:
    """A project with a voice campaign (an IVR flow) to ``people`` (CSV phone numbers),
    its step's ``retry = [...]`` (TOML), in ``timezone`` within ``window`` (None: at any
    hour); ``pace``: more ``[pace]`` lines, ``extra``: more TOML at the end; its file."""
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    rows = ["nome;telefone"] + [f"Pessoa {i};{p}" for i, p in enumerate(people)]
    (root / "data" / f"{name}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    digit = f'opt_out_digit = "{opt_out_digit}"\n' if opt_out_digit else ""
    talk = f'min_talk = "{min_talk}"\n' if min_talk else ""
    hours = f'window = "{window}"\n' if window else ""
    path = root / "campaigns" / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nchannel = "voice"\n\n'
        f'[recipients]\nfile = "data/{name}.csv"\nphone_column = "telefone"\n'
        f'default_country = "BR"\n{digit}\n'
        f'[schedule]\ntimezone = "{timezone}"\n{hours}\n'
        f'[pace]\nrate = "{rate}"\n{pace}\n'
        '[[steps]]\nflowId = "flow-cobranca"\nvariables = { nome = "{{ nome }}" }\n'
        f"{talk}retry = {retry}\n{extra}",
        encoding="utf-8")
    return path


@contextmanager
def scripted_rehearsal(monkeypatch: pytest.MonkeyPatch, **settings: Any) -> Iterator[list[Any]]:
    """Rehearsals inside this block get a sandbox with ``settings`` on top of the
    rehearsal's own (scripted outcomes per number, ...); yields the list that receives
    each rehearsal's sandbox (:class:`scheduler.sandbox.world.Sandbox`), to read its record
    after the run. The sandbox and everything else are the real ones."""
    real = rehearsal.service_target
    seen: list[Any] = []

    @contextmanager
    def with_settings(*args: Any, sandbox_config: dict[str, Any] | None = None,
                      **kwargs: Any) -> Iterator[Any]:
        merged = {**(sandbox_config or {}), **settings}
        with real(*args, sandbox_config=merged, **kwargs) as target:
            assert target.sandbox is not None, "a rehearsal runs the embedded sandbox"
            seen.append(target.sandbox.state.sandbox)
            yield target

    with monkeypatch.context() as patch:
        patch.setattr(rehearsal, "service_target", with_settings)
        yield seen


def voice_calls(sends: list[dict[str, Any]]) -> dict[str, list[datetime]]:
    """When each number was called (the sandbox's clock at the request), from the sandbox's
    record of accepted sends (``voice/call``, and each dialled number of ``voice/bulk``)."""
    calls: dict[str, list[datetime]] = defaultdict(list)
    for send in sends:
        if "/voice/" not in send["path"]:
            continue
        at = datetime.fromisoformat(str(send["at"]).replace("Z", "+00:00"))
        if isinstance(send["to"], list):
            ids = send.get("callIds") or [None] * len(send["to"])
            for to, call_id in zip(send["to"], ids, strict=True):
                if call_id:
                    calls[to].append(at)
        else:
            calls[send["to"]].append(at)
    return dict(calls)


def sent_to(sends: list[dict[str, Any]], path_part: str) -> dict[str, int]:
    """How many sends each number got on paths containing ``path_part`` (bulk requests:
    each number the service gave an id)."""
    counts: dict[str, int] = defaultdict(int)
    for send in sends:
        if path_part not in send["path"]:
            continue
        if isinstance(send["to"], list):
            ids = send.get("messageIds") or send.get("callIds") or [None] * len(send["to"])
            for to, given in zip(send["to"], ids, strict=True):
                if given:
                    counts[to] += 1
        else:
            counts[send["to"]] += 1
    return dict(counts)
