"""Brazil's area codes (DDD) and the state (UF) each belongs to.

One table, written once: a number's state decides which state holidays keep it off the send
window (``[schedule] holidays = "recipient"``, :mod:`scheduler.campaign.holidays`). Numbers
are read as the ledger keeps them (digits, country code first: ``5511987654321``).
"""

from __future__ import annotations

#: DDD -> UF (Anatel's plan; 67 numbering areas).
DDD_STATE: dict[str, str] = {
    **dict.fromkeys(("11", "12", "13", "14", "15", "16", "17", "18", "19"), "SP"),
    **dict.fromkeys(("21", "22", "24"), "RJ"),
    **dict.fromkeys(("27", "28"), "ES"),
    **dict.fromkeys(("31", "32", "33", "34", "35", "37", "38"), "MG"),
    **dict.fromkeys(("41", "42", "43", "44", "45", "46"), "PR"),
    **dict.fromkeys(("47", "48", "49"), "SC"),
    **dict.fromkeys(("51", "53", "54", "55"), "RS"),
    "61": "DF",
    **dict.fromkeys(("62", "64"), "GO"),
    "63": "TO",
    **dict.fromkeys(("65", "66"), "MT"),
    "67": "MS",
    "68": "AC",
    "69": "RO",
    **dict.fromkeys(("71", "73", "74", "75", "77"), "BA"),
    "79": "SE",
    **dict.fromkeys(("81", "87"), "PE"),
    "82": "AL",
    "83": "PB",
    "84": "RN",
    **dict.fromkeys(("85", "88"), "CE"),
    **dict.fromkeys(("86", "89"), "PI"),
    **dict.fromkeys(("91", "93", "94"), "PA"),
    **dict.fromkeys(("92", "97"), "AM"),
    "95": "RR",
    "96": "AP",
    **dict.fromkeys(("98", "99"), "MA"),
}


def state_of(number: str) -> str | None:
    """The UF of a Brazilian number (``"5511..."``, ``"+55 11 ..."``), else ``None``."""
    digits = "".join(ch for ch in number if ch.isdigit())
    if not digits.startswith("55") or len(digits) < 12:
        return None
    return DDD_STATE.get(digits[2:4])
