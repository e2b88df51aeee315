"""The project's link-signing key (made once, owner-only) and the public base of links."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from scheduler.links.exceptions import LinkError
from scheduler.links.keys import KEY_FILE, link_base, link_key
from scheduler.settings.load import Settings


def test_the_key_is_made_once_readable_by_its_owner_only(tmp_path: Path) -> None:
    settings = Settings(project_dir=tmp_path)
    assert link_key(settings, create=False) is None
    key = link_key(settings)
    assert key is not None and len(key) == 32
    path = tmp_path / "state" / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert link_key(settings) == key == link_key(Settings(project_dir=tmp_path), create=False)
    assert [p.name for p in path.parent.iterdir()] == [KEY_FILE]  # no temporary file left


def test_a_damaged_key_is_an_error_that_says_what_to_do(tmp_path: Path) -> None:
    settings = Settings(project_dir=tmp_path)
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / KEY_FILE).write_text("abcd")
    with pytest.raises(LinkError, match="too short: delete it"):
        link_key(settings)


@pytest.mark.parametrize(("url", "base"), [
    ("https://hooks.example.com/webhooks/session", "https://hooks.example.com"),
    ("https://hooks.example.com/wa/webhooks/session/?x=1", "https://hooks.example.com/wa"),
    ("http://203.0.113.7:8080/hook", "http://203.0.113.7:8080"),
    (None, None),
])
def test_links_are_made_on_the_public_address(url: str | None, base: str | None) -> None:
    assert link_base(Settings(webhook_url=url)) == base
