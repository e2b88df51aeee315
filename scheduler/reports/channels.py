"""What the channel charts of a report count, per run: SMS delivery by error code, voice
outcomes and the digits pressed (no I/O here).

- **SMS delivery by error code**, of what the service took: ``delivered``, each error code
  of the undelivered rows, undelivered rows without a code, and what no report has settled
  yet.
- **Voice outcomes**, of what was dialled: ``answered``, each cause in words of the calls
  not answered ("busy", "no answer", "voicemail" …), and calls with no outcome yet.
- **Digits pressed** in the answered calls: each sequence of keys, and ``no key pressed``.

Each row counts only the runs of its channel (a report may mix channels); a category with
no row in any run is left out, and a section may be empty.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from scheduler.dispatch.channels import known_channel
from scheduler.reports import details as det

if TYPE_CHECKING:
    import pandas as pd

    from scheduler.reports.source import RunInfo

SMS_CODES = "SMS delivery by error code"
VOICE_OUTCOMES = "Voice outcomes"
DIGITS = "Digits pressed"
DELIVERED = "delivered"
NO_REPORT = "no report yet"
NO_OUTCOME = "no outcome yet"

#: One chart row: its label and one count per run.
Row = tuple[str, list[int]]


def error_codes(channel: str) -> bool:
    """Whether runs of ``channel`` have delivery reports with error codes, priced by
    segment (SMS)."""
    known = known_channel(channel)
    return known is not None and known.error_codes


def call_keys(channel: str) -> bool:
    """Whether runs of ``channel`` have call outcomes and keys pressed (voice)."""
    known = known_channel(channel)
    return known is not None and known.reports_keys


#: Summary sections drawn as charts (in the workbook and as PNG files): their titles, the
#: PNG file's suffix, and the runs they count (by the run's channel).
CHANNEL_SECTIONS: tuple[tuple[tuple[str, ...], str, Callable[[str], bool]], ...] = (
    ((SMS_CODES,), "sms-delivery", error_codes),
    ((VOICE_OUTCOMES, DIGITS), "voice-outcomes", call_keys),
)


def sections_of(channels: Iterable[str]) -> list[tuple[str, tuple[str, ...]]]:
    """``(file suffix, titles)`` of the channel sections of runs of ``channels``, in order."""
    present = list(channels)
    return [(suffix, titles) for titles, suffix, counts in CHANNEL_SECTIONS
            if any(map(counts, present))]


def _labels(counts: Counter[tuple[int, str]]) -> list[str]:
    """The labels of ``counts``, most rows first (then by name)."""
    totals: Counter[str] = Counter()
    for (_run, label), n in counts.items():
        totals[label] += n
    return sorted(totals, key=lambda label: (-totals[label], label))


def _of(counts: Counter[tuple[int, str]], label: str) -> dict[int, int]:
    return {run_id: n for (run_id, name), n in counts.items() if name == label}


def _row(label: str, by_run: Mapping[int, float], runs: list[RunInfo],
         counts: Callable[[str], bool]) -> Row:
    """``label`` with its count in each run whose channel ``counts`` (0 in the others)."""
    return label, [max(int(by_run.get(r.id, 0)), 0) if counts(r.channel) else 0
                   for r in runs]  # fmt: skip


def _rest(per_run: pd.DataFrame, whole: str, minus: tuple[str, ...],
          counted: Counter[tuple[int, str]]) -> dict[int, float]:  # fmt: skip
    """Per run: ``whole`` less the ``minus`` columns and the rows ``counted`` (never < 0)."""
    out: dict[int, float] = {}
    for run_id in per_run.index:
        rest = float(per_run[whole].get(run_id, 0))
        rest -= sum(float(per_run[column].get(run_id, 0)) for column in minus)
        rest -= sum(n for (r, _), n in counted.items() if r == run_id)
        out[int(run_id)] = max(rest, 0.0)
    return out


def _kept(rows: list[Row]) -> list[Row]:
    return [(label, values) for label, values in rows if sum(values)]


def channel_sections(runs: list[RunInfo], per_run: pd.DataFrame, scan: det.DetailScan
                     ) -> list[tuple[str, list[Row]]]:  # fmt: skip
    """The channel sections of the report's channels: ``(title, rows)``; ``per_run`` is the
    Summary's counts by run id (``sent``, ``delivered``, ``undelivered`` …)."""
    channels = {r.channel for r in runs}
    out: list[tuple[str, list[Row]]] = []
    if any(map(error_codes, channels)):
        codes = scan.error_codes
        out.append((SMS_CODES, _kept([
            _row(DELIVERED, _rest(per_run, "delivered", (), Counter()), runs, error_codes),
            *(_row(code, _of(codes, code), runs, error_codes) for code in _labels(codes)),
            _row(det.NO_CODE, _rest(per_run, "undelivered", (), codes), runs, error_codes),
            _row(NO_REPORT, _rest(per_run, "sent", ("delivered", "undelivered"), Counter()),
                 runs, error_codes),
        ])))  # fmt: skip
    if any(map(call_keys, channels)):
        outcomes = sorted(_labels(scan.outcomes), key=lambda label: label != det.ANSWERED)
        out.append((VOICE_OUTCOMES, _kept([
            *(_row(o, _of(scan.outcomes, o), runs, call_keys) for o in outcomes),
            _row(NO_OUTCOME, _rest(per_run, "sent", (), scan.outcomes), runs, call_keys),
        ])))  # fmt: skip
        keys = sorted(_labels(scan.digits), key=lambda label: (label == det.NO_KEY, label))
        out.append((DIGITS, _kept([_row(k, _of(scan.digits, k), runs, call_keys)
                                   for k in keys])))  # fmt: skip
    return out
