"""The plan: every recipient of a campaign, normalised, de-duplicated, checked and rendered.

Contract with the ledger (``scheduler/ledger``)::

    campaign = load_campaign(path)               # raises CampaignError listing every problem
    plan = build_plan(campaign, chunk_rows=50_000)
    for rows in plan.chunks():                   # lists of plain dicts, streamed
        ...                                      # one dict per (recipient, step)
    plan.stats                                   # complete once chunks() is exhausted

Each row, in CSV order then step order: ``row`` (1-based CSV data row), ``to`` (normalised
digits, or the raw value when invalid), ``step`` (0-based), ``kind`` (``"text"``, …,
``"sms"``, ``"voice"``), ``path`` (endpoint), ``payload`` (the rendered wire body without
``sessionId`` and ``to``; ``{}`` when skipped), ``variables`` (the row's CSV columns by slug,
the phone column excepted), ``state`` (``"planned"`` or ``"skipped"``), ``reason`` (``None``,
``"invalid_number: …"``, a line type the channel does not reach such as ``"landline: WhatsApp
and SMS need a mobile number"`` (see :mod:`scheduler.campaign.linetypes`), ``"duplicate"``,
``"suppressed"``, ``"blank_value: <column>"`` (``[blanks]``, :mod:`scheduler.campaign.blanks`),
``"label: …"`` (the label filter, :mod:`scheduler.campaign.label_filter`), ``"no_consent: …"``
(:mod:`scheduler.campaign.consent`), ``"erased at the person's request on …"`` (a number
erased with ``person forget``, :mod:`scheduler.privacy.erased`), or
``"render_error: …"`` when not strict) and ``region`` (phone region code such as
``"BR"``). A campaign with retry rules or ``[fallback]`` adds ``watch`` (1 on a planned or
held row of a step with retry rules, or of step 0 with ``[fallback]``: its outcome awaits a
verdict; else None) and ``fallback`` (step-0 rows with ``[fallback]``: ``{"kind", "path",
"payload"}`` rendered for the recipient, or ``{"none": why}`` when the number's line type
does not suit the fallback's channel, see :mod:`scheduler.campaign.fallback_render`; else
None); other campaigns' rows have neither key (10 keys keep a row's dict small). A skipped
recipient has one skipped row per step. Order of checks: invalid,
unreachable line type, suppressed, duplicate (the first occurrence of a number is kept,
even when a blank value skips it), blank values, label filter, consent, erased, the ledger's
list (``"suppressed"``: the order of a stored run's reasons). Invalid and unreachable
numbers are the campaign's *invalid* numbers: counted, listed by ``campaign validate``
and, past ``[recipients] max_invalid``, an error.

With ``strict=True`` (the default, for storing a run) the first template, body or CSV error
raises, and so does going over ``max_invalid`` once every row is read (the ledger then
rolls the whole plan back); with ``strict=False`` (``campaign validate``) errors are
collected in ``plan.stats.errors`` with their rows, the same messages. Memory: one chunk of
rows plus the set of numbers seen (for duplicates) and the suppression set.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from scheduler.campaign.blanks import BlankRules, blank_rules
from scheduler.campaign.chunk_plan import (
    ChunkPlanner,
    ChunkResult,
    init_worker,
    plan_chunk_in_worker,
)
from scheduler.campaign.consent import ConsentGate, consent_gate
from scheduler.campaign.exceptions import (
    BlankValueError,
    CampaignError,
    DefinitionError,
    EmptyRecipientsFile,
    InvalidRenderedBodyError,
    Issue,
    SandboxViolationError,
    TemplateError,
    TooManyInvalidNumbers,
    UndefinedVariableError,
)
from scheduler.campaign.gc_pause import gc_paused
from scheduler.campaign.label_filter import LabelAudience
from scheduler.campaign.loader import Campaign, CompiledStep, load_campaign
from scheduler.campaign.phones import PhoneNormalizer
from scheduler.campaign.plan_stats import (
    MAX_INVALID_LISTED,
    PlanStats,
    invalid_limit_issue,
    round_robin,
)
from scheduler.campaign.recipients import (
    CsvLayout,
    find_column,
    iter_phone_values,
    read_chunks,
    read_layout,
)
from scheduler.campaign.variant_render import HELD, count_split, split_of
from scheduler.experiments.exact import ExactSplit, exact_split

__all__ = ["Plan", "PlanStats", "build_plan", "load_campaign"]

_ERROR_PREFIXES: tuple[tuple[str, type[CampaignError]], ...] = (
    ("undefined variable", UndefinedVariableError),
    ("sandbox violation", SandboxViolationError),
    ("rendered ", InvalidRenderedBodyError),
    ("blank value", BlankValueError),
)


class Plan:
    """A campaign's deliveries, streamed in chunks (see the module doc for the row keys)."""

    def __init__(
        self,
        campaign: Campaign,
        layout: CsvLayout,
        phone_slug: str,
        suppressed: set[str],
        *,
        chunk_rows: int = 50_000,
        strict: bool = True,
        workers: int = 1,
        blanks: BlankRules | None = None,
        labels: LabelAudience | None = None,
        consent: ConsentGate | None = None,
        erased: Callable[[str], str | None] | None = None,
        listed: frozenset[str] | None = None,
    ) -> None:
        self.campaign = campaign
        self.blanks = blanks
        self.labels, self.consent = labels, consent
        #: An erased number's reason (else None); the ledger's suppression list (None: empty).
        self.erased, self.listed = erased, listed
        self.layout = layout
        self.phone_slug = phone_slug
        self.suppressed = suppressed
        self.chunk_rows = chunk_rows
        self.strict = strict
        self.workers = max(1, workers)
        self.stats = PlanStats(labels=labels)
        self.complete = False
        self.variable_slugs = [s for s in layout.slugs if s != phone_slug]
        #: The campaign's A/B variants (None: it has none).
        self.split = split_of(campaign)
        self._problems: list[Issue] = []  # malformed CSV rows, when not strict

    @property
    def steps(self) -> list[CompiledStep]:
        """The campaign's compiled steps."""
        return self.campaign.steps

    def _results(self) -> Iterator[ChunkResult]:
        """Each chunk's work, in order: here, or in a bounded pool of worker processes."""
        label = str(self.campaign.recipients_file)
        reader = read_chunks(
            self.campaign.recipients_file,
            self.layout,
            chunk_rows=self.chunk_rows,
            label=label,
            problems=None if self.strict else self._problems,
        )
        exact = self._exact_split()
        if self.workers == 1:
            planner = ChunkPlanner(self.campaign, self.phone_slug, self.variable_slugs,
                                   self.blanks)
            if planner.variants is not None:
                planner.variants.exact = exact
            for chunk in reader:
                yield planner.plan(chunk.first_row, chunk.columns, chunk.blank)
            return
        context = multiprocessing.get_context("spawn")  # safe beside threads, on any OS
        init = (str(self.campaign.path), self.phone_slug, self.variable_slugs, self.blanks,
                [step.context for step in self.campaign.steps], self.campaign.linker.binding,
                exact)
        with ProcessPoolExecutor(
            self.workers, mp_context=context, initializer=init_worker, initargs=init
        ) as pool:
            pending: deque[Future[ChunkResult]] = deque()
            try:
                for chunk in reader:
                    pending.append(
                        pool.submit(
                            plan_chunk_in_worker, chunk.first_row, chunk.columns, chunk.blank
                        )
                    )
                    if len(pending) > 2 * self.workers:  # memory stays bounded
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
            finally:
                for future in pending:
                    future.cancel()

    def _exact_split(self) -> ExactSplit | None:
        """With ``[experiment]``, the test share counted over every recipient the plan
        keeps (a first pass over the file: numbers, opt-outs, duplicates, blanks, labels,
        consent, erasures, the ledger's list, no rendering): a recipient skipped later takes
        no variant's share; None otherwise."""
        experiment = self.campaign.spec.experiment
        if self.split is None or experiment is None:
            return None
        from scheduler.campaign.first_pass import kept_numbers

        return exact_split(self.campaign.spec.name, kept_numbers(self),
                           experiment.test_share, self.split.pairs)

    def chunks(self) -> Iterator[list[dict[str, Any]]]:
        """Lists of plan rows, in CSV order then step order; resets :attr:`stats`."""
        self.stats = PlanStats(labels=self.labels)
        self.complete = False
        for issue in self.blanks.issues if self.blanks is not None else ():
            self.stats.add_error(issue)  # a lenient read's [blanks] errors, with the rows'
        seen: set[str] = set()
        results = self._results()
        while True:
            with gc_paused():
                result = next(results, None)
                if result is not None:
                    self._settle(result, seen)
            for issue in self._problems:
                self.stats.add_error(issue)
            self._problems.clear()
            if result is None:
                break
            if result.rows:
                yield result.rows
        self.stats.recipients_per_sender = round_robin(self.stats.valid, self.campaign.senders)
        over = invalid_limit_issue(self.campaign, self.stats)
        if over is not None:
            if self.strict:
                raise TooManyInvalidNumbers(over)
            self.stats.add_error(over)
        self.stats.finish()
        self.complete = True

    def consume(self) -> PlanStats:
        """Read every chunk (discarding the rows) and return the complete stats."""
        for _rows in self.chunks():
            pass
        return self.stats

    def _settle(self, result: ChunkResult, seen: set[str]) -> None:
        """Decide duplicates and opt-outs in CSV order, count, and apply strictness."""
        stats, rows, width = self.stats, result.rows, len(self.steps)
        suppressed, errors, sms_parts = self.suppressed, result.errors, result.sms_parts
        labels, consent, listed = self.labels, self.consent, self.listed
        stats.planned_per_step.update(result.planned)
        stats.skipped_per_step.update(result.skipped)
        valid = duplicates = opted_out = invalid = blank = 0
        blank_rows = result.blank_skipped

        def skip(first: int, reason: str) -> None:
            for item in rows[first : first + width]:
                if item["state"] in ("planned", HELD):
                    stats.planned_per_step[item["step"]] -= 1
                    stats.skipped_per_step[item["step"]] += 1
                item["state"], item["reason"], item["payload"] = "skipped", reason, {}
                if "watch" in item:
                    item["watch"] = item["fallback"] = None
                if item.get("choices"):
                    item["choices"] = None

        for row, first, digits, _region, why, raw in result.recipients:
            if digits is None:
                invalid += 1
                if len(stats.invalid) < MAX_INVALID_LISTED:
                    stats.invalid.append({"row": row, "value": raw, "reason": why})
                continue
            if digits in suppressed or digits in seen:
                reason = "suppressed" if digits in suppressed else "duplicate"
                if reason == "suppressed":
                    opted_out += 1
                else:
                    duplicates += 1
                skip(first, reason)
                continue
            seen.add(digits)
            if blank_rows and row in blank_rows:  # [blanks] skips it: later rows are dups
                blank += 1
                continue
            left_out = labels.reason(digits) if labels is not None else None
            if left_out is not None:
                if digits in labels.drop:  # type: ignore[union-attr]  # set with left_out
                    stats.label_excluded += 1
                else:
                    stats.not_labelled += 1
                skip(first, left_out)
                continue
            no_consent = consent.check(digits, rows[first:first + width]) if consent else None
            if no_consent is not None:
                stats.no_consent += 1
                skip(first, no_consent)
                continue
            gone = self.erased(digits) if self.erased is not None else None
            if gone is not None:  # the words the stored run's rows carry
                stats.erased += 1
                skip(first, gone)
                continue
            if listed is not None and digits in listed:  # the ledger's list: as its plan
                opted_out += 1  # writer skips it (scheduler.ledger.planwriter)
                stats.suppressed_ledger += 1
                skip(first, "suppressed")
                continue
            valid += 1
            issues = errors.get(row) if errors else None
            if issues:
                if self.strict:
                    raise _error_class(issues)(issues)
                for issue in issues:
                    stats.add_error(issue)
            for step, parts, encoding in sms_parts.get(row, ()) if sms_parts else ():
                stats.sms_segments_per_step[step] += parts
                stats.sms_encodings[encoding] += 1
            fallback = rows[first].get("fallback")
            if fallback is not None:
                stats.count_fallback(fallback, result.fallback_parts.get(row))
        if self.split is not None:  # recipients per variant, by the first varied step
            held = Counter[str]()
            count_split(rows, self.split.steps[0], stats.variant_recipients, held)
            stats.held_recipients += held[""]
        stats.read += len(result.recipients)
        stats.valid += valid
        stats.duplicates += duplicates
        stats.suppressed += opted_out
        stats.blank_skipped += blank
        stats.invalid_total += invalid
        stats.unreachable += result.unreachable
        stats.ninth_digit_added += result.ninth_digit_added


def _error_class(issues: list[Issue]) -> type[CampaignError]:
    """The exception class of a render failure, from its message (issues cross processes)."""
    message = issues[0].message
    for prefix, cls in _ERROR_PREFIXES:
        if message.startswith(prefix):
            return cls
    return TemplateError


def load_suppression(campaign: Campaign) -> set[str]:
    """Every number of the campaign's suppression lists, normalised (invalid ones ignored)."""
    recipients = campaign.spec.recipients
    normalizer = PhoneNormalizer(
        recipients.default_country, add_ninth_digit=recipients.add_ninth_digit
    )
    numbers: set[str] = set()
    for path in campaign.suppression_files:
        for value in iter_phone_values(path):
            digits = normalizer.normalize(value).digits
            if digits:
                numbers.add(digits)
    return numbers


def build_plan(
    campaign: Campaign | Path | str,
    *,
    chunk_rows: int = 50_000,
    strict: bool = True,
    workers: int = 1,
    labels: LabelAudience | None = None,
    imported: Mapping[str, str] | None = None,
    erased: Callable[[str], str | None] | None = None,
    listed: frozenset[str] | None = None,
) -> Plan:
    """Check the recipients file's layout and the suppression lists, and return the plan.

    ``labels``: the label filter the caller resolved (:mod:`scheduler.campaign.label_filter`);
    ``imported``: the imported consent records by number (:mod:`scheduler.campaign.consent`);
    ``erased``: a number's reason when it was erased at the person's request, else None
    (:class:`scheduler.privacy.erased.ErasedNumbers`' ``reason``); ``listed``: the ledger's.

    ``workers`` > 1 renders chunks in that many processes (same rows, same order). Measured
    on P1, moving plan rows between processes (pickling ~10⁵ dicts per chunk) costs more
    than rendering them, so the default is 1; a pool only pays for heavy templates that
    fall back to Jinja.
    """
    if not isinstance(campaign, Campaign):
        campaign = load_campaign(campaign)
    spec = campaign.spec
    if strict and labels is None and (spec.labels or spec.exclude_labels):
        raise DefinitionError(Issue(campaign.label, "the label filter was not resolved "
                                    "(a bug: the planner must read the ledger's labels)",
                                    key="labels"))
    label = str(campaign.recipients_file)
    layout = read_layout(campaign.recipients_file, label=label)
    if not layout.has_rows:
        raise EmptyRecipientsFile("the file has a header and no rows", file=label)
    index = find_column(
        layout, campaign.spec.recipients.phone_column, label=label, key="recipients.phone_column"
    )
    blanks = blank_rules(campaign, layout, layout.slugs[index], strict=strict)
    consent = consent_gate(spec.recipients, spec.channel, lambda wanted, key: layout.slugs[
        find_column(layout, wanted, label=label, key=key)], imported)
    suppressed = load_suppression(campaign)
    return Plan(
        campaign,
        layout,
        layout.slugs[index],
        suppressed,
        chunk_rows=chunk_rows,
        strict=strict,
        workers=workers,
        blanks=blanks,
        labels=labels,
        consent=consent,
        erased=erased, listed=listed,
    )
