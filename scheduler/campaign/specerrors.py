"""Definition errors in a person's words, and a best-effort definition despite them.

pydantic says ``Input should be a valid string``; a campaign author needs ``expected text in
quotes, such as rate = "30/min" (got the number 30)``. :func:`describe` turns each pydantic
error into such a message (the key path goes beside it, in the issue).

``campaign validate`` reports every error in one run, so after the definition's errors it
still reads the CSV and renders the templates. :func:`lenient_spec` builds the definition
that makes this possible: keys with errors are dropped (their defaults apply) and cross-key
checks are off; ``None`` when even that is impossible (no recipients file).
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import ValidationError

from scheduler.campaign.definition import CampaignSpec
from scheduler.campaign.steps import loc_path

#: An example value for keys whose type is often mistaken.
EXAMPLES = {
    "name": '"boas-vindas"',
    "senders": '["loja-01", "loja-02"]',
    "recipients.file": '"data/clientes.csv"',
    "recipients.phone_column": '"celular"',
    "recipients.default_country": '"BR"',
    "recipients.suppression": '["data/optout.txt"]',
    "recipients.line_types": '["mobile", "fixed_line"]',
    "recipients.max_invalid": '"2%"',
    "schedule.at": "2026-12-01T09:00:00",
    "schedule.cron": '"0 9 * * mon-fri"',
    "schedule.timezone": '"America/Sao_Paulo"',
    "schedule.window": '"09:00-20:00"',
    "schedule.days": '"mon-sat"',
    "schedule.latest": '"20:00"',
    "pace.rate": '"30/min"',
    "pace.jitter": '"2s-8s"',
    "pace.daily_cap": "1000",
    "pace.plan_limit": "5000",
}
_KINDS = {
    "string_type": "text in quotes",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list in brackets",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "datetime_type": "a date-time",
    "datetime_parsing": "a date-time",
    "datetime_from_date_parsing": "a date-time",
}


def _shown(value: Any) -> str:
    """How a TOML value looks to its author."""
    if isinstance(value, bool):
        return f"the value {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__}"


def describe(err: dict[str, Any]) -> str:
    """A person's message for one pydantic error of the definition."""
    loc = loc_path(tuple(err["loc"]))
    kind = err["type"]
    message = str(err["msg"]).removeprefix("Value error, ")
    got = f" (got {_shown(err['input'])})" if "input" in err else ""
    if kind == "extra_forbidden":
        return f"unknown key {loc!r}"
    if kind == "missing":
        return f"required key {loc!r} is missing"
    if kind in _KINDS:
        name = loc.rsplit(".", 1)[-1]
        example = EXAMPLES.get(loc)
        such = f", such as {name} = {example}" if example else ""
        return f"expected {_KINDS[kind]}{such}{got}"
    if kind == "value_error":
        return message
    return message.replace("Input should be", "expected", 1) + got


def _drop(data: Any, loc: tuple[Any, ...]) -> bool:
    """Remove the key (or the list holding the element) at ``loc``; whether it changed."""
    parts = list(loc)
    while parts and isinstance(parts[-1], int):
        parts.pop()  # an element of a list: drop the whole list
    if not parts:
        return False
    node = data
    for part in parts[:-1]:
        if (isinstance(node, dict) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and part < len(node)
        ):
            node = node[part]
        else:
            return False
    if isinstance(node, dict) and parts[-1] in node:
        del node[parts[-1]]
        return True
    return False


def lenient_spec(data: dict[str, Any]) -> CampaignSpec | None:
    """The definition with its wrong keys dropped and cross-key checks off, if possible."""
    data = copy.deepcopy(data)
    for _attempt in range(8):
        try:
            return CampaignSpec.model_validate(data, context={"lenient": True})
        except ValidationError as exc:
            changed = False
            for err in exc.errors(include_url=False):
                loc = tuple(err["loc"])
                if loc[:1] == ("recipients",) and (len(loc) == 1 or loc[1] == "file"):
                    return None  # no recipients file: nothing to read
                if loc == ("name",):
                    data["name"], changed = "campaign", True
                elif loc[:1] == ("fallback",):
                    changed = data.pop("fallback", None) is not None or changed
                elif loc[:1] == ("steps",):
                    data["steps"], changed = [{}], True  # steps are checked one by one
                else:
                    changed = _drop(data, loc) or changed
            if not changed:
                return None
    return None
