"""The receiver's kept identity when several processes of one project start at once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from scheduler.settings.load import Settings
from scheduler.tracking.identity import (
    IDENTITY_FILE,
    ReceiverIdentity,
    account_secret,
    bind_receiver_socket,
    load_identity,
)

T = TypeVar("T")
STARTERS = 8


def project_settings(root: Path) -> Settings:
    return Settings(project_dir=root, base_url=None, api_key=None)  # type: ignore[arg-type]


def all_at_once(task: Callable[[], T]) -> list[T]:
    """Run ``task`` in STARTERS threads released together (each opens its own lock file
    descriptor, as separate processes do)."""
    gate = threading.Barrier(STARTERS)

    def started() -> T:
        gate.wait()
        return task()

    with ThreadPoolExecutor(STARTERS) as pool:
        return list(pool.map(lambda _: started(), range(STARTERS)))


def test_workers_starting_together_share_one_token_and_none_fails(tmp_path: Path) -> None:
    for round_ in range(5):
        root = tmp_path / f"p{round_}"
        identities = all_at_once(lambda root=root: load_identity(project_settings(root)))
        tokens = {identity.token for identity in identities if identity is not None}
        assert len(tokens) == 1  # one token: no worker refuses the events of another
        kept = ReceiverIdentity.model_validate_json((root / "state" / IDENTITY_FILE).read_bytes())
        assert kept.token in tokens
        leftovers = [p.name for p in (root / "state").iterdir() if p.name.endswith(".tmp")]
        assert leftovers == []


def test_a_port_kept_by_one_process_does_not_lose_the_secret_made_by_another(
        tmp_path: Path) -> None:
    settings = project_settings(tmp_path)
    sockets = []
    for _ in range(3):
        secrets = all_at_once(lambda: account_secret(settings, create=True))
        sockets.append(bind_receiver_socket(settings))
        assert len(set(secrets)) == 1
        kept = load_identity(settings)
        assert kept is not None
        assert kept.account_secret == secrets[0]
        assert kept.port == sockets[-1].getsockname()[1]
    for sock in sockets:
        sock.close()
