"""Load a campaign file into a checked :class:`Campaign`, reporting every problem at once.

**Paths rule**: every path in a campaign file (recipients, suppression lists) is relative to
the *project root*, which is the parent of the folder holding the campaign file
(``campaigns/welcome.toml`` → the folder above ``campaigns/``); template files
(``text_file = "welcome.txt.j2"``) are relative to ``templates/`` under that root. Absolute
paths are used as they are. The rule depends only on where the campaign file is, so any
working directory gives the same result.

What is checked here, all of it before raising: TOML syntax; every key of the definition
(pydantic); that the recipients and suppression files exist; every step's type and fields
against the endpoint's model (with templates replaced by a placeholder); every template's
syntax. Rows are checked later, when the plan renders them.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from jinja2.sandbox import SandboxedEnvironment
from pydantic import ValidationError

from scheduler.campaign.definition import CampaignSpec, step_delay
from scheduler.campaign.exceptions import CampaignError, DefinitionError, Issue
from scheduler.campaign.rendering import (
    compile_file_leaf,
    compile_leaf,
    is_template,
    make_environment,
    placeholder_tree,
)
from scheduler.campaign.steps import (
    DISPATCHER_KEYS,
    PLACEHOLDER_SESSION,
    PLACEHOLDER_TO,
    RESERVED_KEYS,
    StepKind,
    full_body,
    loc_path,
    model_problems,
    step_kind,
)
from scheduler.dispatch.windows import SendWindow, load_zone


@dataclass
class CompiledStep:
    """One step: its index, kind, delay after the previous step and its template tree."""

    index: int
    kind: StepKind
    delay_s: float
    tree: dict[str, Any]

    @property
    def key(self) -> str:
        """``steps[i]``, the key path prefix of this step in the definition."""
        return f"steps[{self.index}]"


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

    @property
    def label(self) -> str:
        """The campaign file as shown in messages."""
        return str(self.path)

    @property
    def zone(self) -> tzinfo:
        """The campaign's time zone."""
        return load_zone(self.spec.schedule.timezone)

    @property
    def window(self) -> SendWindow | None:
        """The send window, if the campaign has one."""
        schedule = self.spec.schedule
        if schedule.window is None:
            return None
        return SendWindow.parse(schedule.window, schedule.days, schedule.timezone)

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

    def latest_time(self, start: datetime) -> datetime | None:
        """The latest send time of a run starting at ``start`` (``HH:MM`` is on that day)."""
        latest, zone = self.spec.schedule.latest, self.zone
        if latest is None:
            return None
        if isinstance(latest, datetime):
            return latest if latest.tzinfo is not None else latest.replace(tzinfo=zone)
        hours, minutes = (int(p) for p in latest.split(":"))
        local = start.astimezone(zone)
        moment = datetime.combine(local.date(), datetime.min.time(), tzinfo=zone)
        moment += timedelta(hours=hours, minutes=minutes)
        return moment if moment > local else moment + timedelta(days=1)


def _resolve(root: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else (root / path)


def _read_toml(path: Path, label: str) -> dict[str, Any]:
    if not path.is_file():
        raise DefinitionError(Issue(label, "campaign file not found"))
    try:
        return tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError:
        raise DefinitionError(Issue(label, "not UTF-8 text")) from None
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        line = int(found.group(1)) if found else None
        raise DefinitionError(Issue(label, f"not valid TOML: {exc}", line=line)) from None


class _Collector:
    """Issues found so far, with the most specific error class they share."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.issues: list[Issue] = []
        self.classes: set[type[CampaignError]] = set()

    def add(self, message: str, key: str | None = None, **extra: Any) -> None:
        """Record a definition problem of the campaign file."""
        self.issues.append(Issue(self.label, message, key=key, **extra))
        self.classes.add(DefinitionError)

    def absorb(self, error: CampaignError) -> None:
        """Record every issue of an error raised while checking (e.g. a template's)."""
        self.issues.extend(error.issues)
        self.classes.add(type(error))

    def raise_if_any(self) -> None:
        """Raise one error with every issue: their shared class, else DefinitionError."""
        if self.issues:
            cls = next(iter(self.classes)) if len(self.classes) == 1 else DefinitionError
            raise cls(self.issues)


def _compile_tree(node: Any, key: str, env: SandboxedEnvironment, found: _Collector) -> Any:
    """Replace template strings by leaves and ``X_file`` keys by file leaves named ``X``."""
    if isinstance(node, str):
        if not is_template(node):
            return node
        try:
            return compile_leaf(env, node, key=key, file=found.label)
        except CampaignError as exc:
            found.absorb(exc)
            return node
    if isinstance(node, list):
        return [_compile_tree(v, f"{key}[{i}]", env, found) for i, v in enumerate(node)]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for name, value in node.items():
        sub = f"{key}.{name}"
        if name.endswith("_file") and isinstance(value, str):
            target = name[: -len("_file")]
            if target in node:
                found.add(f"give {target} or {name}, not both", sub)
                continue
            try:
                out[target] = compile_file_leaf(
                    env, value, key=f"{key}.{target}", campaign_file=found.label
                )
            except CampaignError as exc:
                found.absorb(exc)
                out[target] = "0"
            continue
        out[name] = _compile_tree(value, sub, env, found)
    return out


def _check_step(
    index: int,
    raw: Any,
    spec_channel: str,
    session: str,
    env: SandboxedEnvironment,
    found: _Collector,
) -> CompiledStep | None:
    key = f"steps[{index}]"
    if not isinstance(raw, dict):
        found.add("a step must be a table ([[steps]])", key)
        return None
    try:
        kind = step_kind(spec_channel, raw.get("type"))
    except ValueError as exc:
        found.add(str(exc), f"{key}.type")
        return None
    delay = 0.0
    if "delay" in raw:
        try:
            delay = step_delay(raw["delay"])
        except ValueError as exc:
            found.add(str(exc), f"{key}.delay")
    for name in DISPATCHER_KEYS & raw.keys():
        found.add(f"{name} is set by the dispatcher; remove it from the step", f"{key}.{name}")
    fields = {k: v for k, v in raw.items() if k not in RESERVED_KEYS | DISPATCHER_KEYS}
    tree = _compile_tree(fields, key, env, found)
    body = full_body(kind, placeholder_tree(tree), PLACEHOLDER_TO, session)
    for path, message in model_problems(kind, body):
        found.add(message, f"{key}.{path}" if path else key)
    return CompiledStep(index, kind, delay, tree)


def load_campaign(path: Path | str) -> Campaign:
    """Read, validate and compile a campaign file; raise one error listing every problem."""
    path = Path(path).expanduser().resolve()
    label = str(path)
    data = _read_toml(path, label)
    root = path.parent.parent
    found = _Collector(label)
    spec: CampaignSpec | None = None
    try:
        spec = CampaignSpec.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            loc = loc_path(tuple(err["loc"]))
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                message = f"unknown key {loc!r}"
            elif err["type"] == "missing":
                message = f"required key {loc!r} is missing"
            found.add(message, loc or None)
    recipients = data.get("recipients") if isinstance(data.get("recipients"), dict) else {}
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
    for i, name in enumerate(recipients.get("suppression") or []):
        if isinstance(name, str):
            resolved = _resolve(root, name)
            suppression_files.append(resolved)
            if not resolved.is_file():
                found.add(
                    f"suppression file {name!r} not found ({resolved})",
                    f"recipients.suppression[{i}]",
                )
    env = make_environment(root / "templates")
    channel = (
        data.get("channel") if data.get("channel") in ("whatsapp", "sms", "voice") else ("whatsapp")
    )
    senders = data.get("senders") if isinstance(data.get("senders"), list) else []
    session = str(senders[0]) if senders else PLACEHOLDER_SESSION
    steps: list[CompiledStep] = []
    raw_steps = data.get("steps") if isinstance(data.get("steps"), list) else []
    for index, raw in enumerate(raw_steps):
        step = _check_step(index, raw, channel, session, env, found)
        if step is not None:
            steps.append(step)
    found.raise_if_any()
    assert spec is not None and recipients_file is not None
    return Campaign(path, root, spec, steps, recipients_file, suppression_files, env)
