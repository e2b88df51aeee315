"""Fixtures for campaign tests: a throw-away project (campaigns/, templates/, data/)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

BASIC_CSV = (
    "nome;telefone;cidade;valor\n"
    "Maria da Silva;(11) 98765-4321;São Paulo;1234.5\n"
    "JOÃO SOUZA;+55 21 99876-5432;Rio de Janeiro;10\n"
    "Ana Lima;1234;Recife;5\n"
    "Maria Dup;5511987654321;São Paulo;7\n"
)


@dataclass
class Project:
    """A temporary project root with helpers to write its files."""

    root: Path

    def write(self, relative: str, text: str, encoding: str = "utf-8") -> Path:
        """Write a text file under the root (dedented), creating folders."""
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(textwrap.dedent(text).encode(encoding))
        return path

    def write_bytes(self, relative: str, data: bytes) -> Path:
        """Write raw bytes under the root."""
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def campaign(self, body: str, name: str = "c.toml") -> Path:
        """Write ``campaigns/<name>``."""
        return self.write(f"campaigns/{name}", body)

    def basic(
        self,
        steps: str = '[[steps]]\ntype = "text"\ntext = "Olá {{ nome }}"\n',
        extra: str = "",
        csv: str = BASIC_CSV,
    ) -> Path:
        """A minimal valid WhatsApp campaign over ``data/r.csv`` with the given steps."""
        self.write("data/r.csv", csv)
        head = (
            'name = "t"\nsenders = ["s1", "s2"]\n' + extra + "\n"
            '[recipients]\nfile = "data/r.csv"\nphone_column = "telefone"\n\n'
        )
        return self.campaign(head + textwrap.dedent(steps))


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """An empty project root in a temporary folder."""
    for folder in ("campaigns", "templates", "data"):
        (tmp_path / folder).mkdir()
    return Project(tmp_path)
