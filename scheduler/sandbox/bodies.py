"""Request bodies: JSON, multipart/form-data or text/plain in; a validated wire model out.

Any problem is a 400 in the service's error envelope whose message names the field; never
a 500. Form fields are strings: nested fields (lists, objects) may be sent as JSON text and
are decoded when the model wants a list or an object there; repeated keys make a list.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.datastructures import UploadFile
from starlette.requests import Request

from scheduler.sandbox.common import ApiError

M = TypeVar("M", bound=BaseModel)

_FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
_CONTAINER_ERRORS = frozenset({"list_type", "dict_type", "model_type", "tuple_type"})
_HINTS = {
    ("to", "string_pattern_mismatch"): (
        "must be the recipient's international number, 8 to 15 digits, without '+' or spaces"
    ),
    ("code", "string_pattern_mismatch"): "must be exactly 8 characters from A-Z and 0-9",
}


def bad_request(message: str) -> ApiError:
    """A 400 in the general error envelope."""
    return ApiError(400, message)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _decode_json(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise bad_request("Request body is empty; a JSON object is expected")
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise bad_request(f"Malformed JSON body: {exc}") from None
    except ValueError as exc:
        raise bad_request(f"Malformed JSON body: {exc}") from None
    if not isinstance(value, dict):
        raise bad_request(f"Request body must be a JSON object, not {type(value).__name__}")
    return value


async def _read_form(request: Request) -> dict[str, Any]:
    values: dict[str, Any] = {}
    async with request.form() as form:
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                raise bad_request(f"{key}: file uploads are not accepted; send media by URL")
            if key in values:
                previous = values[key]
                values[key] = (
                    [*previous, value] if isinstance(previous, list) else [previous, value]
                )
            else:
                values[key] = value
    return values


async def read_object(request: Request) -> tuple[dict[str, Any], bool]:
    """The body as a dict, and whether it came from a form (values are then strings)."""
    content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type in _FORM_TYPES:
        try:
            return await _read_form(request), True
        except ApiError:
            raise
        except Exception as exc:  # python-multipart raises several types on bad input
            raise bad_request(f"Malformed form body: {exc}") from None
    return _decode_json(await request.body()), False


def describe(exc: ValidationError) -> str:
    """One line naming every invalid field and why."""
    parts = []
    for err in exc.errors(include_url=False, include_context=False):
        loc = ".".join(str(part) for part in err["loc"]) or "body"
        hint = _HINTS.get((str(err["loc"][-1]) if err["loc"] else "", err["type"]))
        if err["type"] == "extra_forbidden":
            parts.append(f"{loc}: unknown field (not accepted by this endpoint)")
        elif err["type"] == "missing":
            parts.append(f"{loc}: required field is missing")
        else:
            parts.append(f"{loc}: {hint or err['msg']}")
    return "Invalid request body: " + "; ".join(parts)


def _decode_form_containers(data: dict[str, Any], exc: ValidationError) -> bool:
    """Decode form fields sent as JSON text where the model wants a list or object."""
    changed = False
    for err in exc.errors(include_url=False, include_context=False):
        if err["type"] not in _CONTAINER_ERRORS or len(err["loc"]) != 1:
            continue
        key = str(err["loc"][0])
        value = data.get(key)
        if isinstance(value, str):
            try:
                data[key] = json.loads(value)
                changed = True
            except json.JSONDecodeError:
                continue
    return changed


def validate(model: type[M], data: dict[str, Any], *, from_form: bool = False) -> M:
    """``model`` validated from ``data``; a 400 naming the fields when it does not fit."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        if from_form and _decode_form_containers(data, exc):
            return validate(model, data)
        raise bad_request(describe(exc)) from None


async def parse_body(request: Request, model: type[M]) -> tuple[M, dict[str, Any]]:
    """Read and validate the body of ``request``: the model and the body as received."""
    data, from_form = await read_object(request)
    received = dict(data)
    return validate(model, data, from_form=from_form), received
