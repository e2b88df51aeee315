"""Second chances: the verdict on each watched row's outcome (retry, fallback, wait, final).

See :mod:`scheduler.settings.retry_rules` for the rules and :mod:`.verdicts` for the answers.
"""
