"""The outgoing webhooks' settings: ``[[webhooks]]`` subscriptions and ``[webhook_delivery]``.

In ``config.toml``::

    [[webhooks]]
    url = "https://crm.example.com/hooks/campaigns"
    events = ["run.started", "run.completed", "recipient.opted_out"]
    secret = "whsec_…"          # Standard Webhooks: whsec_ and base64 (at least 16 bytes)
    # name = "crm"              # what `campaign webhooks` shows (default: the URL's host and path)

    [webhook_delivery]
    horizon_s = 86400           # retried with back-off this long after the event, then failed
    first_retry_s = 5           # the first retry's delay; each next one doubles (with jitter)
    max_retry_s = 3600          # never more than this between two tries
    timeout_s = 10              # one POST's time limit

The secret is a :class:`pydantic.SecretStr`: never printed, logged or stored in the ledger.
"""

from __future__ import annotations

import base64
import binascii
from datetime import timedelta
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from scheduler.outbox.events import EVENT_TYPES

SECRET_PREFIX = "whsec_"
#: The fewest secret bytes accepted (Standard Webhooks asks for 24 to 64; 16 is a floor).
MIN_SECRET_BYTES = 16


def decode_secret(value: str) -> bytes:
    """The key bytes of a ``whsec_<base64>`` secret; ValueError (without the value) if not."""
    if not value.startswith(SECRET_PREFIX):
        raise ValueError(f"must start with {SECRET_PREFIX} (the Standard Webhooks format "
                         f"{SECRET_PREFIX}<base64>); make one with "
                         "`printf 'whsec_%s' \"$(head -c 32 /dev/urandom | base64)\"`")
    body = value[len(SECRET_PREFIX):]
    try:
        key = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"the part after {SECRET_PREFIX} is not base64") from None
    if len(key) < MIN_SECRET_BYTES:
        raise ValueError(f"too short: at least {MIN_SECRET_BYTES} random bytes, base64")
    return key


class WebhookSubscription(BaseModel):
    """One ``[[webhooks]]`` entry: where events go, which ones, and the signing secret."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(description="Where each event is POSTed (http or https).")
    events: tuple[str, ...] = Field(min_length=1, description="The event names sent there.")
    secret: SecretStr = Field(description="whsec_<base64>: signs each delivery.")
    name: str | None = Field(None, min_length=1, max_length=64,
                             description="Its name in `campaign webhooks` (default: host "
                                         "and path of the URL).")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// address")
        try:
            parts.port  # noqa: B018 (a port past 65535 or not a number raises)
        except ValueError:
            raise ValueError("its port is not a number from 1 to 65535") from None
        return value.strip()

    @field_validator("events")
    @classmethod
    def _events(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [name for name in value if name not in EVENT_TYPES]
        if unknown:
            raise ValueError(f"unknown event {', '.join(map(repr, unknown))}; the events are "
                             f"{', '.join(EVENT_TYPES)}")
        return tuple(dict.fromkeys(value))

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: SecretStr) -> SecretStr:
        decode_secret(value.get_secret_value().strip())
        return SecretStr(value.get_secret_value().strip())

    @property
    def key(self) -> str:
        """The subscription's name in the ledger's delivery rows: ``name``, else the URL's
        host and path (never its query, which may hold a token)."""
        if self.name:
            return self.name
        parts = urlsplit(self.url)
        return f"{parts.netloc.rsplit('@', 1)[-1]}{parts.path}"

    def wants(self, event_type: str) -> bool:
        """Whether this subscription takes events of ``event_type``."""
        return event_type in self.events


def check_unique(subscriptions: list[WebhookSubscription]) -> list[WebhookSubscription]:
    """The subscriptions, or ValueError when two share a name (give one a ``name``)."""
    seen: set[str] = set()
    for sub in subscriptions:
        if sub.key in seen:
            raise ValueError(f"two subscriptions are named {sub.key!r}: give each a "
                             "different `name`")
        seen.add(sub.key)
    return subscriptions


class WebhookDelivery(BaseModel):
    """The ``[webhook_delivery]`` settings: back-off, horizon and time limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    horizon_s: float = Field(86_400.0, gt=0, le=30 * 86_400, description=(
        "How long after the event a failing delivery is tried again; then `failed`."))
    first_retry_s: float = Field(5.0, gt=0, description="The first retry's delay.")
    max_retry_s: float = Field(3_600.0, gt=0, description="The longest delay between tries.")
    timeout_s: float = Field(10.0, gt=0, le=300, description="One POST's time limit.")
    batch: int = Field(20, ge=1, le=1000, description="Deliveries one worker claims at once.")

    @model_validator(mode="after")
    def _order(self) -> WebhookDelivery:
        if self.max_retry_s < self.first_retry_s:
            raise ValueError("max_retry_s must be at least first_retry_s")
        return self

    @property
    def horizon(self) -> timedelta:
        """:attr:`horizon_s` as a timedelta."""
        return timedelta(seconds=self.horizon_s)
