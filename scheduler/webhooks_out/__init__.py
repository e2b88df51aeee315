"""Delivering the outgoing webhooks: the outbox's events POSTed, signed, retried.

- :mod:`~scheduler.webhooks_out.backoff`: when the next try is due (a pure function);
- :mod:`~scheduler.webhooks_out.signing`: the Standard Webhooks headers of one try;
- :mod:`~scheduler.webhooks_out.post`: one POST with httpx, its errors translated;
- :mod:`~scheduler.webhooks_out.worker`: the loop ``campaign serve`` and ``campaign run``
  keep while they work (give events out, claim due rows, post, record);
- :mod:`~scheduler.webhooks_out.stuck`: ``run.stuck``, noticed by the same loop;
- :mod:`~scheduler.webhooks_out.readout`: what ``campaign webhooks`` and the dashboard show.

The events are written by the ledger (:mod:`scheduler.ledger.outbox`); see
docs/webhooks-outgoing.md.
"""
