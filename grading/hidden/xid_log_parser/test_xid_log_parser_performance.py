"""Hidden checks for xid_log_parser: peak memory flat in lines, events and malformed lines;
speed relative to reading the file; no scan over all GPUs."""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import kata_measure
import pytest
from xid_log_parser import summarize
from xid_log_parser_helpers import kernel_log, memory_growth, run_main, stream


@pytest.mark.points(3)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_memory_is_flat_in_the_number_of_lines() -> None:
    """Peak memory does not grow with the number of lines (tracemalloc, 6,250 vs 50k lines)."""
    pool = kernel_log(6_250)
    grew = memory_growth(stream(pool, 6_250), stream(pool, 50_000),
                         "6,250 vs 50k lines, the same GPUs")
    assert not grew, f"{grew}: summarize must not keep lines"


@pytest.mark.points(3)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_memory_is_flat_in_the_number_of_events() -> None:
    """Peak memory does not grow with the number of events on the same GPUs (1k vs 8k events)."""
    pool = kernel_log(1_000, xid_every=1, gpus=16)
    grew = memory_growth(stream(pool, 1_000), stream(pool, 8_000),
                         "1k vs 8k events on the same 16 GPUs")
    assert not grew, f"{grew}: keep counters per GPU, not events"


@pytest.mark.points(2)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_memory_is_flat_in_the_number_of_malformed_lines() -> None:
    """Peak memory does not grow with the number of malformed lines (1k vs 8k): only the first
    10 are kept."""
    pool = [f"Dec  2 10:43:35 n1 kernel: NVRM: Xid (PCI:0000:3b:00): {i}x, garbled " + "z" * 150
            for i in range(1_000)]
    grew = memory_growth(stream(pool, 1_000), stream(pool, 8_000), "1k vs 8k malformed lines")
    assert not grew, f"{grew}: keep the first 10 samples as they come, not every malformed line"


_MARK = "NVRM: Xid"
_FILLER = " (firmware 28.39.1002, port 1, speed 400G, FEC RS-FEC, link training done)" * 2


@pytest.mark.points(3)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_summarize_costs_a_small_factor_over_reading_the_file(tmp_path: Path) -> None:
    """Summarizing a 100k-line log costs at most 8x a bare loop over the file (best of 5)."""
    # Other lines carry a realistic ~250 characters: the floor then weighs reading the text, not
    # only the per-line loop, so a solution's constant cost per line (a type test, a method
    # call) stays far under the limit, while a regex over every line costs in proportion.
    pool = [line if _MARK in line else line + _FILLER for line in kernel_log(20_000, gpus=4096)]
    path = tmp_path / "kern.log"
    with path.open("w", encoding="utf-8") as f:
        f.writelines(stream(pool, 100_000))

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
        "same file (the reference is ~2-3x): test for 'NVRM: Xid' before parsing")


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


def _distinct_xid_lines(n: int) -> Iterator[str]:
    """n Xid lines on the same 16 GPUs, no two alike (each with its own pid and time)."""
    for i in range(n):
        yield (f"Dec  2 10:43:35 n{i % 4} kernel: [{i}.5] NVRM: Xid (PCI:0000:{i // 4 % 4:02x}:00):"
               f" 13, pid={i}, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 0)\n")


@pytest.mark.points(2)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_memory_is_flat_in_the_number_of_distinct_xid_lines() -> None:
    """Peak memory does not grow with the number of distinct Xid lines on the same GPUs (1k vs
    8k): nothing is remembered per line, not even in a cache."""
    grew = memory_growth(_distinct_xid_lines(1_000), _distinct_xid_lines(8_000),
                         "1k vs 8k distinct Xid lines on the same 16 GPUs")
    assert not grew, (f"{grew}: keep counters per GPU, and do not cache parsed lines (a memoized "
                      "parser holds every distinct line)")


def _spaces_over_letters(head: str, tail: str) -> float:
    """CPU time of summarizing 4 lines `head + 1 MB of spaces + tail` over the same lines with
    1 MB of letters between single spaces (kata_measure.ratio, limit 4)."""
    spaces = [head + " " * 1_000_000 + tail + "\n" for _ in range(4)]
    letters = [head + " " + "y" * 1_000_000 + " " + tail + "\n" for _ in range(4)]
    return kata_measure.ratio(lambda: summarize(spaces), lambda: summarize(letters), 4)


@pytest.mark.points(2)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_a_long_run_of_spaces_costs_no_more_than_a_long_word() -> None:
    """A 1 MB run of spaces inside a message costs no more than 1 MB of letters (linear, not
    quadratic, whitespace handling)."""
    ratio = _spaces_over_letters(
        "Dec  2 10:43:35 n1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=7, name=python3, a", "b")
    assert ratio < 4, (
        f"4 Xid lines with a 1 MB run of spaces in the message took "
        f"{kata_measure.times(ratio, 4)} the CPU time of the same lines with 1 MB of letters: "
        r"stripping or matching whitespace must be linear (re.sub(r'\s+$', ...) or (.*?)\s*$ "
        "retry the run of spaces at every position)")


@pytest.mark.points(2)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_an_nvlink5_run_of_spaces_costs_no_more_than_a_long_word() -> None:
    """An NVLink5 message (Xid 149) with a 1 MB run of spaces costs no more than one with 1 MB of
    letters: finding Fatal or Nonfatal is linear."""
    ratio = _spaces_over_letters(
        "Dec  2 10:43:35 n1 kernel: NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT",
        "XC0 i0 Link 09")
    assert ratio < 4, (
        f"4 Xid 149 lines with a 1 MB run of spaces in the message took "
        f"{kata_measure.times(ratio, 4)} the CPU time of the same lines with 1 MB of letters: "
        r"a pattern such as (?:^|\s+)Fatal retries the run of spaces at every position; "
        r"match the word with lookarounds ((?<!\S)Fatal(?!\S)) or split the message")


@pytest.mark.points(2)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_a_long_xid_154_message_without_a_target_costs_no_more_than_one_with_it() -> None:
    """Xid 154 lines with 1 MB of text and no "to" part cost no more than the same lines ending
    in "to 0x0 (None)": finding the target action is linear."""
    head = ("Dec  2 10:43:35 n1 kernel: NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action "
            "changed from 0x0 (None) " + "x" * 1_000_000)
    without = [head + "\n" for _ in range(4)]
    with_target = [head + " to 0x0 (None)\n" for _ in range(4)]
    ratio = kata_measure.ratio(lambda: summarize(without), lambda: summarize(with_target), 4)
    assert ratio < 4, (
        f"4 Xid 154 lines with 1 MB of text and no 'to' part took {kata_measure.times(ratio, 4)} "
        "the CPU time of the same lines ending in 'to 0x0 (None)': a pattern such as "
        r".*\bto\s+0x... retries the whole message from every position when there is no match; "
        "search for the 'to' part itself (re.search, or finditer for the last one)")


def _program_peak(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                  path: Path, on_stdin: bool) -> int:
    """Peak traced memory of main([path]), or of main(["-"]) with the file as standard input."""
    with path.open(encoding="utf-8") as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            code, _, err = run_main(capsys, "-" if on_stdin else str(path), "--format", "json")
            grown = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
            monkeypatch.undo()
    assert code == 0, f"main on {path.name} exited with {code}: {err.strip()}"
    return grown


@pytest.mark.points(2)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_program_memory_is_flat_in_the_size_of_a_file_or_standard_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The program's peak memory does not grow with its input (1 MB vs 8 MB), read from a file
    or from standard input (-): it streams both."""
    pool = kernel_log(6_250)
    sizes = {}
    for name, n in (("small.log", 10_000), ("large.log", 80_000)):
        sizes[name] = tmp_path / name
        with sizes[name].open("w", encoding="utf-8") as f:
            f.writelines(stream(pool, n))
    wrong = []
    for on_stdin, what in ((False, "a file"), (True, "standard input (-)")):
        small = _program_peak(capsys, monkeypatch, sizes["small.log"], on_stdin)
        large = _program_peak(capsys, monkeypatch, sizes["large.log"], on_stdin)
        if large > 1.5 * small + 256 * 1024:
            wrong.append(f"{what}: peak memory grew from {small / 1e6:.2f} MB to "
                         f"{large / 1e6:.2f} MB (10k vs 80k lines)")
    assert not wrong, ("\n".join(wrong) + "\nread the input line by line (a gzip or text "
                       "wrapper over the binary stream), never whole (read(), BytesIO, a list)")
