"""Hidden checks for hang_finder: time grows linearly with ranks, memory holds no dump or file
after it is read.

Times are measured with kata_measure: ratios within the check, never an absolute time.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import kata_measure
import pytest
from hang_finder import Entry, GroupInfo, GroupStatus, RankDump, find_hang, scan
from hang_finder_helpers import document, entry

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


@pytest.mark.points(3)
def test_time_grows_linearly_with_the_number_of_ranks() -> None:
    """find_hang over 16x the ranks (256 to 4,096) takes about 16x the time, not 256x."""
    small, large = ([*_dumps(n, 3)] for n in (256, 4096))
    for dumps in (small, large):
        assert find_hang(dumps, len(dumps)).kind == "no_hang", "a healthy job must show no hang"
    ratio = kata_measure.growth(lambda: find_hang(small, 256), lambda: find_hang(large, 4096),
                                64)
    assert ratio < 64, (
        f"find_hang for 4,096 ranks took {kata_measure.times(ratio, 64)} the CPU time of 256 "
        "ranks: linear is about 16x, a scan per rank about 256x")


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


def _write_dumps(folder: Path, world: int) -> None:
    """A healthy job's dump files, each the same size whatever the world (tp groups of 8), each
    entry holding eight tensors: the entries, not the per-rank tally, dominate a dump."""
    shapes = [[4096, 1024]] * 8
    for r in range(world):
        tp = list(range(r - r % 8, r - r % 8 + 8))
        rows = [entry(i, 1, i + 1, sizes=shapes, desc="tp") for i in range(32)]
        doc = document({"1": ("tp", tp)}, {"1": (32, -1, 32)}, rows)
        (folder / f"nccl_trace_rank_{r}.json").write_text(json.dumps(doc), encoding="utf-8")


@pytest.mark.points(2)
def test_scan_peak_memory_does_not_hold_every_file(tmp_path: Path) -> None:
    """scan of 16x the files peaks far under 16x the memory: it reads one file at a time and
    lets go of it before the next."""
    def peak(world: int) -> int:
        folder = tmp_path / str(world)
        folder.mkdir()
        _write_dumps(folder, world)
        gc.collect()
        tracemalloc.start()
        try:
            report = scan(folder)
            used = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert report.kind == "no_hang", f"a healthy job of {world} ranks: {report}"
        return used

    small, large = peak(16), peak(256)
    ratio = large / small
    kata_measure.report("scan peak memory, 16x the files", ratio, 5)
    assert ratio < 5, (
        f"scan's peak memory: {large / 1e6:.1f} MB for 256 files of 32 entries, "
        f"{small / 1e6:.1f} MB for 16: {ratio:.1f}x (one file at a time plus a few numbers per "
        f"rank stays near 1x; holding every file's dump takes about 16x)")


@pytest.mark.points(1)
def test_scan_peak_memory_does_not_hold_every_unreadable_file(tmp_path: Path) -> None:
    """scan of 16x the unreadable files peaks far under 16x the memory: a file that cannot be
    read leaves only its name and a short reason behind, not its text."""
    def peak(files: int) -> int:
        folder = tmp_path / str(files)
        folder.mkdir()
        for r in range(files):  # cut short inside a 600 kB string: not JSON
            (folder / f"nccl_trace_rank_{r}.json").write_text(
                '{"version": "' + "x" * 600_000, encoding="utf-8")
        gc.collect()
        tracemalloc.start()
        try:
            report = scan(folder)
            used = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert len(report.unreadable) == files, f"{files} broken files: {report.unreadable}"
        return used

    small, large = peak(2), peak(32)
    ratio = large / small
    kata_measure.report("scan peak memory, 16x the unreadable files", ratio, 4)
    assert ratio < 4, (
        f"scan's peak memory: {large / 1e6:.1f} MB for 32 unreadable files of 0.6 MB, "
        f"{small / 1e6:.1f} MB for 2: {ratio:.1f}x (one file at a time stays near 1x; keeping "
        f"each failure's exception, and so the file's text, takes about 16x)")
