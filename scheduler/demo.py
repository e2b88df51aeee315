"""``campaign demo``: the whole product in under a minute, against the embedded sandbox.

1. a session is created, its QR code shown in the terminal and scanned;
2. one message of every type is sent, with each answer and each ``messages.sent`` event;
3. ``campaigns/demo.toml`` (about 200 recipients, two senders) runs to completion with the
   progress bar, tracked through the webhook receiver;
4. the run's spreadsheet report is written and its path printed.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import segno
from fastapi import FastAPI, Request
from rich.console import Console

from scheduler.config import Settings
from scheduler.httpserver import BackgroundServer
from scheduler.service.requests import SEND_KINDS

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
    import httpx

    from scheduler.service.client import ServiceClient

    app, events = _sink()
    with BackgroundServer(app) as sink:
        async with ServiceClient(base_url, api_key) as client:
            session = "demo-showcase"
            await client.create_session(session, webhook_url=f"{sink.base_url}/hook")
            qr = await client.get_qr(session)
            console.print(f"[bold]1. Session {session!r}[/] is {qr.status}; scan this QR code:")
            segno.make(qr.qrCode or session, error="l").terminal(compact=True)
            async with httpx.AsyncClient(base_url=base_url) as raw:
                await raw.post(f"/sandbox/sessions/{session}/scan")
            console.print(f"   scanned: {(await client.get_session(session)).status}")
            console.print("[bold]2. One message of every type[/]")
            first_id = ""
            for name, fields in SHOWCASE.items():
                body = {"sessionId": session, "to": DEMO_TO, **fields}
                if name == "reaction":
                    body["messageId"] = first_id
                result = await client.send(SEND_KINDS[name].model.model_validate(body))
                first_id = first_id or (result.messageId or "")
                answer = json.dumps(result.model_dump(exclude_none=True))
                console.print(f"   {name:<10} → {answer}", soft_wrap=True)
        deadline = time.monotonic() + 5
        expected = len(SHOWCASE) + 1  # an album is two events
        while len([e for e in events if e.get("event") == "messages.sent"]) < expected \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    for event in events:
        if event.get("event") == "messages.sent":
            data = event["data"]
            console.print(f"   messages.sent {data['type']:<10} id={data['id']} "
                          f"to={data['to']['jid']} {data['message'][:30]!r}", soft_wrap=True)


def run_demo(console: Console, root: Path) -> None:
    """The whole demo; each part prints what it does."""
    from scheduler.config import load_settings
    from scheduler.dispatch.foreground import describe, run_foreground
    from scheduler.dispatch.runner import ledger_from_settings, plan_run, service_target
    from scheduler.timeutil import utcnow

    started = time.monotonic()
    base = load_settings()
    state = root / "state"
    db = state / "demo.db"
    for leftover in state.glob("demo.db*"):
        leftover.unlink()
    settings = Settings(**{**base.model_dump(exclude={"api_key", "database_url"}),
                           "database_url": f"sqlite:///{db}", "base_url": None})
    with service_target(settings, force_sandbox=True) as target:
        console.print(f"Embedded sandbox at {target.base_url} (nothing leaves this machine)")
        asyncio.run(showcase(target.base_url, target.api_key, console))
        console.print("[bold]3. Campaign campaigns/demo.toml[/]")
        ledger = ledger_from_settings(settings)
        run_id = plan_run(ledger, root / "campaigns" / "demo.toml", start_at=utcnow())
        run = ledger.get_run(run_id)
        console.print(f"   run {run_id}: {run.planned_count} deliveries planned")
        result = asyncio.run(run_foreground(settings, ledger, run, console, target=target))
        describe(result, console)
        time.sleep(1.0)  # let the last receipts arrive before the report
    console.print("[bold]4. Report[/]")
    try:
        from scheduler.reports import write_report
    except ImportError:
        console.print("   (reports are not available in this build)")
    else:
        report = write_report(ledger, [run_id], settings=settings)
        for path in report.paths:
            console.print(f"   wrote {path}")
    console.print(f"demo finished in {time.monotonic() - started:.1f} s")
