"""Report fixtures: the main scenario (``whatsapp_run``, see ``tests/reports/support.py``)
stored in the shared ``ledger`` on the shared ``clock``."""

from __future__ import annotations

import pytest

from scheduler.ledger.runs import Ledger
from tests.factories import FakeClock
from tests.reports.support import Scenario, make_whatsapp_run


@pytest.fixture
def whatsapp_run(ledger: Ledger, clock: FakeClock) -> Scenario:
    """The main scenario (see ``tests/reports/support.py``)."""
    return make_whatsapp_run(ledger, clock)
