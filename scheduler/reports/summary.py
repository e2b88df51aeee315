"""The Summary of a report, computed from the ledger's aggregates (no I/O here).

What *planned*, *sent* and each rate mean is defined once, in :mod:`scheduler.ledger.funnel`
(shared with ``campaign status`` and ``campaign plan``): planned is every row but the
skipped ones; sent is what the service took (``accepted`` or any later state, or a time
that says so); *sent* is a share of planned, every later stage a share of sent. Each
channel has its own funnel (``FUNNELS``); a report over runs of several channels uses the
WhatsApp one. SMS and voice runs add the sections their charts draw
(``CHANNEL_SECTIONS``): SMS delivery by error code, voice outcomes and the digits pressed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from scheduler.ledger import funnel as fn
from scheduler.ledger.states import SENT_STATES, DeliveryState, describe_target
from scheduler.reports import details as det
from scheduler.reports.channels import call_keys, channel_sections, error_codes, sections_of
from scheduler.reports.columns import Column
from scheduler.reports.source import RunInfo, local_time

#: Each channel's funnel: (label, count key), planned first (see ``scheduler.ledger.funnel``).
FUNNELS = {channel: tuple((st.label, st.key) for st in stages)
           for channel, stages in fn.STAGES.items()}  # fmt: skip
_STATE_ORDER = [s.value for s in DeliveryState]
_COUNTS = ("deliveries", "planned", "sent", "delivered", "read", "replied", "answered",
           "not_answered", "undelivered", "failed", "skipped", "unknown", "expired")  # fmt: skip
_EXTRAS = ("segments", "cost", "talk_seconds", "digits")


@dataclass
class Metric:
    """One Summary row: a label, a cell kind, one value per run and the total."""

    label: str
    kind: str
    values: list[Any]
    total: Any = None


@dataclass
class Summary:
    """Everything the Summary sheet and the charts show."""

    runs: list[RunInfo]
    channel: str
    sections: list[tuple[str, list[Metric]]]
    funnel: list[tuple[str, int]]
    by_sender: tuple[list[Column], pd.DataFrame]
    by_step: tuple[list[Column], pd.DataFrame]
    #: People and messages skipped, by reason (``SKIP_COLUMNS``).
    skipped: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)

    def section(self, title: str) -> list[Metric]:
        """The metrics of section ``title`` (empty when the report has none)."""
        return next((metrics for name, metrics in self.sections if name == title), [])

    def chart_sections(self) -> list[str]:
        """The channel sections to draw, in order: those of the report's channels that have
        at least one row."""
        channels = {run.channel for run in self.runs}
        return [title for _, titles in sections_of(channels)
                for title in titles if self.section(title)]  # fmt: skip


def report_channel(runs: Sequence[RunInfo]) -> str:
    """The channel whose funnel the report uses."""
    channels = {run.channel for run in runs}
    channel = channels.pop() if len(channels) == 1 else "whatsapp"
    return channel if channel in FUNNELS else "whatsapp"


def _flags(groups: pd.DataFrame) -> pd.DataFrame:
    """Each group's count of every funnel flag (see ``ledger.queries.reports.state_groups``)."""
    state, n = groups["state"], groups["n"]
    flags = {
        "deliveries": n,
        "planned": n.where(state != DeliveryState.SKIPPED, 0),
        "sent": n.where(state.isin(list(SENT_STATES)), groups["n_sent"]),
        "delivered": n.where(state.isin(["delivered", "read"]), groups["n_delivered"]),
        "read": n.where(state == "read", groups["n_read"]),
        "replied": groups["n_replied"],
    }
    for name in ("answered", "not_answered", "undelivered", "failed", "skipped", "unknown",
                 "expired"):  # fmt: skip
        flags[name] = n.where(state == name, 0)
    out = groups[["run_id", "sender", "step", "kind"]].copy()
    for name, counts in flags.items():
        out[name] = counts
    return out


def _totals(flags: pd.DataFrame, extras: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Counts and detail totals grouped by ``keys`` (details know no ``kind``: a step has one)."""
    counts = flags.groupby(keys, sort=True)[list(_COUNTS)].sum().reset_index()
    if extras.empty:
        for name in _EXTRAS:
            counts[name] = 0
    else:
        on = [k for k in keys if k in extras.columns]
        more = extras.groupby(on)[list(_EXTRAS)].sum().reset_index()
        counts = counts.merge(more, on=on, how="left")
        counts[list(_EXTRAS)] = counts[list(_EXTRAS)].fillna(0)
    counts["digits"] = counts["digits"].astype("int64")
    return counts.set_index(keys)


rate = fn.share


def _run_section(runs: list[RunInfo]) -> list[Metric]:
    single_zone = len({r.timezone for r in runs}) == 1

    def dates(label: str, attr: str, pick: Any) -> Metric:
        values = [local_time(getattr(r, attr), r.timezone) for r in runs]
        present = [v for v in values if v is not None]
        return Metric(label, "date", values, pick(present) if present and single_zone else None)

    def join(label: str, values: list[Any]) -> Metric:
        return Metric(label, "text", values, ", ".join(dict.fromkeys(str(v) for v in values)))

    metrics = [
        join("Campaign", [r.campaign for r in runs]),
        Metric("Run", "int", [r.id for r in runs]),
        join("Channel", [r.channel for r in runs]),
        join("Status", [r.status for r in runs]),
        join("Sent to", [describe_target(r.target) for r in runs]),
        join("Time zone (times are local to it)", [r.timezone for r in runs]),
        dates("Planned at", "created_at", min),
        dates("Scheduled for", "fire_time", min),
        dates("Started", "started_at", min),
        dates("Finished", "finished_at", max),
    ]
    if any(r.stop_reason for r in runs):
        metrics.append(Metric("Stop reason", "text", [r.stop_reason for r in runs]))
    return metrics  # fmt: skip


def _count(label: str, per_run: pd.DataFrame, runs: list[RunInfo], key: str,
           kind: str = "int") -> Metric:  # fmt: skip
    column = per_run[key]  # numbers per run id (a run with no rows has none)
    values = [column.get(r.id, 0) for r in runs]
    values = [float(v) if kind in ("money", "number") else int(v) for v in values]
    return Metric(label, kind, values, sum(values))


def _rate_metric(label: str, per_run: pd.DataFrame, runs: list[RunInfo], part: str,
                 whole: str) -> Metric:  # fmt: skip
    def get(run: RunInfo, key: str) -> float:
        return float(per_run[key].get(run.id, 0.0))

    values = [rate(get(r, part), get(r, whole)) for r in runs]
    return Metric(label, "percent", values,
                  rate(float(per_run[part].sum()), float(per_run[whole].sum())))  # fmt: skip


def _rates(channel: str) -> list[tuple[str, str, str]]:
    """``(label, part, whole)`` of each rate of ``channel``'s funnel."""
    return [(r.label, r.part, r.whole) for r in fn.rates(channel, {})]


def _table(frame: pd.DataFrame, keys: list[Column], channel: str, extra_channels: set[str]
           ) -> tuple[list[Column], pd.DataFrame]:  # fmt: skip
    """A per-sender or per-step table: key columns, the funnel, failures, rates, extras.

    Groups holding nothing to send (rows skipped at planning, which no sender ever had)
    are left out of the per-sender table; rows not sent yet show as "(not sent yet)".
    """
    cols = list(keys)
    out = frame.reset_index()
    if "sender" in out.columns:
        out = out[(out["sender"] != "") | (out["planned"] > 0)].reset_index(drop=True)
        out["sender"] = out["sender"].where(out["sender"] != "", "(not sent yet)")
    for label, key in FUNNELS[channel]:
        cols.append(Column(key, label, "int", 11))
    failures = ("failed", "unknown") if "sender" in out.columns else \
        ("failed", "unknown", "skipped")
    cols += [Column(k, k.capitalize(), "int", 9) for k in failures]
    for label, part, whole in _rates(channel):
        name = f"rate:{part}/{whole}"
        out[name] = [rate(p, w) for p, w in zip(out[part], out[whole], strict=True)]
        cols.append(Column(name, label, "percent", 12))
    if any(map(error_codes, extra_channels)):
        in_funnel = any(key == "undelivered" for _, key in FUNNELS[channel])
        cols += [
            *([] if in_funnel else [Column("undelivered", "Undelivered", "int", 12)]),
            Column("segments", "SMS segments", "int", 13),
            Column("cost", "Cost (R$)", "money", 11),
        ]
    if any(map(call_keys, extra_channels)):
        out["talk_min"] = out["talk_seconds"] / 60
        cols += [
            Column("not_answered", "Not answered", "int", 13),
            Column("talk_min", "Talk time (min)", "number", 15),
        ]
    return cols, out  # fmt: skip


#: Columns of the "Skipped, by reason" table (see ``scheduler.ledger.funnel``).
SKIP_COLUMNS = [Column("reason", "Reason", "user_text", 20), Column("run_id", "Run", "int", 6),
                Column("people", "People", "int", 8), Column("n", "Messages", "int", 9)]


def skipped_table(skipped: pd.DataFrame) -> pd.DataFrame:
    """``ledger.queries.reports.skip_reasons`` by reason word (``invalid_number`` of
    ``invalid_number: too short``): people and messages per run, most people first."""
    if skipped.empty:
        return pd.DataFrame({c.key: [] for c in SKIP_COLUMNS})
    out = skipped.assign(reason=skipped["reason"].map(
        lambda r: str(r or "").split(":")[0].strip() or "no reason"))  # fmt: skip
    out = out.groupby(["reason", "run_id"], as_index=False)[["people", "n"]].sum()
    return out.sort_values(["run_id", "people", "reason"], ascending=[True, False, True],
                           ignore_index=True)  # fmt: skip


def build(runs: list[RunInfo], groups: pd.DataFrame, scan: det.DetailScan,
          skipped: pd.DataFrame, optouts: pd.DataFrame) -> Summary:  # fmt: skip
    """The Summary from ``ledger.queries.reports.state_groups``, ``details.scan(...)``,
    ``ledger.queries.reports.skip_reasons`` and ``.optouts``."""
    channel = report_channel(runs)
    channels = {r.channel for r in runs}
    extras = scan.totals
    flags = _flags(groups)
    per_run = _totals(flags, extras, ["run_id"])
    sections: list[tuple[str, list[Metric]]] = [("Run", _run_section(runs))]

    states = groups.groupby(["state", "run_id"])["n"].sum()
    present = [s for s in _STATE_ORDER if s in states.index.get_level_values(0)]
    present += sorted(set(states.index.get_level_values(0)) - set(present))
    by_state = [Metric(s, "int", [int(states.get((s, r.id), 0)) for r in runs]) for s in present]
    for metric in by_state:
        metric.total = sum(metric.values)
    by_state.append(_count("Total", per_run, runs, "deliveries"))
    sections.append(("Deliveries by state", by_state))

    funnel = [_count(label, per_run, runs, key) for label, key in FUNNELS[channel]]
    sections.append(("Funnel", funnel))
    sections.append(("Rates", [_rate_metric(label, per_run, runs, part, whole)
                               for label, part, whole in _rates(channel)]))  # fmt: skip
    if any(map(error_codes, channels)) or per_run["segments"].sum():
        sections.append(("SMS", [
            _count("Delivered", per_run, runs, "delivered"),
            _count("Undelivered", per_run, runs, "undelivered"),
            _count("Segments", per_run, runs, "segments"),
            _count("Cost (R$)", per_run, runs, "cost", "money")]))  # fmt: skip
    if any(map(call_keys, channels)) or per_run["talk_seconds"].sum():
        per_run["talk_min"] = per_run["talk_seconds"] / 60
        sections.append(("Voice", [
            _count("Answered", per_run, runs, "answered"),
            _count("Not answered", per_run, runs, "not_answered"),
            _rate_metric("Answered (% of dialed)", per_run, runs, "answered", "sent"),
            _count("Talk time (min)", per_run, runs, "talk_min", "number"),
            _count("Pressed a key", per_run, runs, "digits")]))  # fmt: skip
    for title, rows in channel_sections(runs, per_run, scan):
        sections.append((title, [Metric(label, "int", values, sum(values))
                                 for label, values in rows]))  # fmt: skip
    sections.append(("Opt-outs", _optout_metrics(runs, optouts)))
    sender_keys = [Column("run_id", "Run", "int", 6), Column("sender", "Sender", "user_text", 16)]
    step_keys = [Column("run_id", "Run", "int", 6), Column("step", "Step", "int", 6),
                 Column("kind", "Kind", "text", 10)]  # fmt: skip
    return Summary(
        runs=runs, channel=channel, sections=sections,
        funnel=[(m.label, int(m.total or 0)) for m in funnel],
        by_sender=_table(_totals(flags, extras, ["run_id", "sender"]), sender_keys, channel,
                         channels),
        by_step=_table(_totals(flags, extras, ["run_id", "step", "kind"]), step_keys, channel,
                       channels),
        skipped=skipped_table(skipped),
        notes=list(fn.HOW_TO_READ),
    )  # fmt: skip


def _optout_metrics(runs: list[RunInfo], optouts: pd.DataFrame) -> list[Metric]:
    after, before = [], []
    created = pd.to_datetime(optouts["created_at"], utc=True, format="ISO8601")
    for run in runs:
        mine = created[optouts["run_id"] == run.id]
        planned = pd.Timestamp(run.created_at) if run.created_at else None
        early = int((mine < planned).sum()) if planned is not None else 0
        before.append(early)
        after.append(len(mine) - early)
    return [
        Metric("Opted out since the run was planned", "int", after, sum(after)),
        Metric("Already opted out when planned", "int", before, sum(before)),
    ]


ERROR_COLUMNS = [Column("run_id", "Run", "int", 6), Column("state", "State", "text", 12),
                 Column("message", "Message", "user_text", 60), Column("n", "Count", "int", 9),
                 Column("share", "Share of the run", "percent", 16),
                 Column("first_at", "First", "date", 19), Column("last_at", "Last", "date", 19),
                 Column("example", "Example number", "user_text", 16)]  # fmt: skip


def errors_table(raw: pd.DataFrame, runs: Sequence[RunInfo], groups: pd.DataFrame
                 ) -> pd.DataFrame:  # fmt: skip
    """``source.error_groups`` with each group's share of its run and local times."""
    from scheduler.reports.columns import local_times

    out = raw.copy()
    if out.empty:
        return out.assign(share=[])
    zones = {r.id: r.timezone for r in runs}
    sizes = groups.groupby("run_id")["n"].sum()
    out["share"] = [
        rate(n, float(sizes.get(r, 0))) for r, n in zip(out["run_id"], out["n"], strict=True)
    ]
    for name in ("first_at", "last_at"):
        out[name] = local_times(out[name], out["run_id"], zones)
    out["message"] = out["message"].where(out["message"] != "", "(no message)")
    return out  # fmt: skip


def hourly_sends(minutes: Iterable[tuple[pd.Series, pd.Series]]) -> pd.DataFrame:
    """Sends per local hour (``hour``, ``sends``) from (naive local time, count) pairs."""
    parts = [pd.Series(counts.to_numpy(), index=local.dt.floor("h").to_numpy())
             for local, counts in minutes if len(local)]  # fmt: skip
    if not parts:
        return pd.DataFrame({"hour": pd.Series([], dtype="datetime64[us]"),
                             "sends": pd.Series([], dtype="int64")})  # fmt: skip
    counts = pd.concat(parts).groupby(level=0).sum().sort_index()
    return pd.DataFrame({"hour": counts.index, "sends": counts.to_numpy().astype("int64")})
