"""The ``data`` payloads of the service's webhook events, one model per shape.

Messages (``messages.sent`` / ``messages.received``, with ``media_data`` and ``data`` typed
by message type, answers to polls and lists, quoted messages), receipts and calls (incoming,
outgoing, audio), from ``service-interface.md`` and ``docs/service-facts.md``; labels are in
:mod:`scheduler.service.label_events`, the account webhook's SMS and voice payloads in
:mod:`scheduler.service.account_events`.
Models ignore fields they do not know; their envelopes live in
:mod:`scheduler.service.events`. Message ids may differ in letter case: compare their
``message_key`` properties.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    field_validator,
)

from scheduler.service.responses import normalise_message_id

Number = int | float
#: Epoch milliseconds, or an ISO 8601 string where the service sends one.
Stamp = int | float | str


class EventModel(BaseModel):
    """Base of every event model: unknown fields ignored, wire names kept."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


# --------------------------------------------------------------------------- message payloads


class Party(EventModel):
    """Sender or recipient of a message: its JID and display name."""

    jid: str | None = None
    name: str | None = None


class MediaData(EventModel):
    """``media_data`` common to every media type; ``pending_media_url`` for external URLs."""

    url: str | None = None
    mimetype: str | None = None
    file_length: int | str | None = None
    pending_media_url: str | None = None


class ImageMedia(MediaData):
    """``media_data`` of an image."""

    width: int | None = None
    height: int | None = None
    caption: str | None = None


class VideoMedia(ImageMedia):
    """``media_data`` of a video."""

    duration: Number | None = None


class AudioMedia(MediaData):
    """``media_data`` of an audio; ``is_ptt`` for a voice note."""

    is_ptt: bool | None = None
    duration: Number | None = None


class DocumentMedia(MediaData):
    """``media_data`` of a document."""

    caption: str | None = None
    filename: str | None = None


class StickerMedia(MediaData):
    """``media_data`` of a sticker."""

    width: int | None = None
    height: int | None = None
    is_animated: bool | None = None


class TypeData(EventModel):
    """Base of the type-specific ``data`` of a message."""


class LocationData(TypeData):
    """``data`` of a location message."""

    degrees_latitude: Number | None = None
    degrees_longitude: Number | None = None
    name: str | None = None
    address: str | None = None
    thumbnail: str | None = None


class ContactData(TypeData):
    """``data`` of a contact message."""

    contact_name: str | None = None
    contact_phone: str | None = None
    display_name: str | None = None
    vcard: str | None = None


class ReactionData(TypeData):
    """``data`` of a reaction: which message it reacts to."""

    original_message_id: str | None = None
    reaction_text: str | None = None
    reaction_timestamp: Number | None = None
    target_participant: str | None = None

    @property
    def original_message_key(self) -> str | None:
        """The reacted-to message id in normalised letter case."""
        return normalise_message_id(self.original_message_id)


class ListRowData(EventModel):
    """A row of a list message."""

    row_id: str | None = None
    title: str | None = None
    description: str | None = None


class ListSectionData(EventModel):
    """A section of a list message."""

    title: str | None = None
    rows: list[ListRowData] = []


class ListData(TypeData):
    """``data`` of a list message."""

    title: str | None = None
    description: str | None = None
    button_text: str | None = None
    footer_text: str | None = None
    list_type: int | None = None
    sections: list[ListSectionData] = []


class CarouselCardData(EventModel):
    """A card of a carousel message."""

    header_title: str | None = None
    body: str | None = None


class CarouselData(TypeData):
    """``data`` of a carousel message."""

    type: str | None = None
    cards: list[CarouselCardData] = []


class PollUpdateData(TypeData):
    """``data`` of a received ``poll_update`` (a vote; ours: the shape is not shown)."""

    poll_message_id: str | None = None
    selected_options: list[str] = []

    @property
    def answered_message_key(self) -> str | None:
        """The poll voted on, in normalised letter case."""
        return normalise_message_id(self.poll_message_id)


class ListResponseData(TypeData):
    """``data`` of a received ``list_response`` (a row chosen; ours: the shape is not shown)."""

    list_message_id: str | None = None
    row_id: str | None = None
    title: str | None = None
    description: str | None = None

    @property
    def answered_message_key(self) -> str | None:
        """The list answered, in normalised letter case."""
        return normalise_message_id(self.list_message_id)


class QuotedContext(EventModel):
    """``contextInfo`` of a received message that quotes another (ours, as whatsmeow's
    ``ContextInfo`` names it: ``stanzaId`` is the quoted message's id)."""

    stanzaId: str | None = None
    participant: str | None = None


MEDIA_DATA: dict[str, type[MediaData]] = {
    "image": ImageMedia, "video": VideoMedia, "audio": AudioMedia,
    "document": DocumentMedia, "sticker": StickerMedia,
}
TYPE_DATA: dict[str, type[TypeData]] = {
    "location": LocationData, "contact": ContactData, "reaction": ReactionData,
    "list": ListData, "carousel": CarouselData,
    "poll_update": PollUpdateData, "list_response": ListResponseData,
}


class MessageData(EventModel):
    """``data`` of ``messages.sent`` / ``messages.received``; other types keep ``data`` raw."""

    id: str
    type: str
    message: str | None = None
    timestamp: Number | None = None
    fromMe: bool | None = None
    is_group: bool | None = None
    group_name: str | None = None
    from_: Party | None = Field(default=None, alias="from")
    from_name: str | None = None
    to: Party | None = None
    media_url: str | None = None
    media_data: MediaData | None = None
    body: str | None = None
    data: dict[str, Any] | TypeData | None = Field(default=None, union_mode="left_to_right")
    contextInfo: QuotedContext | None = None

    @field_validator("from_", "to", mode="before")
    @classmethod
    def _party(cls, value: Any) -> Any:
        return {"jid": value} if isinstance(value, str) else value

    @field_validator("media_data", mode="before")
    @classmethod
    def _media_by_type(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, dict):
            return value
        return MEDIA_DATA.get(info.data.get("type", ""), MediaData).model_validate(value)

    @field_validator("data", mode="before")
    @classmethod
    def _data_by_type(cls, value: Any, info: ValidationInfo) -> Any:
        model = TYPE_DATA.get(info.data.get("type", ""))
        if model is None or not isinstance(value, dict):
            return value
        return model.model_validate(value)

    @property
    def message_key(self) -> str | None:
        """The message id in normalised letter case (matches ``SendResult.message_key``)."""
        return normalise_message_id(self.id)

    @property
    def answered_message_key(self) -> str | None:
        """The message this one answers: the poll voted on, the list chosen from, or the
        message quoted (``contextInfo.stanzaId``); ``None`` when it answers none."""
        data = self.data
        if isinstance(data, PollUpdateData | ListResponseData) and data.answered_message_key:
            return data.answered_message_key
        if self.contextInfo is not None:
            return normalise_message_id(self.contextInfo.stanzaId)
        return None


class Receipt(EventModel):
    """``data`` of ``message.delivered`` / ``message.read``."""

    message_id: str
    remote_jid: str
    participant: str | None = None
    timestamp: Stamp | None = None

    @property
    def message_key(self) -> str | None:
        """The message id in normalised letter case."""
        return normalise_message_id(self.message_id)


# --------------------------------------------------------------------------- call payloads


class CallOffer(EventModel):
    """``data`` of ``call.offer``: an incoming call; ``from_`` is what ``reject_call`` needs."""

    callId: str
    from_: str = Field(alias="from")
    callCreator: str | None = None
    isGroup: bool
    groupJid: str | None = None
    timestamp: Number


class CallRelay(EventModel):
    """``data`` of ``call.accepted`` / ``call.rejected``, relayed as received (extras kept)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)

    callId: str
    from_: str = Field(alias="from")


class CallState(EventModel):
    """``data`` of an outgoing call state: ringing, connected, ended, not answered."""

    callId: str
    state: str | None = None
    reason: str | None = None
    peerLid: str | None = None
    peerPn: str | None = None


class AudioChunk(EventModel):
    """``call.audio`` variant A: about one second of live PCM."""

    callId: str
    seq: int
    sampleRate: int | None = None
    channels: int | None = None
    encoding: str | None = None
    data: str
    final: bool = False


class RecordingFiles(EventModel):
    """The tracks of a finished recording: full mix, own side, peer side."""

    full: str | None = None
    sender: str | None = None
    recipient: str | None = None


class Recording(EventModel):
    """``call.audio`` variant B: the finished recording of a stream-mode call."""

    callId: str
    files: RecordingFiles | None = None
    url: str | None = None
    durationMs: Number | None = None
    sizeBytes: int | None = None
    mimetype: str | None = None
    phone: str | None = None

    @property
    def full_url(self) -> str | None:
        """``files.full``, else the deprecated ``url`` alias."""
        return (self.files.full if self.files else None) or self.url


def _audio_variant(value: Any) -> str:
    has_seq = "seq" in value if isinstance(value, dict) else hasattr(value, "seq")
    return "chunk" if has_seq else "recording"


CallAudio = Annotated[
    Annotated[AudioChunk, Tag("chunk")] | Annotated[Recording, Tag("recording")],
    Discriminator(_audio_variant),
]
