"""Settings from ``config.toml`` and the ``CAMPAIGN_*`` environment: the environment wins,
tables come as JSON, names match without regard to case, and bad values are named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scheduler.core.errors import ConfigError
from scheduler.settings.load import Settings, load_settings


@pytest.fixture(autouse=True)
def _no_campaign_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.upper().startswith("CAMPAIGN_"):
            monkeypatch.delenv(key)


def test_the_environment_wins_over_the_file(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text('base_url = "http://file.example/"\nhttp_concurrency = 9\n'
                      'bulk_max = 5\nverify_grace_s = 7\n[dashboard]\nhost = "0.0.0.0"\n')
    monkeypatch.setenv("CAMPAIGN_BASE_URL", "http://env.example/")
    monkeypatch.setenv("CAMPAIGN_BULK_MAX", "300")
    monkeypatch.setenv("CAMPAIGN_DASHBOARD", '{"port": 9001}')
    monkeypatch.setenv("CAMPAIGN_OPT_OUT_WORDS", '["BASTA"]')
    monkeypatch.setenv("CAMPAIGN_SMS_PRICE_MICRO", '{"otp": 3}')
    monkeypatch.setenv("campaign_reject_calls", "true")  # any case, as pydantic-settings
    settings = load_settings(config, project_dir=tmp_path)
    assert (settings.base_url, settings.http_concurrency) == ("http://env.example", 9)
    assert (settings.engine.bulk_max, settings.engine.verify_grace_s) == (300, 7)
    assert settings.engine.sms_price_micro == {"otp": 3}
    # the environment's [dashboard] replaces the file's, whole
    assert (settings.dashboard.host, settings.dashboard.port) == ("127.0.0.1", 9001)
    assert settings.opt_out_words == ["BASTA"] and settings.reject_calls is True
    # the values given win over both
    given = load_settings(config, project_dir=tmp_path, base_url="http://given.example")
    assert given.base_url == "http://given.example"


def test_settings_built_directly_read_the_environment(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    monkeypatch.setenv("CAMPAIGN_API_KEY", "k-123")
    monkeypatch.setenv("CAMPAIGN_RECEIVER_PORT", "8123")
    settings = Settings()
    assert settings.resolved_api_key() == "k-123" and settings.receiver_port == 8123
    assert "k-123" not in repr(settings)
    assert Settings(api_key=None).api_key is None  # a value given wins over the variable


def test_bad_values_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text("http_timeout_s = -1\nbulk_max = 0\nnope = 1\n")
    monkeypatch.setenv("CAMPAIGN_RECEIVER_PORT", "70000")
    with pytest.raises(ConfigError) as caught:
        load_settings(config, project_dir=tmp_path)
    message = str(caught.value)
    assert message.startswith(f"settings ({config} and CAMPAIGN_* environment): ")
    for named in ("bulk_max: Input should be greater than or equal to 1",
                  "http_timeout_s: Input should be greater than 0",
                  "receiver_port: Input should be less than or equal to 65535",
                  "nope: Extra inputs are not permitted"):
        assert named in message
    monkeypatch.delenv("CAMPAIGN_RECEIVER_PORT")
    config.write_text("")
    monkeypatch.setenv("CAMPAIGN_SMS_PRICE_MICRO", "otp=3")
    with pytest.raises(ConfigError, match=r"^CAMPAIGN_SMS_PRICE_MICRO: not valid JSON"):
        load_settings(config, project_dir=tmp_path)
    monkeypatch.setenv("CAMPAIGN_SMS_PRICE_MICRO", "{}")
    monkeypatch.setenv("CAMPAIGN_WEBHOOKS", "[{")
    with pytest.raises(ConfigError, match=r"^CAMPAIGN_WEBHOOKS: not valid JSON"):
        load_settings(config, project_dir=tmp_path)
