"""Consent: a campaign that requires it sends only to the recipients who gave it.

``[recipients] consent = "required"`` with ``consent_column = "optin_em"`` reads each row's
opt-in from that CSV column (a date/time; empty: no consent); without a column, the consent
list imported with ``campaign consent import FILE`` (the ledger's ``consents`` table,
:mod:`scheduler.ledger.consent`) is read for the campaign's channel. A recipient without
consent is skipped with the reason ``no_consent: …``; one with consent carries its basis
in the row's variables (``consent_basis``), which the report shows as a column.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

#: ``[recipients] consent``: "required" (unset: consent is not asked).
ConsentMode = Literal["required"]
#: The variable each planned row of a consenting recipient carries (a report column).
BASIS_KEY = "consent_basis"
CONSENT_HELP = (
    '"required": send only to recipients who consented for the campaign\'s channel, read '
    "from `consent_column` or, without it, from the list imported with `campaign consent "
    "import`; the others are skipped (no_consent).")
CONSENT_COLUMN_HELP = (
    "The CSV column holding each row's opt-in date/time (empty: no consent), as its header "
    "is written or as its variable name.")


@dataclass
class ConsentGate:
    """What a campaign requiring consent keeps: by a CSV column (``slug``), or by the
    imported records (``imported``: number -> basis text) for ``channel``."""

    channel: str
    column: str | None = None
    slug: str | None = None
    imported: Mapping[str, str] = field(default_factory=dict)

    def check(self, digits: str, rows: list[dict[str, Any]]) -> str | None:
        """The skip reason of a recipient without consent (``rows``: its plan rows), or
        ``None``, having written the basis into each row's variables."""
        basis = self.basis(digits, rows[0].get("variables") or {})
        if basis is None:
            return self.reason()
        for row in rows:
            variables = dict(row.get("variables") or {})
            variables[BASIS_KEY] = basis
            row["variables"] = variables
        return None

    def basis(self, digits: str, variables: Mapping[str, Any]) -> str | None:
        """The consent a recipient gave (text for the report), or ``None``."""
        if self.slug is not None:
            value = variables.get(self.slug)
            text = "" if value is None else str(value).strip()
            return f"{self.column}: {text}" if text else None
        return self.imported.get(digits)

    def reason(self) -> str:
        """A plan row's skip reason for a recipient without consent."""
        if self.slug is not None:
            return f"no_consent: {self.column} is empty ({self.channel} opt-in required)"
        return f"no_consent: no imported {self.channel} consent for this number"


def consent_gate(spec: Any, channel: str, find_slug: Any,
                 imported: Mapping[str, str] | None = None) -> ConsentGate | None:
    """The gate of a campaign's ``[recipients]`` (None: consent is not required);
    ``find_slug(column, key)`` finds the CSV column (its clear error names the file)."""
    if spec.consent != "required":
        return None
    if spec.consent_column is not None:
        return ConsentGate(channel, spec.consent_column,
                           find_slug(spec.consent_column, "recipients.consent_column"))
    return ConsentGate(channel, imported=dict(imported or {}))
