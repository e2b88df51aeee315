"""``campaign sandbox``: serve the emulated Messaging Session Service on a local port."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Any

import typer

from scheduler.core.errors import SchedulerError

if TYPE_CHECKING:
    from scheduler.sandbox import SandboxConfig

KEY_ENV = "CAMPAIGN_SANDBOX_API_KEY"


def _latency(value: str) -> str:
    from scheduler.sandbox.config import parse_range

    try:
        low, high = parse_range(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if low < 0 or high < low:
        raise typer.BadParameter(f"expected 0 <= MIN <= MAX, got {value!r}")
    return value


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # so TCP_NODELAY is set
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise SchedulerError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)  # connections made before uvicorn starts wait instead of being refused
    return sock


def sandbox(
    port: int = typer.Option(8787, "--port", min=0, max=65535, help="Port (0 picks a free one)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
    api_key: str | None = typer.Option(
        None,
        "--api-key",
        show_default=False,
        help=f"Key clients must send (default: ${KEY_ENV}, else sandbox-key).",
    ),
    seed: int | None = typer.Option(None, "--seed", help="Seed of every simulated choice."),
    latency_ms: str = typer.Option(
        "0-0", "--latency-ms", callback=_latency, help="Added latency, MIN-MAX milliseconds."
    ),
    fail_rate: float = typer.Option(0.0, "--fail-rate", min=0.0, max=1.0, help="Share of 5xx."),
    timeout_rate: float = typer.Option(
        0.0, "--timeout-rate", min=0.0, max=1.0, help="Share of sends that hang."
    ),
    throttle_rate: float = typer.Option(
        0.0, "--throttle-rate", min=0.0, max=1.0, help="Share of random 429s."
    ),
    reply_rate: float = typer.Option(
        0.05, "--reply-rate", min=0.0, max=1.0, help="Share of recipients who reply."
    ),
    webhook_retry_base_s: float = typer.Option(
        5.0, "--webhook-retry-base-s", min=0.0,
        help="First webhook retry after this many seconds, doubling for each of the 7 "
        "tries (the service's 5 s: 5, 10 ... 160 s; a smaller value gives up sooner).",
    ),
) -> None:
    """Serve the sandbox (an emulation of the service) until Ctrl-C."""
    key, origin = _api_key(api_key)
    config = _config(api_key=key, seed=seed, latency_ms=latency_ms, fail_rate=fail_rate,
                     timeout_rate=timeout_rate, throttle_rate=throttle_rate,
                     reply_rate=reply_rate, webhook_retry_base_s=webhook_retry_base_s)
    _serve(config, host, port, origin)


def _api_key(given: str | None) -> tuple[str, str]:
    """The key clients must send, and where it came from (as the banner says it)."""
    from scheduler.sandbox.config import DEFAULT_API_KEY

    if given:
        return given, "from --api-key"
    if os.environ.get(KEY_ENV):
        return os.environ[KEY_ENV], f"from {KEY_ENV}"
    return DEFAULT_API_KEY, f"{DEFAULT_API_KEY} (default)"


def _config(**fields: Any) -> SandboxConfig:
    """The sandbox's configuration from the options; its problems as one error."""
    from pydantic import ValidationError

    from scheduler.sandbox import SandboxConfig

    try:
        return SandboxConfig(**fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise SchedulerError(f"sandbox settings: {problems}") from None


def _serve(config: SandboxConfig, host: str, port: int, origin: str) -> None:
    """Listen on ``host:port``, say where and with which key, and serve until Ctrl-C."""
    import uvicorn

    from scheduler.sandbox import create_app

    sock = _listen(host, port)
    shown_host = f"[{host}]" if ":" in host else host
    typer.echo(f"Sandbox serving at http://{shown_host}:{sock.getsockname()[1]}", nl=True)
    typer.echo(f"API key: {origin}. Inspect: /sandbox/sends, /sandbox/webhooks. Ctrl-C stops.")
    server = uvicorn.Server(
        uvicorn.Config(create_app(config), log_level="warning", access_log=False, lifespan="on")
    )
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def register(app: typer.Typer) -> None:
    """Add ``campaign sandbox`` to the command line."""
    app.command("sandbox")(sandbox)
