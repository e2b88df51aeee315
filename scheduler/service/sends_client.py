"""Typed sends of the client (``SendCalls``): ``send`` and one ``send_<type>`` per send kind.

:class:`SendCalls` is a mixin of :class:`scheduler.service.client.ServiceClient`: each method
validates a body model of :mod:`scheduler.service.requests` (an :class:`InvalidRequest` before
anything is sent), then posts it through the client's ``send_prepared`` hot path. Unset
optionals are left out of the wire body; ``mentionAll``, ``contextInfo`` and ``async_`` go in
``**extra``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler.service import requests as rq
from scheduler.service.bodies import build
from scheduler.service.exceptions import InvalidRequest
from scheduler.service.responses import SendResult

_PATH_BY_MODEL: dict[type[rq.SendBody], str] = {k.model: k.path for k in rq.SEND_KINDS.values()}


class SendCalls:
    """``messages/send/*`` and ``interactive/send/*`` by model; mixed into ``ServiceClient``."""

    if TYPE_CHECKING:

        async def send_prepared(self, path: str, body: dict[str, Any]) -> SendResult: ...

    async def send(self, body: rq.SendBody) -> SendResult:
        """Send any send body model to its endpoint (the path comes from ``SEND_KINDS``)."""
        path = _PATH_BY_MODEL.get(type(body))
        if path is None:
            raise InvalidRequest(f"{type(body).__name__} is not a send body of SEND_KINDS")
        return await self.send_prepared(path, rq.wire_body(body))

    async def _send(self, model: type[rq.SendBody], sid: str, to: str, **values: Any) -> SendResult:
        return await self.send(build(model, sessionId=sid, to=to, **values))

    async def send_text(self, session_id: str, to: str, text: str, **extra: Any) -> SendResult:
        """``messages/send/text``."""
        return await self._send(rq.TextBody, session_id, to, text=text, **extra)

    async def send_image(self, session_id: str, to: str, image: str, *,
                         caption: str | None = None, **extra: Any) -> SendResult:
        """``messages/send/image``: ``image`` is a URL."""
        return await self._send(rq.ImageBody, session_id, to, image=image, caption=caption, **extra)

    async def send_video(self, session_id: str, to: str, video: str, *, caption: str | None = None,
                         ptv: bool | None = None, gif_playback: bool | None = None,
                         **extra: Any) -> SendResult:
        """``messages/send/video``."""
        return await self._send(rq.VideoBody, session_id, to, video=video, caption=caption,
                                ptv=ptv, gifPlayback=gif_playback, **extra)

    async def send_audio(self, session_id: str, to: str, audio: str, *, ptt: bool | None = None,
                         **extra: Any) -> SendResult:
        """``messages/send/audio``; ``ptt`` sends a voice note."""
        return await self._send(rq.AudioBody, session_id, to, audio=audio, ptt=ptt, **extra)

    async def send_document(self, session_id: str, to: str, document: str, *,
                            mimetype: str | None = None, file_name: str | None = None,
                            **extra: Any) -> SendResult:
        """``messages/send/document``."""
        return await self._send(rq.DocumentBody, session_id, to, document=document,
                                mimetype=mimetype, fileName=file_name, **extra)

    async def send_sticker(self, session_id: str, to: str, sticker: str,
                           **extra: Any) -> SendResult:
        """``messages/send/sticker``."""
        return await self._send(rq.StickerBody, session_id, to, sticker=sticker, **extra)

    async def send_location(self, session_id: str, to: str, latitude: float, longitude: float, *,
                            name: str | None = None, address: str | None = None,
                            **extra: Any) -> SendResult:
        """``messages/send/location``."""
        return await self._send(rq.LocationBody, session_id, to, latitude=latitude,
                                longitude=longitude, name=name, address=address, **extra)

    async def send_contact(self, session_id: str, to: str, contact_name: str, contact_phone: str,
                           **extra: Any) -> SendResult:
        """``messages/send/contact``."""
        return await self._send(rq.ContactBody, session_id, to, contactName=contact_name,
                                contactPhone=contact_phone, **extra)

    async def send_poll(self, session_id: str, to: str, question: str, options: list[str], *,
                        multiple_answers: bool | None = None, **extra: Any) -> SendResult:
        """``messages/send/poll``: 2 to 12 options."""
        return await self._send(rq.PollBody, session_id, to, question=question, options=options,
                                multipleAnswers=multiple_answers, **extra)

    async def send_reaction(self, session_id: str, to: str, message_id: str, emoji: str,
                            **extra: Any) -> SendResult:
        """``messages/send/reaction``: react to ``message_id`` with ``emoji``."""
        return await self._send(rq.ReactionBody, session_id, to, messageId=message_id,
                                emoji=emoji, **extra)

    async def send_album(self, session_id: str, to: str, media: list[Any], *,
                         caption: str | None = None, **extra: Any) -> SendResult:
        """``messages/send/album``: 2 to 10 ``AlbumItem`` (or dicts of the same shape)."""
        return await self._send(rq.AlbumBody, session_id, to, media=media, caption=caption, **extra)

    async def send_list(self, session_id: str, to: str, description: str, button_text: str,
                        sections: list[Any], *, title: str | None = None,
                        footer_text: str | None = None, **extra: Any) -> SendResult:
        """``interactive/send/list``: 1 to 10 sections of ``ListSection`` (or dicts)."""
        return await self._send(rq.ListBody, session_id, to, title=title, description=description,
                                buttonText=button_text, footerText=footer_text,
                                sections=sections, **extra)

    async def send_carousel(self, session_id: str, to: str, cards: list[Any],
                            **extra: Any) -> SendResult:
        """``interactive/send/carousel``: 1 to 10 ``CarouselCard`` (or dicts)."""
        return await self._send(rq.CarouselBody, session_id, to, cards=cards, **extra)

    async def send_nativeflow(self, session_id: str, to: str, title: str, body: str,
                              buttons: list[Any], *, footer: str | None = None,
                              image_url: str | None = None, **extra: Any) -> SendResult:
        """``interactive/send/nativeflow``: 1 to 4 ``NativeFlowButton`` (or dicts)."""
        return await self._send(rq.NativeFlowBody, session_id, to, title=title, body=body,
                                footer=footer, buttons=buttons, imageUrl=image_url, **extra)

    async def send_pix(self, session_id: str, to: str, content: str, pix_key: str, *,
                       footer: str | None = None, pix_amount: float | None = None,
                       pix_message: str | None = None, **extra: Any) -> SendResult:
        """``interactive/send/pix``: a button that copies a payment key."""
        return await self._send(rq.PixBody, session_id, to, content=content, pixKey=pix_key,
                                footer=footer, pixAmount=pix_amount, pixMessage=pix_message,
                                **extra)
