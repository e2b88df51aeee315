"""The dashboard's charts, drawn as SVG on the server: pure functions of numbers.

- :func:`funnel_svg`: horizontal bars of a channel's funnel with each stage's count and
  share, as the report's funnel chart writes them (:mod:`scheduler.ledger.funnel`);
- :func:`hourly_svg`: a column chart of sends per hour in the campaign's zone (the report's
  "sends per hour"), from sends per UTC minute (:func:`hours_of`);
- :func:`bars_svg`: a panel of labelled counts (SMS delivery by code, voice outcomes).

Every label is escaped (a campaign name or an SMS error code comes from outside); the charts
use attributes only, no inline style (the page's CSP forbids it), and scale with the page
(``viewBox``, width 100 %).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

from markupsafe import Markup, escape

from scheduler.core.units import load_zone
from scheduler.ledger.funnel import labelled_shares

#: The most hours the sends-per-hour chart shows (the latest ones).
MAX_HOURS = 72
_WIDTH = 640
_ROW = 28
_LABEL_W = 120


def _fmt(value: int) -> str:
    return f"{value:,}"


def _svg(height: int, title: str, body: list[str], *, css: str) -> Markup:
    """An SVG element of the chart width, ``title`` for screen readers."""
    return Markup(
        f'<svg class="chart {css}" viewBox="0 0 {_WIDTH} {height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg" '
        f'preserveAspectRatio="xMinYMin meet"><title>{escape(title)}</title>'
        + "".join(body) + "</svg>")


def _empty(title: str, text: str, css: str) -> Markup:
    return _svg(60, title, [f'<text class="empty" x="{_WIDTH // 2}" y="34" '
                            f'text-anchor="middle">{escape(text)}</text>'], css=css)


def funnel_svg(stages: Sequence[tuple[str, int]], channel: str, *,
               title: str = "funnel") -> Markup:
    """The funnel: a bar per stage (planned, sent, delivered …), its count and its share of
    the stage it is measured against (``98.7% of planned``, ``87.3% of sent``)."""
    if not stages:
        return _empty(title, "Nothing planned", "funnel")
    top = max((value for _, value in stages), default=0) or 1
    shares = labelled_shares(channel, [value for _, value in stages])
    span = _WIDTH - _LABEL_W - 170
    body = []
    for index, ((label, value), share) in enumerate(zip(stages, shares, strict=True)):
        y = 6 + index * _ROW
        width = max(round(span * value / top), 1 if value else 0)
        said = _fmt(value) + (f" ({share})" if share else "")
        body.append(
            f'<g class="stage" data-stage="{escape(label)}" data-value="{value}">'
            f'<text class="label" x="{_LABEL_W - 8}" y="{y + 17}" text-anchor="end">'
            f"{escape(label)}</text>"
            f'<rect class="bar" x="{_LABEL_W}" y="{y + 3}" width="{width}" height="{_ROW - 8}"'
            f' rx="2"/><text class="value" x="{_LABEL_W + width + 6}" y="{y + 17}">'
            f"{escape(said)}</text></g>")
    return _svg(12 + len(stages) * _ROW, title, body, css="funnel")


def bars_svg(rows: Sequence[tuple[str, int]], *, title: str,
             good: frozenset[str] = frozenset({"delivered", "answered"})) -> Markup:
    """A panel of labelled counts with each one's share of the panel's total."""
    total = sum(value for _, value in rows)
    if not total:
        return _empty(title, "Nothing yet", "bars")
    top = max(value for _, value in rows)
    span = _WIDTH - _LABEL_W - 150
    body = []
    for index, (label, value) in enumerate(rows):
        y = 6 + index * _ROW
        width = max(round(span * value / top), 1 if value else 0)
        css = "bar good" if label in good else "bar"
        body.append(
            f'<g data-label="{escape(label)}" data-value="{value}">'
            f'<text class="label" x="{_LABEL_W - 8}" y="{y + 17}" text-anchor="end">'
            f"{escape(label)}</text>"
            f'<rect class="{css}" x="{_LABEL_W}" y="{y + 3}" width="{width}" '
            f'height="{_ROW - 8}" rx="2"/><text class="value" x="{_LABEL_W + width + 6}" '
            f'y="{y + 17}">{_fmt(value)} ({value / total:.1%})</text></g>')
    return _svg(12 + len(rows) * _ROW, title, body, css="bars")


def hours_of(minutes: Iterable[tuple[datetime, int]], zone: str, *,
             limit: int = MAX_HOURS) -> list[tuple[datetime, int]]:
    """Sends per local hour of ``zone`` from sends per minute (aware, or naive UTC), every
    hour from the first to the last present (empty ones as 0), at most the last ``limit``."""
    tz = load_zone(zone)
    per_hour: dict[datetime, int] = {}
    for moment, n in minutes:
        aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        hour = aware.astimezone(tz).replace(minute=0, second=0, microsecond=0)
        per_hour[hour] = per_hour.get(hour, 0) + int(n)
    if not per_hour:
        return []
    first, last = min(per_hour), max(per_hour)
    first = max(first, last - timedelta(hours=limit - 1))
    out, at = [], first
    while at <= last:  # in UTC steps: a DST change neither repeats nor skips an hour
        out.append((at, per_hour.get(at, 0)))
        at = (at.astimezone(UTC) + timedelta(hours=1)).astimezone(tz)
    return out


def _tick_every(n: int) -> int:
    for step in (1, 2, 3, 4, 6, 12, 24):
        if n / step <= 12:
            return step
    return 24


def hourly_svg(hours: Sequence[tuple[datetime, int]], zone_label: str, *,
               title: str = "sends per hour") -> Markup:
    """Columns of sends per local hour (``hours`` from :func:`hours_of`); the axis says the
    hours in the campaign's zone (``zone_label``, e.g. ``-03:00``)."""
    if not hours or not any(n for _, n in hours):
        return _empty(title, "No sends yet", "hourly")
    height, left, bottom, top_pad = 220, 56, 40, 14
    plot_w, plot_h = _WIDTH - left - 10, height - bottom - top_pad
    top = max(n for _, n in hours)
    slot = min(plot_w / len(hours), 48.0)  # a run of a few hours: narrow bars, not slabs
    every = _tick_every(len(hours))
    body = [f'<line class="axis" x1="{left}" y1="{top_pad + plot_h}" x2="{_WIDTH - 10}" '
            f'y2="{top_pad + plot_h}"/>',
            f'<text class="tick" x="{left - 6}" y="{top_pad + 4}" text-anchor="end">'
            f"{_fmt(top)}</text>",
            f'<text class="tick" x="{left - 6}" y="{top_pad + plot_h}" text-anchor="end">0'
            "</text>"]
    for index, (hour, n) in enumerate(hours):
        h = round(plot_h * n / top) if n else 0
        x = left + index * slot
        when = hour.strftime("%Y-%m-%d %H:00")
        body.append(f'<rect class="bar" x="{x + slot * 0.1:.1f}" y="{top_pad + plot_h - h}" '
                    f'width="{slot * 0.8:.1f}" height="{h}" data-hour="{when}" '
                    f'data-value="{n}"><title>{when} {escape(zone_label)}: {_fmt(n)}'
                    "</title></rect>")
        if index % every == 0:
            label = hour.strftime("%H:00" if index else "%d/%m %H:00")
            body.append(f'<text class="tick" x="{x + slot / 2:.1f}" y="{height - 22}" '
                        f'text-anchor="middle">{label}</text>')
    body.append(f'<text class="axis-title" x="{left + plot_w / 2:.0f}" y="{height - 4}" '
                f'text-anchor="middle">hour ({escape(zone_label)})</text>')
    return _svg(height, title, body, css="hourly")

