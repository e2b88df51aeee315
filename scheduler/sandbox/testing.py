"""Helpers for tests, demos and benchmarks: a sandbox served on loopback, a webhook sink.

``SandboxHandle(config)`` serves ``create_app(config)`` with a real uvicorn on a free port and
wraps the inspection endpoints; ``WebhookSink()`` is a tiny real receiver that records every
JSON body POSTed to it. Both run in background threads; call ``close()`` when done.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request
from starlette.responses import JSONResponse

from scheduler.core.httpserver import BackgroundServer
from scheduler.core.timeutil import monotonic
from scheduler.sandbox.app import create_app
from scheduler.sandbox.config import SandboxConfig
from scheduler.service.requests import SEND_KINDS

#: Settings of test sandboxes unless a test says otherwise: seeded, no faults, recipients
#: that never answer, quick webhook retries, short time-out hangs.
QUIET_SANDBOX: dict[str, Any] = {
    "seed": 1,
    "delivered_rate": 0.0,
    "read_rate": 0.0,
    "reply_rate": 0.0,
    "poll_vote_rate": 0.0,
    "recipient_delay_ms": (0, 0),
    "webhook_retry_base_s": 0.01,
    "timeout_hang_s": 2.0,
    # tests count the events their sends cause; status events are tested on their own
    "session_status_events": False,
}


class SandboxHandle:
    """A running sandbox: ``base_url``, ``api_key``, ``app``, ``state`` and HTTP helpers."""

    def __init__(self, config: SandboxConfig) -> None:
        self.app = create_app(config)
        self.state = self.app.state.sandbox
        self.api_key = config.api_key.get_secret_value()
        self.server = BackgroundServer(self.app).start()
        self.base_url = self.server.base_url
        self.http = httpx.Client(base_url=self.base_url, timeout=10.0)

    @property
    def headers(self) -> dict[str, str]:
        """The ``Authorization`` header of this sandbox's key."""
        return {"Authorization": self.api_key}

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """A request to ``path`` (``/api/v1/...``) with the right key."""
        headers = {**self.headers, **kwargs.pop("headers", {})}
        return self.http.request(method, path, headers=headers, **kwargs)

    def send(self, kind: str, body: dict[str, Any]) -> httpx.Response:
        """POST ``body`` to the send endpoint of message type ``kind`` (e.g. ``"text"``)."""
        return self.api("POST", SEND_KINDS[kind].path, json=body)

    def create_session(
        self, session_id: str, *, webhook_url: str | None = None, connect: bool = True
    ) -> dict[str, Any]:
        """Create a session (and scan its QR code unless ``connect`` is False)."""
        body: dict[str, Any] = {"sessionId": session_id, "type": "unofficial"}
        if webhook_url:
            body["webhookUrl"] = webhook_url
        response = self.api("POST", "/api/v1/sessions", json=body)
        response.raise_for_status()
        return self.scan(session_id) if connect else response.json()["data"]

    def scan(self, session_id: str) -> dict[str, Any]:
        """Scan the session's QR code: it becomes ``connected``."""
        response = self.http.post(f"/sandbox/sessions/{session_id}/scan")
        response.raise_for_status()
        return response.json()["data"]

    def disconnect(self, session_id: str) -> dict[str, Any]:
        """Disconnect the session (its sends then fail)."""
        response = self.http.post(f"/sandbox/sessions/{session_id}/disconnect")
        response.raise_for_status()
        return response.json()["data"]

    def logout(self, session_id: str) -> dict[str, Any]:
        """The phone logs the session out (``logged_out``; it must be scanned again)."""
        response = self.http.post(f"/sandbox/sessions/{session_id}/logout")
        response.raise_for_status()
        return response.json()["data"]

    def incoming_call(self, session_id: str, caller: str | None = None) -> dict[str, Any]:
        """Someone calls the session; returns ``{callId, from, ...}``."""
        body = {"from": caller} if caller else {}
        response = self.http.post(f"/sandbox/sessions/{session_id}/incoming-call", json=body)
        response.raise_for_status()
        return response.json()

    def sends(self, since: int = 0) -> list[dict[str, Any]]:
        """Every request the sandbox accepted, from index ``since`` on."""
        response = self.http.get("/sandbox/sends", params={"since": since})
        response.raise_for_status()
        return response.json()

    def webhooks(self, since: int = 0) -> list[dict[str, Any]]:
        """Every webhook delivery attempt so far."""
        response = self.http.get("/sandbox/webhooks", params={"since": since})
        response.raise_for_status()
        return response.json()

    def outcomes(self, channel: str, since: int = 0) -> list[dict[str, Any]]:
        """What the sandbox decided per SMS (``"sms"``) or call (``"voice"``) recipient."""
        response = self.http.get("/sandbox/outcomes", params={"channel": channel, "since": since})
        response.raise_for_status()
        return response.json()

    def wallet(self, **change: int | None) -> dict[str, Any]:
        """The wallet (``GET /sandbox/wallet``), after ``topUpMicroReais=n`` or
        ``balanceMicroReais=n`` when given."""
        if change:
            response = self.http.post("/sandbox/wallet", json=change)
        else:
            response = self.http.get("/sandbox/wallet")
        response.raise_for_status()
        return response.json()

    def trouble(self, session_id: str | None = None) -> dict[str, Any]:
        """``GET /sandbox/trouble``: each session's storms, logout and sends never delivered."""
        params = {"session_id": session_id} if session_id else {}
        response = self.http.get("/sandbox/trouble", params=params)
        response.raise_for_status()
        return response.json()

    def set_faults(self, **knobs: Any) -> dict[str, Any]:
        """Change run-time settings (``fail_rate=0.5``, ``throttle_rate=1`` ...)."""
        response = self.http.post("/sandbox/faults", json=knobs)
        response.raise_for_status()
        return response.json()

    def close(self) -> None:
        """Stop the server and close the HTTP client."""
        self.http.close()
        self.server.stop()


class WebhookSink:
    """A real HTTP receiver of webhooks, on its own loopback port (POST to any path).

    ``requests`` holds every POST (path, headers, body, and the exact bytes as ``raw``) in
    arrival order; ``events`` the bodies it answered with a 2xx (set ``status_code`` to make
    deliveries fail).
    """

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        #: Status answered to every POST; set it to 500 to make deliveries fail.
        self.status_code = 200
        self._lock = threading.Lock()
        app = FastAPI()

        @app.post("/{path:path}")
        async def receive(request: Request, path: str) -> JSONResponse:
            raw = await request.body()
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            with self._lock:
                self.requests.append(
                    {"path": "/" + path, "headers": dict(request.headers), "body": body,
                     "raw": raw}
                )
                if self.status_code < 300:
                    self.events.append(body)
            return JSONResponse({"ok": True}, status_code=self.status_code)

        self.server = BackgroundServer(app).start()
        self.base_url = self.server.base_url
        self.url = f"{self.base_url}/hook"

    def snapshot(self) -> list[dict[str, Any]]:
        """A copy of the events accepted so far."""
        with self._lock:
            return list(self.events)

    def clear(self) -> None:
        """Forget what was received so far."""
        with self._lock:
            self.events.clear()
            self.requests.clear()

    def of(self, event: str) -> list[dict[str, Any]]:
        """The accepted envelopes of one event name."""
        return [e for e in self.snapshot() if e.get("event") == event]

    def wait_for(
        self,
        predicate: Callable[[dict[str, Any]], bool] = lambda e: True,
        count: int = 1,
        timeout: float = 5.0,
    ) -> list[dict[str, Any]]:
        """Poll until ``count`` accepted events satisfy ``predicate``; return those events."""
        deadline = monotonic() + timeout
        while True:
            matching = [e for e in self.snapshot() if predicate(e)]
            if len(matching) >= count:
                return matching
            if monotonic() > deadline:
                names = [e.get("event") for e in self.snapshot()]
                raise AssertionError(
                    f"waited {timeout}s for {count} matching events, got {len(matching)}; "
                    f"received: {names}"
                )
            time.sleep(0.01)

    def close(self) -> None:
        """Stop the server."""
        self.server.stop()


def text_project_phone(i: int) -> str:
    """The CSV phone number of recipient ``i`` of :func:`write_text_project` (a São Paulo
    mobile, national format)."""
    return f"119{87_650_000 + i:08d}"


def write_text_project(root: Path, recipients: int, *, rate: str, senders: tuple[str, ...],
                       name: str, text: str) -> Path:
    """A project folder (campaigns/, data/, templates/) with one text campaign of
    ``recipients`` numbered people; returns the campaign file. Tests and benchmarks use it."""
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    lines = ["nome,telefone"] + [f"Pessoa {i},{text_project_phone(i)}"
                                 for i in range(recipients)]
    (root / "data" / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sender_list = ", ".join(f'"{s}"' for s in senders)
    path = root / "campaigns" / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nsenders = [{sender_list}]\n'
        f'[recipients]\nfile = "data/{name}.csv"\nphone_column = "telefone"\n'
        f'[schedule]\ntimezone = "UTC"\n[pace]\nrate = "{rate}"\n'
        f'[[steps]]\ntype = "text"\ntext = "{text}"\n',
        encoding="utf-8",
    )
    return path
