"""The row tables of a report (Recipients, Replies, Opt-outs): their columns, and how a raw
chunk read from the ledger becomes the values of those columns.

Times become naive datetimes in the run's own time zone (spreadsheets have no zones; the
zone is written in the column header, or in a "Time zone" column when runs differ). Text
that came from a CSV, a reply or the service has kind ``user_text``: the writers keep it as
text and neutralise anything a spreadsheet could run as a formula.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from scheduler.reports import details as det
from scheduler.reports.source import RunInfo

#: Transition times of a delivery, in the order they happen: (column, header).
TIMES = (("dispatched_at", "Dispatched"), ("accepted_at", "Accepted"), ("sent_at", "Sent"),
         ("delivered_at", "Delivered"), ("read_at", "Read"), ("replied_at", "Replied"),
         ("failed_at", "Failed"))  # fmt: skip
_EXCEL_EPOCH = pd.Timestamp("1899-12-30")
_DAY = pd.Timedelta(days=1)


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table: frame key, header, kind and width (in characters).

    Kinds: ``int``, ``number``, ``money``, ``percent``, ``date``, ``text`` (our own words)
    and ``user_text`` (from a CSV, a reply or the service: neutralised against formulas).
    """

    key: str
    header: str
    kind: str
    width: float


#: One chunk of a table: column key → values (a list or a Series, one per row).
Frame = dict[str, Any]
#: The Recipients' "Reached by" of a chunk of one run's rows (``reports.attempts``).
ReachedByValues = Callable[[int, Mapping[str, Any]], list[str | None]]
#: The Recipients' condition and its reason, of a chunk of one run's rows
#: (``reports.decisions``).
DecisionValues = Callable[[int, Mapping[str, Any]],
                          tuple[list[str | None], list[str | None]]]


@dataclass
class Table:
    """A row table of a report: its sheet name, columns, row count and a frame iterator."""

    name: str
    columns: list[Column]
    rows: int
    frames: Callable[[], Iterator[Frame]]


# ---------------------------------------------------------------------- values


def utc_times(values: pd.Series | Sequence[Any]) -> pd.Series:
    """Ledger times (SQLite text or driver datetimes) as aware UTC timestamps."""
    series = values if isinstance(values, pd.Series) else pd.Series(values, dtype=object)
    return pd.to_datetime(series, utc=True, format="ISO8601")


def local_times(values: pd.Series | Sequence[Any], run_ids: pd.Series | int,
                zones: Mapping[int, str]) -> pd.Series:  # fmt: skip
    """Naive local times, each row in the zone of its run."""
    utc = utc_times(values)
    if isinstance(run_ids, int):
        return utc.dt.tz_convert(zones[run_ids]).dt.tz_localize(None)
    distinct = set(zones.values())
    if len(distinct) == 1:
        return utc.dt.tz_convert(distinct.pop()).dt.tz_localize(None)
    out = pd.Series(pd.NaT, index=utc.index, dtype="datetime64[us]")
    for run_id, zone in zones.items():
        mask = run_ids == run_id
        if mask.any():
            out[mask] = utc[mask].dt.tz_convert(zone).dt.tz_localize(None)
    return out


def excel_serial(local: pd.Series) -> list[float]:
    """Naive datetimes as spreadsheet serial day numbers (NaN where missing)."""
    return ((local - _EXCEL_EPOCH) / _DAY).tolist()


def texts(values: Any) -> list[str | None]:
    """Values as Python strings, None where missing (JSON for lists and objects)."""
    return [None if v is None or (isinstance(v, float) and v != v) else
            v if isinstance(v, str) else
            json.dumps(v, ensure_ascii=False) if isinstance(v, list | dict) else str(v)
            for v in (values.tolist() if isinstance(values, pd.Series) else values)]  # fmt: skip


def _json_dict(raw: Any) -> dict[str, Any]:
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        value = {}
    return value if isinstance(value, dict) else {}


def json_dicts(values: pd.Series | Sequence[Any]) -> list[dict[str, Any]]:
    """JSON objects (``variables``), ``{}`` where missing or broken; one parse per chunk."""
    items = values.tolist() if isinstance(values, pd.Series) else list(values)
    if items and all(isinstance(v, str) and v.startswith("{") for v in items):
        try:
            parsed = json.loads(f"[{','.join(items)}]")
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and len(parsed) == len(items):
            return [v if isinstance(v, dict) else {} for v in parsed]
    return [_json_dict(v) for v in items]


def _yes_no(values: pd.Series) -> list[str]:
    return ["yes" if v in (1, True, "1", "true") else "no" for v in values.tolist()]


def variable_keys(samples: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The CSV's column names in first-seen order, each with a readable width."""
    widths: dict[str, float] = {}
    for sample in samples:
        for key, value in sample.items():
            length = len(str(value)) if value is not None else 0
            widths[key] = max(widths.get(key, len(str(key)) + 2), min(length + 2, 40))
    return widths


# ---------------------------------------------------------------------- layouts


def _zone_label(zones: Mapping[int, str]) -> str | None:
    distinct = set(zones.values())
    return distinct.pop() if len(distinct) == 1 else None


def _time_header(label: str, zone: str | None) -> str:
    return f"{label} ({zone})" if zone else f"{label} (local)"


def _time_width(header: str) -> float:
    return max(19.0, len(header) + 2.0)


class RecipientsLayout:
    """Columns of the Recipients table, and the conversion of a ledger chunk into them."""

    def __init__(self, runs: Sequence[RunInfo], variables: Mapping[str, float],
                 scan: det.DetailScan, reached_by: ReachedByValues | None = None,
                 decided: DecisionValues | None = None) -> None:  # fmt: skip
        self.zones = {run.id: run.timezone for run in runs}
        self.reached_by = reached_by
        self.decided = decided
        zone = _zone_label(self.zones)
        self.variables = list(variables)
        self.detail_columns = scan.columns(run.channel for run in runs)
        cols = [Column("run_id", "Run", "int", 6), Column("row", "Row", "int", 7),
                Column("to", "Number", "user_text", 16)]  # fmt: skip
        cols += [Column(f"v:{k}", k, "user_text", w) for k, w in variables.items()]
        cols += [Column("step", "Step", "int", 6), Column("kind", "Kind", "text", 10),
                 Column("state", "State", "text", 13)]
        if reached_by is not None:  # second chances: the attempt, who was reached how
            cols += [Column("attempt", "Attempt", "int", 8),
                     Column("rule", "Made by", "text", 11),
                     Column("reached_by", "Reached by", "text", 18)]
        cols.append(Column("reason", "Reason", "user_text", 22))
        if decided is not None:  # steps that follow replies: the decision, and why
            cols += [Column("decision", "Condition", "text", 10),
                     Column("decision_reason", "Condition's reason", "user_text", 34)]
        cols += [Column("sender", "Sender", "user_text", 14),
                 Column("message_id", "messageId", "user_text", 26),
                 Column("attempts", "Attempts", "int", 9),
                 Column("last_error", "Last error", "user_text", 30)]  # fmt: skip
        for key, label in TIMES:
            header = _time_header(label, zone)
            cols.append(Column(key, header, "date", _time_width(header)))
        cols.append(Column("reply_text", "Reply text", "user_text", 30))
        cols += [Column(key, header, kind, width)
                 for key, header, kind, width in self.detail_columns]  # fmt: skip
        if zone is None:
            cols.append(Column("zone", "Time zone", "text", 20))
        self.columns = cols

    def frame(self, chunk: Mapping[str, list[Any]]) -> Frame:
        """The table's values for one chunk of ``ledger.queries.reports.delivery_chunks`` (one run).

        Text columns come from the driver as ``str`` or ``None`` and are kept as they are.
        """
        length = len(chunk["row"])
        run_id = int(chunk["run_id"][0]) if length else 0
        out: dict[str, Any] = {
            k: chunk[k]
            for k in (
                "run_id",
                "row",
                "to",
                "step",
                "kind",
                "state",
                "reason",
                "sender",
                "message_id",
                "attempts",
                "last_error",
                "reply_text",
            )
        }
        if self.reached_by is not None:
            out["attempt"] = chunk["attempt"]
            out["rule"] = chunk["rule"]
            out["reached_by"] = self.reached_by(run_id, chunk) if length else []
        if self.decided is not None:
            out["decision"], out["decision_reason"] = self.decided(run_id, chunk)
        if self.variables:
            variables = json_dicts(chunk["variables"])
            for key in self.variables:
                out[f"v:{key}"] = texts([v.get(key) for v in variables])
        for key, _label in TIMES:
            values = chunk[key]
            out[key] = (local_times(values, run_id, self.zones) if any(values)
                        else [None] * length)  # fmt: skip
        if self.detail_columns:
            extras = [det.cells(det.parse(v)) if isinstance(v, str) else {}
                      for v in chunk["details"]]  # fmt: skip
            for key, _header, _kind, _width in self.detail_columns:
                out[key] = [e.get(key) for e in extras]
        if "zone" in (c.key for c in self.columns):
            out["zone"] = [self.zones.get(run_id, "UTC")] * length
        return out  # fmt: skip


class RepliesLayout:
    """Columns of the Replies table: who replied, when, what, and their CSV columns."""

    def __init__(self, runs: Sequence[RunInfo], variables: Mapping[str, float]) -> None:
        self.zones = {run.id: run.timezone for run in runs}
        self.variables = list(variables)
        header = _time_header("Received", _zone_label(self.zones))
        self.columns = [
            Column("run_id", "Run", "int", 6), Column("received_at", header, "date",
                                                      _time_width(header)),
            Column("number", "Number", "user_text", 16), Column("step", "Step", "int", 6),
            Column("session_id", "Sender", "user_text", 14), Column("kind", "Kind", "text", 10),
            Column("text", "Text", "user_text", 40), Column("opt_out", "Opt-out", "text", 8),
            *(Column(f"v:{k}", k, "user_text", w) for k, w in variables.items()),
        ]  # fmt: skip

    def frame(self, chunk: pd.DataFrame) -> Frame:
        """The table's values for one chunk of ``ledger.queries.reports.reply_chunks``."""
        runs = chunk["run_id"]
        out: dict[str, Any] = {
            "run_id": runs, "received_at": local_times(chunk["received_at"], runs, self.zones),
            "number": texts(chunk["number"]), "step": chunk["step"],
            "session_id": texts(chunk["session_id"]), "kind": texts(chunk["kind"]),
            "text": texts(chunk["text"]), "opt_out": _yes_no(chunk["opt_out"]),
        }  # fmt: skip
        if self.variables:
            variables = json_dicts(chunk["variables"])
            for key in self.variables:
                out[f"v:{key}"] = texts([v.get(key) for v in variables])
        return out


class OptOutsLayout:
    """Columns of the Opt-outs table: recipients of the runs on the suppression list."""

    def __init__(self, runs: Sequence[RunInfo]) -> None:
        self.zones = {run.id: run.timezone for run in runs}
        self.created = {run.id: run.created_at for run in runs}
        header = _time_header("Opted out", _zone_label(self.zones))
        self.columns = [
            Column("run_id", "Run", "int", 6), Column("number", "Number", "user_text", 16),
            Column("created_at", header, "date", _time_width(header)),
            Column("source", "Source", "user_text", 12),
            Column("reason", "Reason", "user_text", 20),
            Column("reply_text", "Message", "user_text", 30),
            Column("before", "Before this run", "text", 15),
        ]  # fmt: skip

    def frame(self, chunk: pd.DataFrame) -> Frame:
        """The table's values for one chunk of ``ledger.queries.reports.optouts``."""
        runs = chunk["run_id"]
        utc = utc_times(chunk["created_at"])
        planned = pd.to_datetime(runs.map(self.created), utc=True)
        before = ["yes" if b else "no" for b in (utc < planned).tolist()]
        return {
            "run_id": runs, "number": texts(chunk["number"]),
            "created_at": local_times(chunk["created_at"], runs, self.zones),
            "source": texts(chunk["source"]), "reason": texts(chunk["reason"]),
            "reply_text": texts(chunk["reply_text"]), "before": before,
        }  # fmt: skip
