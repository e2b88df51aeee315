"""Builders of the dispatch tests: a project of scheduled campaigns over three recipients."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

SCHEDULED = """
name = "{name}"
senders = ["s1"]
{bounds}
[recipients]
file = "data/r.csv"
phone_column = "telefone"

[schedule]
at = {at}
timezone = "UTC"

[pace]
rate = "20/s"

[[steps]]
type = "text"
text = "Oi {{{{ nome }}}}{text}"
"""

#: The numbers of the three recipients, as the service receives them.
RECIPIENTS = ["5511987650001", "5511987650002", "5511987650003"]


def scheduled_project(root: Path, at: datetime,
                      **campaigns: dict[str, str]) -> dict[str, Path]:
    """A project at ``root`` with ``campaigns/<name>.toml`` for each name, each due ``at``
    (UTC) and sending one text to the same three recipients; a campaign's fields may add to
    its ``text`` (a template) or set its ``bounds`` (a TOML table)."""
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir()
    (root / "data" / "r.csv").write_text(
        "nome,telefone\nAna,11987650001\nBia,11987650002\nCid,11987650003\n", encoding="utf-8")
    paths = {}
    for name, fields in campaigns.items():
        path = root / "campaigns" / f"{name}.toml"
        path.write_text(SCHEDULED.format(name=name, at=at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                         text=fields.get("text", ""),
                                         bounds=fields.get("bounds", "")), encoding="utf-8")
        paths[name] = path
    return paths
