"""The ``[privacy]`` settings: how long rendered bodies and raw event payloads are kept, and
the key an erased number's hash is made with.

The ``[privacy]`` section of :class:`~scheduler.settings.load.Settings`::

    [privacy]
    keep_bodies = "90d"    # rendered bodies (deliveries' payloads) older than this are purged
    keep_events = "180d"   # raw webhook payloads (events) older than this are purged
    # erasure_key = "…"    # else the state folder's erasure.key (made once, mode 0600)

``campaign purge`` and ``campaign serve`` (daily) remove what is older; ``"0"`` keeps
forever. See docs/privacy.md.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from scheduler.core.units import UnitError, parse_duration


class PrivacySettings(BaseModel):
    """The ``[privacy]`` settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    keep_bodies: str = Field("90d", description="How long rendered bodies are kept "
                             "(\"0\": forever).")
    keep_events: str = Field("180d", description="How long raw event payloads are kept "
                             "(\"0\": forever).")
    erasure_key: SecretStr | None = Field(None, description="The key of erased numbers' "
                                          "hashes; default: the state folder's erasure.key.")

    @field_validator("keep_bodies", "keep_events")
    @classmethod
    def _duration(cls, value: str) -> str:
        try:
            parse_duration(value)
        except UnitError as exc:
            raise ValueError(str(exc)) from None
        return value

    def bodies_for(self) -> timedelta | None:
        """How long bodies are kept; None: forever."""
        seconds = parse_duration(self.keep_bodies)
        return timedelta(seconds=seconds) if seconds else None

    def events_for(self) -> timedelta | None:
        """How long event payloads are kept; None: forever."""
        seconds = parse_duration(self.keep_events)
        return timedelta(seconds=seconds) if seconds else None
