"""Run an ASGI app (sandbox, webhook receiver) on a real loopback port in a background thread,
or a command's server in the foreground.

Used by the demo, by ``campaign run`` for its receiver, and by the tests: a real uvicorn
server on a real socket, never a mocked transport. Port 0 picks a free port.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.datastructures import Headers
from starlette.types import Scope

from scheduler.core.errors import SchedulerError
from scheduler.core.timeutil import monotonic


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (an address, brackets allowed, or ``localhost``) is this machine."""
    if not host:
        return False
    name = host.strip().strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_header(scope: Scope) -> str:
    """The host name the browser asked for (the ``Host`` header without its port)."""
    host = Headers(scope=scope).get("host", "")
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def client_host(scope: Scope) -> str:
    """The peer's address ('' when the server does not say)."""
    client = scope.get("client")
    return str(client[0]) if client else ""


def try_bind(host: str, port: int) -> socket.socket | None:
    """A TCP socket bound to ``host:port`` (0: a free port), or ``None`` when that is taken.

    ``proto=IPPROTO_TCP``: asyncio sets TCP_NODELAY on accepted sockets only when the
    listener says TCP; without it every response waits ~40 ms for a delayed ACK.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        return None
    return sock


def bind(host: str, port: int) -> socket.socket:
    """:func:`try_bind`, or a :class:`SchedulerError` naming the address."""
    sock = try_bind(host, port)
    if sock is None:
        raise SchedulerError(f"cannot listen on {host}:{port}: the address is in use or "
                             "not available")
    return sock


def serve_until_stopped(app: Any, sock: socket.socket, graceful_s: int | None = 1) -> None:
    """Serve ``app`` on ``sock`` in this thread until Ctrl-C (uvicorn re-raises it), then
    close ``sock``: the foreground commands (``campaign api``, ``dashboard``, ``receiver``)."""
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=graceful_s)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


@dataclass
class BackgroundServer:
    """A uvicorn server on ``host:port`` in a daemon thread; use as a context manager."""

    app: Any
    host: str = "127.0.0.1"
    port: int = 0
    log_level: str = "warning"
    #: A socket already bound (e.g. checked free before planning); ``host``/``port`` follow it.
    sock: socket.socket | None = None
    _server: uvicorn.Server | None = field(default=None, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)
    _socket: socket.socket | None = field(default=None, init=False, repr=False)

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the running server."""
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 10.0) -> BackgroundServer:
        """Bind the socket, start serving, and return once the server accepts requests."""
        if self.sock is not None:
            sock = self.sock
            self.host, self.port = sock.getsockname()[:2]
        else:
            sock = bind(self.host, self.port)
        self.port = sock.getsockname()[1]
        self._socket = sock
        config = uvicorn.Config(
            self.app,
            log_level=self.log_level,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True,
            name=f"uvicorn:{self.port}",
        )
        self._thread.start()
        deadline = monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or monotonic() > deadline:
                raise SchedulerError(f"server on {self.base_url} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Ask the server to finish and wait for its thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._socket is not None:
            self._socket.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
