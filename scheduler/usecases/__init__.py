"""The use cases: what a command or a worker does with a campaign, in one package.

Launching and continuing a run (:mod:`~scheduler.usecases.launch`,
:mod:`~scheduler.usecases.planning`), sending it in the foreground
(:mod:`~scheduler.usecases.foreground`), serving every run as a worker
(:mod:`~scheduler.usecases.serve`), a rehearsal (:mod:`~scheduler.usecases.rehearsal`), a
fallback run (:mod:`~scheduler.usecases.fallback_run`), sender control
(:mod:`~scheduler.usecases.sender_control`) and the lookups they need. The read models are
in :mod:`scheduler.views`, which never imports this package; the wiring is
:mod:`scheduler.wiring`.
"""
