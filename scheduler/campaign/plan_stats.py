"""A plan's counts (``PlanStats``), the ``max_invalid`` check and the senders' shares."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from scheduler.campaign.exceptions import Issue
from scheduler.campaign.invalid_share import invalid_limit
from scheduler.campaign.label_filter import LabelAudience
from scheduler.campaign.loader import Campaign
from scheduler.core.channel_terms import terms_of

MAX_INVALID_LISTED = 10_000  # invalid numbers a plan lists; the rest are only counted
MAX_SAME_ERROR = 20  # rows kept of one same error; the rest are only counted


@dataclass
class PlanStats:
    """Counts of a plan, complete once its chunks have all been read."""

    read: int = 0
    valid: int = 0
    duplicates: int = 0
    suppressed: int = 0
    invalid_total: int = 0
    unreachable: int = 0
    ninth_digit_added: int = 0
    blank_skipped: int = 0  # recipients [blanks] skips for a blank value
    #: left out by the label filter: no ``labels`` name, or an ``exclude_labels`` one
    not_labelled: int = 0
    label_excluded: int = 0
    #: left out for want of consent ([recipients] consent = "required")
    no_consent: int = 0
    #: left out because the number was erased at the person's request (``person forget``)
    erased: int = 0
    #: of ``suppressed``, the numbers on the ledger's own suppression list (opt-out replies,
    #: an IVR key, the API), which the run's plan writer skips as ``suppressed``
    suppressed_ledger: int = 0
    labels: LabelAudience | None = None
    invalid: list[dict[str, Any]] = field(default_factory=list)
    errors: list[Issue] = field(default_factory=list)
    error_total: int = 0
    planned_per_step: Counter[int] = field(default_factory=Counter)
    skipped_per_step: Counter[int] = field(default_factory=Counter)
    recipients_per_sender: Counter[str] = field(default_factory=Counter)
    sms_segments_per_step: Counter[int] = field(default_factory=Counter)
    sms_encodings: Counter[str] = field(default_factory=Counter)
    #: Recipients per variant (A/B variants) sent at once (the test share, or a plain
    #: split), and how many wait for the test's winner (held).
    variant_recipients: Counter[str] = field(default_factory=Counter)
    held_recipients: int = 0
    #: [fallback]: recipients it may go to, those it may not (by why), an SMS's segments.
    fallback_eligible: int = 0
    fallback_none: Counter[str] = field(default_factory=Counter)
    fallback_segments: int = 0
    _same_error: Counter[tuple[str | None, str]] = field(default_factory=Counter, repr=False)

    def recipients_json(self) -> dict[str, Any]:
        """The ``recipients`` object of ``campaign validate --json``."""
        return {
            "read": self.read,
            "valid": self.valid,
            "duplicates": self.duplicates,
            "suppressed": self.suppressed,
            "invalid": list(self.invalid),
            "invalid_total": self.invalid_total,
            "unreachable": self.unreachable,
            "ninth_digit_added": self.ninth_digit_added,
            "blank_skipped": self.blank_skipped,
            "not_labelled": self.not_labelled,
            "label_excluded": self.label_excluded,
            "no_consent": self.no_consent,
            "erased": self.erased,
            "suppressed_ledger": self.suppressed_ledger,
        }

    def count_fallback(self, fallback: dict[str, Any], parts: tuple[int, str] | None) -> None:
        """Count a sendable recipient's ``fallback`` (see ``campaign.fallback_render``)."""
        if "none" in fallback:
            self.fallback_none[str(fallback["none"])] += 1
            return
        self.fallback_eligible += 1
        if parts is not None:
            self.fallback_segments += parts[0]

    def add_error(self, issue: Issue) -> None:
        """Keep an error; past :data:`MAX_SAME_ERROR` of the same kind only count it.

        An undefined variable is a column the CSV does not have, so every row repeats it:
        it is kept once (with the first row), not once a row.
        """
        self.error_total += 1
        kind = (issue.key, issue.message)
        self._same_error[kind] += 1
        limit = 1 if issue.message.startswith("undefined variable") else MAX_SAME_ERROR
        if self._same_error[kind] <= limit:
            self.errors.append(issue)

    def finish(self) -> None:
        """Summarise errors that were only counted."""
        for (key, message), count in self._same_error.items():
            if message.startswith("undefined variable"):
                continue
            if count > MAX_SAME_ERROR:
                file = next(e.file for e in self.errors if (e.key, e.message) == (key, message))
                self.errors.append(
                    Issue(file, f"… and {count - MAX_SAME_ERROR} more rows: {message}", key=key)
                )
        self._same_error.clear()


def invalid_limit_issue(campaign: Campaign, stats: PlanStats) -> Issue | None:
    """The error of a plan with more invalid or unreachable numbers than ``max_invalid``."""
    spec = campaign.spec.recipients
    limit = invalid_limit(spec.max_invalid, stats.read)
    if limit is None or stats.invalid_total <= limit:
        return None
    share = 100 * stats.invalid_total / stats.read if stats.read else 0.0
    setting = spec.max_invalid if isinstance(spec.max_invalid, int) else f'"{spec.max_invalid}"'
    return Issue(
        campaign.label,
        f"{stats.invalid_total:,} of {stats.read:,} numbers ({share:.1f}%) are invalid or "
        f"cannot be reached {terms_of(campaign.spec.channel).reach}, more than "
        f"max_invalid = {setting} "
        f"allows ({limit:,}): correct the list (campaign validate lists them) or raise "
        "max_invalid",
        key="recipients.max_invalid",
        line=campaign.line_of("recipients.max_invalid"),
    )


def round_robin(count: int, senders: list[str]) -> Counter[str]:
    """How many of ``count`` recipients each sender gets in turn, the first sender first."""
    base, extra = divmod(count, len(senders))
    shares = {s: base + (i < extra) for i, s in enumerate(senders)}
    return Counter({s: n for s, n in shares.items() if n})
