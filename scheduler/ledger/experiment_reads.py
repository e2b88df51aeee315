"""The reads of a run's variants and A/B test as ``campaign status`` and the dashboard's
run page show them (:mod:`scheduler.views.experiment_status`).

:class:`ExperimentReads` reads on the caller's snapshot: whether the run has variants (rows
by primary key: most runs stop there), its rows per variant and state, and its test's row.
Each method is one read of :mod:`scheduler.ledger.queries.experiments`, imported when first
read so that importing the door costs ``status`` nothing beyond what it imported before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.ledger.access import Connection
    from scheduler.ledger.rows import ExperimentRow


class ExperimentReads:
    """A run's variants and test, read on ``conn`` (see the module)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def has_variants(self, run_id: int) -> bool:
        """Whether the run was planned with variants (its test's row, or a step's
        ``variants`` or an ``[experiment]`` in its stored definition)."""
        from scheduler.ledger.queries import experiments as xq

        return xq.run_has_variants(self.conn, run_id)

    def variant_split(self, run_id: int) -> dict[str | None, dict[str, int]]:
        """The run's rows per variant and state (NULL variant: held, or no variants)."""
        from scheduler.ledger.queries import experiments as xq

        return xq.variant_split(self.conn, run_id)

    def experiment(self, run_id: int) -> ExperimentRow | None:
        """The run's test, or None when it has none."""
        from scheduler.ledger.queries import experiments as xq

        return xq.read(self.conn, run_id)
