"""The Standard Webhooks headers of one try: ``webhook-id``, ``webhook-timestamp`` and
``webhook-signature`` (``v1,`` and the base64 HMAC-SHA256 of ``id.timestamp.body``), made
by the ``standardwebhooks`` package. Each try is signed anew, with its own time: a
receiver refuses a timestamp more than five minutes off."""

from __future__ import annotations

from datetime import datetime

from standardwebhooks.webhooks import Webhook


def headers(secret: str, msg_id: str, at: datetime, body: str) -> dict[str, str]:
    """The headers for POSTing ``body`` as event ``msg_id`` at ``at`` (aware UTC)."""
    signature = Webhook(secret).sign(msg_id, at, body)
    return {"webhook-id": msg_id, "webhook-timestamp": str(int(at.timestamp())),
            "webhook-signature": signature, "content-type": "application/json",
            "user-agent": "campaign-scheduler-webhooks/1"}
