"""Numbers erased at the person's request, recognised in a campaign's CSV: what a plan skips
(with the suppression list's reason, the words a stored run gives) and counts.

``person forget`` puts the number's keyed hash on the suppression list (``erased:`` + the
HMAC-SHA256 of its digits, :mod:`scheduler.ledger.privacy_key`); a plan hashes each
recipient's number with the same key to know it again. Nothing is read, and nothing is
hashed, while the list holds no erased number or there is no key.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping

from scheduler.ledger.access import Engine, read
from scheduler.ledger.privacy import erased_reasons
from scheduler.ledger.privacy_key import ERASED


class ErasedNumbers:
    """The erased numbers' hashes with their reasons, and the key that makes them."""

    def __init__(self, key: bytes, reasons: Mapping[str, str]) -> None:
        self._mac = hmac.new(key, digestmod=hashlib.sha256)  # copied per number: faster
        self.reasons = dict(reasons)

    def reason(self, digits: str) -> str | None:
        """The list's reason when ``digits`` (a normalised number) was erased, else None."""
        mac = self._mac.copy()
        mac.update(digits.encode())
        return self.reasons.get(ERASED + mac.hexdigest())


def erased_numbers(engine: Engine, key: bytes | Callable[[], bytes | None] | None
                   ) -> ErasedNumbers | None:
    """The ledger's erased numbers (None: there are none, or no key to know them by);
    ``key`` may be a function, asked only when the list holds an erased number."""
    if key is None:
        return None
    with read(engine, "read the erased numbers of the suppression list") as conn:
        reasons = erased_reasons(conn)
    if not reasons:
        return None
    found = key() if callable(key) else key
    return ErasedNumbers(found, reasons) if found is not None else None
