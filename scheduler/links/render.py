"""``link("https://…")`` as campaign templates see it (a Jinja global, see
``scheduler.campaign.rendering.make_environment``).

What a short link needs at render time and where it comes from:

- the run id, the signing key and the public base: a :class:`LinkBinding` the planner binds
  to the campaign's :class:`Linker` before rendering (``scheduler.usecases.link_setup``; worker
  processes of a plan get the same binding with their campaign);
- the recipient's CSV row and number: the plan puts them in each row's render context under
  :data:`LINK_ROW` (a key no CSV column can have: slugs are ``[a-z0-9_]``);
- the step: each step's renderer adds :data:`LINK_STEP`.

The run id is known when rows are rendered: ``plan_run`` creates the run, then the plan's
chunks are rendered as they are stored (and a re-plan keeps its run). So a token names
(run, row, link) directly and nothing maps plans to runs afterwards.

A link's index is its place among the run's distinct (step, address) pairs, numbered from a
scan of the templates before any row is rendered (:func:`link_addresses`, in step order);
a re-plan keeps the numbers the run already has and adds new ones after them
(:func:`number_links`), so a link already sent keeps its address. Hence the address must
be written in the template as a quoted string: a variable address has no number, and
rendering it is an error that says so. With tracking off (``track_links = false``),
``link(x)`` is ``x``.

Without a run (``campaign validate``, ``preview``, ``plan``) the link is made with the run
id :data:`PREVIEW_RUN_ID` and a throw-away key: the same length as a run's link up to run
16,383 (so SMS segments and body bounds are counted right), but it does not resolve.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from jinja2 import nodes, pass_context
from jinja2.runtime import Context

from scheduler.links.tokens import LINK_PATH, LinkRef, make_token

#: Render-context key of the recipient: (CSV row, number digits).
LINK_ROW = "link:row"
#: Render-context key of the step's index.
LINK_STEP = "link:step"
#: The run id of links made without a run (the largest with a two-byte varint).
PREVIEW_RUN_ID = 16_383
_PREVIEW_KEY = b"preview links do not resolve...."
SETTING_HINT = ("set webhook_url in config.toml (the receiver's public address), or "
                "track_links = false in the campaign to send the addresses as they are")

LinkKey = tuple[int, str]  # (step index, address)


@dataclass(frozen=True)
class LinkBinding:
    """How ``link()`` renders: ``off`` (the address as it is), ``preview`` (no run) or
    ``run``; picklable, for a plan's worker processes."""

    mode: Literal["off", "preview", "run"]
    base: str = ""
    key: bytes = _PREVIEW_KEY
    run_id: int = PREVIEW_RUN_ID
    numbers: Mapping[LinkKey, int] = field(default_factory=dict)


def link_addresses(ast: nodes.Template) -> list[str | None]:
    """The addresses of the ``link()`` calls in a template, in order: each quoted one, and
    ``None`` for one that is not a quoted string (a variable, an expression)."""
    found: list[str | None] = []
    for call in ast.find_all(nodes.Call):
        if isinstance(call.node, nodes.Name) and call.node.name == "link":
            first = call.args[0] if call.args else None
            constant = isinstance(first, nodes.Const) and isinstance(first.value, str)
            found.append(first.value if constant else None)  # type: ignore[union-attr]
    return found


def number_links(steps: Iterable[tuple[int, Iterable[str]]],
                 existing: Mapping[LinkKey, int] | None = None) -> dict[LinkKey, int]:
    """Every (step, address) numbered: ``existing`` numbers kept, new pairs after them in
    step and template order."""
    numbers = dict(existing or {})
    following = max(numbers.values(), default=-1) + 1
    for step, addresses in steps:
        for address in addresses:
            if (step, address) not in numbers:
                numbers[(step, address)] = following
                following += 1
    return numbers


def check_address(address: Any) -> str | None:
    """Why ``address`` cannot be a tracked link's target, or ``None``."""
    if not isinstance(address, str):
        return f"link() takes an address (a quoted string), not {type(address).__name__}"
    if any(c.isspace() for c in address):
        return f"link() address {address!r} has a space in it"
    parts = urlsplit(address)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"link() takes an http(s):// address with a host, not {address!r}"
    return None


class Linker:
    """The ``link`` global of one campaign's templates."""

    def __init__(self, track: bool = True) -> None:
        self.track = track
        self.binding: LinkBinding | None = None if track else LinkBinding("off")

    def bind(self, binding: LinkBinding) -> None:
        """Render links as ``binding`` says (``off`` whatever it says when not tracking)."""
        self.binding = binding if self.track else LinkBinding("off")

    @pass_context
    def __call__(self, context: Context, address: Any) -> str:
        """The short link of ``address`` for this row and step (see the module doc)."""
        binding = self.binding
        if binding is not None and binding.mode == "off":
            return str(address)
        problem = check_address(address)
        if problem is not None:
            raise ValueError(problem)
        if binding is None:
            raise ValueError(f"link(): no public address for tracked links: {SETTING_HINT}")
        recipient = context.get(LINK_ROW)
        step = context.get(LINK_STEP)
        if recipient is None or step is None:
            raise ValueError("link() is only rendered for a recipient of a step")
        number = binding.numbers.get((step, address))
        if number is None:
            raise ValueError(f"link({address!r}): write the address in the template as a "
                             "quoted string, link(\"https://…\"), not a variable or an "
                             "included file's: each link of a run is numbered before rows "
                             "are rendered")
        row, to = recipient
        token = make_token(binding.key, LinkRef(binding.run_id, row, number), to)
        return f"{binding.base}{LINK_PATH}{token}"
