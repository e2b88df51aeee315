"""Second chances: the verdict on each watched row's outcome (retry, fallback, wait, final).

See :mod:`scheduler.recycle_options` for the rules and :mod:`.verdicts` for the answers.
"""
