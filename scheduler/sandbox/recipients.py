"""Simulated recipients: receipts, replies, opt-out words and poll votes, after a delay.

Decisions come from one seeded stream in the order sends are accepted. Each event is
emitted after ``recipient_delay_ms`` (per step: delivered, then read, then vote or reply),
with the sandbox clock read when it fires. ``delivered_rate`` and ``read_rate`` (of the
delivered) drive ``message.delivered`` / ``message.read``; ``reply_rate`` drives a
``messages.received`` text, an opt-out word with probability ``opt_out_rate``; a poll gets a
``poll_update`` vote with ``poll_vote_rate``; a list reply is a ``list_response``.
``reply_rate_by_marker`` (A/B tests) gives a message whose text or caption contains a
marker that marker's reply rate instead (``{"[B]": 0.3}``: variant B's texts carry "[B]").
A number in ``whatsapp_undelivered_numbers`` never acts (and takes no draw).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scheduler.sandbox import payloads
from scheduler.sandbox.common import seeded, user_jid
from scheduler.sandbox.config import SandboxConfig
from scheduler.sandbox.scripted import Script, ScriptedReply, digits
from scheduler.settings.load import DEFAULT_OPT_OUT_WORDS

if TYPE_CHECKING:
    from scheduler.sandbox.state import Session
    from scheduler.sandbox.world_view import WorldView

REPLIES = (
    "Obrigado!",
    "Quem é?",
    "ok",
    "Vou ver e te respondo",
    "Tenho interesse, me conta mais",
    "👍",
    "Pode me ligar amanhã?",
    "Não entendi",
)


def _reply_rate(cfg: SandboxConfig, body: Any) -> float:
    """The reply rate of a message: its first marker's (``reply_rate_by_marker``) when its
    text or caption contains one, else ``reply_rate``."""
    if cfg.reply_rate_by_marker:
        words = " ".join(str(value) for value in (getattr(body, "text", None),
                                                  getattr(body, "caption", None)) if value)
        for marker, rate in cfg.reply_rate_by_marker.items():
            if marker in words:
                return rate
    return cfg.reply_rate


class Recipients:
    """The people behind the numbers the sandbox sends to."""

    def __init__(self, sandbox: WorldView, seed: int | None) -> None:
        self._sandbox = sandbox
        self._rng = seeded(seed, "recipients")
        self.replies: list[dict[str, Any]] = []
        self._script = Script()

    def _delay(self, cfg: SandboxConfig) -> float:
        low, high = cfg.recipient_delay_ms
        return (self._rng.uniform(low, high) if high > 0 else 0.0) / 1000

    def after_send(self, session: Session, kind: str, to: str, event_id: str, body: Any) -> None:
        """Decide and schedule what the recipient of one accepted send does."""
        cfg = self._sandbox.config
        if cfg.whatsapp_undelivered_numbers and digits(to) in cfg.whatsapp_undelivered_numbers:
            return  # scripted: never delivered, so never read or answered
        if cfg.whatsapp_replies_by_number:
            scripted, reply = self._script.reply(cfg.whatsapp_replies_by_number, to)
            if scripted:
                self._scripted(session, to, event_id, reply)
                return
        reply_rate = _reply_rate(cfg, body)
        if not (cfg.delivered_rate or reply_rate or (kind == "poll" and cfg.poll_vote_rate)):
            return
        at = self._receipts(cfg, session, to, event_id)
        if kind == "reaction":
            return
        if kind == "poll" and self._rng.random() < cfg.poll_vote_rate:
            at = self._vote(cfg, session.session_id, to, event_id, body, at)
        if self._rng.random() < reply_rate:
            self._reply(cfg, session.session_id, to, event_id, kind, body, at)

    def _receipts(self, cfg: SandboxConfig, session: Session, to: str, event_id: str) -> float:
        """Draw whether the send is delivered, then read, and schedule the receipts; returns
        when the last of them happens (seconds from now)."""
        session_id = session.session_id
        # Receipts are only worth a timer when someone can hear them.
        hears = session.webhook_url is not None or session.webhook_config is not None
        jid = user_jid(to)
        at = 0.0
        if self._rng.random() < cfg.delivered_rate:
            at += self._delay(cfg)
            if hears:
                self._receipt(at, session_id, "message.delivered", event_id, jid)
            if self._rng.random() < cfg.read_rate:
                at += self._delay(cfg)
                if hears:
                    self._receipt(at, session_id, "message.read", event_id, jid)
        return at

    def _vote(self, cfg: SandboxConfig, session_id: str, to: str, event_id: str, body: Any,
              at: float) -> float:
        """A drawn vote on a poll, a delay after ``at``; returns when it is cast."""
        rng = self._rng
        at += self._delay(cfg)
        options = list(body.options)
        count = rng.randint(1, len(options)) if body.multipleAnswers else 1
        chosen = sorted(rng.sample(range(len(options)), count))
        selected = [options[i] for i in chosen]
        self._inbound(
            at,
            session_id,
            to,
            lambda ctx: payloads.received_poll_update(ctx, event_id, selected),
        )
        return at

    def _reply(self, cfg: SandboxConfig, session_id: str, to: str, event_id: str, kind: str,
               body: Any, at: float) -> None:
        """A drawn reply a delay after ``at``: an opt-out word, a list's row, or a text."""
        rng = self._rng
        at += self._delay(cfg)
        if rng.random() < cfg.opt_out_rate:
            word = rng.choice(DEFAULT_OPT_OUT_WORDS)
            text = rng.choice((word, word.lower(), word.capitalize()))
            self._text_reply(at, session_id, to, text, opt_out=True)
        elif kind == "list":
            rows = [row for section in body.sections for row in section.rows]
            row = rng.choice(rows)
            picked = {
                "row_id": row.rowId,
                "title": row.title,
                "description": row.description or "",
            }
            self._inbound(
                at,
                session_id,
                to,
                lambda ctx: payloads.received_list_response(ctx, event_id, picked),
            )
        else:  # a reply quotes the message it answers (opt-out words do not)
            self._text_reply(at, session_id, to, rng.choice(REPLIES), opt_out=False,
                             quoted=event_id)

    def _scripted(self, session: Session, to: str, event_id: str,
                  reply: ScriptedReply | None) -> None:
        """A number of ``whatsapp_replies_by_number``: delivered, read, then its scripted
        reply (if any) ``after_s`` after the send; no draw."""
        cfg = self._sandbox.config
        session_id, jid = session.session_id, user_jid(to)
        low, high = cfg.recipient_delay_ms
        step = (low + high) / 2000
        if session.webhook_url is not None or session.webhook_config is not None:
            self._receipt(step, session_id, "message.delivered", event_id, jid)
            self._receipt(2 * step, session_id, "message.read", event_id, jid)
        if reply is not None:
            opt_out = reply.text.strip().casefold() in {w.casefold()
                                                        for w in DEFAULT_OPT_OUT_WORDS}
            self._text_reply(max(reply.after_s, 2 * step), session_id, to, reply.text,
                             opt_out=opt_out, quoted=None if opt_out else event_id)

    def _receipt(self, at: float, session_id: str, event: str, message_id: str, jid: str) -> None:
        sandbox = self._sandbox

        def build() -> dict[str, Any]:
            return {"message_id": message_id, "remote_jid": jid, "timestamp": sandbox.now_ms()}

        sandbox.emit_later(at, session_id, event, build)

    def _text_reply(self, at: float, session_id: str, to: str, text: str, *, opt_out: bool,
                    quoted: str | None = None) -> None:
        self.replies.append({"sessionId": session_id, "from": to, "text": text, "optOut": opt_out,
                             "quoted": quoted})
        self._inbound(at, session_id, to, lambda ctx: payloads.received_text(ctx, text, quoted))

    def _inbound(
        self,
        at: float,
        session_id: str,
        number: str,
        make: Callable[[payloads.Context], dict[str, Any]],
    ) -> None:
        sandbox = self._sandbox

        def build() -> dict[str, Any]:
            return make(sandbox.inbound_context(session_id, number))

        sandbox.emit_later(at, session_id, "messages.received", build)
