"""The run's A/B test: wait for the test share and the wait, decide once, release the rest.

A run planned with ``[experiment]`` sends its test share first; the rest of the audience
is ``held`` (not due). When the dispatcher has nothing due it asks :meth:`ABTest.check`:

- while rows of the test share are still to send, nothing to do (looked at again later);
- once every one is settled, the test is due ``wait`` after the last send went out (on the
  run's clock, so a rehearsal's simulated clock waits in strides): the timeline says so,
  with the time, and the dispatcher sleeps until then;
- then :func:`scheduler.experiments.decide` judges the arms' counts from the ledger, and
  the store, in one transaction, takes the decision (a conditional UPDATE: one worker
  decides, even after a crash), plans the held rows with the winner's payload and stores
  the decision with its numbers. The timeline gives the reason in plain words.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from scheduler.core.time_words import local_time
from scheduler.dispatch.dispatcher.run_state import RunContext, RunState
from scheduler.experiments import Arm, Decision, decide
from scheduler.ledger.rows import ArmCount, ExperimentRow, ExperimentVerdict

#: How often (seconds of the run's clock) an undecided test is looked at while its test
#: share is still being sent (the ledger is read only when the dispatcher is idle).
LOOK_EVERY_S = 5.0


def judge(row: ExperimentRow, counts: dict[str, ArmCount], now: datetime) -> Decision:
    """The decision over the arms' counts with the test's stored settings."""
    settings = row.settings
    arms = [Arm(name=name, sends=counts[name].sends if name in counts else 0,
                successes=counts[name].successes if name in counts else 0,
                guardrail_events=counts[name].guardrail_events if name in counts else 0)
            for name, _weight in row.variants]
    return decide(arms, control=row.control, confidence=float(settings["confidence"]),
                  min_per_variant=int(settings["min_per_variant"]),
                  metric=str(settings["metric"]), guardrail=settings.get("guardrail"),
                  fallback=settings.get("fallback"), at=now)


class ABTest:
    """The dispatcher's side of a run's A/B test (see the module)."""

    def __init__(self, ctx: RunContext, state: RunState) -> None:
        self.ctx = ctx
        self.state = state
        #: No test, or decided: nothing more to look at.
        self.over = False
        #: Do not read the ledger again before this time.
        self.look_at: datetime | None = None
        self.noted_wait: datetime | None = None
        #: The decision this dispatcher took (None: none, or another worker's).
        self.decision: Decision | None = None

    def check(self, now: datetime) -> tuple[bool, datetime | None]:
        """(whether rows were released, when to look again: None for no sooner than
        usual). Called when the dispatcher has nothing due."""
        if self.over or (self.look_at is not None and now < self.look_at):
            return False, None if self.over else self.look_at
        store = self.ctx.stores.experiment
        progress = store.experiment_progress()
        if progress is None:  # no test, or another worker decided it: rows may be due
            self.over = True
            self.state.reread()
            return True, None
        if progress.pending:
            self.look_at = now + timedelta(seconds=LOOK_EVERY_S)
            return False, self.look_at
        row = progress.experiment
        base = progress.last_send or now
        decide_at = row.decide_at or base + timedelta(seconds=row.wait_s)
        if now < decide_at:
            if self.noted_wait != decide_at:
                store.experiment_due(progress.last_send, decide_at)
                self.state.note(now, self._wait_sentence(row, progress.held, decide_at),
                                kind="experiment_wait", until=decide_at)
                self.noted_wait = decide_at
            self.look_at = decide_at
            return False, decide_at
        return self._decide(now), None

    def _decide(self, now: datetime) -> bool:
        taken: list[Decision] = []

        def verdict(row: ExperimentRow, counts: dict[str, ArmCount]) -> ExperimentVerdict:
            decision = judge(row, counts, now)
            taken.append(decision)
            return ExperimentVerdict(decision.winner, decision.goes, decision.model_dump_json())

        result = self.ctx.stores.experiment.decide_experiment(now, verdict)
        self.over = True
        self.state.reread()  # the released rows sit behind the read cursor
        if result is None:
            return True  # another worker decided (and released the rest)
        self.decision = taken[-1]
        self.state.note(now, f"A/B test decided: {self.decision.reason}",
                        kind="experiment_decided")
        return True

    def _wait_sentence(self, row: ExperimentRow, held: int, decide_at: datetime) -> str:
        hours = row.wait_s / 3600
        wait = f"{hours:g} h" if hours >= 1 else f"{row.wait_s / 60:g} min"
        return (f"A/B test: the test share ({row.test_size:,} recipients) is sent; the test "
                f"decides at {local_time(decide_at, self.ctx.zone)}, {wait} after its last "
                f"send; {held:,} deliveries wait for the winner")
