"""What a run was planned from, and what changed since: the definition and its files.

A run stores a :class:`PlanFingerprint` when it is planned: the definition (as the
campaign model dumps it) and a SHA-256 of every file the plan read (the recipients CSV, the
opt-out lists, the template files). Before an unfinished run is continued,
:func:`compare` lists every difference in words, sorted into two kinds:

- **pacing** changes (``senders``, ``pace``, ``schedule``, delivery mode, rotation): they
  can be applied to the deliveries not yet sent without planning again;
- **content** changes (steps, recipients, the CSV, opt-out lists, templates): applying them
  means planning again what is not yet sent.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from scheduler.campaign.loader import Campaign

#: Top-level definition keys whose change only alters when and from whom rows are sent.
PACING_KEYS = frozenset({"senders", "pace", "schedule", "delivery", "sender_rotation",
                         "recipient_timezone"})
#: Keys that change nothing that is sent (shown, never asked about).
COSMETIC_KEYS = frozenset({"description"})


class PlanFingerprint(BaseModel):
    """The definition and file hashes a run was planned from."""

    version: int = 1
    definition: dict[str, Any]
    files: dict[str, str] = Field(default_factory=dict)  # role: path -> sha256


class Change(BaseModel):
    """One difference between a run's plan and the campaign's files now."""

    kind: Literal["pacing", "content", "cosmetic"]
    what: str
    before: str | None = None
    after: str | None = None

    def describe(self) -> str:
        """The change in one line, for a person."""
        if self.before is None and self.after is None:
            return self.what
        return f"{self.what}: {self.before or '(unset)'} → {self.after or '(unset)'}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _template_files(campaign: Campaign) -> list[Path]:
    """The template files the loader compiled (Jinja keeps them in its cache)."""
    found: set[Path] = set()
    cache = campaign.env.cache
    if cache is not None:
        for template in cache.values():
            if template.filename:
                found.add(Path(template.filename))
    return sorted(found)


def fingerprint_of(campaign: Campaign) -> PlanFingerprint:
    """The fingerprint of a loaded campaign as its files are now."""
    files: dict[str, str] = {}
    labelled = [("recipients", campaign.recipients_file)]
    labelled += [("opt-out list", p) for p in campaign.suppression_files]
    labelled += [("template", p) for p in _template_files(campaign)]
    for role, path in labelled:
        if path.is_file():
            files[f"{role}: {_shown(path, campaign.root)}"] = _sha256(path)
    return PlanFingerprint(definition=campaign.spec.model_dump(mode="json"), files=files)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _flat(value: Any, prefix: str) -> dict[str, str]:
    """``{"pace.rate": "30/min", ...}`` of a nested definition, lists kept whole."""
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key, inner in value.items():
            out.update(_flat(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if value is None:
        return {}
    return {prefix: value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}


def _kind(key: str) -> Literal["pacing", "content", "cosmetic"]:
    top = key.split(".", 1)[0].split("[", 1)[0]
    if top in COSMETIC_KEYS:
        return "cosmetic"
    return "pacing" if top in PACING_KEYS else "content"


def compare(before: PlanFingerprint, after: PlanFingerprint) -> list[Change]:
    """Every difference from ``before`` (the run's plan) to ``after`` (the files now)."""
    changes: list[Change] = []
    old, new = _flat(before.definition, ""), _flat(after.definition, "")
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            shown_old, shown_new = old.get(key), new.get(key)
            if key.startswith("steps"):  # a whole step table: say which, not its JSON
                shown_old = shown_new = None
                key = f"{key} (the message steps)"
            changes.append(Change(kind=_kind(key), what=key, before=shown_old,
                                  after=shown_new))
    for name in sorted(set(before.files) | set(after.files)):
        was, now = before.files.get(name), after.files.get(name)
        if was == now:
            continue
        state = "edited" if was and now else ("no longer used" if was else "now used")
        changes.append(Change(kind="content", what=f"{name} ({state})"))
    return changes


def load_fingerprint(text: str | None) -> PlanFingerprint | None:
    """A stored fingerprint, or ``None`` for runs planned before fingerprints existed."""
    if not text:
        return None
    return PlanFingerprint.model_validate_json(text)
