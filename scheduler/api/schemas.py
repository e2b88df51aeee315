"""The bodies and answers of ``/api/v1`` (pydantic; the OpenAPI document is made of them).

A body's unknown fields are refused (422, naming them); strings have a bounded length. The
run and sender views are the command line's own JSON (``status --json``, ``runs --json``,
``senders --json``): their models name the main fields and allow the rest.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: A phone number as the ledger keeps it: digits with the country code ("+" allowed, dropped).
NUMBER_PATTERN = r"^\+?[0-9]{6,20}$"
NUMBER_FIELD = Field(pattern=NUMBER_PATTERN, max_length=21,
                     description="The number with its country code, digits only (a "
                                 "leading + is allowed), e.g. 5511987654321.",
                     examples=["5511987654321"])


class Problem(BaseModel):
    """An error: what was wrong, in words (a 422 lists each field's problem)."""

    detail: str | list[dict[str, Any]]


class RunView(BaseModel):
    """One run as ``campaign status --json RUN`` prints it (more fields than named here)."""

    model_config = ConfigDict(extra="allow")

    run: int
    campaign: str
    channel: str
    status: str
    counts: dict[str, int] = Field(description="Deliveries by state.")


class RunsList(BaseModel):
    """Every run, newest first, as ``campaign runs --json`` prints them."""

    model_config = ConfigDict(extra="allow")

    ledger: str = Field(description="The ledger (its URL without a password).")
    runs: list[dict[str, Any]]
    fires_without_run: list[dict[str, Any]]


class SendersList(BaseModel):
    """Every sender, as ``campaign senders --json`` prints them."""

    model_config = ConfigDict(extra="allow")

    ledger: str
    senders: list[dict[str, Any]]


class ControlResult(BaseModel):
    """What a pause, resume or cancel request did."""

    run: int
    action: Literal["pause", "resume", "cancel"]
    status: str = Field(description="The run's status after the request.")
    live_workers: int = Field(description="Live `campaign serve` workers that obey it "
                                          "(PostgreSQL; 0 on SQLite).")
    note: str | None = None


class SuppressionIn(BaseModel):
    """A number to put on the suppression list (never sent anything again)."""

    model_config = ConfigDict(extra="forbid")

    number: str = NUMBER_FIELD
    reason: str | None = Field(None, max_length=500, description="Why (kept with it).")


class Suppression(BaseModel):
    """A number on the suppression list."""

    number: str
    source: str = Field(description="Who listed it: reply, ivr, api...")
    reason: str | None
    created_at: str


class SuppressionAdded(BaseModel):
    """The answer to adding a number."""

    number: str
    added: bool = Field(description="False when it was listed already.")


class SuppressionRemoved(BaseModel):
    """The answer to removing a number."""

    number: str
    removed: bool


class SenderChangeIn(BaseModel):
    """Why a sender is paused, resumed or retired (kept in its history)."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1, max_length=500, description="Why (kept in the "
                                                                  "sender's history).")


class SenderChangeResult(BaseModel):
    """What a pause, resume or retire did to a sender (as `campaign senders ACTION`)."""

    sender: str
    changed: bool = Field(description="False when it was in that state already.")
    from_state: str | None
    to_state: str
    reason: str
    sentence: str = Field(description="The line `campaign senders ACTION` prints.")


class RecentEvents(BaseModel):
    """A run's newest webhook events and replies, newest first."""

    run: int
    events: list[dict[str, Any]] = Field(description="Each with id, event, at, number, "
                                                     "text and recipient.")


class ResendIn(BaseModel):
    """Which of a run's rows to queue again (at least one)."""

    model_config = ConfigDict(extra="forbid")

    failed: bool = Field(False, description="The failed rows.")
    unknown: bool = Field(False, description="Every unknown (maybe sent) row: some may "
                                             "reach someone twice.")
    unproven: bool = Field(False, description="The unknown rows the service did not take "
                                              "(no proof although the receiver listened "
                                              "through all its retries): safe to send.")

    @model_validator(mode="after")
    def _one_at_least(self) -> ResendIn:
        if not (self.failed or self.unknown or self.unproven):
            raise ValueError("say which rows to send again: failed, unproven or unknown")
        return self

    def states(self) -> set[str]:
        """The chosen kinds of rows."""
        return {name for name in ("failed", "unknown", "unproven") if getattr(self, name)}


class ResendResult(BaseModel):
    """What a resend queued."""

    run: int
    queued: int
    verdicts: list[str] = Field(description="Why each unknown row is or is not safe to "
                                            "send (with unproven).")
    note: str


class CampaignFile(BaseModel):
    """A campaign file of the project and what `campaign validate` and `campaign plan` say
    of it (checked again when the file changes)."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(description="Its path under the project's campaigns/ folder: what "
                                  "POST /api/v1/runs names.")
    campaign: str | None = Field(description="The campaign's name (None: unreadable).")
    channel: str | None
    valid: bool = Field(description="Whether `campaign validate` found nothing wrong.")
    errors: list[str] = Field(description="validate's problems, one line each.")
    recipients: dict[str, Any] = Field(description="The recipients' counts (read, valid, "
                                                   "duplicates...).")
    deliveries: int = Field(description="Deliveries a run would store.")
    plan: dict[str, Any] | None = Field(None, description="`campaign plan --json`'s object "
                                                          "(one file's route only).")


class CampaignsList(BaseModel):
    """The project's campaign files, sorted by name."""

    campaigns: list[CampaignFile]


class StartIn(BaseModel):
    """Which campaign file to start a run of, as `campaign run FILE` does."""

    model_config = ConfigDict(extra="forbid")

    campaign: str = Field(min_length=1, max_length=300,
                          description="The file's name under campaigns/ (see GET "
                                      "/api/v1/campaigns), e.g. promo.toml.")
    new_run: bool = Field(False, description="Start again a one-off campaign that already "
                                             "finished (`campaign run --new-run`).")
    include_previous: bool = Field(False, description="With new_run: send also to numbers "
                                                      "an earlier run reached "
                                                      "(`--include-previous`).")


class StartResult(BaseModel):
    """The run a start planned (201), or the one its Idempotency-Key started before (200)."""

    run: int
    campaign: str
    status: str
    counts: dict[str, int] = Field(description="Deliveries by state.")
    live_workers: int = Field(description="Live `campaign serve` workers, which send it.")
    said: list[str] = Field(description="What `campaign run` would have printed of the "
                                        "plan (empty when the key's run is answered again).")
    note: str | None = None


class Replies(BaseModel):
    """A run's newest replies, newest first."""

    run: int
    replies: list[dict[str, Any]] = Field(description="Each with id, event (reply.KIND or "
                                                      "opt_out), at, number, text and "
                                                      "recipient.")
