"""The ledger's one door: a transaction commits or rolls back as a whole, and a database
error reaches the caller as one ``LedgerError`` line that names what failed."""

from __future__ import annotations

import socket

import pytest

from scheduler.ledger import access
from scheduler.ledger.db import make_engine
from scheduler.ledger.exceptions import DatabaseUnavailable, LedgerError
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import runs as rq
from scheduler.ledger.runs import Ledger
from tests.factories import T0


def _run(ledger: Ledger, recipients: int = 3) -> int:
    run_id = ledger.create_run(campaign_name="c", channel="whatsapp", definition_path="c.toml",
                               definition={"senders": ["s1"]}, delivery_mode="at-most-once",
                               timezone="UTC")
    rows = [{"row": i, "to": f"5511900000{i:03d}", "step": 0, "kind": "text",
             "path": "/api/v1/messages/send/text", "payload": {"text": "oi"},
             "state": "planned"} for i in range(recipients)]
    ledger.store_plan(run_id, [rows], start_at=T0)
    return run_id


def test_a_database_error_is_one_line_naming_what_failed_and_nothing_is_kept(
        ledger: Ledger) -> None:
    run_id = _run(ledger)
    with pytest.raises(LedgerError) as caught, \
            access.transaction(ledger.engine, "claim deliveries") as conn:
        due = dq.due_deliveries(conn, run_id, T0, limit=10)
        assert dq.claim(conn, [(d.id, "s1") for d in due], T0)
        rq.update_run(conn, run_id, status=None)  # the database refuses: NOT NULL
    message = str(caught.value)
    assert message.startswith("could not claim deliveries: ")
    assert "status" in message and "\n" not in message
    assert "UPDATE" not in message and "[parameters" not in message  # no SQL, no values
    assert type(caught.value) is LedgerError and caught.value.__cause__ is None
    assert ledger.counts(run_id) == {"planned": 3}  # the claim was rolled back with it


def test_other_errors_pass_through_unchanged_and_roll_back(ledger: Ledger) -> None:
    run_id = _run(ledger)
    with (pytest.raises(KeyError, match="not a database error"),
          access.transaction(ledger.engine, "claim deliveries") as conn):
        due = dq.due_deliveries(conn, run_id, T0, limit=10)
        dq.claim(conn, [(d.id, "s1") for d in due], T0)
        raise KeyError("not a database error")
    assert ledger.counts(run_id) == {"planned": 3}


def test_a_read_commits_nothing_and_a_transaction_commits_all(ledger: Ledger) -> None:
    run_id = _run(ledger)
    with access.read(ledger.engine, "look") as conn:
        due = dq.due_deliveries(conn, run_id, T0, limit=10)
        dq.claim(conn, [(due[0].id, "s1")], T0)  # a write in a read: not kept
    assert ledger.counts(run_id) == {"planned": 3}
    with access.transaction(ledger.engine, "claim deliveries") as conn:
        dq.claim(conn, [(d.id, "s1") for d in due], T0)
    assert ledger.counts(run_id) == {"dispatching": 3}


def test_ledger_methods_translate_too(ledger: Ledger) -> None:
    run_id = _run(ledger)
    with access.transaction(ledger.engine, "drop the table") as conn:  # the counts' table
        conn.exec_driver_sql("ALTER TABLE run_tallies RENAME TO run_tallies_gone")
    with pytest.raises(LedgerError, match=rf"^could not count the deliveries of run {run_id}: "):
        ledger.counts(run_id)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_server_that_cannot_be_reached_is_database_unavailable_without_the_password() -> None:
    url = f"postgresql+psycopg://shop:s3cret-pw@127.0.0.1:{_closed_port()}/campaign"
    engine = make_engine(url)
    try:
        with pytest.raises(DatabaseUnavailable) as caught, access.read(engine, "read the runs"):
            pass
    finally:
        engine.dispose()
    message = str(caught.value)
    assert message.startswith("could not read the runs: the database cannot be reached: ")
    assert "s3cret-pw" not in message and "\n" not in message
