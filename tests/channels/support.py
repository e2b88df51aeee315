"""Builders of the channel end-to-end tests: SMS and voice projects on disk, the ``campaign``
command in a subprocess, and the ledger read back per recipient.

The runs are real: ``campaign run`` in a subprocess against a sandbox on loopback, its own
receiver taking the account's signed webhooks, the ledger an SQLite file (or a PostgreSQL
database on that pass) named by ``CAMPAIGN_DATABASE_URL``. No fixtures here: the shared ones
are in ``tests/conftest.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from scheduler.ledger import access
from scheduler.ledger.queries.tables import deliveries, events
from scheduler.sandbox.config import DEFAULT_API_KEY
from scheduler.sandbox.testing import text_project_phone
from tests.app.support import CAMPAIGN, clean_env, wait_for
from tests.factories import open_test_ledger

#: The sandbox's price per SMS segment (its default table), given to our settings too so
#: the costs the ledger records can be compared with what the sandbox charged.
SANDBOX_PRICES = {"marketing": 60_000, "otp": 90_000}

#: Texts shared by many recipients: one plain GSM-7 SMS, one GSM-7 text in two parts (more
#: than 160 septets, an extension character among them) and one UCS-2 text (accents).
SHARED_TEXTS = {
    "curto": "Loja Exemplo: semana de ofertas, ate 30% off em todas as lojas ate domingo.",
    "longo": ("Loja Exemplo: semana de ofertas em todas as lojas, ate 30% off em roupas, "
              "calcados e acessorios [so ate domingo]. Consulte condicoes no site ou na loja "
              "mais proxima. Responda SAIR para nao receber."),
    "acento": "Loja Exemplo: promoção de verão, até 40% em calçados. Não perca!",
}


def sms_number(i: int) -> str:
    """The number (digits, with country code) the service sees for recipient ``i``."""
    return "55" + text_project_phone(i)


def sms_project(root: Path, recipients: int, *, rate: str = "2000/s", batch: int = 100,
                personal_every: int = 10, name: str = "sms-e2e") -> Path:
    """A project with an SMS campaign of ``recipients`` people; its campaign file.

    Every ``personal_every``-th recipient gets a text naming them (a group of one, sent by
    ``sms/send``); the rest share one of :data:`SHARED_TEXTS` by their ``grupo`` (sent in
    ``sms/bulk`` batches of ``batch``). ``personal_every=0``: everybody shares one text.
    """
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    groups = list(SHARED_TEXTS)
    lines = ["nome;telefone;grupo"]
    for i in range(recipients):
        personal = personal_every and i % personal_every == 0
        group = "pessoal" if personal else (groups[i % len(groups)] if personal_every
                                            else "curto")
        lines.append(f"Pessoa {i};{text_project_phone(i)};{group}")
    (root / "data" / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    branches = "".join(f'{{% elif grupo == "{key}" %}}{text}' for key, text in SHARED_TEXTS.items())
    text = ('{% if grupo == "pessoal" %}Ola {{ nome }}, seu cupom pessoal vale 20% ate domingo.'
            + branches + "{% endif %}")
    (root / "config.toml").write_text(
        "sms_price_micro = { " + ", ".join(f"{k} = {v}" for k, v in SANDBOX_PRICES.items())
        + " }\n", encoding="utf-8")
    path = root / "campaigns" / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nchannel = "sms"\n\n'
        f'[recipients]\nfile = "data/{name}.csv"\nphone_column = "telefone"\n'
        'default_country = "BR"\n\n'
        '[schedule]\ntimezone = "UTC"\n\n'
        f'[pace]\nrate = "{rate}"\nbatch = {batch}\n\n'
        f"[[steps]]\nroute = \"marketing\"\ntext = '''{text}'''\n",
        encoding="utf-8")
    return path


def voice_project(root: Path, recipients: int, *, rate: str = "200/s", batch: int = 5,
                  max_calls: int = 6, name: str = "voz-e2e") -> Path:
    """A project with a voice survey: an IVR flow whose ``{{input.*}}`` slots are filled
    per recipient from the CSV (``nome``, ``pedido``); its campaign file."""
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    lines = ["nome;telefone;pedido"] + [f"Pessoa {i};{text_project_phone(i)};{10_000 + i}"
                                        for i in range(recipients)]
    (root / "data" / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = root / "campaigns" / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nchannel = "voice"\n\n'
        f'[recipients]\nfile = "data/{name}.csv"\nphone_column = "telefone"\n'
        'default_country = "BR"\n\n'
        '[schedule]\ntimezone = "UTC"\n\n'
        f'[pace]\nrate = "{rate}"\nbatch = {batch}\nmax_calls = {max_calls}\n\n'
        '[[steps]]\nflowId = "flow-pesquisa"\nmaxAttempts = 2\n'
        'variables = { nome = "{{ nome }}", pedido = "{{ pedido }}" }\n',
        encoding="utf-8")
    return path


@dataclass
class SandboxProcess:
    """A sandbox served by ``campaign sandbox`` in another process (it outlives a killed
    ``campaign run``, as a real service would): its address, key and ``/sandbox`` calls."""

    base_url: str
    http: httpx.Client
    api_key: str = DEFAULT_API_KEY
    #: What the sandbox wrote to its stderr (its log), once it has stopped.
    log: str = ""

    def sends(self) -> list[dict[str, Any]]:
        """``GET /sandbox/sends``."""
        return self._get("/sandbox/sends")

    def webhooks(self) -> list[dict[str, Any]]:
        """``GET /sandbox/webhooks``: every webhook delivery attempt so far."""
        return self._get("/sandbox/webhooks")

    def create_session(self, session_id: str) -> None:
        """Create a WhatsApp session and scan its QR code (it is ``connected``)."""
        self.http.post("/api/v1/sessions", json={"sessionId": session_id, "type": "unofficial"},
                       headers={"Authorization": self.api_key}).raise_for_status()
        self.http.post(f"/sandbox/sessions/{session_id}/scan").raise_for_status()

    def outcomes(self, channel: str) -> list[dict[str, Any]]:
        """``GET /sandbox/outcomes?channel=...``."""
        return self._get(f"/sandbox/outcomes?channel={channel}")

    def set_faults(self, **knobs: Any) -> None:
        """``POST /sandbox/faults``: change run-time knobs."""
        self.http.post("/sandbox/faults", json=knobs).raise_for_status()

    def _get(self, path: str) -> Any:
        response = self.http.get(path)
        response.raise_for_status()
        return response.json()


@contextmanager
def sandbox_process(seed: int = 5) -> Iterator[SandboxProcess]:
    """``campaign sandbox --port 0`` in its own process, answering; stopped on exit."""
    env = {**clean_env(), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([*CAMPAIGN, "sandbox", "--port", "0", "--seed", str(seed)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    box: SandboxProcess | None = None
    try:
        first = proc.stdout.readline() if proc.stdout else ""
        assert "http://" in first, f"the sandbox did not start: {first}"
        base_url = first.split()[-1]
        with httpx.Client(base_url=base_url, timeout=10) as http:
            deadline = time.monotonic() + 30
            while True:  # listening already; wait until uvicorn answers
                try:
                    if http.get("/sandbox/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert proc.poll() is None and time.monotonic() < deadline, "no sandbox"
                time.sleep(0.05)
            box = SandboxProcess(base_url, http)
            yield box
    finally:
        proc.terminate()
        try:
            _, log = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, log = proc.communicate()
        if box is not None:
            box.log = log


def run_env(base_url: str, api_key: str, ledger_url: str, **more: str) -> dict[str, str]:
    """The environment of a ``campaign`` subprocess: the service, the ledger, quick waits."""
    return clean_env(CAMPAIGN_BASE_URL=base_url, CAMPAIGN_API_KEY=api_key,
                     CAMPAIGN_DATABASE_URL=ledger_url, CAMPAIGN_REPORT_WAIT_S="20", **more)


@dataclass(frozen=True)
class Row:
    """One delivery as the ledger holds it at the end."""

    to: str
    state: str
    message_id: str | None
    details: dict[str, Any]


def ledger_rows(ledger_url: str) -> dict[str, Row]:
    """Every delivery of the ledger (one step per recipient in these tests), by number."""
    d = deliveries.c
    with open_test_ledger(ledger_url) as ledger, access.read(ledger.engine) as conn:
        found = conn.execute(select(d.to, d.state, d.message_id, d.details)).all()
    rows = {to: Row(to, state, message_id, json.loads(details) if details else {})
            for to, state, message_id, details in found}
    assert len(rows) == len(found), "one delivery per number"
    return rows


def stored_events(ledger_url: str) -> list[tuple[str, str | None, str]]:
    """Every stored event: ``(event, message_id_norm, payload)``."""
    e = events.c
    with open_test_ledger(ledger_url) as ledger, access.read(ledger.engine) as conn:
        found = conn.execute(select(e.event, e.message_id_norm, e.payload).order_by(e.id))
        return [(name, norm, payload) for name, norm, payload in found]


def reports_by_message(ledger_url: str) -> dict[str, Counter[str]]:
    """The SMS reports stored per message id (lower case): how many of each name."""
    found: dict[str, Counter[str]] = {}
    for name, norm, _payload in stored_events(ledger_url):
        if norm is not None and name.startswith("sms."):
            found.setdefault(norm, Counter())[name] += 1
    return found


def numbers_sent(sends: list[dict[str, Any]], path_part: str) -> Counter[str]:
    """How often the service took each number, from ``/sandbox/sends``: single sends, and
    the numbers of bulk requests it gave an id (``messageIds`` / ``callIds``; ``null`` for
    a number it skipped because the wallet ran out)."""
    taken: Counter[str] = Counter()
    for send in sends:
        if path_part not in send["path"]:
            continue
        if not isinstance(send["to"], list):
            taken[send["to"]] += 1
            continue
        ids = send.get("messageIds") or send.get("callIds") or [None] * len(send["to"])
        taken.update(to for to, given in zip(send["to"], ids, strict=True) if given)
    return taken


def check_sms_outcomes(rows: dict[str, Row], decided: list[dict[str, Any]], *,
                       costs: bool = True) -> None:
    """Each number's final state, error code, segments (and cost) are what the sandbox
    decided: ``delivered``, else ``undelivered`` for its undelivered, failed and expired."""
    for outcome in decided:
        row = rows[outcome["to"]]
        want = "delivered" if outcome["outcome"] == "delivered" else "undelivered"
        assert row.state == want, (row, outcome)
        assert row.message_id == outcome["messageId"], (row, outcome)
        assert row.details.get("errorCode") == outcome["errorCode"], (row, outcome)
        assert row.details["segments"] == outcome["segments"], (row, outcome)
        if costs:
            assert row.details["costMicroReais"] == outcome["costMicroReais"], (row, outcome)


#: What a call's ``details`` hold, as the sandbox's outcomes name them.
CALL_KEYS = ("answered", "talkSeconds", "digits", "cause", "causeDescription")


def check_voice_outcomes(rows: dict[str, Row], calls: list[dict[str, Any]]) -> None:
    """Each call's state (``answered`` / ``not_answered``), talk time, digits and cause are
    what the sandbox decided."""
    for call in calls:
        row = rows[call["to"]]
        assert row.state == call["outcome"], (row, call)
        got = {key: row.details.get(key) for key in CALL_KEYS}
        assert got == {key: call[key] for key in CALL_KEYS}, (row, call)
        assert row.details["callId"] == call["callId"], (row, call)


def kill_with_a_send_in_doubt(box: SandboxProcess, campaign: Path, env: dict[str, str],
                              *, after: int) -> None:
    """Run ``campaign run CAMPAIGN``; once ``after`` requests went out, make the sandbox take
    each request and hold its answer back, and SIGKILL the run as soon as it takes one: the
    run dies with a send the service took but never answered (a row in doubt)."""
    proc = subprocess.Popen([*CAMPAIGN, "run", str(campaign)], env=env, cwd=campaign.parents[1],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(box.sends()) >= after)
        box.set_faults(timeout_rate=1.0, timeout_after_accept=1.0, timeout_hang_s=60)
        before = len(box.sends())
        wait_for(lambda: len(box.sends()) > before, timeout=10)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
