"""``campaign preview FILE [--rows N] [--json]``: the requests the first N recipients cost.

Each request is built by the run's channel (:meth:`Channel.requests
<scheduler.dispatch.channel.Channel.requests>`), the code that sends them, over the plan's
rows as the ledger stores them, grouped as the engine groups them
(:meth:`~scheduler.dispatch.channel.Channel.group_key`, up to the batch size): a WhatsApp
message per recipient and step with the first sender as ``sessionId``; an ``sms/bulk`` of
the recipients who read the same text (``sms/send`` for a text of its own); a
``voice/bulk`` of the recipients of one audio or flow with their ``variables``. What is
shown is the body that goes on the wire, nothing rebuilt for display.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from scheduler.core.display import clean, clean_markup

if TYPE_CHECKING:  # imported when the command runs (`campaign --help` registers it)
    from scheduler.campaign.loader import Campaign
    from scheduler.dispatch.channel import Channel
    from scheduler.ledger.rows import DueDelivery

FileArg = typer.Argument(..., help="The campaign definition (TOML).", show_default=False)


def engine_settings(campaign: Campaign) -> dict[str, Any]:
    """The settings' part of the engine's options (prices, bounds) for ``campaign``'s
    project; the defaults, said on stderr, when the settings cannot be read."""
    from scheduler.core.errors import SchedulerError
    from scheduler.settings.load import load_settings

    try:
        return load_settings(near=campaign.path).engine_overrides()
    except SchedulerError as exc:
        from rich.console import Console

        Console(stderr=True).print(f"[yellow]settings not read, defaults used:[/] {exc}",
                                   markup=True, highlight=False)
        return {}


def campaign_channel(campaign: Campaign, overrides: dict[str, Any] | None = None) -> Channel:
    """The channel a run of ``campaign`` sends on, set up as the run would be: the
    campaign's ``[pace]`` batch and calls, the settings' prices and bounds (``overrides``:
    :func:`engine_settings`, read when not given)."""
    from scheduler.campaign.options import run_options
    from scheduler.core.timeutil import utcnow
    from scheduler.dispatch.channels import channel_for
    from scheduler.dispatch.options import DispatchOptions

    if overrides is None:
        overrides = engine_settings(campaign)
    options = DispatchOptions.for_run(run_options(campaign), start=utcnow(), **overrides)
    return channel_for(campaign.spec.channel, options)


def _due(item: dict[str, Any], seq: int) -> DueDelivery:
    """A plan row as the dispatcher reads it back from the ledger."""
    from scheduler.ledger.plan_rows import planned_delivery

    return planned_delivery(item["step"], item["to"], item["path"], item["payload"], seq=seq,
                            region=item.get("region"))


def group_rows(channel: Channel, rows: list[DueDelivery]) -> list[list[DueDelivery]]:
    """``rows`` (plan order) in the requests the engine makes of them: one row each on a
    one-by-one channel; else per step, the first row with the next rows of its group, up
    to the batch size (as :func:`scheduler.dispatch.picking.pick` takes them)."""
    if channel.batch_size == 1:
        return [[row] for row in rows]
    by_step: dict[int, list[DueDelivery]] = defaultdict(list)
    for row in rows:
        by_step[row.step].append(row)
    groups: list[list[DueDelivery]] = []
    for step in sorted(by_step):
        open_groups: dict[object, list[DueDelivery]] = {}
        for row in by_step[step]:
            key = channel.group_key(row)
            group = open_groups.get(key)
            if group is None or len(group) >= channel.batch_size:
                group = open_groups[key] = []
                groups.append(group)
            group.append(row)
    return groups


def _preview(path: Path, rows: int) -> tuple[list[dict[str, Any]], int]:
    """The requests of the first ``rows`` valid recipients, in the order they are sent, and
    the channel's batch size.

    WhatsApp: ``{row, step, to, endpoint, body}`` per message; SMS and voice:
    ``{step, rows, to, endpoint, body}`` per request (``rows`` and ``to`` are lists).
    """
    from scheduler.campaign.plan import build_plan, load_campaign
    from scheduler.settings.run import SESSION_CHANNELS
    from scheduler.usecases.label_lookup import project_label_audience
    from scheduler.usecases.link_setup import bind_preview, refuse_unlinkable
    from scheduler.usecases.lookups import require_remote

    campaign = load_campaign(path)
    require_remote(campaign)
    refuse_unlinkable(campaign)
    bind_preview(campaign)  # tracked links: the length a run's have, not resolving
    channel = campaign_channel(campaign)
    plan = build_plan(campaign, chunk_rows=max(100, min(rows * 4, 50_000)), strict=True,
                      labels=project_label_audience(campaign))
    sender = campaign.preview_session if campaign.spec.channel in SESSION_CHANNELS \
        else campaign.senders[0]
    due: list[DueDelivery] = []
    numbers: dict[int, int] = {}
    variants: dict[int, str] = {}
    recipients: set[int] = set()
    for chunk in plan.chunks():
        for item in chunk:
            if item["state"] not in ("planned", "held"):
                continue
            if item["row"] not in recipients:
                if len(recipients) >= rows:
                    break
                recipients.add(item["row"])
            # A/B variants: a held recipient (waiting for the winner) shows every variant
            for variant, payload in _variants_of(item):
                row = _due({**item, "payload": payload}, len(due))
                numbers[row.seq] = item["row"]
                if variant is not None:
                    variants[row.seq] = variant
                due.append(row)
        else:
            continue
        break
    out: list[dict[str, Any]] = []
    for group in group_rows(channel, due):
        for request in channel.requests(group, sender):
            if channel.batch_size == 1:
                out.append({"row": numbers[group[0].seq], "step": group[0].step,
                            "to": group[0].to, "endpoint": request.path, "body": request.body})
                if group[0].seq in variants:
                    out[-1]["variant"] = variants[group[0].seq]
            else:
                out.append({"step": group[0].step, "rows": [numbers[r.seq] for r in group],
                            "to": [r.to for r in group], "endpoint": request.path,
                            "body": request.body})
    return out, channel.batch_size


def _variants_of(item: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    """(variant, payload) of a plan row: its own, or every variant's of a held row
    (marked ``B?``: the rest gets the winner, one of them)."""
    choices = item.get("choices")
    if item["state"] == "held" and choices:
        return [(f"{name}?", payload) for name, payload in choices.items()]
    return [(item.get("variant"), item["payload"])]


def _rows(numbers: list[int], width: int = 24) -> str:
    """CSV row numbers, consecutive ones as ranges (``1-3, 7``), cut with ``…`` past
    ``width`` characters (the panel's body lists every recipient)."""
    ranges: list[list[int]] = []
    for n in numbers:
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    shown = ""
    for first, last in ranges:
        part = str(first) if first == last else f"{first}-{last}"
        if shown and len(shown) + len(part) + 2 > width:
            return f"{shown}, …"
        shown = f"{shown}, {part}" if shown else part
    return shown


def _title(item: dict[str, Any]) -> str:
    """A panel's title, short enough for an 80-column border."""
    if isinstance(item["to"], list):
        count = len(item["to"])
        who = f"{count} recipient{'s' if count != 1 else ''} (rows {_rows(item['rows'])})"
        return f"{item['endpoint']} · step {item['step']} · {who}"
    variant = item.get("variant")
    shown = f" · {variant}" if variant else ""
    return (f"row {item['row']} → {item['to']} · step {item['step']}{shown} · "
            f"{item['endpoint']}")


def preview(
    file: Path = FileArg,
    rows: int = typer.Option(3, "--rows", min=1, help="How many recipients to show."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of panels."),
) -> None:
    """Show the requests the first N valid recipients are sent with, as the client sends
    them (SMS and voice: the bulk bodies)."""
    items, batch = _preview(file, rows)
    if as_json:
        typer.echo(json.dumps(items, ensure_ascii=False))
        return
    from rich.console import Console
    from rich.json import JSON
    from rich.panel import Panel
    from rich.text import Text

    console = Console(highlight=False)
    if any("variant" in item for item in items):
        console.print("variants: the recipient's follows the step; a name with ? is a "
                      "recipient\nof the rest, who gets the test's winner, one of those "
                      "shown", markup=False)
    for item in items:
        body = item["body"]
        title = clean_markup(_title(item))
        text = body.get("text") or body.get("caption") or body.get("content")
        if isinstance(text, str) and len(body) <= 3 and not isinstance(item["to"], list):
            # the message as the recipient reads it, wrapped at the console's width
            shown_text = Text(clean(text), overflow="fold")
            console.print(Panel(shown_text, title=title, title_align="left"))
        else:
            shown = JSON.from_data(body, ensure_ascii=False)
            shown.text.no_wrap, shown.text.overflow = False, "fold"  # a long text wraps
            console.print(Panel(shown, title=title, title_align="left"))
    if items and isinstance(items[0]["to"], list):
        first = f"the first {rows} recipient{'s' if rows != 1 else ''} (--rows)"
        console.print(f"{first}; a run puts up to {batch} recipients of the same text or "
                      "call in one request ([pace] batch)", markup=False)
