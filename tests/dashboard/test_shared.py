"""Live streams of the same page share their reads (pure: an injected clock)."""

from __future__ import annotations

from scheduler.dashboard.shared import SharedReads


def test_streams_of_one_page_share_a_read_until_it_is_too_old_or_forgotten() -> None:
    now = [100.0]
    shared = SharedReads(clock=lambda: now[0])
    reads: list[str] = []

    def read(name: str) -> str:
        reads.append(name)
        return f"{name} #{len(reads)}"

    assert shared.read("/runs/1/live", 0.9, lambda: read("run 1")) == "run 1 #1"
    now[0] += 0.5
    assert shared.read("/runs/1/live", 0.9, lambda: read("run 1")) == "run 1 #1"  # shared
    assert shared.read("/runs/2/live", 0.9, lambda: read("run 2")) == "run 2 #2"  # its own
    now[0] += 0.5
    assert shared.read("/runs/1/live", 0.9, lambda: read("run 1")) == "run 1 #3"  # too old
    shared.forget("/runs/1/live")
    assert shared.read("/runs/1/live", 0.9, lambda: read("run 1")) == "run 1 #4"
    assert reads == ["run 1", "run 2", "run 1", "run 1"]
