"""Official provider (``cloud_api``) connections of the sandbox, their templates, and sends.

All shapes are ours where ``docs/service-facts.md`` shows none (see
:mod:`scheduler.service.template_models`):

- ``POST /api/v1/connections/cloud-api`` makes a session whose record says ``provider:
  "cloud_api"`` (the facts' record has no ``type``), ``connected`` at once (no QR code);
  the access token is checked for presence and never kept.
- Templates live per connection, keyed by (name, language); a new one is ``APPROVED`` at
  once (ours). The same name and language twice is 409; a template operation on a session
  that is not a ``cloud_api`` connection is 400 with ``code: CLOUD_API_UNSUPPORTED``.
- ``POST /api/v1/messages/send/template`` needs a connected ``cloud_api`` session, a template
  of that name *and* language, and exactly as many ``bodyVariables`` as the template's body
  has; it then counts, logs and emits like any send: ``messages.sent`` of ``type:
  "template"`` whose ``message`` is the filled-in body and ``data`` is ``{name, language,
  body_variables}`` (ours), receipts and replies from the simulated recipient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.sandbox.common import ApiError, epoch_ms, iso_ms, user_jid
from scheduler.sandbox.outgoing_calls import is_cloud_api
from scheduler.sandbox.session_status import announce_status
from scheduler.sandbox.state import SentRef, Session, person_name, roll_usage
from scheduler.service.exceptions import CLOUD_API_CODE
from scheduler.service.template_models import (
    CLOUD_API,
    SEND_TEMPLATE_PATH,
    CloudApiConnectBody,
    SendTemplateBody,
    TemplateBody,
    body_variables,
    fill_body,
)

if TYPE_CHECKING:
    from datetime import datetime

    from scheduler.sandbox.world import Sandbox


def unsupported(message: str, session_id: str) -> ApiError:
    """400 for an operation that does not fit the session's kind (``cloud_api`` or not)."""
    return ApiError(400, message, body={"success": False, "error": message, "statusCode": 400,
                                        "code": CLOUD_API_CODE, "sessionId": session_id})


@dataclass
class Template:
    """One template of a connection."""

    name: str
    language: str
    body: str
    category: str
    created_at: datetime
    status: str = "APPROVED"

    @property
    def variables(self) -> int:
        """How many body variables (``{{1}}`` … ``{{n}}``) the body has."""
        return body_variables(self.body)

    def record(self) -> dict[str, Any]:
        """The template as the connection lists it."""
        return {"name": self.name, "language": self.language, "category": self.category,
                "body": self.body, "variables": self.variables, "status": self.status,
                "createdAt": iso_ms(self.created_at)}


class CloudApiDesk:
    """The ``cloud_api`` connections' templates and template sends."""

    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox
        #: Templates by connection (session id), then by (name, language).
        self.templates: dict[str, dict[tuple[str, str], Template]] = {}

    # ------------------------------------------------------------------ connections

    def connect(self, body: CloudApiConnectBody) -> Session:
        """A manual connection: a ``cloud_api`` session, connected, without a QR code."""
        sandbox = self._sandbox
        if body.sessionId in sandbox.world.sessions:
            raise ApiError(409, f"Session {body.sessionId} already exists")
        now = sandbox.now()
        session = Session(session_id=body.sessionId, phone=sandbox.phone_for(body.sessionId),
                          created_at=now, status="connected", provider=CLOUD_API,
                          webhook_url=body.webhookUrl,
                          metadata={"phoneNumberId": body.phoneNumberId,
                                    "businessAccountId": body.businessAccountId})
        sandbox.world.sessions[session.session_id] = session
        self.templates[session.session_id] = {}
        announce_status(sandbox, session, "connected", "cloud_api connection")
        return session

    def connection(self, session_id: str) -> Session:
        """The ``cloud_api`` session: 404 when unknown, 400 when it is another kind."""
        session = self._sandbox.session(session_id)
        if not is_cloud_api(session):
            raise unsupported(f"Templates are only available on cloud_api connections; "
                              f"session {session_id} is an unofficial (QR) session", session_id)
        return session

    # ------------------------------------------------------------------ templates

    def _of(self, session_id: str) -> dict[tuple[str, str], Template]:
        self.connection(session_id)
        return self.templates.setdefault(session_id, {})

    def listed(self, session_id: str) -> list[dict[str, Any]]:
        """The connection's templates, by name then language."""
        found = self._of(session_id)
        return [found[key].record() for key in sorted(found)]

    def create(self, session_id: str, body: TemplateBody) -> dict[str, Any]:
        """A new template (409 when the name exists in that language)."""
        found = self._of(session_id)
        key = (body.name, body.language)
        if key in found:
            raise ApiError(409, f"Template {body.name} ({body.language}) already exists on "
                                f"connection {session_id}")
        template = Template(body.name, body.language, body.body, body.category or "MARKETING",
                            self._sandbox.now())
        found[key] = template
        return template.record()

    def delete(self, session_id: str, name: str, language: str | None) -> list[dict[str, Any]]:
        """Remove a template in one language, or in every language; 404 when none."""
        found = self._of(session_id)
        keys = [k for k in found if k[0] == name and (language is None or k[1] == language)]
        if not keys:
            shown = f"{name} ({language})" if language else name
            raise ApiError(404, f"Template {shown} not found on connection {session_id}")
        return [found.pop(key).record() for key in sorted(keys)]

    def _template_for(self, session: Session, body: SendTemplateBody) -> Template:
        """The template a send names, or 400 saying what does not match."""
        ref, sid = body.template, session.session_id
        found = self.templates.get(sid, {})
        template = found.get((ref.name, ref.language))
        if template is None:
            languages = sorted(lang for name, lang in found if name == ref.name)
            if languages:
                raise ApiError(400, f"Template {ref.name} has no language {ref.language} on "
                                    f"connection {sid} (it has: {', '.join(languages)})")
            raise ApiError(404, f"Template {ref.name} not found on connection {sid}")
        given = len(ref.bodyVariables or [])
        if given != template.variables:
            raise ApiError(400, f"Template {ref.name} ({ref.language}) takes "
                                f"{template.variables} body variable(s), got {given}")
        return template

    # ------------------------------------------------------------------ sends

    def check(self, body: SendTemplateBody) -> tuple[Session, Template]:
        """The session and template of a template send, or the error that refuses it."""
        sandbox = self._sandbox
        session = sandbox.sending_session(body.sessionId)
        if not is_cloud_api(session):
            raise unsupported(f"messages/send/template is only available on cloud_api "
                              f"connections; session {session.session_id} is an unofficial "
                              "(QR) session", session.session_id)
        template = self._template_for(session, body)
        sandbox.check_limit(session)
        return session, template

    def send(self, body: SendTemplateBody, received: dict[str, Any]) -> dict[str, Any]:
        """Check and accept a template send: logged, counted, ``messages.sent`` emitted."""
        return self.accept(*self.check(body), body, received)

    def accept(self, session: Session, template: Template, body: SendTemplateBody,
               received: dict[str, Any]) -> dict[str, Any]:
        """Accept a checked template send."""
        sandbox = self._sandbox
        now = sandbox.now()
        roll_usage(session, now)
        session.used["messages"] += 1
        event_id = sandbox.ids.message()
        cfg = sandbox.config
        message_id = event_id.lower() if cfg.message_id_case_mismatch else event_id
        world = sandbox.world
        world.record_send(path=SEND_TEMPLATE_PATH, session_id=session.session_id, to=body.to,
                          body=received, message_id=message_id, at=now)
        world.messages[event_id.lower()] = SentRef(session.session_id, body.to, "template",
                                                   event_id)
        values = list(body.template.bodyVariables or [])
        timestamp = epoch_ms(now)
        sandbox.emit(session, "messages.sent", {
            "id": event_id, "type": "template", "message": fill_body(template.body, values),
            "timestamp": timestamp, "fromMe": True, "is_group": False, "group_name": "",
            "from": {"jid": session.jid, "name": session.name}, "from_name": session.name,
            "to": {"jid": user_jid(body.to), "name": person_name(body.to)}, "media_url": None,
            "data": {"name": template.name, "language": template.language,
                     "body_variables": values},
        }, now)
        sandbox.trouble.accepted(session, "template", body.to, event_id, body, message_id)
        return {"success": True, "messageId": message_id, "timestamp": timestamp}
