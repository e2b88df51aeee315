"""Builders of the WhatsApp calls tests: a ``calls`` project on disk, the sandbox's call
knobs, and each call's span (placed → its terminal event) from the sandbox's own record."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from scheduler.sandbox.testing import SandboxHandle, text_project_phone


def number(i: int) -> str:
    """The number (digits, with country code) the service sees for recipient ``i``."""
    return "55" + text_project_phone(i)


def calls_project(root: Path, recipients: int, *, senders: tuple[str, ...],
                  record: bool = True, rate: str = "600/min", extra: str = "") -> Path:
    """A project with a ``calls`` campaign of ``recipients`` people; its campaign file."""
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    lines = ["nome;telefone"] + [f"Pessoa {i};{text_project_phone(i)}"
                                 for i in range(recipients)]
    (root / "data" / "ligacoes.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = root / "campaigns" / "ligacoes.toml"
    listed = ", ".join(f'"{s}"' for s in senders)
    path.write_text(
        f'name = "ligacoes"\nchannel = "calls"\nsenders = [{listed}]\n{extra}\n'
        '[recipients]\nfile = "data/ligacoes.csv"\nphone_column = "telefone"\n\n'
        f'[schedule]\ntimezone = "UTC"\n\n[pace]\nrate = "{rate}"\n\n'
        f'[[steps]]\ntype = "call"\n' + ("record = true\n" if record else ""),
        encoding="utf-8")
    return path


def set_call_knobs(box: SandboxHandle, **knobs: Any) -> dict[str, Any]:
    """Change the sandbox's outgoing-call knobs; the knobs now."""
    answer = box.http.post("/sandbox/calls/knobs", json=knobs)
    answer.raise_for_status()
    result: dict[str, Any] = answer.json()
    return result


def outgoing_calls(box: SandboxHandle) -> list[dict[str, Any]]:
    """Every call the sandbox placed, with the events it emitted."""
    calls: list[dict[str, Any]] = box.http.get("/sandbox/calls/outgoing").json()["calls"]
    return calls


def call_spans(box: SandboxHandle) -> dict[str, list[tuple[datetime, datetime, str]]]:
    """sender → (placed at, terminal event due at, callId) of each call, in order: the
    sandbox's time of the request, plus the ring and talk it simulated."""
    scale = float(box.http.get("/sandbox/calls/knobs").json()["time_scale"])
    placed = {s["index"]: s for s in box.sends() if s["path"].startswith("/api/v1/calls/")}
    by_to = {}
    for send in placed.values():
        by_to.setdefault((send["sessionId"], send["to"]), []).append(send)
    spans: dict[str, list[tuple[datetime, datetime, str]]] = {}
    for call in outgoing_calls(box):
        send = by_to[(call["sessionId"], call["to"].split("@")[0])].pop(0)
        start = datetime.fromisoformat(send["at"].replace("Z", "+00:00"))
        seconds = (call["ringS"] + call["talkS"]) * scale
        spans.setdefault(call["sessionId"], []).append(
            (start, start + timedelta(seconds=seconds), call["callId"]))
    return {sender: sorted(items) for sender, items in spans.items()}
