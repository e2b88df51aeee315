"""The ``[dashboard]`` settings: read from config.toml, wrong values named."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.core.errors import ConfigError
from scheduler.settings.load import load_settings


def test_the_dashboard_listens_on_loopback_unless_config_toml_says_otherwise(
        tmp_path: Path) -> None:
    default = load_settings(tmp_path / "none.toml").dashboard
    assert (default.host, default.port, default.serve, default.users) == (
        "127.0.0.1", 8790, False, {})
    assert default.address() == "http://127.0.0.1:8790/"
    (tmp_path / "config.toml").write_text(
        '[dashboard]\nhost = "0.0.0.0"\nport = 9001\nserve = true\n'
        '[dashboard.users.ana]\nrole = "viewer"\n'
        'password_hash = "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2g"\n')
    mine = load_settings(tmp_path / "config.toml").dashboard
    assert (mine.host, mine.port, mine.serve, mine.users["ana"].role) == (
        "0.0.0.0", 9001, True, "viewer")
    assert "argon2" not in repr(mine)  # a hash is not printed with the settings
    (tmp_path / "config.toml").write_text(
        '[dashboard.users.ana]\nrole = "viewer"\npassword_hash = "hunter22"\n')
    with pytest.raises(ConfigError, match=r"dashboard\.users\.ana\.password_hash.*argon2id"):
        load_settings(tmp_path / "config.toml")  # a password where its hash belongs


def test_a_wrong_dashboard_value_is_named(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[dashboard]\nport = 70000\n')
    with pytest.raises(ConfigError, match=r"dashboard\.port"):
        load_settings(tmp_path / "config.toml")
    (tmp_path / "config.toml").write_text(
        '[dashboard.users.bob]\nrole = "admin"\npassword_hash = "x"\n')
    with pytest.raises(ConfigError, match=r"dashboard\.users\.bob\.role"):
        load_settings(tmp_path / "config.toml")
