"""Building request bodies and paths: a model from values, a session's escaped path."""

from __future__ import annotations

from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from scheduler.service import requests as rq
from scheduler.service.exceptions import InvalidRequest, validation_problems

Model = TypeVar("Model", bound=BaseModel)


def build(model: type[Model], **values: Any) -> Model:
    """``model(**values)`` or :class:`InvalidRequest` naming what is wrong."""
    try:
        return model(**values)
    except ValidationError as exc:
        raise InvalidRequest(f"{model.__name__}: {validation_problems(exc)}") from None


def session_path(session_id: str, tail: str = "", root: str = "sessions") -> str:
    """``/api/v1/{root}/{sessionId}{tail}``, the id escaped; an empty id is refused locally."""
    if not session_id:
        raise InvalidRequest("session_id must not be empty")
    return f"{rq.API}/{root}/{quote(session_id, safe='')}{tail}"
