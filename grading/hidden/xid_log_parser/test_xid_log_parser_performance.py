"""Hidden checks for xid_log_parser: peak memory flat in lines, events and malformed lines;
speed relative to reading the file; no scan over all GPUs."""

from __future__ import annotations

from pathlib import Path

import kata_measure
import pytest
from xid_log_parser import summarize
from xid_log_parser_helpers import kernel_log, peak, stream


@pytest.mark.points(3)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_memory_is_flat_in_the_number_of_lines() -> None:
    """Peak memory does not grow with the number of lines (tracemalloc, 6,250 vs 50k lines)."""
    pool = kernel_log(6_250)
    small, large = peak(stream(pool, 6_250)), peak(stream(pool, 50_000))
    assert large <= 1.5 * small + 256 * 1024, (
        f"peak memory grew from {small / 1e6:.2f} MB (6,250 lines) to {large / 1e6:.2f} MB "
        "(50k lines, same GPUs): summarize must not keep lines")


@pytest.mark.points(3)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_memory_is_flat_in_the_number_of_events() -> None:
    """Peak memory does not grow with the number of events on the same GPUs (1k vs 8k events)."""
    pool = kernel_log(1_000, xid_every=1, gpus=16)
    small, large = peak(stream(pool, 1_000)), peak(stream(pool, 8_000))
    assert large <= 1.5 * small + 256 * 1024, (
        f"peak memory grew from {small / 1e6:.2f} MB (1k events) to {large / 1e6:.2f} MB "
        "(8k events on the same 16 GPUs): keep counters per GPU, not events")


@pytest.mark.points(2)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_memory_is_flat_in_the_number_of_malformed_lines() -> None:
    """Peak memory does not grow with the number of malformed lines (1k vs 8k): only the first
    10 are kept."""
    pool = [f"Dec  2 10:43:35 n1 kernel: NVRM: Xid (PCI:0000:3b:00): {i}x, garbled " + "z" * 150
            for i in range(1_000)]
    small, large = peak(stream(pool, 1_000)), peak(stream(pool, 8_000))
    assert large <= 1.5 * small + 256 * 1024, (
        f"peak memory grew from {small / 1e6:.2f} MB (1k malformed lines) to {large / 1e6:.2f} MB "
        "(8k): keep the first 10 samples as they come, not every malformed line")


@pytest.mark.points(3)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_summarize_costs_a_small_factor_over_reading_the_file(tmp_path: Path) -> None:
    """Summarizing a 100k-line log costs at most 8x a bare loop over the file (best of 5)."""
    path = tmp_path / "kern.log"
    with path.open("w", encoding="utf-8") as f:
        f.writelines(stream(kernel_log(20_000, gpus=4096), 100_000))

    def bare() -> None:
        with path.open(encoding="utf-8", errors="replace") as f:
            for _ in f:
                pass

    def timed() -> None:
        with path.open(encoding="utf-8", errors="replace") as f:
            summarize(f)

    ratio = kata_measure.ratio(timed, bare, 8)
    assert ratio < 8, (
        f"summarize took {kata_measure.times(ratio, 8)} the CPU time of a bare loop over the "
        "same file (the reference is ~3x): test for 'NVRM: Xid' before parsing")


@pytest.mark.points(2)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_time_does_not_grow_with_distinct_gpus() -> None:
    """The same 4k lines over 64x more GPUs cost at most a few times more (no scan of all GPUs)."""
    # A linear scan of the GPUs seen so far measures 11-17x at 2048 GPUs and 22x at 4096; the
    # reference 1.6x and 1.9x. At 4096 both stay well clear of the 8x limit on a loaded machine.
    few = kernel_log(4096, xid_every=1, gpus=64)
    many = kernel_log(4096, xid_every=1, gpus=4096)
    ratio = kata_measure.growth(lambda: summarize(few), lambda: summarize(many), 8)
    assert ratio < 8, (
        f"4096 lines on 4096 GPUs took {kata_measure.times(ratio, 8)} the CPU time of 4096 "
        "lines on 64 GPUs (the reference is ~2x): find a GPU's counters by key (dict), not by "
        "scanning a list")
