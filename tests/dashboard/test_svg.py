"""The dashboard's SVG charts: what they draw from given numbers (pure, fixed datetimes)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

from scheduler.dashboard.svg import bars_svg, funnel_svg, hourly_svg, hours_of

NS = "{http://www.w3.org/2000/svg}"


def _tree(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # well-formed XML, or this raises


def test_the_funnel_draws_a_bar_per_stage_with_its_count_and_share() -> None:
    svg = funnel_svg([("Planned", 200), ("Sent", 150), ("Delivered", 120), ("Read", 0)],
                     "whatsapp")
    root = _tree(svg)
    stages = {g.get("data-stage"): g for g in root.iter(f"{NS}g")}
    assert list(stages) == ["Planned", "Sent", "Delivered", "Read"]
    widths = {k: int(g.find(f"{NS}rect").get("width")) for k, g in stages.items()}
    assert widths["Planned"] > widths["Sent"] > widths["Delivered"] > widths["Read"] == 0
    assert abs(widths["Sent"] / widths["Planned"] - 0.75) < 0.01
    values = [g.findall(f"{NS}text")[1].text for g in stages.values()]
    assert values[0] == "200"
    assert values[1] == "150 (75.0% of planned)"
    assert values[2] == "120 (80.0% of sent)"


def test_labels_from_outside_are_escaped() -> None:
    hostile = '<script>alert(1)</script>"&'
    svg = str(bars_svg([(hostile, 3), ("delivered", 1)], title=hostile))
    assert "<script>" not in svg
    root = _tree(svg)
    assert root.find(f"{NS}title").text == hostile
    assert [g.get("data-label") for g in root.iter(f"{NS}g")] == [hostile, "delivered"]
    assert "3 (75.0%)" in svg
    assert 'class="bar good"' in svg  # delivered is drawn as what went well


def test_sends_per_hour_are_counted_in_the_campaigns_zone_with_empty_hours() -> None:
    minutes = [(datetime(2026, 11, 23, 12, 5, tzinfo=UTC), 3),
               (datetime(2026, 11, 23, 12, 59, tzinfo=UTC), 2),
               (datetime(2026, 11, 23, 15, 0), 7)]  # naive: UTC, as the ledger's
    hours = hours_of(minutes, "America/Sao_Paulo")
    assert [(h.strftime("%H:%M %z"), n) for h, n in hours] == [
        ("09:00 -0300", 5), ("10:00 -0300", 0), ("11:00 -0300", 0), ("12:00 -0300", 7)]
    root = _tree(hourly_svg(hours, "-03:00"))
    bars = [r for r in root.iter(f"{NS}rect")]
    assert [int(r.get("data-value")) for r in bars] == [5, 0, 0, 7]
    assert int(bars[3].get("height")) > int(bars[0].get("height")) > 0
    assert int(bars[1].get("height")) == 0
    assert "hour (-03:00)" in str(hourly_svg(hours, "-03:00"))


def test_a_long_run_shows_its_last_hours_only() -> None:
    minutes = [(datetime(2026, 11, 20, 0, 0, tzinfo=UTC), 1),
               (datetime(2026, 11, 23, 23, 0, tzinfo=UTC), 1)]
    hours = hours_of(minutes, "UTC", limit=10)
    assert len(hours) == 10 and hours[-1][0].hour == 23 and hours[0][0].hour == 14


def test_charts_without_numbers_say_so() -> None:
    assert "No sends yet" in hourly_svg([], "UTC")
    assert "Nothing planned" in funnel_svg([], "whatsapp")
    assert "Nothing yet" in bars_svg([("delivered", 0)], title="SMS")
    for svg in (hourly_svg([], "UTC"), funnel_svg([], "sms")):
        _tree(svg)
        assert not re.search(r"style=", str(svg))  # the CSP forbids inline style
