"""The engine's settings of this process, and their defaults, written once.

:class:`EngineSettings` holds what ``config.toml`` / ``CAMPAIGN_*`` may set for the engine
(never stored with a run): :class:`scheduler.config.Settings` takes its defaults from here
and hands the values over with :meth:`~scheduler.config.Settings.engine_overrides`;
:class:`scheduler.dispatch.options.DispatchOptions` carries them for a run. A leaf module,
so that both can read it without one importing the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineSettings:
    """This process's settings of the engine (see ``config.example.toml`` for each)."""

    #: How long an ambiguous send waits for its proof event before it is verified.
    verify_grace_s: float = 60.0
    #: Price per SMS segment by route, in micro-reais, sorted by route.
    sms_price_micro: tuple[tuple[str, int], ...] = (("marketing", 50_000), ("otp", 70_000))
    #: The most recipients the service takes in one bulk request.
    bulk_max: int = 1000
    #: Calls the account may have in progress at once.
    voice_max_calls: int = 30
    #: A call with no ``call.ended`` after this long no longer counts as in progress.
    voice_call_timeout_s: float = 600.0
    #: How long a call is taken to last where no ``call.ended`` can come.
    voice_call_estimate_s: float = 90.0
    #: WhatsApp calls to a list: how long a sender waits at most for its call's end event
    #: before it places the next one.
    whatsapp_call_timeout_s: float = 600.0


#: The defaults, as one value.
ENGINE_DEFAULTS = EngineSettings()
