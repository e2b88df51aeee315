"""Helpers of the privacy tests: a project with one named person among others, and the scan
of every text and JSON column of every table (reflected: a table added later is covered)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import MetaData, String, Text, create_engine, select
from sqlalchemy.types import JSON

#: The person, as the CSV has them, and two others.
NAME, PHONE, CITY, CODE = "Zuleica Fictícia", "(11) 98765-4321", "Itaquaquecetuba", "ZX-4471"
DIGITS = "5511987654321"
#: Every form of the number the scan looks for, and the person's CSV values.
NUMBER_FORMS = ["+5511987654321", DIGITS, "11987654321", "(11) 98765-4321",
                "11 98765-4321", "+55 11 98765-4321", "98765-4321"]
NEEDLES = [*NUMBER_FORMS, NAME, CITY, CODE]
OTHERS = [("Bento Outro", "(21) 99876-5432"), ("Carla Terceira", "(31) 99123-4567")]


def write_campaign(root: Path, name: str, rows: list[tuple[str, str]] | None = None,
                   rate: str = "20/s") -> Path:
    """A text campaign whose CSV holds the person (unless ``rows`` says otherwise) and two
    others; the body quotes the name, city and code."""
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    people = rows if rows is not None else [(NAME, PHONE), *OTHERS]
    lines = ["nome;telefone;cidade;codigo"] + [
        f"{n};{p};{CITY if n == NAME else 'Recife'};{CODE if n == NAME else 'AB-1'}"
        for n, p in people]
    (root / "data" / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = root / "campaigns" / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nsenders = ["s1"]\n'
        f'[recipients]\nfile = "data/{name}.csv"\nphone_column = "telefone"\n'
        f'[schedule]\ntimezone = "UTC"\n[pace]\nrate = "{rate}"\n'
        '[[steps]]\ntype = "text"\n'
        'text = "Olá {{ nome }} de {{ cidade }}, código {{ codigo }}"\n',
        encoding="utf-8")
    return path


def _forms(needle: str) -> set[str]:
    return {needle, json.dumps(needle)[1:-1]}


def scan(url: str, needles: list[str] = NEEDLES) -> list[tuple[str, str, str, Any]]:
    """(table, column, needle, value) of every text or JSON value holding a needle (or its
    JSON-escaped form), in every table the database has."""
    engine = create_engine(url)
    found = []
    try:
        meta = MetaData()
        with engine.connect() as conn:
            meta.reflect(bind=conn)
            for table in meta.tables.values():
                columns = [c for c in table.columns
                           if isinstance(c.type, (String, Text, JSON))
                           or "JSON" in type(c.type).__name__.upper()]
                if not columns:
                    continue
                for row in conn.execute(select(*columns)):
                    for column, value in zip(columns, row, strict=True):
                        text = value if isinstance(value, str) else (
                            json.dumps(value) if value is not None else "")
                        for needle in needles:
                            if any(form in text for form in _forms(needle)):
                                found.append((table.name, column.name, needle, value))
    finally:
        engine.dispose()
    return found


def strings_in(value: Any) -> set[str]:
    """Every string inside a JSON value (keys and values)."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(strings_in(k) | strings_in(v) for k, v in value.items()))
    if isinstance(value, list):
        return set().union(*(strings_in(v) for v in value))
    return {str(value)} if value is not None else set()
