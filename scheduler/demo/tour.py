"""``campaign demo``: the whole product in well under a minute, against the embedded sandbox, or
against the configured service when ``CAMPAIGN_BASE_URL`` and ``CAMPAIGN_API_KEY`` are both
set (and said so first; a service off this machine must be confirmed with ``--yes``, since
the demo's recipients are made-up numbers that may belong to real people).

1. a session is created, its QR code shown in the terminal and scanned (on a service, the
   demo waits until someone scans it);
2. one message of every type is sent, with each answer and each ``messages.sent`` event;
3. ``campaigns/demo.toml`` (about 200 recipients, two senders) runs to completion with the
   progress bar, tracked through the webhook receiver, which stays up for the receipts of
   its last sends (:func:`last_receipts`);
4. the run's spreadsheet report is written and its path printed;
5. a short SMS run (``campaigns/demo_sms.toml``: one ``sms/bulk`` of a shared text, an
   ``sms/send`` per personal text) and 6. a short voice run (``campaigns/demo_voice.toml``:
   an IVR flow with per-recipient variables in one ``voice/bulk``), each printing its
   requests and every recipient's outcome (``scheduler.demo.channels``);
7. a few WhatsApp calls (``campaigns/demo_calls.toml``), one at a time per session, each
   with its events, length and recording (``scheduler.demo.calls``);
8. a sender in trouble (``scheduler.demo.sender_health``): it runs in a thread from the end of
   part 3, while parts 4 to 7 go on (its pace and the engine's judgement are waits), and is
   said after them.

It ends by saying how to watch its runs in the web dashboard (``campaign dashboard`` on the
demo's own ledger) and the address to open.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from rich.console import Console

from scheduler.core.display import clean_markup
from scheduler.core.httpserver import BackgroundServer
from scheduler.core.timeutil import monotonic, seconds_since
from scheduler.service.client import ServiceClient
from scheduler.service.requests import SEND_KINDS
from scheduler.settings.load import Settings
from scheduler.wiring import connect_session

DEMO_TO = "5511987654321"
IMAGE = "https://picsum.photos/seed/campaign/640/480"

#: One body per message type (without sessionId and to).
SHOWCASE: dict[str, dict[str, Any]] = {
    "text": {"text": "Olá! Esta é a demonstração do agendador de campanhas."},
    "image": {"image": IMAGE, "caption": "Uma imagem"},
    "video": {"video": "https://example.com/demo.mp4", "caption": "Um vídeo"},
    "audio": {"audio": "https://example.com/demo.ogg", "ptt": True},
    "document": {"document": "https://example.com/boleto.pdf", "mimetype": "application/pdf",
                 "fileName": "boleto.pdf"},
    "sticker": {"sticker": "https://example.com/sticker.webp"},
    "location": {"latitude": -23.5614, "longitude": -46.6559, "name": "MASP",
                 "address": "Av. Paulista, 1578"},
    "contact": {"contactName": "Suporte", "contactPhone": "551140028922"},
    "poll": {"question": "Qual horário prefere?", "options": ["Manhã", "Tarde", "Noite"]},
    "reaction": {"messageId": "", "emoji": "👍"},
    "album": {"media": [{"type": "image", "url": IMAGE}, {"type": "image", "url": IMAGE}]},
    "list": {"description": "Escolha um plano", "buttonText": "Ver planos",
             "sections": [{"title": "Planos", "rows": [
                 {"rowId": "basico", "title": "Básico"}, {"rowId": "pro", "title": "Pro"}]}]},
    "carousel": {"cards": [{"body": "Camiseta R$ 49,90", "buttons": [
        {"type": "quick_reply", "title": "Quero", "id": "camiseta"}]},
        {"body": "Boné R$ 39,90"}]},
    "nativeflow": {"title": "Oferta", "body": "20% de desconto hoje", "buttons": [
        {"type": "copy", "title": "Copiar cupom", "copy_code": "DEMO20"},
        {"type": "url", "title": "Abrir loja", "url": "https://example.com"}]},
    "pix": {"content": "Sua fatura de R$ 120,00 vence amanhã", "pixKey": "pagamentos@example.com",
            "pixAmount": 120.0},
}


def _sink() -> tuple[FastAPI, list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    app = FastAPI()

    @app.post("/hook")
    async def hook(request: Request) -> dict[str, bool]:
        events.append(await request.json())
        return {"ok": True}

    return app, events


async def showcase(base_url: str, api_key: str, console: Console) -> None:
    """Create, show, scan a session, then send one message of each type."""

    app, events = _sink()
    with BackgroundServer(app) as sink:
        async with ServiceClient(base_url, api_key) as client:
            session = "demo-showcase"
            console.print(f"[bold]1. Session {session!r}[/]")
            await connect_session(client, base_url, session, console,
                                  webhook_url=f"{sink.base_url}/hook")
            console.print(f"   connected: {(await client.get_session(session)).status}")
            console.print(f"[bold]2. One message of every type[/] to {DEMO_TO} (answers, "
                          "then events)")
            first_id = ""
            for name, fields in SHOWCASE.items():
                body = {"sessionId": session, "to": DEMO_TO, **fields}
                if name == "reaction":
                    body["messageId"] = first_id
                result = await client.send(SEND_KINDS[name].model.model_validate(body))
                first_id = first_id or (result.messageId or "")
                answer = result.model_dump(exclude_none=True)
                said = "accepted" if answer.pop("success", None) else "refused"
                answer.pop("timestamp", None)  # the event below carries the time
                rest = " ".join(f"{k} {v}" for k, v in answer.items())
                console.print(clean_markup(f"   {name:<10} → {said} {rest}".rstrip()),
                              highlight=False)
        deadline = monotonic() + 5
        expected = len(SHOWCASE) + 1  # an album is two events
        while len([e for e in events if e.get("event") == "messages.sent"]) < expected \
                and monotonic() < deadline:
            await asyncio.sleep(0.05)
    for event in events:
        if event.get("event") == "messages.sent":
            data = event["data"]
            to = str(data["to"]["jid"]).split("@")[0]
            who = "" if to == DEMO_TO else f" to {to}"
            console.print(clean_markup(f"   event {data['type']:<10} {data['id']}{who} "
                                       f"{data['message'][:26]!r}"), highlight=False)


def _demo_settings(root: Path, *, yes: bool, console: Console) -> tuple[Settings, bool]:
    """The demo's settings (its own ledger file) and whether it uses the embedded sandbox."""
    from urllib.parse import urlsplit

    from scheduler.core.errors import SchedulerError
    from scheduler.settings.load import load_settings

    base = load_settings(near=root / "campaigns" / "demo.toml")
    service = base.service_endpoint()  # half a configuration stops here
    state = root / "state"
    db = state / "demo.db"
    for leftover in state.glob("demo.db*"):
        leftover.unlink()
    values = {**base.model_dump(exclude={"database_url"}), "database_url": f"sqlite:///{db}"}
    if service is None:
        # a free port whatever the settings say: the tour must not collide with a running
        # `campaign serve`, and the sandbox reaches the receiver on loopback
        values |= {"base_url": None, "api_key": None, "api_key_file": None,
                   "receiver_port": 0, "webhook_url": None}
        console.print("No service configured: the tour runs against the embedded sandbox "
                      "(nothing leaves this machine)")
        return Settings(**values), True
    host = urlsplit(service[0]).hostname or service[0]
    console.print(f"CAMPAIGN_BASE_URL and CAMPAIGN_API_KEY are set: the tour runs against "
                  f"the service at {urlsplit(service[0]).netloc}", highlight=False)
    if host not in ("127.0.0.1", "localhost", "::1") and not yes:
        raise SchedulerError(
            f"the demo would send real messages, SMS and calls through {host} to the "
            "made-up numbers of data/demo.csv, data/demo_sms.csv and data/demo_voz.csv (they "
            "may belong to real people): run `campaign demo --yes` to go ahead, or unset "
            "CAMPAIGN_BASE_URL to use the embedded sandbox")
    return Settings(**values), False


def run_demo(console: Console, root: Path, *, yes: bool = False) -> None:
    """The whole demo; each part prints what it does."""
    from scheduler.core.timeutil import utcnow
    from scheduler.demo.calls import calls_part
    from scheduler.demo.channels import SANDBOX_SETTINGS, channel_tour
    from scheduler.demo.sender_health import start_health_part
    from scheduler.usecases.foreground import describe, run_foreground
    from scheduler.usecases.planning import plan_run
    from scheduler.wiring import ledger_from_settings, service_target

    started = monotonic()
    settings, sandbox = _demo_settings(root, yes=yes, console=console)
    campaign_file = root / "campaigns" / "demo.toml"
    with service_target(settings, force_sandbox=sandbox,
                        sandbox_config=SANDBOX_SETTINGS) as target:
        if sandbox:
            console.print(f"Embedded sandbox at {target.base_url}")
        asyncio.run(showcase(target.base_url, target.api_key, console))
        console.print("[bold]3. Campaign campaigns/demo.toml[/]")
        if not sandbox:
            asyncio.run(_connect_senders(ServiceClient, target.base_url, target.api_key,
                                         campaign_file, console))
        ledger = ledger_from_settings(settings)
        run_id = plan_run(ledger, campaign_file, start_at=utcnow(),
                          target=target.ledger_value)
        run = ledger.get_run(run_id)
        console.print(f"   run {run_id}: {run.planned_count} deliveries planned")
        waited: list[float] = []

        async def settle() -> None:  # the receiver is still up: the last receipts come in
            waited.append(await last_receipts(ledger, run_id))

        result = asyncio.run(run_foreground(settings, ledger, run, console, target=target,
                                            settle=settle))
        if waited:
            console.print(f"   the last receipts came {waited[0]:.1f} s after the run's end",
                          highlight=False)
        describe(result, console, ledger, horizon=settings.retry_horizon())
        # part 8 mostly waits (its pace, the engine's judgement of the storm): it runs in
        # the background while parts 4 to 7 go on, and is said after them
        health = start_health_part(settings, ledger, target, root)
        try:
            _report(ledger, run_id, settings, console)
            channel_tour(settings, ledger, target, root, console, first=5)
            calls_part(settings, ledger, target, root, console, number=7)
        finally:
            health.wait()
        health.finish(console, number=8)
    console.print(f"demo finished in {seconds_since(started):.1f} s")
    _dashboard_hint(settings, console)


#: After the demo campaign's last send: how long its receipts may still be awaited, and how
#: long without a new one says they stopped coming (the sandbox sends each within 0.2 s).
RECEIPTS_WAIT_S, RECEIPTS_QUIET_S = 3.0, 0.4


async def last_receipts(ledger: Any, run_id: int, *, wait_s: float = RECEIPTS_WAIT_S,
                        quiet_s: float = RECEIPTS_QUIET_S, poll_s: float = 0.05) -> float:
    """Wait while the run's receipts still come in (its state counts changed within
    ``quiet_s``, or a send still waits for its ``messages.sent``), at most ``wait_s``;
    the seconds waited. A send never delivered sends no receipt: the quiet ends the wait."""
    begun = monotonic()
    counts = ledger.counts(run_id)
    changed = begun
    while monotonic() - begun < wait_s:
        if not counts.get("accepted") and monotonic() - changed >= quiet_s:
            break
        await asyncio.sleep(poll_s)
        now = ledger.counts(run_id)
        if now != counts:
            counts, changed = now, monotonic()
    return changed - begun


def _dashboard_hint(settings: Settings, console: Console) -> None:
    """The last lines: how to watch the demo's runs in the web dashboard (its own ledger)."""
    command = _campaign_command()
    console.print("Watch these runs in a browser: start the dashboard on the demo's ledger",
                  highlight=False)
    console.print(f"  CAMPAIGN_DATABASE_URL={settings.resolved_database_url()} "
                  f"{command} dashboard", highlight=False, soft_wrap=True, markup=False)
    console.print(f"and open {settings.dashboard.address()} (`{command} dashboard` alone "
                  "shows the project's own runs)", highlight=False, markup=False)


def _campaign_command() -> str:
    """How to type this program here: ``campaign`` when that name on PATH is this very
    program, else the path it was started by (``make demo`` runs ``.venv/bin/campaign``,
    which is not on PATH until the venv is activated)."""
    started = Path(sys.argv[0])
    found = shutil.which("campaign")
    if started.name != "campaign" or (
            found is not None and Path(found).resolve() == started.resolve()):
        return "campaign"
    return str(started)


def _report(ledger: Any, run_id: int, settings: Settings, console: Console) -> None:
    """Part 4: the WhatsApp run's spreadsheet report."""
    console.print("[bold]4. Report[/]")
    try:
        from scheduler.reports import write_report
    except ImportError:
        console.print("   (reports are not available in this build)")
    else:
        report = write_report(ledger, [run_id], settings=settings)
        for path in report.paths:
            console.print(f"   wrote {path}")


async def _connect_senders(client_class: Any, base_url: str, api_key: str, campaign_file: Path,
                           console: Console) -> None:
    """On a service: the demo campaign's senders exist and are connected before planning."""
    from scheduler.campaign.plan import load_campaign

    async with client_class(base_url, api_key) as client:
        for name in load_campaign(campaign_file).spec.senders:
            await connect_session(client, base_url, name, console)
