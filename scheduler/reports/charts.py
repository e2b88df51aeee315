"""The report's charts as PNG files (matplotlib, Agg), for people who open no spreadsheet:
sends per hour, the funnel, and one per channel of SMS and voice runs (SMS delivery by
error code; voice outcomes beside the digits pressed).

Figures are built with the object API (``Figure`` + ``FigureCanvasAgg``): no pyplot, no
global state, nothing to close, safe in threads and in a server.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:  # matplotlib is imported when a chart is drawn
    from matplotlib.figure import Figure

_SIZE = (10.0, 5.0)
_DPI = 110
_BLUE = "#2f6db5"
_GREEN = "#3a8f4b"
_RED = "#c0504d"
_GREY = "#a0a0a0"
#: Bars of what went well, and of what is not known yet (other bars are ``_RED``/``_BLUE``).
GOOD = frozenset({"delivered", "answered"})
WAITING = frozenset({"no report yet", "no outcome yet", "no key pressed", "no error code"})


def _save(fig: Figure, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    with warnings.catch_warnings():
        # A campaign name with an emoji has no glyph in the default font: a box is fine.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font")
        fig.savefig(path, format="png", dpi=_DPI)


def sends_per_hour_png(path: Path, hourly: pd.DataFrame, title: str, zone: str) -> None:
    """A column chart of sends per hour (``hourly``: ``hour`` naive local, ``sends``)."""
    import matplotlib.dates as mdates
    from matplotlib.figure import Figure

    fig = Figure(figsize=_SIZE)
    ax = fig.add_subplot()
    if hourly.empty or not hourly["sends"].sum():
        ax.text(0.5, 0.5, "No sends yet", ha="center", va="center", fontsize=16,
                transform=ax.transAxes)  # fmt: skip
        ax.set_xticks([])
        ax.set_yticks([])
    else:
        hours = [h.to_pydatetime() for h in hourly["hour"]]
        ax.bar(hours, hourly["sends"].tolist(), width=0.8 / 24, align="edge", color=_BLUE)
        locator = mdates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        ax.set_ylabel("sends")
        ax.set_xlabel(f"hour ({zone})")
        ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"{title}: sends per hour ({zone})")
    fig.tight_layout()
    _save(fig, path)


def funnel_png(path: Path, funnel: Sequence[tuple[str, int]], title: str,
               channel: str = "whatsapp") -> None:  # fmt: skip
    """A horizontal bar funnel with each stage's count and its rate, as the Summary gives
    it (:mod:`scheduler.ledger.funnel`: sent of planned, later stages of sent)."""
    from matplotlib.figure import Figure

    from scheduler.dispatch.channels import channel_unit
    from scheduler.ledger.funnel import labelled_shares

    fig = Figure(figsize=_SIZE)
    ax = fig.add_subplot()
    labels = [label for label, _ in funnel]
    values = [value for _, value in funnel]
    bars = ax.barh(labels, values, color=_BLUE)
    ax.invert_yaxis()
    top = max(values, default=0) or 1
    ax.set_xlim(0, top * 1.35)
    for bar, value, share in zip(bars, values, labelled_shares(channel, values), strict=True):
        ax.text(bar.get_width() + top * 0.01, bar.get_y() + bar.get_height() / 2,
                f"{value:,}" + (f" ({share})" if share else ""), va="center")  # fmt: skip
    ax.set_xlabel(channel_unit(channel))
    ax.set_title(f"{title}: funnel")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    _save(fig, path)


#: One panel of a channel chart: its title and ``(label, count)`` bars, top to bottom.
Panel = tuple[str, Sequence[tuple[str, int]]]


def _bars(ax: Any, panel: Panel, neutral: str) -> None:
    """Horizontal bars with each count and its share of the panel's total."""
    title, rows = panel
    labels = [label for label, _ in rows]
    values = [value for _, value in rows]
    total = sum(values)
    ax.set_title(title)
    if not total:
        ax.text(0.5, 0.5, "Nothing yet", ha="center", va="center", fontsize=14,
                transform=ax.transAxes)  # fmt: skip
        ax.set_xticks([])
        ax.set_yticks([])
        return
    colours = [_GREEN if label in GOOD else _GREY if label in WAITING else neutral
               for label in labels]  # fmt: skip
    from matplotlib.ticker import MaxNLocator

    bars = ax.barh(labels, values, color=colours)
    ax.invert_yaxis()
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    top = max(values)
    ax.set_xlim(0, top * 1.3)
    for bar, value in zip(bars, values, strict=True):
        ax.text(bar.get_width() + top * 0.01, bar.get_y() + bar.get_height() / 2,
                f"{value:,} ({value / total:.1%})", va="center")  # fmt: skip
    ax.grid(axis="x", alpha=0.3)


def channel_png(path: Path, panels: Sequence[Panel], title: str) -> None:
    """One channel's chart: its panels side by side (error codes red, digits blue)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(_SIZE[0] * (1 if len(panels) < 2 else 1.3), _SIZE[1]))
    axes = fig.subplots(1, max(len(panels), 1), squeeze=False)[0]
    for index, (ax, panel) in enumerate(zip(axes, panels, strict=False)):
        _bars(ax, panel, _RED if index == 0 else _BLUE)
    fig.suptitle(title)
    fig.tight_layout()
    _save(fig, path)
