"""``data`` of ``messages.sent`` per message type, as the interface's tables list it.

Field sets follow ``service-interface.md`` (section "messages.sent"). Where the document says
"not shown" (poll, nativeflow, pix, and the received-only ``poll_update`` and
``list_response``), the shape is ours and documented on the builder. Media sizes, durations
and dimensions are stable pseudo-values derived from the media URL.
"""

from __future__ import annotations

import mimetypes
import posixpath
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from scheduler.service import requests as rq

#: A 1x1 PNG, the thumbnail of every location message.
LOCATION_THUMBNAIL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJ"
    "RU5ErkJggg=="
)
_DEFAULT_MIME = {
    "image": "image/jpeg",
    "video": "video/mp4",
    "audio": "audio/mpeg",
    "document": "application/octet-stream",
    "sticker": "image/webp",
}
_SIZES = {"image": (1080, 1350), "video": (1280, 720), "sticker": (512, 512)}


@dataclass(slots=True)
class Context:
    """Who sends to whom, when, and under which id."""

    message_id: str
    timestamp: int
    sender: dict[str, str]
    recipient: dict[str, str]
    media_base: str
    from_me: bool = True
    next_id: Callable[[], str] | None = None
    reaction_target: str = ""


def _base(ctx: Context, kind: str, message: str, message_id: str | None = None) -> dict[str, Any]:
    return {
        "id": message_id or ctx.message_id,
        "type": kind,
        "message": message,
        "timestamp": ctx.timestamp,
        "fromMe": ctx.from_me,
        "is_group": False,
        "group_name": "",
        "from": dict(ctx.sender),
        "from_name": ctx.sender["name"],
        "to": dict(ctx.recipient),
        "media_url": None,
    }


def _mimetype(kind: str, url: str) -> str:
    guessed, _ = mimetypes.guess_type(urlsplit(url).path)
    return guessed or _DEFAULT_MIME[kind]


def _media(
    payload: dict[str, Any], kind: str, url: str, ctx: Context, **fields: Any
) -> dict[str, Any]:
    """Fill ``media_url`` and ``media_data`` of a media payload, in the table's field order."""
    stored = f"{ctx.media_base}/{payload['id']}"
    digest = zlib.crc32(url.encode())
    mimetype = fields.pop("mimetype", None) or _mimetype(kind, url)
    data: dict[str, Any] = {"url": stored}
    if kind in _SIZES:
        data["width"], data["height"] = _SIZES[kind]
    if kind == "audio":
        data["is_ptt"] = fields.pop("is_ptt")
    if kind in ("image", "video", "document"):
        data["caption"] = fields.pop("caption")
    if kind == "document":
        data["filename"] = fields.pop("filename")
    if kind in ("video", "audio"):
        data["duration"] = 3 + digest % 120
    data["file_length"] = 10_000 + digest % 4_000_000
    data["mimetype"] = mimetype
    if kind == "sticker":
        data["is_animated"] = False
    data["pending_media_url"] = url
    payload["media_url"] = stored
    payload["media_data"] = data
    return payload


def _text(body: rq.TextBody, ctx: Context) -> list[dict[str, Any]]:
    return [_base(ctx, "text", body.text)]


def _image(body: rq.ImageBody, ctx: Context) -> list[dict[str, Any]]:
    return [_captioned(ctx, "image", body.image, body.caption or "")]


def _video(body: rq.VideoBody, ctx: Context) -> list[dict[str, Any]]:
    return [_captioned(ctx, "video", body.video, body.caption or "")]


def _captioned(ctx: Context, kind: str, url: str, caption: str,
               message_id: str | None = None) -> dict:
    """An image or a video event (``kind``), its caption as its body too."""
    payload = _media(_base(ctx, kind, "", message_id), kind, url, ctx, caption=caption)
    payload["body"] = caption
    return payload


def _audio(body: rq.AudioBody, ctx: Context) -> list[dict[str, Any]]:
    ptt = bool(body.ptt)
    mimetype = "audio/ogg; codecs=opus" if ptt else None
    payload = _base(ctx, "audio", "[audio]")
    return [_media(payload, "audio", body.audio, ctx, is_ptt=ptt, mimetype=mimetype)]


def _document(body: rq.DocumentBody, ctx: Context) -> list[dict[str, Any]]:
    filename = body.fileName or posixpath.basename(urlsplit(body.document).path) or "document"
    payload = _media(
        _base(ctx, "document", ""),
        "document",
        body.document,
        ctx,
        caption="",
        filename=filename,
        mimetype=body.mimetype,
    )
    payload["body"] = ""
    return [payload]


def _sticker(body: rq.StickerBody, ctx: Context) -> list[dict[str, Any]]:
    return [_media(_base(ctx, "sticker", "[sticker]"), "sticker", body.sticker, ctx)]


def _location(body: rq.LocationBody, ctx: Context) -> list[dict[str, Any]]:
    payload = _base(ctx, "location", body.name or "[location]")
    payload["data"] = {
        "degrees_latitude": body.latitude,
        "degrees_longitude": body.longitude,
        "name": body.name or "",
        "address": body.address or "",
        "thumbnail": LOCATION_THUMBNAIL,
    }
    return [payload]


def vcard(name: str, phone: str) -> str:
    """A vCard 3.0 of one contact, as the network embeds it."""
    digits = "".join(ch for ch in phone if ch.isdigit())
    return (
        "BEGIN:VCARD\nVERSION:3.0\n"
        f"FN:{name}\nTEL;type=CELL;type=VOICE;waid={digits}:+{digits}\nEND:VCARD"
    )


def _contact(body: rq.ContactBody, ctx: Context) -> list[dict[str, Any]]:
    payload = _base(ctx, "contact", body.contactName)
    payload["data"] = {
        "contact_name": body.contactName,
        "contact_phone": body.contactPhone,
        "display_name": body.contactName,
        "vcard": vcard(body.contactName, body.contactPhone),
    }
    return [payload]


def _poll(body: rq.PollBody, ctx: Context) -> list[dict[str, Any]]:
    """Ours: ``data = {name, options: [{name}], selectable_count}`` (0 = any number)."""
    payload = _base(ctx, "poll", body.question)
    payload["data"] = {
        "name": body.question,
        "options": [{"name": option} for option in body.options],
        "selectable_count": 0 if body.multipleAnswers else 1,
    }
    return [payload]


def _reaction(body: rq.ReactionBody, ctx: Context) -> list[dict[str, Any]]:
    payload = _base(ctx, "reaction", body.emoji)
    payload["data"] = {
        "original_message_id": body.messageId,
        "reaction_text": body.emoji,
        "reaction_timestamp": ctx.timestamp,
        "target_participant": ctx.reaction_target,
    }
    return [payload]


def _album(body: rq.AlbumBody, ctx: Context) -> list[dict[str, Any]]:
    """One image or video event per item; the first carries the send's message id."""
    events = []
    for position, item in enumerate(body.media):
        caption = item.caption or ((body.caption or "") if position == 0 else "")
        message_id = ctx.message_id if position == 0 or ctx.next_id is None else ctx.next_id()
        events.append(_captioned(ctx, item.type, item.url, caption, message_id))
    return events


def _list(body: rq.ListBody, ctx: Context) -> list[dict[str, Any]]:
    payload = _base(ctx, "list", body.description)
    payload["data"] = {
        "title": body.title or "",
        "description": body.description,
        "button_text": body.buttonText,
        "footer_text": body.footerText or "",
        "list_type": 1,
        "sections": [
            {
                "title": section.title or "",
                "rows": [
                    {"row_id": row.rowId, "title": row.title, "description": row.description or ""}
                    for row in section.rows
                ],
            }
            for section in body.sections
        ],
    }
    return [payload]


def _carousel(body: rq.CarouselBody, ctx: Context) -> list[dict[str, Any]]:
    first = body.cards[0].body
    payload = _base(ctx, "carousel", first)
    payload["body"] = first
    payload["data"] = {
        "type": "carousel",
        "cards": [
            {"header_title": (card.header.title or "") if card.header else "", "body": card.body}
            for card in body.cards
        ],
    }
    return [payload]


def _nativeflow(body: rq.NativeFlowBody, ctx: Context) -> list[dict[str, Any]]:
    """Ours: ``data = {title, body, footer, buttons: [...], image_url}``."""
    payload = _base(ctx, "nativeflow", body.body)
    payload["data"] = {
        "title": body.title,
        "body": body.body,
        "footer": body.footer or "",
        "buttons": [button.model_dump(exclude_none=True) for button in body.buttons],
        "image_url": body.imageUrl or "",
    }
    return [payload]


def _pix(body: rq.PixBody, ctx: Context) -> list[dict[str, Any]]:
    """Ours: ``data = {pix_key, pix_amount, pix_message, footer}``."""
    payload = _base(ctx, "pix", body.content)
    payload["data"] = {
        "pix_key": body.pixKey,
        "pix_amount": body.pixAmount,
        "pix_message": body.pixMessage or "",
        "footer": body.footer or "",
    }
    return [payload]


_BUILDERS: dict[str, Callable[[Any, Context], list[dict[str, Any]]]] = {
    "text": _text,
    "image": _image,
    "video": _video,
    "audio": _audio,
    "document": _document,
    "sticker": _sticker,
    "location": _location,
    "contact": _contact,
    "poll": _poll,
    "reaction": _reaction,
    "album": _album,
    "list": _list,
    "carousel": _carousel,
    "nativeflow": _nativeflow,
    "pix": _pix,
}


def sent_payloads(kind: str, body: rq.SendBody, ctx: Context) -> list[dict[str, Any]]:
    """The ``data`` of every ``messages.sent`` event one accepted send produces."""
    return _BUILDERS[kind](body, ctx)


def received_text(ctx: Context, text: str, quoted: str | None = None) -> dict[str, Any]:
    """``messages.received`` of a text a simulated recipient typed (``ctx.from_me`` False);
    ``quoted``: the id of the message it replies to, as ``contextInfo.stanzaId`` (ours)."""
    payload = _base(ctx, "text", text)
    if quoted is not None:
        payload["contextInfo"] = {"stanzaId": quoted, "participant": ctx.recipient["jid"]}
    return payload


def received_poll_update(ctx: Context, poll_id: str, selected: list[str]) -> dict[str, Any]:
    """Ours: ``type poll_update``, ``data = {poll_message_id, selected_options}``."""
    payload = _base(ctx, "poll_update", ", ".join(selected))
    payload["data"] = {"poll_message_id": poll_id, "selected_options": selected}
    return payload


def received_list_response(ctx: Context, list_id: str, row: dict[str, str]) -> dict[str, Any]:
    """Ours: ``type list_response``, ``data = {list_message_id, row_id, title, description}``."""
    payload = _base(ctx, "list_response", row["title"])
    payload["data"] = {"list_message_id": list_id, **row}
    return payload
