"""A campaign's run options: parsed once from the file, the same as an old run's snapshot."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from scheduler.campaign.loader import load_campaign
from scheduler.campaign.options import run_options
from scheduler.dispatch.options import DispatchOptions
from scheduler.settings.engine import EngineSettings
from scheduler.settings.run import (
    OPTIONS_VERSION,
    OptionsError,
    RunOptions,
    WindowOptions,
    from_snapshot,
)
from tests.factories import Project

SP = ZoneInfo("America/Sao_Paulo")

EVERYTHING = """sender_rotation = "least-used"
delivery = "at-least-once"
recipient_timezone = true
resend_unproven = true
[schedule]
timezone = "America/Manaus"
window = "22:00-06:00"
days = "fri-mon"
latest = "2027-03-08T20:00:00"
[pace]
rate = "30/min"
jitter = "2s-8s"
daily_cap = 1000
plan_limit = 5000
"""
STEPS = '[[steps]]\ntype = "text"\ntext = "Oi"\n[[steps]]\ntype = "text"\ndelay = "1h30m"\n' \
        'text = "De novo"\n'


def test_options_hold_every_value_parsed(project: Project) -> None:
    options = run_options(load_campaign(project.basic(steps=STEPS, extra=EVERYTHING)))
    assert options == RunOptions(
        version=OPTIONS_VERSION, senders=("s1", "s2"), rate_per_s=0.5, jitter_s=(2.0, 8.0),
        daily_cap=1000, plan_limit=5000, timezone="America/Manaus",
        window=WindowOptions(opens_min=22 * 60, closes_min=6 * 60, weekdays=(0, 4, 5, 6)),
        recipient_timezone=True,
        latest_at=datetime(2027, 3, 8, 20, 0, tzinfo=ZoneInfo("America/Manaus")),
        latest_clock_min=None, delivery_mode="at-least-once", rotation="least-used",
        step_delays_s=(0.0, 5400.0), resend_unproven=True)
    assert RunOptions.from_json(options.to_json()) == options


@pytest.mark.parametrize("extra", [EVERYTHING, "", '[schedule]\nlatest = "18:00"\n'
                                   'window = "09:00-20:00"\n'])
def test_an_old_runs_snapshot_gives_the_same_options(project: Project, extra: str) -> None:
    """A run stored before options were has them rebuilt from its definition snapshot:
    the same options the campaign gives now."""
    campaign = load_campaign(project.basic(steps=STEPS, extra=extra))
    assert from_snapshot(campaign.spec.model_dump(mode="json")) == run_options(campaign)


def test_one_default_per_option(project: Project) -> None:
    """A campaign without [pace] or [schedule], a snapshot without them and the engine's
    own options agree: 20 sends a minute, no jitter, São Paulo time, at most once."""
    options = run_options(load_campaign(project.basic()))
    assert (options.rate_per_s, options.jitter_s, options.timezone, options.delivery_mode,
            options.rotation, options.window) == (
        20 / 60, (0.0, 0.0), "America/Sao_Paulo", "at-most-once", "round-robin", None)
    assert from_snapshot({"senders": ["s1", "s2"]}) == options
    engine = DispatchOptions(senders=("s1", "s2"))
    assert (engine.rate, engine.jitter, engine.timezone, engine.delivery_mode,
            engine.rotation) == (options.rate_per_s, options.jitter_s, options.timezone,
                                 options.delivery_mode, options.rotation)


def test_latest_hh_mm_is_on_the_day_the_run_starts(project: Project) -> None:
    options = run_options(load_campaign(project.basic(extra='[schedule]\nlatest = "20:00"\n')))
    assert options.latest_clock_min == 1200
    morning = datetime(2025, 3, 10, 9, 0, tzinfo=SP)
    assert options.latest_for(morning) == datetime(2025, 3, 10, 20, 0, tzinfo=SP)
    night = datetime(2025, 3, 10, 21, 0, tzinfo=SP)  # already past: the next day's 20:00
    assert options.latest_for(night) == datetime(2025, 3, 11, 20, 0, tzinfo=SP)


def test_the_engine_gets_the_window_and_latest_resolved(project: Project) -> None:
    extra = '[schedule]\nwindow = "09:00-20:00"\ndays = "mon-sat"\nlatest = "19:00"\n'
    options = run_options(load_campaign(project.basic(extra=extra)))
    start = datetime(2025, 3, 9, 12, 0, tzinfo=SP)  # a Sunday
    engine = DispatchOptions.for_run(options, start=start, engine=EngineSettings(
        verify_grace_s=5, send_concurrency=1))
    assert engine.window is not None
    assert engine.window.next_open(start) == datetime(2025, 3, 10, 9, 0, tzinfo=SP)
    assert engine.latest == datetime(2025, 3, 9, 19, 0, tzinfo=SP)
    assert (engine.engine.send_concurrency, engine.engine.verify_grace_s) == (1, 5)  # ours



ENGINE_TOML = """verify_grace_s = 5
bulk_max = 200
voice_max_calls = 4
voice_call_timeout_s = 120
voice_call_estimate_s = 45
whatsapp_call_timeout_s = 300
[sms_price_micro]
otp = 1
marketing = 2
"""


def test_every_engine_setting_reaches_the_engine(project: Project, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """What config.toml says of the engine (grace, SMS prices, bulk and call bounds) is what
    a run's dispatch uses; unset, the settings and the engine default alike."""
    from scheduler.settings.load import Settings, load_settings

    for name in (*Settings.model_fields, *EngineSettings.model_fields):
        monkeypatch.delenv(f"CAMPAIGN_{name.upper()}", raising=False)
    options = run_options(load_campaign(project.basic()))
    start = datetime(2025, 3, 9, 12, 0, tzinfo=SP)
    unset = load_settings(tmp_path / "none.toml").engine_overrides()
    assert DispatchOptions.for_run(options, start=start, **unset) == \
        DispatchOptions.for_run(options, start=start)
    (tmp_path / "config.toml").write_text(ENGINE_TOML, encoding="utf-8")
    engine = DispatchOptions.for_run(
        options, start=start, **load_settings(tmp_path / "config.toml").engine_overrides()
    ).engine
    assert (engine.verify_grace_s, engine.bulk_max, engine.voice_max_calls,
            engine.voice_call_timeout_s, engine.voice_call_estimate_s,
            engine.whatsapp_call_timeout_s, engine.sms_price_micro) == (
        5, 200, 4, 120, 45, 300, {"marketing": 2, "otp": 1})
    monkeypatch.setenv("CAMPAIGN_BULK_MAX", "300")  # the environment wins over the file
    monkeypatch.setenv("CAMPAIGN_SMS_PRICE_MICRO", '{"otp": 3}')
    engine = load_settings(tmp_path / "config.toml").engine
    assert (engine.verify_grace_s, engine.bulk_max, engine.sms_price_micro) == (
        5, 300, {"otp": 3})


def test_options_of_a_newer_program_are_refused() -> None:
    newer = from_snapshot({"senders": ["s1"]}).model_dump(mode="json") | {"version": 2}
    with pytest.raises(OptionsError, match="run 7 was planned by a program that stores "
                                           "options version 2; this one reads version 1"):
        RunOptions.from_json(json.dumps(newer), run_id=7)
    with pytest.raises(OptionsError, match="the stored options of run 7 are not readable"):
        RunOptions.from_json('{"version": 1}', run_id=7)
