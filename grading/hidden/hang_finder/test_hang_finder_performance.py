"""Hidden checks for hang_finder: time grows linearly with ranks, memory does not hold every dump.

Times are thread CPU time, best of several rounds, compared within the check (never absolute).
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable, Iterator

import pytest
from hang_finder import Entry, GroupInfo, GroupStatus, RankDump, find_hang

pytestmark = [pytest.mark.category("performance"), pytest.mark.timeout(60)]


def _dumps(world: int, entries: int) -> Iterator[RankDump]:
    """A healthy job of `world` ranks (a multiple of 8), each dump holding `entries` entries.

    Every group has 8 members (tp: 8 neighbours; dp: stride 8 within a block of 64), so each
    dump has the same size whatever the world size: a world-wide group would make every dump's
    pg_config, and so the input, grow with the world.
    """
    for r in range(world):
        tp_ranks = tuple(range(r - r % 8, r - r % 8 + 8))
        block = r - r % 64
        dp_ranks = tuple(range(block + r % 8, min(block + 64, world), 8))
        groups = {"1": GroupInfo("1", "tp", tp_ranks), "2": GroupInfo("2", "dp", dp_ranks)}
        seqs = {"1": 0, "2": 0}
        rows = []
        for i in range(entries):
            pg = "1" if i % 3 < 2 else "2"
            seqs[pg] += 1
            rows.append(Entry(i, pg, seqs[pg], 0, "nccl:all_reduce", [[4096, 1024]], ["Float"],
                              [[4096, 1024]], ["Float"], "completed", False))
        status = {pg: GroupStatus(s, -1, s) for pg, s in seqs.items()}
        yield RankDump(r, "2.9", groups, status, tuple(rows))


def _cpu(fn: Callable[[], object], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        start = time.thread_time()
        fn()
        best = min(best, time.thread_time() - start)
    return best


@pytest.mark.points(3)
def test_time_grows_linearly_with_the_number_of_ranks() -> None:
    """find_hang over 4x the ranks takes about 4x the time (a limit of 8x), not 16x."""
    small, large = ([*_dumps(n, 3)] for n in (512, 2048))
    for dumps in (small, large):
        assert find_hang(dumps, len(dumps)).kind == "no_hang", "a healthy job must show no hang"
    t_small = _cpu(lambda: find_hang(small, 512), rounds=5)
    t_large = _cpu(lambda: find_hang(large, 2048))
    ratio = t_large / max(t_small, 1e-6)
    assert ratio < 8, (
        f"find_hang took {t_large:.3f} s CPU for 2048 ranks and {t_small:.3f} s for 512: "
        f"{ratio:.1f}x for 4x the ranks (linear is about 4x; the limit is 8x)")


@pytest.mark.points(3)
def test_peak_memory_does_not_hold_every_dump() -> None:
    """Peak memory with 8x the dumps stays far under 8x: dumps are read one at a time."""
    def peak(world: int) -> int:
        gc.collect()
        tracemalloc.start()
        try:
            find_hang(_dumps(world, 64), world)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(32), peak(256)
    ratio = large / small
    assert ratio < 4, (
        f"peak memory {large / 1e3:.0f} kB for 256 dumps of 64 entries, {small / 1e3:.0f} kB "
        f"for 32: {ratio:.1f}x (one dump at a time plus a little per rank stays under 4x; "
        f"holding every dump takes 8x)")
