"""``/metrics``: the ledger and the receiver in Prometheus' text format.

- :mod:`.collector`: one scrape's metrics, read in ONE snapshot through the views
  (``campaign status`` and the dashboard's reads), the kept tallies
  (:mod:`scheduler.ledger.overview_reads`: the few grouped reads no view needed yet) and
  the receiver's counters (:mod:`scheduler.tracking.intake_counts`, kept in plain Python:
  no prometheus-client on the receiver's path); never a scan of the deliveries.
- :mod:`.endpoint`: ``GET /metrics`` as a raw ASGI middleware (the dashboard's app, and
  ``campaign serve``'s metrics port), with its rule of the address.
- :mod:`.serving`: ``campaign serve``'s own metrics port (``[metrics] serve = true``).

prometheus-client is imported only when ``/metrics`` is answered. Every metric, its type,
labels and meaning: ``docs/metrics.md``.
"""
