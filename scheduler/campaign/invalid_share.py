"""``[recipients] max_invalid``: how many unreachable numbers a share of the rows allows."""

from __future__ import annotations

import math
import re

#: ``"2%"``: a share of the rows read.
PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def invalid_limit(value: int | str | None, read: int) -> int | None:
    """How many unreachable numbers ``max_invalid`` allows among ``read`` recipients."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    found = PERCENT.match(value)
    assert found is not None, "checked by RecipientsSpec"
    return math.floor(read * float(found.group(1)) / 100 + 1e-9)
