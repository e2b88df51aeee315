"""The app also runs in-process (httpx.ASGITransport) inside its lifespan, with no server."""

from __future__ import annotations

import asyncio

import httpx

from scheduler.sandbox import SandboxConfig, create_app
from tests.sandbox.support import TO


async def test_in_process_app_with_lifespan(webhook_sink):
    app = create_app(SandboxConfig(seed=1, delivered_rate=0.0, reply_rate=0.0))
    sandbox = app.state.sandbox
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://sandbox.test",
            headers={"Authorization": "sandbox-key"},
        ) as client,
    ):
        created = await client.post(
            "/api/v1/sessions", json={"sessionId": "s1", "webhookUrl": webhook_sink.url}
        )
        assert created.status_code == 200
        await client.post("/sandbox/sessions/s1/scan")
        answer = await client.post(
            "/api/v1/messages/send/text", json={"sessionId": "s1", "to": TO, "text": "oi"}
        )
        assert answer.status_code == 200
        assert sandbox.world.sends[0]["messageId"] == answer.json()["messageId"]
        # Webhooks go out from the app's own loop: wait without blocking it (the session's
        # status events come first, the message's after them).
        for _ in range(500):
            if webhook_sink.of("messages.sent"):
                break
            await asyncio.sleep(0.01)
        assert sandbox.webhooks.log and {w["status"] for w in sandbox.webhooks.log} == {200}
    assert webhook_sink.of("messages.sent")[0]["data"]["id"].lower() == answer.json()["messageId"]
