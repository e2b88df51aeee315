"""The ``CAMPAIGN_*`` environment variables of a settings model's fields, read as
pydantic-settings read them (without importing it: a tenth of ``campaign status``'s start-up).

A field ``name`` is set by ``CAMPAIGN_NAME``, its name matched without regard to case (as
pydantic-settings' default ``case_sensitive=False``). A plain field (a string, a number, a
path, a secret) gets the variable's text, which the model then validates; a table or a list
(a section such as ``[dashboard]``, ``opt_out_words``, ``sms_price_micro``) gets the
variable's text decoded as JSON, and text that is not JSON is a :class:`ConfigError` naming
the variable. Values given to the model win over the environment; a table given both ways
is merged, key by key, the given keys winning (pydantic-settings' ``deep_update``).
"""

from __future__ import annotations

import json
import os
import types
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from scheduler.core.errors import ConfigError

PREFIX = "CAMPAIGN_"
#: Types whose values come from the environment as JSON (pydantic-settings' "complex").
_TABLES = (list, dict, tuple, set, frozenset)


def is_table(annotation: Any) -> bool:
    """Whether a field of this type is read from the environment as JSON: a model, a
    list, a tuple, a set or a dict, alone or in a union (``X | None``)."""
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        return any(is_table(arg) for arg in get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, (BaseModel, *_TABLES)):
        return True
    return isinstance(origin, type) and issubclass(origin, _TABLES)


def _decoded(variable: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{variable}: not valid JSON ({exc}); a table or a list is set "
                          "from the environment as JSON") from None


def read_environment(fields: Mapping[str, FieldInfo],
                     environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The values the environment sets for ``fields`` (a model's ``model_fields``)."""
    source = os.environ if environ is None else environ
    lowered = {key.lower(): (key, value) for key, value in source.items()
               if key[:len(PREFIX)].upper() == PREFIX}
    found: dict[str, Any] = {}
    for name, field in fields.items():
        hit = lowered.get((PREFIX + name).lower())
        if hit is not None:
            variable, text = hit
            found[name] = _decoded(variable, text) if is_table(field.annotation) else text
    return found


def merged(below: dict[str, Any], above: Mapping[str, Any]) -> dict[str, Any]:
    """``below`` updated with ``above``, tables merged key by key (``above`` wins)."""
    result = dict(below)
    for key, value in above.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result
