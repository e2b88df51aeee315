"""Widths from the content and header heights (``scheduler.reports.layout``), pure."""

from __future__ import annotations

from datetime import datetime

from scheduler.reports import layout


def test_a_date_column_is_wide_enough_for_a_date_time() -> None:
    width = layout.width_for([(datetime(2026, 11, 23, 14, 0), "date")])
    assert width >= len("2026-11-23 14:00:00") + 2


def test_numbers_text_and_headers_set_the_width() -> None:
    assert layout.width_for([(1_234_567, "int")]) == len("1,234,567") + 3
    assert layout.width_for([("invalid_number", "user_text")]) == len("invalid_number") + 2
    # a header wraps in two lines at most, never cutting a word
    assert layout.width_for([(0.5, "percent")], "Delivered (% of sent)") == 13
    assert layout.width_for([], "Opt-outs") == 10
    assert layout.width_for([("x" * 200, "user_text")]) == layout.MAX_WIDTH
    long_text = "the embedded sandbox on this machine (no real messages)"
    assert layout.width_for([(long_text, "capped_text")]) == layout.CAPPED_TEXT + 2


def test_a_header_row_is_as_tall_as_its_most_wrapped_header() -> None:
    one = layout.header_height(["Run", "Sender"], [8, 10])
    two = layout.header_height(["Run", "Replied (% of sent)"], [8, 12])
    assert two - one == layout.LINE_POINTS
    assert layout.lines_of("Replied (% of sent)", 12) == 2
