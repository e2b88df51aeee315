"""``python -m scheduler``: the ``campaign`` command."""

from __future__ import annotations

from scheduler.cli import main

main()
