"""The receiver's ``GET /r/{token}``: a tracked link's redirect.

A token that is not one of ours (malformed, a changed character, a run or link the ledger
does not have, a MAC that matches no recipient of its row) is answered ``404`` and stores
nothing. A valid one is answered ``302`` to the link's address, after the hit is stored
(:mod:`scheduler.links.clicks` says whether it counts). ``HEAD`` is answered the same way
(stored, not counted).

What is stored about a hit: the run, the link, the delivery (so the recipient's row and
number, which the ledger already holds), the time, the user agent (first 300 characters),
whether it counts as a click and why not. Nothing about the IP address: the receiver
sits behind whatever gives it its public address (a reverse proxy, a tunnel), so the
address it sees is that proxy's, and a forwarded header can be forged by anyone.

The database work runs on the receiver's writer thread (``run``), one transaction per hit.
A ledger that cannot be read or written is answered ``503``: the address is in the ledger.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from functools import partial
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from scheduler.ledger.exceptions import LedgerError
from scheduler.ledger.link_store import LinkStore
from scheduler.links.clicks import judge, stored_user_agent
from scheduler.links.exceptions import BadToken, LinkError
from scheduler.links.keys import link_key
from scheduler.links.tokens import LINK_PATH, ParsedToken, parse_token
from scheduler.settings.load import Settings

logger = logging.getLogger("scheduler.links")

Runner = Callable[..., Awaitable[Any]]
_NO_STORE = {"cache-control": "no-store", "referrer-policy": "no-referrer"}


def follow(store: LinkStore, parsed: ParsedToken, key: bytes, *, method: str,
           user_agent: str | None, now: datetime) -> str | None:
    """The address of a valid token, its hit stored; ``None`` (nothing stored) otherwise."""

    def verdict(to: str, sent_at: datetime | None) -> tuple[bool, str | None] | None:
        if not parsed.signed_for(key, to):
            return None
        found = judge(method=method, user_agent=user_agent, sent_at=sent_at, now=now)
        return found.counted, found.why_not

    ref = parsed.ref
    return store.follow(ref.run_id, ref.link, ref.row, verdict,
                        user_agent=stored_user_agent(user_agent), now=now)


class LinkRoute:
    """``GET /r/{token}`` over a ledger, with the project's key (read until there is one:
    the first plan with links makes it, maybe after this receiver started)."""

    def __init__(self, settings: Settings, store: LinkStore, clock: Callable[[], datetime],
                 run: Runner) -> None:
        self.settings, self.store, self.clock, self.run = settings, store, clock, run
        self._key: bytes | None = None

    def key(self) -> bytes | None:
        """The signing key, or ``None`` while the project has none (no link was made)."""
        if self._key is None:
            try:
                self._key = link_key(self.settings, create=False)
            except LinkError as exc:
                logger.warning("tracked links: %s", exc)
        return self._key

    async def handle(self, request: Request) -> Response:
        """Redirect a valid token (its hit stored); 404 for anything else."""
        try:
            parsed = parse_token(request.path_params["token"])
        except BadToken:
            return _not_found()
        key = self.key()
        if key is None:
            return _not_found()
        try:
            url = await self.run(partial(follow, self.store, parsed, key,
                                         method=request.method,
                                         user_agent=request.headers.get("user-agent"),
                                         now=self.clock()))
        except LedgerError as exc:
            logger.error("a tracked link could not be followed: %s", exc)
            return PlainTextResponse("the link cannot be followed right now; try again "
                                     "later\n", status_code=503, headers=_NO_STORE)
        if url is None:
            return _not_found()
        return RedirectResponse(url, status_code=302, headers=_NO_STORE)


def _not_found() -> Response:
    return PlainTextResponse("no such link\n", status_code=404, headers=_NO_STORE)


def add_link_routes(app: Starlette, settings: Settings, store: LinkStore,
                    clock: Callable[[], datetime], run: Runner) -> None:
    """Add ``GET /r/{token}`` to the receiver's ``app`` (``run(fn)`` runs the ledger work
    off the event loop: the receiver's writer thread)."""
    route = LinkRoute(settings, store, clock, run)
    app.router.add_route(f"{LINK_PATH}{{token}}", route.handle, methods=["GET"])
