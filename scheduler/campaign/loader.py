"""Load a campaign file into a checked :class:`Campaign`, reporting every problem at once.

**Paths rule**: the recipients file and suppression lists are relative to the *project
root*, which is the parent of the folder holding the campaign file
(``campaigns/welcome.toml`` → the folder above ``campaigns/``), or absolute. A template file
(``text_file = "welcome.txt.j2"``) is an absolute path, or under ``templates/`` in that
root, or beside the campaign file, tried in that order
(:mod:`scheduler.campaign.templatefiles`; a missing one is an error listing the paths
tried). The rule depends only on where the campaign file is, so any working directory
gives the same result.

What is checked here, all of it before raising: TOML syntax; every key of the definition
(pydantic, in a person's words, with the key's line in the file); that the recipients and
suppression files exist; every step's type and fields against the endpoint's model (with
templates replaced by a placeholder) and the bounds of its constant parts; every template's
syntax (the steps in :mod:`scheduler.campaign.step_compile`). Rows are checked later, when
the plan renders them.

``load_campaign(path, lenient=True)`` (``campaign validate``) does not raise for these: it
returns a best-effort campaign (wrong keys dropped, see :mod:`scheduler.campaign.specerrors`)
with the problems in ``campaign.issues`` and the broken steps marked, so the rows can still
be checked in the same run. It raises only when nothing can be read further (a TOML syntax
error, no recipients file).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from jinja2.sandbox import SandboxedEnvironment
from pydantic import ValidationError

from scheduler.campaign.definition import BoundsSpec, CampaignSpec
from scheduler.campaign.exceptions import DefinitionError, Issue
from scheduler.campaign.recycle_spec import fallback_problems, fallback_step_fields
from scheduler.campaign.rendering import linker_of, make_environment
from scheduler.campaign.specerrors import describe, lenient_spec
from scheduler.campaign.step_compile import Collector, CompiledStep, campaign_split, check_step
from scheduler.campaign.steps import (
    PLACEHOLDER_SESSION,
    loc_path,
)
from scheduler.campaign.tomllines import key_lines, line_of
from scheduler.campaign.variants import experiment_problem
from scheduler.core.units import load_zone
from scheduler.links.render import Linker
from scheduler.settings.run import CHANNELS, DEFAULT_TIMEZONE


@dataclass
class Campaign:
    """A loaded, checked campaign: the definition, its resolved paths and compiled steps."""

    path: Path
    root: Path
    spec: CampaignSpec
    steps: list[CompiledStep]
    recipients_file: Path
    suppression_files: list[Path]
    env: SandboxedEnvironment = field(repr=False)
    lines: dict[str, int] = field(default_factory=dict, repr=False)
    issues: list[Issue] = field(default_factory=list)
    #: ``[fallback]``'s step, compiled as a step of the fallback's channel.
    fallback: CompiledStep | None = None

    def line_of(self, key: str | None) -> int | None:
        """The line of ``key`` (or of its nearest enclosing key) in the campaign file."""
        return line_of(self.lines, key)

    @property
    def linker(self) -> Linker:
        """``link()`` of its templates (bind it before rendering rows with links)."""
        return linker_of(self.env)

    @property
    def label(self) -> str:
        """The campaign file as shown in messages."""
        return str(self.path)

    @property
    def zone(self) -> tzinfo:
        """The campaign's time zone."""
        return load_zone(self.spec.schedule.timezone)

    @property
    def senders(self) -> list[str]:
        """Sender ids; SMS and voice campaigns without any send as ``"account"``."""
        return list(self.spec.senders) or ["account"]

    @property
    def preview_session(self) -> str:
        """The ``sessionId`` used to validate and preview bodies: the first sender."""
        return self.spec.senders[0] if self.spec.senders else PLACEHOLDER_SESSION

    def start_time(self, now: datetime) -> datetime:
        """When the next run starts: ``at``, the next cron fire time after ``now``, or ``now``."""
        schedule, zone = self.spec.schedule, self.zone
        if schedule.at is not None:
            at = schedule.at
            return at if at.tzinfo is not None else at.replace(tzinfo=zone)
        if schedule.cron is not None:
            from apscheduler.triggers.cron import CronTrigger

            trigger = CronTrigger.from_crontab(schedule.cron, timezone=zone)
            fire = trigger.get_next_fire_time(None, now.astimezone(zone))
            return fire if fire is not None else now
        return now


def _resolve(root: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else (root / path)


def _read_toml(path: Path, label: str) -> tuple[dict[str, Any], str]:
    if not path.is_file():
        raise DefinitionError(Issue(label, "campaign file not found"))
    try:
        text = path.read_text(encoding="utf-8-sig")
        return tomllib.loads(text), text
    except UnicodeDecodeError:
        raise DefinitionError(Issue(label, "not UTF-8 text")) from None
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        line = int(found.group(1)) if found else None
        if line is None and "end of document" in str(exc):
            line = max(text.count("\n"), 1)
        raise DefinitionError(Issue(label, f"not valid TOML: {exc}", line=line)) from None


def _keyed(err: Any) -> tuple[str, str | None]:
    """(message, key path) of a pydantic error; a whole-file check that names its key
    (``senders: a WhatsApp campaign needs …``) is filed under that key."""
    key = loc_path(tuple(err["loc"])) or None
    message = describe(err)
    named = re.match(r"([\w.]+): (.+)", message)
    if (key is None and named is not None
            and named.group(1).split(".")[0] in CampaignSpec.model_fields):
        key, message = named.group(1), named.group(2)
    return message, key


def _cross_checks(spec: CampaignSpec | None, found: Collector) -> None:
    """Checks across keys that pydantic skipped because a key they read was wrong."""
    problem = spec.whole_file_problem() if spec is not None else None
    if problem is not None and not any(i.key == problem[0] for i in found.issues):
        found.add(problem[1], problem[0])


def load_campaign(path: Path | str, *, lenient: bool = False) -> Campaign:
    """Read, validate and compile a campaign file; raise one error listing every problem.

    With ``lenient=True`` the problems are in ``campaign.issues`` instead, on a best-effort
    campaign (see the module doc); it still raises when there is nothing to go on with.
    """
    path = Path(path).expanduser().resolve()
    label = str(path)
    data, text = _read_toml(path, label)
    root = path.parent.parent
    found = Collector(label, key_lines(text))
    spec = _validate(data, found, lenient=lenient)
    recipients_file, suppression_files = _data_files(data, root, found)
    bounds = spec.bounds if spec is not None else BoundsSpec()
    linker = Linker(track=spec.track_links if spec is not None else True)
    env = make_environment([root / "templates", path.parent], bounds.render_limits(), linker)
    steps, fallback = _compile_steps(data, spec, env, found, bounds)
    if not lenient or spec is None or recipients_file is None:
        found.raise_if_any()
    assert spec is not None and recipients_file is not None
    return Campaign(
        path,
        root,
        spec,
        steps,
        recipients_file,
        suppression_files,
        env,
        lines=found.lines,
        issues=found.issues,
        fallback=fallback,
    )


def _validate(data: dict[str, Any], found: Collector, *, lenient: bool) -> CampaignSpec | None:
    """The definition checked by its model (problems into ``found``); when ``lenient``, a
    best-effort one despite them, else None on any."""
    try:
        return CampaignSpec.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            found.add(*_keyed(err))
        if not lenient:
            return None
        spec = lenient_spec(data)
        _cross_checks(spec, found)
        return spec


def _data_files(data: dict[str, Any], root: Path, found: Collector,
                ) -> tuple[Path | None, list[Path]]:
    """The recipients file and the suppression files, resolved under ``root``; a missing
    one is a problem in ``found`` (and left out)."""
    raw_recipients = data.get("recipients")
    recipients: dict[str, Any] = raw_recipients if isinstance(raw_recipients, dict) else {}
    recipients_file: Path | None = None
    suppression_files: list[Path] = []
    if isinstance(recipients.get("file"), str) and recipients["file"].strip():
        recipients_file = _resolve(root, recipients["file"].strip())
        if not recipients_file.is_file():
            found.add(
                f"recipients file {recipients['file']!r} not found ({recipients_file}; "
                f"paths are relative to {root})",
                "recipients.file",
            )
            recipients_file = None
    for i, name in enumerate(recipients.get("suppression") or []):
        if isinstance(name, str):
            resolved = _resolve(root, name)
            if resolved.is_file():
                suppression_files.append(resolved)
            else:
                found.add(
                    f"suppression file {name!r} not found ({resolved})",
                    f"recipients.suppression[{i}]",
                )
    return recipients_file, suppression_files


def _compile_steps(data: dict[str, Any], spec: CampaignSpec | None, env: SandboxedEnvironment,
                   found: Collector, bounds: BoundsSpec,
                   ) -> tuple[list[CompiledStep], CompiledStep | None]:
    """Every step compiled from the file's raw keys (so a wrong key elsewhere does not hide
    a step's problems), then the variants, the conversation and the fallback checked."""
    raw_channel = data.get("channel")
    channel = raw_channel if raw_channel in CHANNELS else "whatsapp"
    raw_senders = data.get("senders")
    senders: list[Any] = raw_senders if isinstance(raw_senders, list) else []
    session = str(senders[0]) if senders else PLACEHOLDER_SESSION
    steps: list[CompiledStep] = []
    listed_steps = data.get("steps")
    raw_steps: list[Any] = listed_steps if isinstance(listed_steps, list) else []
    raw_schedule = data.get("schedule")
    raw_zone = raw_schedule.get("timezone") if isinstance(raw_schedule, dict) else None
    zone = raw_zone if isinstance(raw_zone, str) else DEFAULT_TIMEZONE
    for index, raw in enumerate(raw_steps):
        step = check_step(index, raw, channel, session, env, found, bounds, zone)
        if step is not None:
            steps.append(step)
    _check_variants(steps, spec, found)
    _check_conversation(raw_steps, spec, channel, found)
    return steps, _check_fallback(spec, session, env, found, bounds, zone)


def _check_fallback(spec: CampaignSpec | None, session: str, env: SandboxedEnvironment,
                    found: Collector, bounds: BoundsSpec, zone: str) -> CompiledStep | None:
    """``[fallback]`` against the campaign's channel, and its step compiled as a step of
    the fallback's channel (key ``fallback.step``)."""
    if spec is None or spec.fallback is None:
        return None
    for key, message in fallback_problems(spec.channel, spec.fallback):
        found.add(message, key)
    return check_step(0, fallback_step_fields(spec.fallback), spec.fallback.channel,
                      session, env, found, bounds, zone, key="fallback.step")


def _check_conversation(raw_steps: list[Any], spec: CampaignSpec | None, channel: str,
                        found: Collector) -> None:
    """Steps' ``name`` and ``when`` and ``[replies]`` (see ``campaign.conversation_spec``)."""
    from scheduler.campaign.conversation_spec import conversation

    _options, problems = conversation(
        raw_steps, channel=channel, track_links=spec.track_links if spec else True,
        replies=spec.replies if spec else None)
    for key, message in problems:
        found.add(message, key)


def _check_variants(steps: list[CompiledStep], spec: CampaignSpec | None,
                    found: Collector) -> None:
    """The variants name the same variants in every step; ``[experiment]`` has some."""
    split, problems = campaign_split(steps)
    for index, message in problems:
        found.add(message, f"steps[{index}].variants")
    problem = experiment_problem(split, spec.experiment if spec is not None else None)
    if problem is not None:
        found.add(problem, "experiment")


def start_issues(campaign: Campaign, now: datetime) -> list[Issue]:
    """A one-off ``schedule.at`` that has already passed, as an error of the definition."""
    at = campaign.spec.schedule.at
    if at is None or campaign.spec.schedule.cron is not None:
        return []
    start = campaign.start_time(now)
    if start >= now:
        return []
    shown = start.astimezone(campaign.zone).strftime("%Y-%m-%d %H:%M")
    return [
        Issue(
            campaign.label,
            f"schedule.at {shown} ({campaign.spec.schedule.timezone}) is in the past: "
            "set a future time, or remove at to send as soon as the campaign runs",
            key="schedule.at",
            line=campaign.line_of("schedule.at"),
        )
    ]
