"""A ledger that fails under the dispatcher stops it with one line, never a driver traceback."""

from __future__ import annotations

import random

import pytest

from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger.exceptions import LedgerError
from scheduler.ledger.runs import Ledger
from tests.engine import dispatcher_for
from tests.factories import FakeClock, make_run


async def test_a_missing_table_stops_the_dispatcher_with_one_ledger_error(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    run_id = make_run(ledger, 5)
    with ledger.engine.begin() as conn:  # the ledger loses its deliveries under the run
        conn.exec_driver_sql("ALTER TABLE deliveries RENAME TO deliveries_gone")
    options = DispatchOptions(senders=("s1",), rate=10.0, timezone="America/Sao_Paulo")
    async with service.client() as client:
        dispatcher = dispatcher_for(ledger, client, run_id, options, clock=clock,
                                    rng=random.Random(3))
        with pytest.raises(LedgerError) as caught:
            await dispatcher.run()
    message = str(caught.value)
    assert message.startswith("could not ") and "deliveries" in message
    assert "\n" not in message and "SELECT" not in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert service.sends() == []  # nothing was sent
    assert ledger.get_run(run_id).owner_pid is None  # the run was given up
