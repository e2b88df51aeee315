"""The exact reading of a CSV that pandas refused: every malformed row named, in words.

pandas reads recipients fast but stops at the first malformed row with its own wording
(``Error tokenizing data. C error: EOF inside string starting at row 5``). When that
happens, the file is read again here with :mod:`csv` (the same dialect: the detected
delimiter, ``"`` quotes, ``""`` inside quotes), record by record with their physical line
numbers, and each problem becomes an :class:`~scheduler.campaign.exceptions.Issue` naming
the row, the line and what to do:

- a **ragged row** (more fields than the header): a value containing the delimiter that
  is not quoted, usually;
- an **unclosed quote**: a value opens with ``"`` and never closes, so :mod:`csv` would
  read the rest of the file as that one value. The row is reported and reading resumes on
  the next line, so the rows after it are still checked.

Rows are numbered as :mod:`scheduler.campaign.recipients` numbers them (data rows from 1,
blank lines counted).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

from scheduler.campaign.exceptions import Issue

#: (row, first physical line, the row's fields or None when malformed, the problem).
Record = tuple[int, int, list[str] | None, Issue | None]


class _Lines:
    """Lines of a file, counted, with the lines of the record being read kept."""

    def __init__(self, handle: Iterable[str], skip: int) -> None:
        self._it = iter(handle)
        self.line = 0
        for _ in islice(self._it, skip):
            self.line += 1
        self.current: list[str] = []

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        text = next(self._it)
        self.line += 1
        self.current.append(text)
        return text


def ends_inside_quotes(text: str, delimiter: str) -> bool:
    """Whether :mod:`csv` (non-strict) would still be inside a quoted value at the end."""
    start, field, quoted, quote_seen = 0, 1, 2, 3
    state = start
    for char in text:
        if state == quoted:
            if char == '"':
                state = quote_seen
        elif state == quote_seen:
            state = quoted if char == '"' else start if char in (delimiter, "\n", "\r") else field
        elif char in (delimiter, "\n", "\r"):
            state = start
        elif state == start and char == '"':
            state = quoted
        else:
            state = field
    return state == quoted


def _delimiter_name(delimiter: str) -> str:
    return "a tab" if delimiter == "\t" else repr(delimiter)


def scan_records(
    path: Path, encoding: str, delimiter: str, width: int, label: str
) -> Iterator[Record]:
    """Every data row after the header, malformed rows flagged (see the module doc)."""
    row, skip, header = 0, 0, True
    while True:
        with path.open("r", encoding=encoding, newline="") as handle:
            lines = _Lines(handle, skip)
            reader = csv.reader(lines, delimiter=delimiter)
            resume = None
            while True:
                lines.current = []
                begin = lines.line + 1
                record = next(reader, None)
                if record is None:
                    return
                if header:
                    header = False
                    continue
                row += 1
                if lines.current and ends_inside_quotes("".join(lines.current), delimiter):
                    yield (
                        row,
                        begin,
                        None,
                        Issue(
                            label,
                            'unclosed quote: a value starts with " on this line and never ends, '
                            "so the rest of the file would be read as that one value; add the "
                            'closing " or remove the opening one',
                            row=row,
                            line=begin,
                        ),
                    )
                    resume = begin  # go on with the next line
                    break
                if len(record) > width:
                    yield (
                        row,
                        begin,
                        None,
                        Issue(
                            label,
                            f"ragged row: {len(record)} fields, the header has {width} (a value "
                            f"containing {_delimiter_name(delimiter)} must be in double quotes)",
                            row=row,
                            line=begin,
                        ),
                    )
                    continue
                yield row, begin, record, None
        skip = resume
