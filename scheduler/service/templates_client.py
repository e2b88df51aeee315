"""Official provider (``cloud_api``) calls of the client (``TemplateCalls``): the manual
connection, its message templates, and sending one.

:class:`TemplateCalls` is a mixin of :class:`scheduler.service.client.ServiceClient`; it uses
the client's ``_call`` and ``send_prepared`` plumbing, so errors are mapped as everywhere
else. Bodies are checked before anything is sent (:class:`InvalidRequest`); the access token
of a connection never appears in an error. Shapes: :mod:`scheduler.service.template_models`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from pydantic import ValidationError

from scheduler.service.bodies import build
from scheduler.service.exceptions import InvalidRequest, validation_problems
from scheduler.service.requests import wire_body
from scheduler.service.responses import SendResult, SessionRecord
from scheduler.service.template_models import (
    CLOUD_API_PATH,
    SEND_TEMPLATE_PATH,
    CloudApiConnectBody,
    SendTemplateBody,
    TemplateBody,
    TemplateRecord,
    template_list,
    template_record,
    templates_path,
)

Answer = TypeVar("Answer")


def _connect_body(values: dict[str, Any]) -> CloudApiConnectBody:
    """The connection body, or :class:`InvalidRequest` naming the fields (never the token)."""
    try:
        return CloudApiConnectBody(**values)
    except ValidationError as exc:
        raise InvalidRequest(f"CloudApiConnectBody: {validation_problems(exc)}") from None


class TemplateCalls:
    """``/connections/cloud-api`` and ``/messages/send/template``; mixed into ``ServiceClient``."""

    if TYPE_CHECKING:

        async def _call(
            self, method: str, path: str, reader: Callable[[Any], Answer], body: Any = None
        ) -> Answer: ...

        async def send_prepared(self, path: str, body: dict[str, Any]) -> SendResult: ...

    async def connect_cloud_api(
        self, session_id: str, *, phone_number_id: str, business_account_id: str,
        access_token: str, webhook_url: str | None = None,
    ) -> SessionRecord:
        """``POST /api/v1/connections/cloud-api`` (ours): a manual official-provider
        connection, connected at once (no QR code)."""
        body = _connect_body({
            "sessionId": session_id, "phoneNumberId": phone_number_id,
            "businessAccountId": business_account_id, "accessToken": access_token,
            "webhookUrl": webhook_url})
        return await self._call("POST", CLOUD_API_PATH,
                                lambda d: SessionRecord.from_body(d, session_id),
                                wire_body(body))

    async def list_templates(self, connection_id: str) -> list[TemplateRecord]:
        """``GET /api/v1/connections/cloud-api/{id}/templates``: the connection's templates."""
        if not connection_id:
            raise InvalidRequest("connection_id must not be empty")
        return await self._call("GET", templates_path(connection_id), template_list)

    async def create_template(self, connection_id: str, name: str, language: str, body: str,
                              *, category: str | None = None) -> TemplateRecord:
        """``POST …/templates``: a new template; name, language and the ``{{1}}`` … ``{{n}}``
        numbering of ``body`` are checked before sending."""
        if not connection_id:
            raise InvalidRequest("connection_id must not be empty")
        model = build(TemplateBody, name=name, language=language, body=body, category=category)
        return await self._call("POST", templates_path(connection_id), template_record,
                                wire_body(model))

    async def delete_template(self, connection_id: str, name: str,
                              language: str | None = None) -> TemplateRecord | None:
        """``DELETE …/templates/{name}``: one language (``language``), else every one."""
        if not connection_id or not name:
            raise InvalidRequest("connection_id and name must not be empty")
        path = templates_path(connection_id, name)
        if language:
            path += f"?language={quote(language, safe='')}"

        def read(raw: Any) -> TemplateRecord | None:
            data = raw.get("data") if isinstance(raw, dict) else None
            return template_record(data) if isinstance(data, dict) else None

        return await self._call("DELETE", path, read)

    async def send_template(self, session_id: str, to: str, name: str, language: str,
                            variables: Sequence[str] = ()) -> SendResult:
        """``POST /api/v1/messages/send/template`` with the body variables in order."""
        template: dict[str, Any] = {"name": name, "language": language}
        if variables:
            template["bodyVariables"] = list(variables)
        model = build(SendTemplateBody, sessionId=session_id, to=to, template=template)
        return await self.send_prepared(SEND_TEMPLATE_PATH, wire_body(model))
