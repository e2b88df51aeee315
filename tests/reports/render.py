"""LibreOffice Calc (headless) as a person's eyes: a workbook converted to PDF (then to
text and PNG by poppler) and to CSV, as shown, one file per sheet.

LibreOffice and poppler come from ``scripts/ensure-libreoffice`` (``make test`` runs it);
when they are missing the tests fail with a message saying so, never skip.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

INSTALL = "run `sudo bash scripts/ensure-libreoffice` (make test does it)"
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ensure-libreoffice"
#: Export every sheet as shown (dates formatted, not serials), UTF-8, comma-separated.
CSV_FILTER = "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,true,false,false,-1"


def tool(name: str) -> str:
    """The path of ``name``, or a failed test saying how to install it."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: {INSTALL}", pytrace=False)
    return path


def _run(args: list[str], what: str) -> str:
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode:
        pytest.fail(f"{what} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout


def convert(book: Path, target: str, outdir: Path, profile: Path, expect: Path) -> None:
    """``soffice --convert-to target`` into ``outdir``, with a profile of its own (so it
    neither meets a running LibreOffice nor reads the user's settings); once more when
    ``expect`` did not appear (a first start may only create the profile)."""
    args = [tool("soffice"), f"-env:UserInstallation={profile.as_uri()}", "--headless",
            "--norestore", "--convert-to", target, "--outdir", str(outdir), str(book)]
    what = f"LibreOffice converting {book.name} to {target.split(':')[0]}"
    for _attempt in range(2):
        _run(args, what)
        if expect.exists():
            return
    pytest.fail(f"{what} wrote no {expect.name}")


@dataclass
class Rendered:
    """A workbook as LibreOffice shows it: PDF pages' text (in reading order, ``pdftotext
    -raw``), and each sheet as CSV."""

    pdf: Path
    pages: list[str]
    csv: dict[str, Path]

    def pages_of(self, sheet: str) -> list[int]:
        """Indexes of the pages whose footer names ``sheet`` (``Summary · page 1``)."""
        footer = re.compile(rf"^{re.escape(sheet)} · page \d+$", re.MULTILINE)
        return [i for i, text in enumerate(self.pages) if footer.search(text)]

    def words(self, page: int) -> str:
        """A page's text with every run of white space as one space (a label that wraps
        or turns on an axis reads as one line)."""
        return " ".join(self.pages[page].split())

    def png(self, page: int, target: Path, dpi: int = 60) -> Path:
        """Page ``page`` (0-based) as a PNG at ``dpi``."""
        stem = target.with_suffix("")
        _run([tool("pdftoppm"), "-png", "-r", str(dpi), "-f", str(page + 1), "-l",
              str(page + 1), "-singlefile", str(self.pdf), str(stem)], "pdftoppm")  # fmt: skip
        return stem.with_suffix(".png")


def check_installed() -> None:
    """LibreOffice, poppler and the fonts the workbook is drawn with are all here, or the
    test fails saying what is missing and how to install it."""
    done = subprocess.run(["bash", str(SCRIPT), "--check"], capture_output=True, text=True,
                          check=False)  # fmt: skip
    if done.returncode:
        pytest.fail(done.stderr.strip() or f"LibreOffice is missing: {INSTALL}", pytrace=False)


def render(book: Path, outdir: Path) -> Rendered:
    """Convert ``book`` to PDF and to one CSV per sheet in ``outdir``; read the PDF's text."""
    check_installed()
    profile = outdir / "lo-profile"
    pdf = outdir / f"{book.stem}.pdf"
    convert(book, "pdf", outdir, profile, pdf)
    convert(book, CSV_FILTER, outdir, profile, outdir / f"{book.stem}-Summary.csv")
    text = _run([tool("pdftotext"), "-raw", str(pdf), "-"], "pdftotext")
    pages = text.split("\f")
    if pages and not pages[-1].strip():
        pages.pop()
    sheets = {p.stem.removeprefix(f"{book.stem}-"): p for p in outdir.glob(f"{book.stem}-*.csv")}
    return Rendered(pdf, pages, sheets)
