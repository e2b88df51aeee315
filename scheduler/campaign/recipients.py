"""The recipients CSV: encoding, delimiter and header detection, then chunks of rows.

- **Encoding**: a UTF-8 BOM gives ``utf-8-sig``, a UTF-16 BOM ``utf-16``; otherwise the
  whole file is decoded as UTF-8 incrementally and, at the first invalid byte, it is
  Windows-1252 (or Latin-1 when it has a byte Windows-1252 leaves undefined).
- **Delimiter**: ``,`` ``;`` tab or ``|``, whichever splits the header into the most
  columns that the first lines agree with.
- **Header**: column names are matched case- and accent-insensitively; each column becomes
  a template variable named by its *slug* (``"Município de Nascimento"`` →
  ``municipio_de_nascimento``). The phone column is not a variable (``to`` is).
- **Rows** are numbered from 1 (the header is not counted; blank lines are counted but
  produce no recipient, so row *n* is line *n + 1* of a file without quoted line breaks).
  Values are strings, stripped. A row with fewer fields than the header gets empty values;
  rows with more fields, and a quote that never closes, are errors naming each row.

pandas reads in chunks (``chunksize``), so memory stays flat. When it stops at a malformed
row, the rest of the file is read by :mod:`scheduler.campaign.malformed_rows`, which names every
malformed row in words (pandas' wording never reaches the user): a strict read raises them
all at once; a read given a ``problems`` list (``campaign validate``) records them there and
goes on yielding the good rows, so their messages are checked in the same run.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import re
import unicodedata
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pandas.errors import EmptyDataError, ParserError, ParserWarning

from scheduler.campaign.exceptions import (
    EmptyRecipientsFile,
    Issue,
    MissingColumnError,
    RaggedRowsError,
    RecipientsError,
    RecipientsFileNotFound,
    UnclosedQuoteError,
    UnreadableRecipientsFile,
)
from scheduler.campaign.malformed_rows import scan_records

DELIMITERS = (";", ",", "\t", "|")
_CP1252_UNDEFINED = bytes([0x81, 0x8D, 0x8F, 0x90, 0x9D])
_BLOCK = 1 << 20
MAX_RAGGED_LISTED = 20


def slugify(name: str) -> str:
    """``"Município de Nascimento"`` → ``"municipio_de_nascimento"`` (a template name)."""
    text = unicodedata.normalize("NFKD", name.strip().lstrip("\ufeff"))
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    text = re.sub(r"[^0-9a-z]+", "_", text).strip("_")
    if text and text[0].isdigit():
        text = "col_" + text
    return text


def detect_encoding(path: Path) -> str:
    """``utf-8-sig``, ``utf-16``, ``utf-8``, ``cp1252`` or ``latin-1`` (see module doc)."""
    with path.open("rb") as handle:
        head = handle.read(4)
        if head.startswith(codecs.BOM_UTF8):
            return "utf-8-sig"
        if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return "utf-16"
        if b"\x00" in head:
            raise UnreadableRecipientsFile(
                f"{path}: not a text file (a spreadsheet? save it as CSV)", file=str(path)
            )
        handle.seek(0)
        decoder = codecs.getincrementaldecoder("utf-8")()
        undefined_1252 = False
        utf8 = True
        while block := handle.read(_BLOCK):
            if b"\x00" in block:
                raise UnreadableRecipientsFile(
                    f"{path}: not a text file (a spreadsheet? save it as CSV)", file=str(path)
                )
            if utf8:
                try:
                    decoder.decode(block)
                except UnicodeDecodeError:
                    utf8 = False
            if any(b in block for b in _CP1252_UNDEFINED):
                undefined_1252 = True
        if utf8:
            try:
                decoder.decode(b"", final=True)
            except UnicodeDecodeError:
                utf8 = False
    if utf8:
        return "utf-8"
    return "latin-1" if undefined_1252 else "cp1252"


def _field_counts(lines: list[str], delimiter: str) -> list[int]:
    reader = csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter)
    return [len(record) for record in reader if record]


def detect_delimiter(sample: str) -> str:
    """The delimiter of the first lines: most columns that the lines agree on."""
    lines = [line for line in sample.splitlines()[:50] if line.strip()]
    if len(lines) > 1 and not sample.endswith(("\n", "\r")):
        lines = lines[:-1]  # the last line of a sample may be cut
    best, best_score = ",", (0.0, 1)
    for delimiter in DELIMITERS:
        counts = _field_counts(lines, delimiter)
        if not counts or counts[0] < 2:
            continue
        agree = sum(1 for c in counts if c == counts[0]) / len(counts)
        score = (agree, counts[0])
        if score > best_score:
            best, best_score = delimiter, score
    return best


@dataclass(frozen=True)
class CsvLayout:
    """How a CSV is written: encoding, delimiter, header names and their slugs."""

    encoding: str
    delimiter: str
    header: list[str]
    slugs: list[str]
    has_rows: bool = True


def read_layout(path: Path, *, label: str | None = None) -> CsvLayout:
    """Detect encoding, delimiter and header; errors name the file."""
    label = label or str(path)
    if not path.is_file():
        raise RecipientsFileNotFound(f"file not found ({path})", file=label)
    encoding = detect_encoding(path)
    with path.open("r", encoding=encoding, newline="") as handle:
        sample = handle.read(1 << 16)
    if not sample.strip():
        raise EmptyRecipientsFile("the file is empty (no header, no rows)", file=label)
    delimiter = detect_delimiter(sample)
    header = next(csv.reader(io.StringIO(sample), delimiter=delimiter))
    header = [h.strip().lstrip("\ufeff") for h in header]
    slugs, seen = [], set()
    for index, name in enumerate(header):
        slug = slugify(name) or f"column_{index + 1}"
        base, n = slug, 2
        while slug in seen:
            slug, n = f"{base}_{n}", n + 1
        seen.add(slug)
        slugs.append(slug)
    records = [r for r in csv.reader(io.StringIO(sample), delimiter=delimiter) if any(r)]
    complete = path.stat().st_size <= len(sample.encode(encoding, errors="replace")) + 4
    return CsvLayout(encoding, delimiter, header, slugs, has_rows=len(records) > 1 or not complete)


PHONE_NAMES = (
    "phone",
    "telefone",
    "celular",
    "whatsapp",
    "numero",
    "number",
    "fone",
    "tel",
    "mobile",
    "msisdn",
    "to",
    "contato",
)


def find_column(layout: CsvLayout, wanted: str | None, *, label: str, key: str) -> int:
    """Index of the column whose name matches ``wanted`` ignoring case and accents.

    Without ``wanted``, the first column named like a phone (:data:`PHONE_NAMES`).
    """
    if wanted is None:
        for name in PHONE_NAMES:
            if name in layout.slugs:
                return layout.slugs.index(name)
        raise MissingColumnError(
            Issue(
                label,
                f"no phone column found (columns: {', '.join(map(repr, layout.header))}); "
                "set recipients.phone_column",
                key=key,
            )
        )
    target = slugify(wanted)
    for index, slug in enumerate(layout.slugs):
        if slug == target or slugify(layout.header[index]) == target:
            return index
    raise MissingColumnError(
        Issue(
            label,
            f"no column {wanted!r} in the header (columns: "
            f"{', '.join(repr(h) for h in layout.header)})",
            key=key,
        )
    )


def malformed_rows(
    path: Path, layout: CsvLayout, *, label: str, from_row: int = 1
) -> RecipientsError:
    """Every malformed row from ``from_row`` on, as one error (see :mod:`malformed_rows`)."""
    issues: list[Issue] = []
    total = 0
    width = len(layout.header)
    for row, _line, _record, issue in scan_records(
        path, layout.encoding, layout.delimiter, width, label
    ):
        if issue is None or row < from_row:
            continue
        total += 1
        if len(issues) < MAX_RAGGED_LISTED:
            issues.append(issue)
    unclosed = any(i.message.startswith("unclosed quote") for i in issues)
    if total > len(issues):
        issues.append(Issue(label, f"… and {total - len(issues)} more malformed rows"))
    if not issues:
        issues.append(
            Issue(label, f"cannot be read as a CSV file from row {from_row} on", row=from_row)
        )
        return UnreadableRecipientsFile(issues)
    return UnclosedQuoteError(issues) if unclosed else RaggedRowsError(issues)


@dataclass
class RowChunk:
    """Consecutive rows: the first row's number, each column's values, blank-row flags."""

    first_row: int
    columns: dict[str, list[str]]
    blank: list[bool]

    def __len__(self) -> int:
        return len(self.blank)


def _scanned_chunks(
    path: Path, layout: CsvLayout, chunk_rows: int, from_row: int, label: str, problems: list[Issue]
) -> Iterator[RowChunk]:
    """Chunks of the rows from ``from_row`` on, read by :mod:`malformed_rows`; problems recorded."""
    width = len(layout.header)
    empty = [""] * width
    lists: list[list[str]] = [[] for _ in layout.slugs]
    blank: list[bool] = []
    first = from_row
    for row, _line, record, issue in scan_records(
        path, layout.encoding, layout.delimiter, width, label
    ):
        if row < from_row:
            continue
        if issue is not None:
            problems.append(issue)
        values = empty if record is None else [v.strip() for v in record] + empty[len(record) :]
        for column, value in zip(lists, values, strict=False):
            column.append(value)
        blank.append(not any(values))
        if len(blank) >= chunk_rows:
            yield RowChunk(first, dict(zip(layout.slugs, lists, strict=True)), blank)
            first += len(blank)
            lists, blank = [[] for _ in layout.slugs], []
    if blank:
        yield RowChunk(first, dict(zip(layout.slugs, lists, strict=True)), blank)


def read_chunks(
    path: Path,
    layout: CsvLayout,
    *,
    chunk_rows: int = 50_000,
    label: str | None = None,
    problems: list[Issue] | None = None,
) -> Iterator[RowChunk]:
    """The data rows of the CSV, ``chunk_rows`` at a time, keyed by column slug.

    Malformed rows raise (every one of them listed) unless ``problems`` is given: then
    they are recorded there, yielded as blank rows, and reading goes on.
    """
    label = label or str(path)
    next_row = 1
    try:
        reader = pd.read_csv(
            path,
            sep=layout.delimiter,
            encoding=layout.encoding,
            dtype=str,
            na_filter=False,
            keep_default_na=False,
            header=0,
            index_col=False,
            skip_blank_lines=False,
            chunksize=chunk_rows,
            engine="c",
        )
    except EmptyDataError:
        raise EmptyRecipientsFile("the file is empty (no header, no rows)", file=label) from None
    except (ParserError, UnicodeDecodeError, ValueError):
        reader = None
    with reader if reader is not None else contextlib.nullcontext():
        while reader is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("error", ParserWarning)
                try:
                    frame = next(reader)
                except StopIteration:
                    return
                except (ParserError, ParserWarning, UnicodeDecodeError, ValueError):
                    break  # the rest is read by malformed_rows, below
            columns = {
                slug: [v.strip() for v in frame.iloc[:, i].tolist()]
                for i, slug in enumerate(layout.slugs)
            }
            n = len(frame)
            # blank: every value empty, in one pass over the lines (not one per column)
            blank = ([not any(line) for line in zip(*columns.values(), strict=True)]
                     if columns else [True] * n)
            yield RowChunk(next_row, columns, blank)
            next_row += n
    if problems is None:
        raise malformed_rows(path, layout, label=label, from_row=next_row)
    yield from _scanned_chunks(path, layout, chunk_rows, next_row, label, problems)


def iter_phone_values(path: Path, *, label: str | None = None) -> Iterator[str]:
    """Numbers of a suppression list: one a line (``#`` comments) or a CSV's phone column."""
    label = label or str(path)
    layout = read_layout(path, label=label)
    with path.open("r", encoding=layout.encoding, newline="") as handle:
        lines = [line.strip() for line in handle]
    meaningful = [line for line in lines if line and not line.startswith("#")]
    if not meaningful:
        return
    if path.suffix.lower() in {".txt", ".lst"} or not re.search(r"[A-Za-z]", meaningful[0]):
        yield from (line.split(layout.delimiter)[0].strip() for line in meaningful)
        return
    index = next((i for i, s in enumerate(layout.slugs) if s in PHONE_NAMES), 0)
    for chunk in read_chunks(path, layout, label=label):
        yield from (v for v in chunk.columns[layout.slugs[index]] if v)
