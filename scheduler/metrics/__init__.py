"""``/metrics``: the ledger and the receiver in Prometheus' text format.

- :mod:`.intake`: the webhook receiver's counters (requests and their time), kept in plain
  Python by the receiver of this process; no prometheus-client import on that path.
- :mod:`.queries`: the few grouped reads over the kept tallies that no view needed yet.
- :mod:`.collector`: one scrape's metrics, read in ONE snapshot through the views
  (``campaign status`` and the dashboard's reads) and the kept tallies; never a scan of
  the deliveries.
- :mod:`.endpoint`: ``GET /metrics`` as a raw ASGI middleware (the dashboard's app, and
  ``campaign serve``'s metrics port), with its rule of the address.
- :mod:`.serving`: ``campaign serve``'s own metrics port (``[metrics] serve = true``).

prometheus-client is imported only when ``/metrics`` is answered. Every metric, its type,
labels and meaning: ``docs/metrics.md``.
"""
