"""Read models of the ledger for the dashboard and ``campaign status``: a run
(:mod:`scheduler.views.run_view`) and the overview (:mod:`scheduler.views.overview`), each
read in one consistent snapshot."""
