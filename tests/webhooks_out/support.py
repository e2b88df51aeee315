"""A webhook receiver of the tests' own on loopback: records every POST (headers and body),
answers a set status, and can be down (not listening) and up again on the same port."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import standardwebhooks

#: A Standard Webhooks secret for the tests (32 bytes of base64).
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@dataclass(frozen=True)
class Received:
    """One POST as the receiver got it."""

    headers: dict[str, str]
    body: bytes

    def verified(self, secret: str = SECRET) -> Any:
        """The body, parsed, once ``standardwebhooks`` has checked its signature."""
        return standardwebhooks.Webhook(secret).verify(self.body, self.headers)


class _Server(ThreadingHTTPServer):
    allow_reuse_address = True  # up again on the same port
    daemon_threads = True
    request_queue_size = 128  # a batch's connections at once (the default backlog is 5)


class Receiver:
    """A threaded HTTP server on 127.0.0.1 recording what is POSTed to ``/hook``."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.status = 204
        self.lock = threading.Lock()
        self.port = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.up()

    @property
    def url(self) -> str:
        """Where subscriptions point."""
        return f"http://127.0.0.1:{self.port}/hook"

    def up(self) -> None:
        """Listen (again, on the same port once it had one)."""
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(size)
                with owner.lock:
                    owner.received.append(Received(dict(self.headers.items()), body))
                    status = owner.status
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        self._server = _Server(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def down(self) -> None:
        """Stop listening (connections are refused until :meth:`up`)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def bodies(self) -> list[Any]:
        """Every body received, each verified."""
        with self.lock:
            return [r.verified() for r in self.received]

    def ids(self) -> list[str]:
        """The ``webhook-id`` of every POST, in order."""
        with self.lock:
            return [{k.lower(): v for k, v in r.headers.items()}["webhook-id"]
                    for r in self.received]
