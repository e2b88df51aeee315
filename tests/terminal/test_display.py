"""The terminal's shared helpers: times with their zone, durations in words, outside text
made harmless, tables that wrap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from rich.console import Console

from scheduler.core.display import clean, clean_markup, table
from scheduler.core.time_words import clock_time, iso_utc, local_time, span, zone_label

AT = datetime(2026, 11, 23, 12, 2, 57, 252787, tzinfo=UTC)


def test_times_are_shown_in_the_campaigns_zone_with_its_label() -> None:
    assert local_time(AT, "America/Sao_Paulo") == "2026-11-23 09:02 -03:00"
    assert local_time(AT, "America/Sao_Paulo", seconds=True) == "2026-11-23 09:02:57 -03:00"
    assert local_time(AT, "America/New_York") == "2026-11-23 07:02 EST"
    assert local_time(AT, "Asia/Kolkata") == "2026-11-23 17:32 IST"
    assert local_time(AT, "UTC") == "2026-11-23 12:02 UTC"
    assert local_time(None, "UTC") == "–"
    # a naive moment (as SQLite may give one back) is the ledger's UTC
    assert local_time(AT.replace(tzinfo=None), "America/Sao_Paulo") == "2026-11-23 09:02 -03:00"
    assert clock_time(AT, "America/Sao_Paulo") == "09:02:57 -03:00"


def test_a_zone_without_letters_is_labelled_by_its_offset() -> None:
    assert zone_label(AT.astimezone(timezone(timedelta(hours=5, minutes=45)))) == "+05:45"
    assert zone_label(AT.astimezone(timezone(timedelta(hours=-3)))) == "-03:00"


def test_json_times_are_iso_utc_without_microseconds() -> None:
    assert iso_utc(AT.astimezone(timezone(timedelta(hours=-3)))) == "2026-11-23T12:02:57+00:00"
    assert iso_utc(None) is None


def test_durations_are_said_in_words() -> None:
    assert span(45.4) == "45 s"
    assert span(timedelta(minutes=12, seconds=15)) == "12 min"
    assert span(timedelta(hours=3, minutes=5)) == "3 h 05 min"
    assert span(timedelta(days=2517, hours=13, minutes=50, seconds=43.25)) == "2,517 days 13 h"


def test_control_characters_from_outside_are_shown_as_escapes() -> None:
    hostile = "loja\x1b[31m-01\x07\r\x9b2J"
    assert clean(hostile) == "loja\\x1b[31m-01\\x07\\x0d\\x9b2J"
    assert clean("linha 1\nlinha 2\tfim") == "linha 1\nlinha 2\tfim"
    console = Console(width=80, record=True, color_system=None, force_terminal=False)
    console.print(f"[bold]sender[/] {clean_markup('[red]x[/red]' + hostile)}")
    shown = console.export_text()
    assert "\x1b" not in shown and "[red]x[/red]loja\\x1b[31m-01" in shown


def test_tables_wrap_cells_instead_of_cutting_them() -> None:
    shown = table("sender", "message", show_edge=False)
    shown.add_row("loja-sp-01", "Seja bem-vindo(a) à Loja Exemplo em Porto Alegre. A partir "
                                "de agora você recebe por aqui as novidades e ofertas.")
    console = Console(width=40, record=True, color_system=None)
    console.print(shown)
    text = console.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 40
    assert "ofertas." in text and "você" in text
