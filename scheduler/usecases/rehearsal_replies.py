"""Who answers what in ``campaign run --rehearse`` of a campaign whose steps follow replies.

The rehearsal's sandbox answers as a script says (its ``whatsapp_replies_by_number``,
``scheduler/sandbox/README.md``): one entry per message to a number, in order, a reply or
``null``. The script is the one given (``--replies FILE``: :func:`load_replies`) or drawn
(:func:`draw_replies`): each recipient answers the first message with the chance of
``[replies] expected_rate``, evenly among the answers of the ``reply_matches`` steps that
look at it (a text each expression matches and the others do not, made from the
expression: :func:`answer_for`, or one of its keywords), so the timeline shows each
branch at about the numbers ``campaign plan`` estimates.

A rehearsal keeps the order of the replies, not their delays: each comes a moment (real
time) after its message, while the simulated clock waits for it
(:data:`REPLY_AFTER_S`), so it falls inside its condition's time.
"""

from __future__ import annotations

import importlib
import json
import random
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scheduler.core.errors import SchedulerError
from scheduler.settings.conversation import ConversationOptions, StepCondition

#: Seconds (real) after its message a rehearsal's reply comes.
REPLY_AFTER_S = 0.05
#: Alternatives tried per expression for an answer only it matches.
TRIES = 8
_ANY_TIME = datetime(2000, 1, 1, tzinfo=UTC)
#: The answer to a ``replied`` condition when no expression looks at the step.
ANY_ANSWER = "ok"


class RepliesFileError(SchedulerError):
    """A ``--replies`` file that cannot be used (named, with the reason)."""


Script = dict[str, list[dict[str, Any] | None]]


def load_replies(path: Path) -> Script:
    """The script of ``path``: a JSON object ``{number: [reply | null, ...]}`` (a reply
    ``{"text": "1"}``; ``after_s`` is allowed and not kept), or that object under
    ``"whatsapp_replies_by_number"``; numbers as digits."""
    from pydantic import TypeAdapter, ValidationError

    from scheduler.sandbox.scripted import ReplyScripts

    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RepliesFileError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise RepliesFileError(f"{path}: not JSON: {exc}") from None
    if isinstance(raw, dict) and set(raw) == {"whatsapp_replies_by_number"}:
        raw = raw["whatsapp_replies_by_number"]
    try:
        script = TypeAdapter(ReplyScripts).validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        raise RepliesFileError(f"{path}: {where}: {first['msg']} (expected "
                               "{number: [{\"text\": \"1\"} | null, ...]})") from None
    return {number: [None if r is None else {"text": r.text, "after_s": REPLY_AFTER_S}
                     for r in replies] for number, replies in script.items()}


# ---------------------------------------------------------------------- answers


def _set_char(items: Sequence[tuple[Any, Any]]) -> str:
    """A character of a ``[...]`` set (its first member)."""
    op, av = items[0]
    name = str(op)
    if name == "LITERAL":
        return chr(av)
    if name == "RANGE":
        return chr(av[0])
    if name == "CATEGORY":
        return {"CATEGORY_DIGIT": "1", "CATEGORY_SPACE": " ", "CATEGORY_WORD": "a"}.get(
            str(av), "x")
    raise ValueError(name)


def _text_of(items: Iterable[tuple[Any, Any]], pick: int) -> str:
    """A text the parsed expression ``items`` matches (alternatives: the ``pick``-th)."""
    out: list[str] = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name in ("NOT_LITERAL", "ANY"):
            out.append("x" if name == "ANY" or chr(av) != "x" else "y")
        elif name == "IN":
            out.append(_set_char(av))
        elif name == "BRANCH":
            branches = av[1]
            out.append(_text_of(branches[pick % len(branches)], pick // len(branches)))
        elif name == "SUBPATTERN":
            out.append(_text_of(av[-1], pick))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _high, inner = av
            out.append(_text_of(inner, pick) * low)
        elif name in ("AT", "ASSERT", "ASSERT_NOT", "GROUPREF", "ATOMIC_GROUP"):
            if name == "ATOMIC_GROUP":
                out.append(_text_of(av, pick))
        else:
            raise ValueError(name)
    return "".join(out)


def candidates(pattern: str) -> list[str]:
    """Texts made from ``pattern`` (its alternatives in turn), not yet checked."""
    try:
        parser: Any = importlib.import_module("re._parser")
        parsed = parser.parse(pattern)
    except Exception:  # an expression this cannot read: no candidate
        return []
    found: list[str] = []
    for pick in range(TRIES):
        try:
            text = _text_of(list(parsed), pick).strip()
        except (ValueError, TypeError, IndexError):
            break
        if text and text not in found:
            found.append(text)
    return found


def answer_for(cond: StepCondition, others: Sequence[StepCondition]) -> str | None:
    """A reply that makes ``cond`` go and none of ``others`` (None: none found)."""
    from scheduler.dispatch.conversation.rules import matches
    from scheduler.ledger.conversation_rows import SeenReply

    def takes(c: StepCondition, text: str) -> bool:
        return matches(c, SeenReply(id=0, at=_ANY_TIME, text=text))

    tried = [*(candidates(cond.pattern) if cond.pattern else []), *cond.keywords]
    return next((t for t in tried if takes(cond, t)
                 and not any(takes(o, t) for o in others)), None)


def answers(options: ConversationOptions, step: int = 0) -> list[str]:
    """The answers a drawn recipient gives to step ``step``: one per ``reply_matches``
    condition looking at it (those an answer can be made for), else one plain reply when
    a ``replied`` condition looks at it."""
    looking = [c for c in options.conditions if c.looks_at == step]
    matching = [c for c in looking if c.kind == "reply_matches"]
    made = [a for c in matching
            if (a := answer_for(c, [o for o in matching if o is not c])) is not None]
    if made:
        return made
    return [ANY_ANSWER] if any(c.kind == "replied" for c in looking) else []


def draw_replies(options: ConversationOptions, numbers: Iterable[str],
                 rng: random.Random) -> Script:
    """Each number's reply to its first message: one of :func:`answers` with the chance
    of the expected rate (evenly among them), else none; every number is in the script
    (so the sandbox draws nothing else for it)."""
    said = answers(options)
    script: Script = {}
    for number in numbers:
        reply = None
        if said and rng.random() < options.expected_rate:
            reply = {"text": rng.choice(said), "after_s": REPLY_AFTER_S}
        script[number] = [reply]
    return script


__all__ = ["REPLY_AFTER_S", "RepliesFileError", "answer_for", "answers", "candidates",
           "draw_replies", "load_replies"]
