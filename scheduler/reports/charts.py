"""The report's two charts as PNG files (matplotlib, Agg), for people who open no spreadsheet.

Figures are built with the object API (``Figure`` + ``FigureCanvasAgg``): no pyplot, no
global state, nothing to close, safe in threads and in a server.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:  # matplotlib is imported when a chart is drawn
    from matplotlib.figure import Figure

_SIZE = (10.0, 5.0)
_DPI = 110
_BLUE = "#2f6db5"


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
        ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"{title}: sends per hour ({zone})")
    fig.tight_layout()
    _save(fig, path)


def funnel_png(path: Path, funnel: Sequence[tuple[str, int]], title: str) -> None:
    """A horizontal bar funnel with each stage's count and share of the first stage."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=_SIZE)
    ax = fig.add_subplot()
    labels = [label for label, _ in funnel]
    values = [value for _, value in funnel]
    first = values[0] if values else 0
    bars = ax.barh(labels, values, color=_BLUE)
    ax.invert_yaxis()
    top = max(values, default=0) or 1
    ax.set_xlim(0, top * 1.25)
    for bar, value in zip(bars, values, strict=True):
        share = f" ({value / first:.1%})" if first else ""
        ax.text(bar.get_width() + top * 0.01, bar.get_y() + bar.get_height() / 2,
                f"{value:,}{share}", va="center")  # fmt: skip
    ax.set_title(f"{title}: funnel")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    _save(fig, path)
