"""A recipient's ``[fallback]`` step, rendered at plan time onto their step-0 row.

A plan row of step 0 carries ``fallback``: ``{"kind", "path", "payload"}`` (the fallback
step's wire body for this recipient, as its channel sends it), or ``{"none": why}`` when the
number's line type does not suit the fallback's channel (SMS needs a mobile; a voice call
reaches landlines too). The dispatcher's verdict sends it, or not, at ``after``
(:mod:`scheduler.dispatch.recycle`); nothing is rendered then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from scheduler.campaign.linetypes import LABELS, LinePolicy
from scheduler.campaign.loader import Campaign, CompiledStep
from scheduler.campaign.segments import sms_segments
from scheduler.core.channel_terms import terms_of


class _Renderer(Protocol):
    def payload(self, ctx: dict[str, Any], to: str) -> dict[str, Any]: ...


class FallbackRows:
    """Renders the fallback step for one recipient (a ``TemplateError`` when it fails)."""

    def __init__(self, step: CompiledStep, channel: str, renderer: _Renderer) -> None:
        self.step = step
        self.channel = channel
        self.renderer = renderer
        self.lines = LinePolicy(channel)
        self.sms = terms_of(channel).segments

    @classmethod
    def of(cls, campaign: Campaign, make: Callable[[CompiledStep], _Renderer]
           ) -> FallbackRows | None:
        """The campaign's fallback renderer; None without a (sound) ``[fallback]`` step."""
        step, spec = campaign.fallback, campaign.spec.fallback
        if step is None or spec is None or not step.ok:
            return None
        return cls(step, spec.channel, make(step))

    def unsuited(self, line_type: str | None) -> str | None:
        """Why a number of ``line_type`` gets no fallback (None: it suits the channel)."""
        if line_type is None or line_type in self.lines.accepted:
            return None
        return f"{LABELS.get(line_type, line_type)}: {terms_of(self.channel).fallback_line_needs}"

    def value(self, ctx: dict[str, Any], digits: str, line_type: str | None
              ) -> tuple[dict[str, Any], tuple[int, str] | None]:
        """The row's ``fallback`` and, for an SMS, its (segments, encoding)."""
        why = self.unsuited(line_type)
        if why is not None:
            return {"none": why}, None
        payload = self.renderer.payload(ctx, digits)
        parts = None
        if self.sms:
            seg = sms_segments(payload["text"])
            parts = (seg.parts, seg.encoding)
        return {"kind": self.step.kind.name, "path": self.step.kind.path,
                "payload": payload}, parts
