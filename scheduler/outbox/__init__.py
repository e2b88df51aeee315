"""The outgoing webhooks' event catalogue: each event's name and its payload (pydantic).

Imports nothing of the program: the settings check a subscription's event names against
:data:`~scheduler.outbox.events.EVENT_TYPES`, the ledger writes the events to its outbox
(:mod:`scheduler.ledger.outbox`), and :mod:`scheduler.webhooks_out` delivers them.
"""
