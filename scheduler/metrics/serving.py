"""``campaign serve``'s own ``/metrics`` port (``[metrics] serve = true``): refused on an
address other than loopback without ``[metrics] token_sha256``, on the webhook receiver's
port, on the dashboard's or the API's when serve serves those, and (clearly) on a port in
use."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from scheduler.core.errors import ConfigError, SchedulerError

if TYPE_CHECKING:
    import socket

    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings


def listen(settings: Settings) -> socket.socket:
    """The metrics port's socket, or a :class:`SchedulerError` saying what to change."""
    from scheduler.core.httpserver import is_loopback, try_bind

    conf = settings.metrics
    if not is_loopback(conf.host) and conf.token_sha256 is None:
        raise SchedulerError(
            f"refusing to serve /metrics on {conf.host}: it is not a loopback address and "
            "[metrics] token_sha256 is not set, so anyone who reaches it could read the "
            "ledger's figures. Set token_sha256 (the SHA-256 of a token your scraper sends "
            "as Authorization: Bearer), or serve it on 127.0.0.1")
    taken = {settings.receiver_port: "the webhook receiver's (receiver_port)"}
    if settings.dashboard.serve:
        taken[settings.dashboard.port] = "the dashboard's ([dashboard] port)"
    api = getattr(settings, "api", None)
    if api is not None and api.serve:
        taken[api.port] = "the API's ([api] port)"
    if conf.port and conf.port in taken:
        raise ConfigError(f"[metrics] port {conf.port} is {taken[conf.port]}: choose "
                          "another [metrics] port")
    sock = try_bind(conf.host, conf.port)
    if sock is None:
        raise SchedulerError(f"cannot serve /metrics on {conf.host}:{conf.port}: the port is "
                             "in use or the address is not this machine's; choose another "
                             "[metrics] port in config.toml")
    sock.listen(128)
    return sock


@contextlib.contextmanager
def serve_alongside(settings: Settings, ledger: Ledger) -> Iterator[str | None]:
    """With ``[metrics] serve = true``: ``/metrics`` served on its own port while the
    block runs (its address; None when the setting is off)."""
    if not settings.metrics.serve:
        yield None
        return
    from scheduler.core.httpserver import BackgroundServer
    from scheduler.metrics.endpoint import metrics_app

    sock = listen(settings)
    server = BackgroundServer(metrics_app(ledger, settings), sock=sock).start()
    try:
        yield settings.metrics.address(server.port)
    finally:
        server.stop()
