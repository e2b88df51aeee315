"""Request bodies of the service, exactly as ``docs/service-facts.md`` lists them.

Every model forbids unknown fields (the real schemas are ``additionalProperties: false``)
and :func:`wire_body` leaves unset optionals out rather than sending ``null``. The same
models validate bodies in three places: the client before sending, the sandbox on receipt,
and the campaign renderer when a plan is checked, so a mistake is caught before a send.
Field names are the wire names (camelCase), on purpose: these are wire models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

API = "/api/v1"

NonEmpty = Annotated[str, StringConstraints(min_length=1)]
#: International number, digits only, no leading ``+`` (E.164 without the plus: 8-15 digits).
PhoneDigits = Annotated[str, StringConstraints(pattern=r"^[1-9][0-9]{7,14}$")]
#: The real message schemas take ``async`` as a string.
AsyncFlag = Literal["true", "false"]
MIGRATION_CODE_PATTERN = r"^[A-Z0-9]{8}$"


class WireModel(BaseModel):
    """Base of every request body: strict about unknown fields, populated by wire names."""

    # allow_inf_nan=False: NaN and infinities have no JSON form; the service cannot get them.
    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, frozen=True, allow_inf_nan=False
    )


def wire_body(model: BaseModel) -> dict[str, Any]:
    """The JSON body of ``model``: wire names, unset optionals left out (never ``null``)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


# --------------------------------------------------------------------------- sessions


class WebhookEventSetting(WireModel):
    """Per-event switch inside ``webhookConfig.events``."""

    enabled: bool
    webhookUrl: str | None = None


class WebhookConfig(WireModel):
    """Webhook configuration sent at session creation."""

    enabled: bool
    type: Literal["single", "per_event"] = "single"
    events: dict[str, WebhookEventSetting] | None = None


class CreateSessionBody(WireModel):
    """``POST /api/v1/sessions``."""

    sessionId: NonEmpty
    type: Literal["unofficial"] = "unofficial"
    webhookUrl: str | None = None
    webhookConfig: WebhookConfig | None = None
    metadata: dict[str, Any] | None = None
    provider: Literal["whatsmeow"] | None = None
    connectionMode: Literal["qr", "pair"] | None = None
    pairPhone: PhoneDigits | None = None
    historySync: bool | None = None
    ignoreGroups: bool | None = None
    ignoreStatus: bool | None = None


class SetWebhookBody(WireModel):
    """``POST /api/v1/sessions/{sessionId}/webhook``."""

    webhookUrl: NonEmpty


class CallSettingsBody(WireModel):
    """``POST /api/v1/sessions/{sessionId}/call-settings``."""

    rejectCalls: bool | None = None
    rejectCallsMessage: str | None = None


class MarkPreviousAsReadBody(WireModel):
    """``POST /api/v1/sessions/{sessionId}/mark-previous-as-read-settings``."""

    markPreviousAsRead: bool


class KeyPair(WireModel):
    """A private/public key pair of a migrated session."""

    priv: str
    pub: str


class MigrationAccount(WireModel):
    """The ``account`` object of a session migration."""

    details: str
    accountSignatureKey: str
    accountSignature: str
    deviceSignature: str


class MigrationBody(WireModel):
    """``POST /api/v1/session-migration/migrate``: the one-time code is 8 of ``A-Z0-9``."""

    code: Annotated[str, StringConstraints(min_length=1, pattern=MIGRATION_CODE_PATTERN)]
    jid: str | None = None
    registrationId: int | None = None
    noiseKey: KeyPair | None = None
    identityKey: KeyPair | None = None
    account: MigrationAccount | None = None
    lid: str | None = None
    platform: str | None = None
    pushName: str | None = None
    businessName: str | None = None


class RejectCallBody(WireModel):
    """``POST /api/v1/calls/reject``: ``from`` exactly as the ``call.offer`` event said."""

    sessionId: NonEmpty
    callId: NonEmpty
    from_: NonEmpty = Field(alias="from")


# --------------------------------------------------------------------------- sends


class SendBody(WireModel):
    """Fields every send carries."""

    sessionId: NonEmpty
    to: PhoneDigits


class _Mentions(SendBody):
    mentionAll: bool | None = None


class _Context(_Mentions):
    contextInfo: dict[str, Any] | None = None


class TextBody(_Context):
    """``messages/send/text``."""

    text: NonEmpty
    async_: AsyncFlag | None = Field(default=None, alias="async")


class ImageBody(_Context):
    """``messages/send/image``: ``image`` is a URL."""

    image: NonEmpty
    caption: str | None = None


class VideoBody(_Context):
    """``messages/send/video``."""

    video: NonEmpty
    caption: str | None = None
    ptv: bool | None = None
    gifPlayback: bool | None = None


class AudioBody(_Context):
    """``messages/send/audio``; ``ptt`` sends it as a voice note."""

    audio: NonEmpty
    ptt: bool | None = None


class DocumentBody(_Context):
    """``messages/send/document``."""

    document: NonEmpty
    mimetype: str | None = None
    fileName: str | None = None


class StickerBody(_Context):
    """``messages/send/sticker``."""

    sticker: NonEmpty


class LocationBody(_Context):
    """``messages/send/location``."""

    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)
    name: str | None = None
    address: str | None = None


class ContactBody(_Context):
    """``messages/send/contact``."""

    contactName: NonEmpty
    contactPhone: NonEmpty


class PollBody(_Mentions):
    """``messages/send/poll``: 2 to 12 options."""

    question: NonEmpty
    options: list[NonEmpty] = Field(min_length=2, max_length=12)
    multipleAnswers: bool | None = None
    async_: AsyncFlag | None = Field(default=None, alias="async")


class ReactionBody(SendBody):
    """``messages/send/reaction``: ``emoji`` is 1 to 10 characters."""

    messageId: NonEmpty
    emoji: Annotated[str, StringConstraints(min_length=1, max_length=10)]
    async_: AsyncFlag | None = Field(default=None, alias="async")


class AlbumItem(WireModel):
    """One media item of an album."""

    type: Literal["image", "video"]
    url: NonEmpty
    caption: str | None = None


class AlbumBody(_Mentions):
    """``messages/send/album``: 2 to 10 media."""

    media: list[AlbumItem] = Field(min_length=2, max_length=10)
    caption: str | None = None
    async_: AsyncFlag | None = Field(default=None, alias="async")


class ListRow(WireModel):
    """A selectable row of a list section."""

    rowId: NonEmpty
    title: NonEmpty
    description: str | None = None


class ListSection(WireModel):
    """A section of a list message: 1 to 10 rows."""

    title: str | None = None
    rows: list[ListRow] = Field(min_length=1, max_length=10)


class ListBody(_Mentions):
    """``interactive/send/list``: 1 to 10 sections."""

    title: str | None = None
    description: NonEmpty
    buttonText: NonEmpty
    footerText: str | None = None
    sections: list[ListSection] = Field(min_length=1, max_length=10)


class CarouselHeader(WireModel):
    """Header of a carousel card."""

    type: Literal["image", "video"]
    title: str | None = None
    media: NonEmpty


class CarouselButton(WireModel):
    """Button of a carousel card."""

    type: Literal["quick_reply", "url", "call"]
    title: NonEmpty
    id: str | None = None
    url: str | None = None
    phone: str | None = None


class CarouselCard(WireModel):
    """One card: a body, an optional header and footer, at most two buttons."""

    header: CarouselHeader | None = None
    body: NonEmpty
    footer: str | None = None
    buttons: list[CarouselButton] | None = Field(default=None, max_length=2)


class CarouselBody(_Mentions):
    """``interactive/send/carousel``: 1 to 10 cards."""

    cards: list[CarouselCard] = Field(min_length=1, max_length=10)


class NativeFlowButton(WireModel):
    """Button of a native-flow message."""

    type: Literal["quick_reply", "url", "call", "copy"]
    title: NonEmpty
    id: str | None = None
    url: str | None = None
    phone: str | None = None
    copy_code: str | None = None


class NativeFlowBody(_Mentions):
    """``interactive/send/nativeflow``: 1 to 4 buttons."""

    title: NonEmpty
    body: NonEmpty
    footer: str | None = None
    buttons: list[NativeFlowButton] = Field(min_length=1, max_length=4)
    imageUrl: str | None = None


class PixBody(_Mentions):
    """``interactive/send/pix``: a button that copies a payment key."""

    content: NonEmpty
    pixKey: NonEmpty
    footer: str | None = None
    pixAmount: float | None = Field(default=None, ge=0)
    pixMessage: str | None = None


@dataclass(frozen=True, slots=True)
class SendKind:
    """One message type: its name, its endpoint path and its body model."""

    name: str
    path: str
    model: type[SendBody]


def _kind(name: str, group: str, model: type[SendBody]) -> SendKind:
    return SendKind(name, f"{API}/{group}/send/{name}", model)


#: Every send the service offers, by type name (the ``type`` of a campaign step).
SEND_KINDS: dict[str, SendKind] = {
    kind.name: kind
    for kind in (
        _kind("text", "messages", TextBody),
        _kind("image", "messages", ImageBody),
        _kind("video", "messages", VideoBody),
        _kind("audio", "messages", AudioBody),
        _kind("document", "messages", DocumentBody),
        _kind("sticker", "messages", StickerBody),
        _kind("location", "messages", LocationBody),
        _kind("contact", "messages", ContactBody),
        _kind("poll", "messages", PollBody),
        _kind("reaction", "messages", ReactionBody),
        _kind("album", "messages", AlbumBody),
        _kind("list", "interactive", ListBody),
        _kind("carousel", "interactive", CarouselBody),
        _kind("nativeflow", "interactive", NativeFlowBody),
        _kind("pix", "interactive", PixBody),
    )
}
