"""Steps that follow the recipient's replies: ``name``, ``when`` and ``[replies]`` checked.

A step after the first may say when it goes, from an earlier step of the same recipient::

    [replies]
    expected_rate = 0.4            # plan draws the branches at this reply rate
    wait = "24h"                   # how long a reply, read or click is waited for
    keywords = { "2" = "reagendar" }   # a reply that is exactly "2" makes that step go

    [[steps]]
    name = "pergunta"
    type = "text"
    text = "Responda 1 para confirmar, 2 para reagendar"

    [[steps]]
    name = "confirmar"
    when = { reply_matches = "^(1|sim)\\b" }        # looks at the previous step
    ...
    [[steps]]
    name = "lembrete"
    when = { not_replied_within = "24h", step = "pergunta" }

``when`` holds exactly one of ``replied = true|false``, ``reply_matches = "<regex>"``
(case- and accent-insensitive; on the text, a button's or list row's id, a poll option),
``not_replied_within = "<duration>"``, ``read = true|false``, ``clicked = true|false``;
``within`` (or ``after``) says how long it waits (default ``[replies] wait``); ``step``
names the earlier step it looks at (default: the one before). A step without ``when``
after a step with one follows that step's branch: it goes when that step was sent, and is
skipped with it. :func:`conversation` returns the parsed options
(:class:`~scheduler.settings.conversation.ConversationOptions`) and every problem as
``(key, message)``: a regular expression that does not compile, a step that looks at a
later (or its own) step, a condition that can never be met.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scheduler.core.folding import fold, plain
from scheduler.core.units import UnitError, parse_duration
from scheduler.settings.conversation import (
    DEFAULT_EXPECTED_RATE,
    DEFAULT_WAIT_S,
    ConversationOptions,
    StepCondition,
)

Duration = str | float | int
#: The keys of ``when`` that say what it waits for (exactly one is given).
WHAT = ("replied", "reply_matches", "not_replied_within", "read", "clicked")
#: Channels whose recipients can answer, and read, a message.
REPLY_CHANNELS = frozenset({"whatsapp"})
#: Channels whose messages carry tracked links.
CLICK_CHANNELS = frozenset({"whatsapp", "sms"})


class WhenSpec(BaseModel):
    """A step's ``when``: what it waits for, on which earlier step, for how long."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    replied: bool | None = Field(default=None, description=(
        "true: the step goes when the looked-at step gets a reply; false: when it gets "
        "none in time."))
    reply_matches: str | None = Field(default=None, description=(
        "A regular expression (case- and accent-insensitive) the first reply must match: "
        "its text, a button's or list row's id, or a poll option."))
    not_replied_within: Duration | None = Field(default=None, description=(
        "The step goes when no reply came this long after the looked-at step was sent."))
    read: bool | None = Field(default=None, description=(
        "true: the step goes when the looked-at step is read; false: when it is not read "
        "in time (give after)."))
    clicked: bool | None = Field(default=None, description=(
        "true: the step goes when a tracked link of the looked-at step is clicked; false: "
        "when none is in time."))
    within: Duration | None = Field(default=None, description=(
        "How long the condition waits (default [replies] wait)."))
    after: Duration | None = Field(default=None, description="The same as within.")
    step: str | None = Field(default=None, description=(
        "The name of the earlier step the condition looks at (default: the previous step)."))


class RepliesSpec(BaseModel):
    """``[replies]``: how steps that follow replies wait, and keywords for people."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    expected_rate: float = Field(default=DEFAULT_EXPECTED_RATE, ge=0, le=1, description=(
        "The share of recipients expected to reply (plan draws the branches with it)."))
    wait: Duration = Field(default="24h", description=(
        "How long a condition waits for a reply, read or click when it names no time."))
    keywords: dict[str, str] = Field(default_factory=dict, description=(
        "A whole reply (any case and accents) → the name of the step it makes go."))


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """A ``reply_matches`` expression as it is matched: accents removed, any case."""
    return re.compile(plain(pattern), re.IGNORECASE)


def _seconds(raw: Any) -> float:
    if isinstance(raw, bool):
        raise UnitError("expected a duration such as '24h'")
    seconds = float(raw) if isinstance(raw, int | float) else parse_duration(str(raw))
    if seconds <= 0:
        raise UnitError("must be more than zero")
    return seconds


def _show(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value).lower()


class _Reader:
    """Reads the steps' names and conditions, collecting problems."""

    def __init__(self, steps: list[Any], channel: str, track_links: bool,
                 replies: RepliesSpec | None) -> None:
        self.steps, self.channel, self.track_links = steps, channel, track_links
        self.replies = replies or RepliesSpec()
        self.problems: list[tuple[str, str]] = []
        self.names: dict[str, int] = {}
        self.wait_s = DEFAULT_WAIT_S
        try:
            self.wait_s = _seconds(self.replies.wait)
        except UnitError as exc:
            self.problems.append(("replies.wait", f"{exc}"))

    def add(self, key: str, message: str) -> None:
        self.problems.append((key, message))

    def read_names(self) -> None:
        for i, raw in enumerate(self.steps):
            name = raw.get("name") if isinstance(raw, dict) else None
            if name is None:
                continue
            if not isinstance(name, str) or not name.strip():
                self.add(f"steps[{i}].name", "a step's name is a non-empty text")
            elif name in self.names:
                self.add(f"steps[{i}].name", f"step name {name!r} is already steps"
                                             f"[{self.names[name]}]'s: names are unique")
            else:
                self.names[name] = i

    def looked_at(self, i: int, name: str | None, key: str) -> int | None:
        if name is None:
            return i - 1
        if name not in self.names:
            known = ", ".join(repr(n) for n in self.names) or "none is named"
            self.add(key, f"no step is named {name!r} (the named steps: {known})")
            return None
        index = self.names[name]
        if index >= i:
            where = "itself" if index == i else f"steps[{index}], a later step"
            self.add(key, f"step {name!r} is {where}: a condition looks at an earlier step")
            return None
        return index

    def condition(self, i: int, raw: Any) -> StepCondition | None:
        key = f"steps[{i}].when"
        if i == 0:
            self.add(key, "the first step has no earlier step to look at: it goes to "
                          "everyone")
            return None
        if not isinstance(raw, dict):
            self.add(key, "when is a table, e.g. when = { replied = true }")
            return None
        try:
            when = WhenSpec.model_validate(raw)
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                field = ".".join(str(p) for p in err["loc"])
                message = str(err["msg"])
                if err["type"] == "extra_forbidden":
                    message = (f"when has no {field!r}: it takes one of {', '.join(WHAT)}, "
                               "and within (or after) and step")
                self.add(f"{key}.{field}" if field else key, message)
            return None
        given = [k for k in WHAT if getattr(when, k) is not None]
        if len(given) != 1:
            self.add(key, f"give exactly one of {', '.join(WHAT)}"
                          + (f" (got {', '.join(given)})" if given else ""))
            return None
        what = given[0]
        looks_at = self.looked_at(i, when.step, f"{key}.step")
        wait = self._wait(when, what, key)
        kind, pattern = self._kind(when, what, key)
        if looks_at is None or wait is None or kind is None:
            return None
        if not self._reachable(kind, f"{key}.{what}"):
            return None
        value = getattr(when, what)
        text = f"{what} = {_show(value)}"
        if what != "not_replied_within" and (when.within or when.after) is not None:
            text += f", within {_show(when.within or when.after)}"
        if when.step is not None:
            text += f" on {when.step!r}"
        return StepCondition(step=i, name=self.steps[i].get("name"), looks_at=looks_at,
                             kind=kind, pattern=pattern, wait_s=wait, text=text)

    def _wait(self, when: WhenSpec, what: str, key: str) -> float | None:
        if when.within is not None and when.after is not None:
            self.add(f"{key}.after", "give within or after, not both")
            return None
        raw = when.not_replied_within if what == "not_replied_within" else (
            when.within if when.within is not None else when.after)
        if what == "not_replied_within" and (when.within or when.after) is not None:
            self.add(f"{key}.within", "not_replied_within is already how long it waits")
            return None
        if raw is None:
            if what in ("read", "clicked") and getattr(when, what) is False:
                self.add(f"{key}.after", f"{what} = false needs after: how long to wait for "
                                         f"the {'read' if what == 'read' else 'click'}")
                return None
            return self.wait_s
        try:
            return _seconds(raw)
        except UnitError as exc:
            field = "not_replied_within" if what == "not_replied_within" else (
                "within" if when.within is not None else "after")
            self.add(f"{key}.{field}", str(exc))
            return None

    def _kind(self, when: WhenSpec, what: str, key: str) -> tuple[str | None, str | None]:
        if what == "reply_matches":
            pattern = when.reply_matches or ""
            if not pattern.strip():
                self.add(f"{key}.reply_matches", "an empty expression matches every reply: "
                                                 "write replied = true")
                return None, None
            try:
                compile_pattern(pattern)
            except re.error as exc:
                self.add(f"{key}.reply_matches",
                         f"not a regular expression: {exc} (in {pattern!r})")
                return None, None
            return "reply_matches", pattern
        if what == "not_replied_within":
            return "not_replied", None
        value = getattr(when, what)
        return (what if value else f"not_{what}"), None

    def _reachable(self, kind: str, key: str) -> bool:
        channel = self.channel
        if kind.endswith("clicked"):
            if channel not in CLICK_CHANNELS:
                self.add(key, f"a {channel} campaign's messages carry no links to click: "
                              "this condition can never be met")
                return False
            if not self.track_links:
                self.add(key, "clicks are counted only with track_links = true: this "
                              "condition can never be met")
                return False
            return True
        if channel not in REPLY_CHANNELS:
            what = "replies" if "repl" in kind else "read receipts"
            self.add(key, f"a {channel} campaign's recipients send no {what} back: this "
                          "condition can never be met")
            return False
        return True

    def keywords(self, conditions: dict[int, StepCondition]) -> None:
        for word, target in self.replies.keywords.items():
            key = f"replies.keywords.{word}"
            folded = fold(word)
            if not folded:
                self.add(key, "a keyword needs a letter or a digit")
                continue
            if target not in self.names:
                known = ", ".join(repr(n) for n in self.names) or "none is named"
                self.add(key, f"no step is named {target!r} (the named steps: {known})")
                continue
            index = self.names[target]
            if index == 0:
                self.add(key, "the first step goes to everyone: a keyword routes to a later "
                              "step")
                continue
            cond = conditions.get(index)
            if cond is None:
                if isinstance(self.steps[index], dict) and "when" in self.steps[index]:
                    continue  # its when is wrong: reported there
                if not self._reachable("reply_matches", key):
                    continue
                cond = StepCondition(step=index, name=target, looks_at=index - 1,
                                     kind="reply_matches", wait_s=self.wait_s,
                                     text="a keyword")
            elif cond.kind not in ("replied", "reply_matches"):
                self.add(key, f"step {target!r} goes on {cond.text}: a reply can never "
                              "make it go")
                continue
            words = (*cond.keywords, folded)
            text = cond.text + f" or the keyword {word!r}" if cond.text != "a keyword" \
                else f"the keyword {word!r}"
            conditions[index] = cond.model_copy(update={"keywords": words, "text": text})


def conversation(steps: list[Any], *, channel: str, track_links: bool,
                 replies: RepliesSpec | None
                 ) -> tuple[ConversationOptions | None, list[tuple[str, str]]]:
    """The run's conversation options (None: no step has a condition) and the problems."""
    reader = _Reader(steps, channel, track_links, replies)
    reader.read_names()
    conditions: dict[int, StepCondition] = {}
    for i, raw in enumerate(steps):
        if isinstance(raw, dict) and "when" in raw:
            cond = reader.condition(i, raw["when"])
            if cond is not None:
                conditions[i] = cond
    reader.keywords(conditions)
    if not conditions:
        return None, reader.problems
    rate = (replies or RepliesSpec()).expected_rate
    return (ConversationOptions(conditions=tuple(conditions[i] for i in sorted(conditions)),
                                expected_rate=rate), reader.problems)


__all__ = ["RepliesSpec", "WhenSpec", "compile_pattern", "conversation", "plain"]
