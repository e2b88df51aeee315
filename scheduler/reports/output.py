"""Where a report goes and how it gets there: names, formula-safe text, all-or-nothing files.

Every file of a report is first written to a hidden temporary name in its own folder and
renamed into place only when all of them are complete, so a failed or interrupted report
leaves no partial file behind (a rename within one folder is atomic).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from scheduler.reports.exceptions import OutputNotWritable

#: The media type of each report format, for a download.
MEDIA = {"xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
         "csv": "text/csv; charset=utf-8"}

#: First characters that make a spreadsheet treat a cell as a formula (OWASP's list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def formula_like(value: str) -> bool:
    """True when a spreadsheet could run ``value`` as a formula."""
    return value.startswith(FORMULA_STARTS)


def csv_safe(value: str) -> str:
    """``value`` with a leading ``'`` when it could run as a formula (the CSV convention)."""
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def slug(name: str) -> str:
    """A file-name-safe form of a campaign name."""
    return re.sub(r"[^\w.-]+", "-", name).strip("-.") or "campaign"


def default_stem(campaigns: Sequence[str], run_ids: Sequence[int]) -> str:
    """``<campaign>-run-3``, ``<campaign>-runs-3-4-5``, ``<campaign>-runs-3-to-40``; runs of
    several campaigns drop the campaign (``runs-3-4``)."""
    names = sorted(set(campaigns))
    prefix = f"{slug(names[0])}-" if len(names) == 1 else ""
    ids = sorted(set(run_ids))
    if len(ids) == 1:
        return f"{prefix}run-{ids[0]}"
    if len(ids) <= 5:
        return f"{prefix}runs-{'-'.join(str(i) for i in ids)}"
    return f"{prefix}runs-{ids[0]}-to-{ids[-1]}"


def resolve_output(output: Path | str | None, folder: Path, stem: str, fmt: str) -> Path:
    """The report's path: ``output`` when it names a file, the default name inside it when it
    is a folder (an existing one, or a path without a suffix), else ``folder/<stem>.<fmt>``."""
    if output is None:
        return folder / f"{stem}.{fmt}"
    path = Path(output).expanduser()
    if path.is_dir() or str(output).endswith(("/", os.sep)) or not path.suffix:
        return path / f"{stem}.{fmt}"
    return path


def _reason(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__


class AtomicFiles:
    """Temporary files beside their targets, renamed into place together by :meth:`commit`.

    Used as a context manager: leaving it with an exception removes every temporary file.
    """

    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []

    def __enter__(self) -> AtomicFiles:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        if exc_type is not None:
            self.discard()

    def temp_for(self, target: Path) -> Path:
        """A new empty temporary file in ``target``'s folder (created if needed)."""
        if target.is_dir():
            raise OutputNotWritable(f"cannot write the report to {target}: it is a folder")
        folder = target.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.part")
            with open(temp, "xb"):
                pass
        except (FileExistsError, NotADirectoryError):
            raise OutputNotWritable(f"cannot write the report in {folder}: not a folder") from None
        except OSError as exc:
            raise OutputNotWritable(
                f"cannot write the report in {folder}: {_reason(exc)}"
            ) from None
        self._pending.append((temp, target))
        return temp

    def commit(self) -> list[Path]:
        """Rename every temporary file to its target, in order; returns the targets."""
        done = []
        try:
            for temp, target in self._pending:
                os.replace(temp, target)
                done.append(target)
        except OSError as exc:
            self.discard()
            for path in done:  # all or nothing: a report is its workbook and its charts
                path.unlink(missing_ok=True)
            raise OutputNotWritable(
                f"cannot write the report to {target}: {_reason(exc)}"
            ) from None
        self._pending.clear()
        return done

    def discard(self) -> None:
        """Remove every temporary file not yet renamed."""
        for temp, _target in self._pending:
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)
        self._pending.clear()
