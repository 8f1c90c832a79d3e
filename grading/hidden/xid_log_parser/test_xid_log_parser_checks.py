"""Hidden checks for xid_log_parser: every rule, the traps, bad input, the program, performance."""

from __future__ import annotations

import gc
import gzip
import io
import json
import random
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from xid_log_parser import Action, MalformedXidLine, Summary, classify, main, parse_line, summarize

A = Action
_SEVERITY = [A.IGNORE, A.RESTART_APP, A.UNKNOWN, A.RESET_GPU, A.HARDWARE]
_TABLE: dict[int, Action] = {
    **dict.fromkeys((8, 13, 31, 32, 43, 45, 68, 69, 80, 94), A.RESTART_APP),
    **dict.fromkeys((46, 48, 62, 74, 79, 95, 109, 119, 120, 136, 140, 143), A.RESET_GPU),
    **dict.fromkeys((54, 64), A.HARDWARE),
    **dict.fromkeys((63, 92, 121), A.IGNORE),
}
_SYSLOG = "Dec  2 10:43:35 node-17 kernel: [240314.528856] "


def _xid(pci: str, code: int, tail: str = ", pid=42, name=python3, Ch 08", pre: str = "") -> str:
    return f"{pre}NVRM: Xid (PCI:{pci}): {code}{tail}\n"


def _fields(line: str, default_host: str | None = None) -> tuple[Any, ...]:
    event = parse_line(line, default_host=default_host)
    assert event is not None, f"parse_line({line!r}) returned None, expected an XidEvent"
    return (event.host, event.pci, event.code, event.pid, event.process, event.message)


def _gpus(reports: Any) -> list[tuple[Any, ...]]:
    return [(g.host, g.pci, g.events, dict(g.codes), g.action) for g in reports]


def _nonzero(mapping: Any) -> dict[Any, int]:
    return {k: v for k, v in dict(mapping).items() if v}


# ---- parse_line: formats, prefixes, normalization -------------------------------------------

_FORMATS = {  # id: (text after "NVRM: Xid (", (pci, code, pid, process, message))
    "fallen_off_bus": ("PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
                       ("0000:3b:00", 79, 1234, "python3", "GPU has fallen off the bus.")),
    "mig_suffix": ("PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE (0x9). RST: No",
                   ("0000:01:00", 94, 7194, None, "Contained: CE (0x9). RST: No")),
    "mig_compute_instance": ("PCI:0000:01:00 GPU-I:03 GPU-CI:00): 31, pid=7, name=triton, Ch 11",
                             ("0000:01:00", 31, 7, "triton", "Ch 11")),
    "pid_unknown": ("PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off",
                    ("0000:2a:00", 79, None, None, "GPU has fallen off")),
    "no_pid_no_name": ("PCI:0000:01:00): 79, GPU has fallen off the bus.",
                       ("0000:01:00", 79, None, None, "GPU has fallen off the bus.")),
    "nothing_after_code": ("PCI:0000:3f:00): 46", ("0000:3f:00", 46, None, None, "")),
    "pid_without_name": ("PCI:0000:c1:00): 31, pid=12890, Ch 0000003b, intr 00000000",
                         ("0000:c1:00", 31, 12890, None, "Ch 0000003b, intr 00000000")),
    "no_pci_prefix": ("0000:03:00): 14, Channel 00000001",
                      ("0000:03:00", 14, None, None, "Channel 00000001")),
    "nvlink5_runs_of_spaces": ("PCI:0018:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0",
                               ("0018:01:00", 149, None, None, "NETIR_LINK_EVT  Fatal   XC0 i0")),
    "caused_by": ("PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 01 caused by Xid 149",
                  ("0000:dc:00", 45, 1818990, "python3", "Ch 01 caused by Xid 149")),
    "name_with_colon_and_brackets": ("PCI:0000:3b:00): 13, pid=77, name=[pt:worker]3, Graphics",
                                     ("0000:3b:00", 13, 77, "[pt:worker]3", "Graphics")),
}


def _mismatches(cases: dict[str, tuple[Any, Any]], run: Callable[[Any], Any]) -> list[str]:
    """One line per case where run(input) != want, named by the case's id."""
    wrong = []
    for name, (given_, want) in cases.items():
        try:
            got = run(given_)
        except Exception as exc:  # a crash on one case is reported with the others
            got = f"{type(exc).__name__}: {exc}"
        if got != want:
            wrong.append(f"{name}: {given_!r} gave {got!r}, expected {want!r}")
    return wrong


@pytest.mark.points(8)
def test_parses_every_real_line_format() -> None:
    """Every Xid line format written by real drivers parses to the right fields."""
    wrong = _mismatches(_FORMATS, lambda text: _fields("NVRM: Xid (" + text)[1:])
    assert not wrong, "parse_line (pci, code, pid, process, message):\n" + "\n".join(wrong)


_PREFIXES = {
    "none": ("", None),
    "dmesg": ("[ 1234.567890] ", None),
    "dmesg_T": ("[Fri Mar  3 04:27:08 2023] ", None),
    "syslog": (_SYSLOG, "node-17"),
    "journal_no_host": ("May 18 19:02:39 kernel: ", None),
    "localized_month": ("4月 20 19:55:29 host kernel: ", "host"),
    "kmsg_record": ("4,1227,437812449932,c;", None),
    "iso_syslog": ("2023-12-02T10:43:35.123+00:00 gpu-a100-03 kernel: [  12.5] ", "gpu-a100-03"),
}


@pytest.mark.points(4)
def test_host_comes_from_a_syslog_prefix_else_the_default() -> None:
    """Any prefix is accepted; the host comes from a syslog prefix, else from default_host."""
    cases = {k: (pre, (host or "dflt", "0000:3b:00", 79, None, None, "GPU fell off."))
             for k, (pre, host) in _PREFIXES.items()}
    wrong = _mismatches(cases, lambda pre: _fields(
        _xid("0000:3B:00", 79, ", GPU fell off.", pre=pre), default_host="dflt"))
    assert not wrong, "parse_line(prefix + line, default_host='dflt'):\n" + "\n".join(wrong)


@settings(max_examples=40)
@given(
    prefix=st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=40).filter(
        lambda p: "NVRM" not in p and "kernel" not in p
    ),
    pci=st.tuples(st.sampled_from(["0000", "0018", "000A"]), st.sampled_from(["3b", "3B", "c1"]),
                  st.sampled_from(["00", "0f", "0F"])),
    mig=st.sampled_from(["", " GPU-I:05", " GPU-I:3 GPU-CI:1"]),
)
@example(prefix="", pci=("0000", "3B", "00"), mig=" GPU-I:05")
def test_prefix_case_and_mig_suffix_do_not_change_the_gpu(
    prefix: str, pci: tuple[str, str, str], mig: str
) -> None:
    """Whatever comes before NVRM:, the hex case and a MIG suffix never change the event."""
    raw = ":".join(pci)
    line = f"{prefix}NVRM: Xid (PCI:{raw}{mig}): 13, pid=9, name=python3, Graphics\n"
    got = _fields(line, default_host="h")
    want = ("h", raw.lower(), 13, 9, "python3", "Graphics")
    assert got == want, f"parse_line({line!r}) gave {got}, expected {want}"


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize("line", [
    "NVRM: GPU at PCI:0000:3b:00: GPU-6a9b2c1e-53d8-41f3-b4c7-1f0e2d3c4b5a",
    "NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.",
    "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress error",
    "Dec  2 10:43:35 node-17 kernel: mlx5_core 0000:3b:00.0: link down", "",
])
def test_other_lines_are_not_xid_lines(line: str) -> None:
    """Other NVRM lines, SXid lines and ordinary lines are not Xid lines (None)."""
    assert parse_line(line) is None, f"parse_line({line!r}) should return None"


@pytest.mark.category("edge_cases")
def test_crlf_nul_and_long_lines_parse() -> None:
    """CRLF endings are stripped; NUL bytes and a 10 MB message do not break parsing."""
    assert _fields("NVRM: Xid (PCI:0000:3f:00): 46\r\n")[1:] == ("0000:3f:00", 46, None, None, "")
    got = _fields("NVRM: Xid (PCI:0000:3f:00): 13, pid=1, name=a\x00b, x\x00y\r\n")[3:]
    assert got == (1, "a\x00b", "x\x00y"), f"NUL bytes: got (pid, process, message) {got}"
    long = "NVRM: Xid (PCI:0000:3f:00): 31, " + "y" * 10_000_000 + "\n"
    assert _fields(long)[2] == 31, "a 10 MB Xid line should parse (code 31)"


_MALFORMED = [
    "NVRM: Xid (PCI:zz00:3b:00): 79, GPU has fallen off the bus.",
    "NVRM: Xid (PCI:000:3b:00): 79, domain of three digits",
    "NVRM: Xid (PCI:0000:3b): 79, no device",
    "NVRM: Xid PCI:0000:3b:00: 79, no parentheses",
    "NVRM: Xid (PCI:0000:3b:00): 7x9, code not decimal",
    "NVRM: Xid (PCI:0000:3b:00): 79 GPU has fallen off the bus",
    "NVRM: Xid (PCI:0000:3b:00): , no code",
    "Dec  2 10:43:35 node-17 kernel: NVRM: Xid",
]


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("line", _MALFORMED)
def test_malformed_xid_lines_raise(line: str) -> None:
    """A line with NVRM: Xid that breaks the grammar raises MalformedXidLine (a ValueError)."""
    with pytest.raises(MalformedXidLine):
        parse_line(line)
    assert issubclass(MalformedXidLine, ValueError), "MalformedXidLine must subclass ValueError"


@pytest.mark.category("bad_input")
def test_empty_default_host_is_refused() -> None:
    """An empty default_host is refused with ValueError (a host is None or non-empty)."""
    with pytest.raises(ValueError):
        parse_line(_xid("0000:3b:00", 79), default_host="")
    with pytest.raises(ValueError):
        summarize([_xid("0000:3b:00", 79)], default_host="")


# ---- classify ------------------------------------------------------------------------------

def _event(code: int, message: str = "") -> Any:
    event = parse_line(f"NVRM: Xid (PCI:0000:3b:00): {code}" + (f", {message}" if message else ""))
    assert event is not None
    return event


@given(code=st.integers(0, 10**9).filter(lambda c: not 144 <= c <= 150 and c != 154))
@example(code=79)
@example(code=999)
@example(code=0)
def test_codes_follow_the_table_and_unknown_codes_are_unknown(code: int) -> None:
    """Codes follow the policy table; any code outside it is UNKNOWN, never an error."""
    got, want = classify(_event(code, "text")), _TABLE.get(code, A.UNKNOWN)
    assert got == want, f"classify(Xid {code}) returned {got!r}, expected {want!r}"


@pytest.mark.points(3)
def test_nvlink5_codes_follow_fatal_or_nonfatal() -> None:
    """NVLink5 Xids 144-150: Fatal resets the GPU, Nonfatal is ignored, neither is unknown."""
    cases = {}
    for code in range(144, 151):
        cases[f"{code}_fatal"] = ((code, "NETIR_LINK_EVT  Fatal   XC0 i0 Link 09"), A.RESET_GPU)
        cases[f"{code}_nonfatal"] = ((code, "RLW_REMAP  Nonfatal XC1 i0 Link 04"), A.IGNORE)
        cases[f"{code}_neither"] = ((code, "NETIR_LINK_EVT  XC0 i0 Link 09"), A.UNKNOWN)
    wrong = _mismatches(cases, lambda args: classify(_event(*args)))
    assert not wrong, "classify((code, message)):\n" + "\n".join(wrong)


@pytest.mark.points(2)
def test_xid_154_follows_the_target_action() -> None:
    """Xid 154: the "to" action decides (None: ignore, else reset); no "to" part: unknown."""
    cases = {
        "to_reboot": ("changed from 0x0 (None) to 0x2 (Node Reboot Required)", A.RESET_GPU),
        "to_none": ("changed from 0x1 (GPU Reset Required) to 0x0 (None)", A.IGNORE),
        "no_target": ("GPU recovery action changed", A.UNKNOWN),
    }
    wrong = _mismatches(cases, lambda message: classify(_event(154, message)))
    assert not wrong, "classify(Xid 154, message):\n" + "\n".join(wrong)


# ---- summarize: the model, the traps --------------------------------------------------------

_CODES = {13: A.RESTART_APP, 31: A.RESTART_APP, 92: A.IGNORE, 79: A.RESET_GPU, 64: A.HARDWARE,
          999: A.UNKNOWN, 48: A.RESET_GPU}
_Kind = tuple[str | None, str, int] | str | None  # GPU event, "bad", or None for noise
_entry = st.one_of(
    st.tuples(st.sampled_from([None, "node-1", "node-2"]),
              st.sampled_from(["0000:3b:00", "0000:5e:00", "0018:01:00", "0000:af:00"]),
              st.sampled_from(sorted(_CODES)), st.booleans()),
    st.sampled_from(["bad", "noise"]),
)


def _render(entry: Any) -> tuple[str, _Kind]:
    if entry == "noise":
        return "Dec  2 10:43:35 node-1 kernel: ib0: link becomes ready\n", None
    if entry == "bad":
        return "NVRM: Xid (PCI:0000:3b:00): 7x9, garbled\n", "bad"
    host, pci, code, upper = entry
    pre = f"Dec  2 10:43:35 {host} kernel: [1.5] " if host else "[ 1.500000] "
    return _xid(pci.upper() if upper else pci, code, pre=pre), (host, pci, code)


def _model(kinds: list[_Kind], top: int) -> tuple[Any, ...]:
    """Brute force: every event kept, every GPU sorted."""
    events = [k for k in kinds if isinstance(k, tuple)]
    per: dict[tuple[Any, str], list[int]] = {}
    for host, pci, code in events:
        per.setdefault((host, pci), []).append(code)

    def report(key: tuple[Any, str]) -> tuple[Any, ...]:
        codes = per[key]
        action = max((_CODES[c] for c in codes), key=_SEVERITY.index)
        return (key[0], key[1], len(codes), dict(Counter(codes)), action)

    reports = [report(k) for k in per]
    top_gpus = sorted(reports, key=lambda r: (-r[2], r[0] or "", r[1]))[:top]
    urgent = [r for r in reports if _SEVERITY.index(r[4]) >= 2]
    urgent.sort(key=lambda r: (-_SEVERITY.index(r[4]), r[0] or "", r[1]))
    by_action = Counter(_CODES[c] for _, _, c in events)
    return (len(kinds), len(events), kinds.count("bad"), dict(Counter(c for _, _, c in events)),
            dict(by_action), top_gpus, urgent)


def _observed(s: Summary) -> tuple[Any, ...]:
    return (s.lines, s.events, s.malformed, _nonzero(s.by_code), _nonzero(s.by_action),
            _gpus(s.top_gpus), _gpus(s.actionable))


@settings(max_examples=80)
@given(entries=st.lists(_entry, max_size=40), top=st.integers(0, 6))
@example(entries=[("node-1", "0000:3b:00", 79, True), "bad", "noise"], top=1)
def test_summary_matches_a_brute_force_model(entries: list[Any], top: int) -> None:
    """Counts, top GPUs and actionable GPUs match a brute-force model of the same lines."""
    lines, kinds = zip(*map(_render, entries), strict=True) if entries else ((), ())
    got, want = _observed(summarize(iter(lines), top=top)), _model(list(kinds), top)
    names = ("lines", "events", "malformed", "by_code", "by_action", "top_gpus", "actionable")
    for name, g, w in zip(names, got, want, strict=True):
        assert g == w, f"summarize(...).{name} is {g}, expected {w} (lines: {list(lines)})"


@settings(max_examples=40)
@given(entries=st.lists(_entry, min_size=1, max_size=30), seed=st.randoms(use_true_random=False))
@example(entries=[(None, "0000:5e:00", 13, False), (None, "0000:3b:00", 13, False)],
         seed=random.Random(0))
def test_top_gpus_do_not_depend_on_input_order(entries: list[Any], seed: Any) -> None:
    """Shuffling the lines never changes top_gpus or actionable (ties are broken by GPU)."""
    lines = [_render(e)[0] for e in entries]
    shuffled = lines[:]
    seed.shuffle(shuffled)
    a, b = summarize(lines, top=3), summarize(shuffled, top=3)
    assert _gpus(a.top_gpus) == _gpus(b.top_gpus), f"top_gpus changed with order: {lines}"
    assert _gpus(a.actionable) == _gpus(b.actionable), f"actionable changed with order: {lines}"


def test_top_gpu_ties_are_broken_by_host_then_pci() -> None:
    """Equal event counts are ordered by (host or "", pci) ascending, not by first appearance."""
    lines = [_xid("0000:5e:00", 13, pre="Dec  2 10:43:35 b kernel: "), _xid("0000:3b:00", 13),
             _xid("0000:5e:00", 13), _xid("0000:3b:00", 13, pre="Dec  2 10:43:35 a kernel: ")]
    got = [(g.host, g.pci) for g in summarize(lines, top=4).top_gpus]
    want = [(None, "0000:3b:00"), (None, "0000:5e:00"), ("a", "0000:3b:00"), ("b", "0000:5e:00")]
    assert got == want, f"top_gpus order {got}, expected {want}"


def test_gpu_action_is_the_most_severe_not_the_largest_string() -> None:
    """A GPU's action is its most severe event's (hardware > reset > unknown > restart > ignore)."""
    lines = [_xid("0000:3b:00", c) for c in (13, 79, 64, 92)]
    lines += [_xid("0000:5e:00", c) for c in (79, 999)]
    got = {g.pci: g.action for g in summarize(lines).top_gpus}
    want = {"0000:3b:00": A.HARDWARE, "0000:5e:00": A.RESET_GPU}
    assert got == want, f"GPU actions {got}, expected {want}"


def test_actionable_lists_every_gpu_to_act_on_by_severity() -> None:
    """actionable holds every UNKNOWN/RESET_GPU/HARDWARE GPU, whatever top is, most severe first."""
    lines = [_xid("0000:01:00", 999), _xid("0000:02:00", 79), _xid("0000:03:00", 64),
             _xid("0000:04:00", 13), _xid("0000:05:00", 92), _xid("0000:00:00", 46)]
    got = [(g.pci, g.action) for g in summarize(lines, top=1).actionable]
    want = [("0000:03:00", A.HARDWARE), ("0000:00:00", A.RESET_GPU), ("0000:02:00", A.RESET_GPU),
            ("0000:01:00", A.UNKNOWN)]
    assert got == want, f"actionable {got}, expected {want}"


def test_unknown_codes_are_counted_and_actionable() -> None:
    """Events with codes outside the table are counted as UNKNOWN, never dropped."""
    s = summarize([_xid("0000:3b:00", 999), _xid("0000:3b:00", 4242), _xid("0000:5e:00", 13)])
    assert (s.events, _nonzero(s.by_code)) == (3, {999: 1, 4242: 1, 13: 1}), f"got {s}"
    assert _nonzero(s.by_action) == {A.UNKNOWN: 2, A.RESTART_APP: 1}, f"by_action {s.by_action}"
    assert [(g.pci, g.action) for g in s.actionable] == [("0000:3b:00", A.UNKNOWN)], f"got {s}"


def test_pci_case_and_mig_suffix_count_as_one_gpu() -> None:
    """Upper/lower-case hex, a MIG suffix and a missing PCI: prefix all name one GPU."""
    s = summarize(["NVRM: Xid (PCI:0000:3B:00): 13, x\n", "NVRM: Xid (PCI:0000:3b:00): 13, x\n",
                   "NVRM: Xid (PCI:0000:3b:00 GPU-I:05): 94, x\n", "NVRM: Xid (0000:3b:00): 43\n"])
    got = _gpus(s.top_gpus)
    assert got == [(None, "0000:3b:00", 4, {13: 2, 43: 1, 94: 1}, A.RESTART_APP)], f"GPUs {got}"


@pytest.mark.category("edge_cases")
def test_default_host_applies_only_without_a_syslog_host() -> None:
    """summarize's default_host fills lines without a syslog host; a syslog host wins."""
    s = summarize([_xid("0000:3b:00", 13), _xid("0000:3b:00", 13, pre=_SYSLOG)], default_host="n9")
    got = sorted((g.host, g.events) for g in s.top_gpus)
    assert got == [("n9", 1), ("node-17", 1)], f"(host, events) {got}"


@pytest.mark.category("edge_cases")
def test_one_shot_iterators_and_empty_input() -> None:
    """summarize reads a generator once, and empty input gives an empty summary."""
    s = summarize(line for line in [_xid("0000:3b:00", 79), "x\n"] * 3)
    assert (s.lines, s.events, s.top_gpus[0].events) == (6, 3, 3), f"got {s}"
    e = summarize(iter([]))
    got = (e.lines, e.events, e.malformed, e.malformed_samples, e.top_gpus, e.actionable)
    assert got == (0, 0, 0, (), (), ()), f"empty input gave {e}"
    assert not _nonzero(e.by_code), f"empty input gave {e}"


@pytest.mark.category("edge_cases")
def test_bad_bytes_nul_crlf_and_huge_lines_do_not_stop_the_run() -> None:
    """Invalid UTF-8, NUL bytes, CRLF endings and 10 MB lines are counted, never fatal."""
    lines: list[str | bytes] = [
        b"NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=py\xff\xfe, bad \xc3 bytes\r\n",
        b"\xff\xfe\x00 noise \x00\n", "NVRM: Xid (PCI:0000:3b:00): 43, a\x00b\r\n",
        "z" * 10_000_000 + "\n", "NVRM: Xid (PCI:0000:3b:00): 31, " + "y" * 10_000_000,
        "NVRM: Xid (PCI:0000:3b:00): 3x, " + "w" * 10_000_000, b"NVRM: Xid (0000:5e:00): 79\r\n",
    ]
    s = summarize(lines)
    assert (s.lines, s.events, s.malformed) == (7, 4, 1), f"(lines, events, malformed) of {s}"
    assert _nonzero(s.by_code) == {13: 1, 43: 1, 31: 1, 79: 1}, f"by_code {s.by_code}"
    assert s.malformed_samples[0][0] == 6, f"samples {s.malformed_samples}"
    assert len(s.malformed_samples[0][1]) == 200, "a sample is the line cut to 200 characters"


@pytest.mark.points(2)
@pytest.mark.category("bad_input")
def test_malformed_lines_are_counted_sampled_and_skipped() -> None:
    """Malformed Xid lines never stop summarize: counted, the first 10 kept with line numbers."""
    lines = ["noise\n", _xid("0000:3b:00", 13)]
    lines += [f"NVRM: Xid (PCI:0000:3b:00): {i}x, bad\r\n" for i in range(12)]
    lines.append(_xid("0000:3b:00", 79))
    s = summarize(lines)
    assert (s.lines, s.events, s.malformed) == (15, 2, 12), f"(lines, events, malformed) of {s}"
    got = [(n, text.rstrip("\r\n")) for n, text in s.malformed_samples]
    want = [(3 + i, f"NVRM: Xid (PCI:0000:3b:00): {i}x, bad") for i in range(10)]
    assert got == want, f"malformed_samples {s.malformed_samples}, expected {want}"


@pytest.mark.category("bad_input")
def test_summarize_refuses_bad_arguments() -> None:
    """summarize refuses a negative top (ValueError) and a single string (TypeError)."""
    with pytest.raises(ValueError, match="-1"):
        summarize([_xid("0000:3b:00", 79)], top=-1)
    with pytest.raises(TypeError):
        summarize(_xid("0000:3b:00", 79))


# ---- the program ------------------------------------------------------------------------------

def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code: object = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return (0 if code is None else code if isinstance(code, int) else 1), out, err


def _json(out: str) -> dict[str, Any]:
    try:
        obj = json.loads(out)
    except ValueError:
        pytest.fail(f"--format json printed something that is not JSON: {out[:300]!r}")
    assert isinstance(obj, dict), f"--format json should print one object, got {out[:300]!r}"
    return obj


_LOG_A = [_SYSLOG + "usb 1-1: new device\n", _xid("0000:3B:00", 79, pre=_SYSLOG),
          _xid("0000:3b:00", 13, pre=_SYSLOG), "NVRM: Xid (PCI:0000:3b:00): 1x, bad\n"]
_LOG_B = [_xid("0000:5e:00", 64), "NVRM: Xid (PCI:0000:5e:00): 2x, bad\n", _xid("0000:5e:00", 94)]


def _write(path: Path, lines: list[str], gz: bool = False) -> str:
    data = "".join(lines).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return str(path)


def test_program_json_is_the_summary_of_all_files_as_one_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format json prints the Summary of all files as one stream (line numbers run on)."""
    a, b = _write(tmp_path / "a.log", _LOG_A), _write(tmp_path / "b.log", _LOG_B)
    code, out, _ = _run(capsys, a, b, "--format", "json", "--host", "n9")
    obj = _json(out)
    assert code == 0, f"exit status {code}, expected 0"
    by_code = {int(k): v for k, v in obj["by_code"].items() if v}
    got = (obj["lines"], obj["events"], obj["malformed"], by_code)
    assert got == (7, 4, 2, {79: 1, 13: 1, 64: 1, 94: 1}), f"totals and codes {got}"
    numbers = [sample[0] for sample in obj["malformed_samples"]]
    assert numbers == [4, 6], f"malformed line numbers {numbers}, expected [4, 6] (across files)"
    gpus = [(g["host"], g["pci"], g["events"], g["action"]) for g in obj["top_gpus"]]
    assert gpus == [("n9", "0000:5e:00", 2, "hardware"), ("node-17", "0000:3b:00", 2, "reset_gpu")]
    assert [g["pci"] for g in obj["actionable"]] == ["0000:5e:00", "0000:3b:00"], obj["actionable"]


def test_program_reads_gzip_by_content_and_standard_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gzipped files are read by their content, whatever the name, and - reads standard input."""
    plain_gz = _write(tmp_path / "kern.log", _LOG_A, gz=True)
    named_gz = _write(tmp_path / "b.log.gz", _LOG_B, gz=True)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("".join(_LOG_B).encode())))
    code, out, _ = _run(capsys, plain_gz, "-", named_gz, "--format", "json", "--top", "1")
    obj = _json(out)
    assert (code, obj["lines"], obj["events"]) == (0, 10, 6), f"(status, lines, events) of {obj}"
    top = [(g["pci"], g["events"]) for g in obj["top_gpus"]]
    assert top == [("0000:5e:00", 4)], f"--top 1 gave {top}"


def test_program_text_report_shows_totals_and_actionable_gpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default text report shows the totals and each actionable GPU with its action."""
    code, out, _ = _run(capsys, _write(tmp_path / "a.log", _LOG_A + _LOG_B))
    assert code == 0, f"exit status {code}, expected 0"
    for needle in ("7", "4", "0000:3b:00", "0000:5e:00", "reset_gpu", "hardware"):
        assert needle in out.lower().replace("reset gpu", "reset_gpu"), f"{needle!r} not in:\n{out}"


@pytest.mark.points(3)
@pytest.mark.category("bad_input")
def test_unreadable_file_is_reported_and_the_rest_summarized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing file, a directory or a corrupt gzip is named on stderr, the rest summarized."""
    (tmp_path / "a_directory").mkdir()
    (tmp_path / "corrupt.gz").write_bytes(gzip.compress(b"x\n" * 5000)[:40])
    good = _write(tmp_path / "a.log", _LOG_A)
    for bad in ("missing.log", "a_directory", "corrupt.gz"):
        code, out, err = _run(capsys, str(tmp_path / bad), good, "--format", "json")
        assert code == 1, f"exit status {code}, expected 1 when {bad} cannot be read"
        assert bad in err, f"stderr should name {bad}: {err!r}"
        assert _json(out)["events"] == 2, f"with {bad}, the other file should be summarized"


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("argv", [[], ["--top", "-1"], ["--top", "x"], ["--format", "xml"]],
                         ids=["no_file", "negative_top", "top_not_int", "bad_format"])
def test_bad_usage_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Bad usage exits with status 2 and a message on stderr."""
    files = [_write(tmp_path / "a.log", _LOG_A)] if argv else []
    code, _, err = _run(capsys, *files, *argv)
    assert code == 2, f"main({files + argv}) exit status {code}, expected 2"
    assert err.strip(), f"main({files + argv}) should explain the usage error on stderr"


# ---- performance ------------------------------------------------------------------------------

_NOISE = ("IPv6: ADDRCONF(NETDEV_CHANGE): ib{}: link becomes ready",
          "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link {} egress error",
          "NVRM: GPU at PCI:0000:3b:00: GPU-6a9b2c1e-53d8-41f3-b4c7-1f0e2d3c{:04x}",
          "mlx5_core 0000:{:02x}:00.0: mlx5_cmd_out_err:838: QUERY_VPORT_COUNTER failed",
          "python3[{}]: segfault at 0 ip 00007f3a1c2b4e10 sp 00007ffd6b9c1f40 error 4")
_TAILS = ("13, pid={}, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0)",
          "31, pid={}, name=pt_main_thread, Ch 00000010, intr 00000000. MMU Fault",
          "79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.{}",
          "149, NETIR_LINK_EVT  Fatal   XC0 i0 Link {} (0x025525c6 0x0)", "46, {}")


def _kernel_log(n: int, *, xid_every: int = 50, gpus: int = 64) -> list[str]:
    """n realistic kernel-log lines (no newline): 1 in xid_every an Xid on one of `gpus` GPUs."""
    lines = []
    for i in range(n):
        head = f"Dec  2 10:{i // 60_000 % 60:02d}:{i // 1000 % 60:02d} n{i % 8} kernel: [{i}.5] "
        if i % xid_every == 0:
            g = i // xid_every % gpus
            pci = f"{g // 65536:04x}:{g // 256 % 256:02x}:{g % 256:02x}"
            lines.append(f"{head}NVRM: Xid (PCI:{pci}): " + _TAILS[i % 5].format(i % 9973))
        elif i % 997 == 0:
            lines.append(f"{head}NVRM: Xid (PCI:0000:3b:00): x{i}, garbled")
        else:
            lines.append(head + _NOISE[i % 5].format(i % 251))
    return lines


def _stream(pool: list[str], n: int) -> Iterator[str]:
    """n lines cycling through pool, each a new string object, as reading a file gives."""
    size = len(pool)
    for i in range(n):
        yield pool[i % size] + "\n"


def _best_of(repeat: int, *fns: Callable[[], object]) -> list[float]:
    """The least CPU time of this thread for each fn over `repeat` rounds (other processes do
    not count), the fns interleaved so what noise remains hits them alike."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.thread_time()
            fn()
            best[i] = min(best[i], time.thread_time() - start)
    return best


def _peak(lines: Iterator[str]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        summarize(lines)
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


@pytest.mark.points(3)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_memory_is_flat_in_the_number_of_lines() -> None:
    """Peak memory does not grow with the number of lines (tracemalloc, 6,250 vs 50k lines)."""
    pool = _kernel_log(6_250)
    small, large = _peak(_stream(pool, 6_250)), _peak(_stream(pool, 50_000))
    assert large <= 1.5 * small + 256 * 1024, (
        f"peak memory grew from {small / 1e6:.2f} MB (6,250 lines) to {large / 1e6:.2f} MB "
        "(50k lines, same GPUs): summarize must not keep lines")


@pytest.mark.points(3)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_memory_is_flat_in_the_number_of_events() -> None:
    """Peak memory does not grow with the number of events on the same GPUs (1k vs 8k events)."""
    pool = _kernel_log(1_000, xid_every=1, gpus=16)
    small, large = _peak(_stream(pool, 1_000)), _peak(_stream(pool, 8_000))
    assert large <= 1.5 * small + 256 * 1024, (
        f"peak memory grew from {small / 1e6:.2f} MB (1k events) to {large / 1e6:.2f} MB "
        "(8k events on the same 16 GPUs): keep counters per GPU, not events")


@pytest.mark.points(3)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_summarize_costs_a_small_factor_over_reading_the_file(tmp_path: Path) -> None:
    """Summarizing a 100k-line log costs at most 8x a bare loop over the file (best of 5)."""
    path = tmp_path / "kern.log"
    with path.open("w", encoding="utf-8") as f:
        f.writelines(_stream(_kernel_log(20_000, gpus=4096), 100_000))

    def bare() -> None:
        with path.open(encoding="utf-8", errors="replace") as f:
            for _ in f:
                pass

    def timed() -> None:
        with path.open(encoding="utf-8", errors="replace") as f:
            summarize(f)

    bare_s, timed_s = _best_of(5, bare, timed)
    assert timed_s <= 8 * bare_s, (
        f"summarize took {timed_s:.3f} s, a bare loop over the same file {bare_s:.3f} s "
        f"({timed_s / bare_s:.1f}x; the reference is ~3x): test for 'NVRM: Xid' before parsing")


@pytest.mark.points(2)
@pytest.mark.timeout(60)
@pytest.mark.category("performance")
def test_time_does_not_grow_with_distinct_gpus() -> None:
    """The same 4k lines over 64x more GPUs cost at most a few times more (no scan of all GPUs)."""
    # A linear scan of the GPUs seen so far measures 11-17x at 2048 GPUs and 22x at 4096; the
    # reference 1.6x and 1.9x. At 4096 both stay well clear of the 8x limit on a loaded machine.
    few = _kernel_log(4096, xid_every=1, gpus=64)
    many = _kernel_log(4096, xid_every=1, gpus=4096)
    small, large = _best_of(3, lambda: summarize(few), lambda: summarize(many))
    assert large <= 8 * small, (
        f"4096 lines on 4096 GPUs took {large / small:.1f}x the time of 4096 lines on 64 GPUs "
        f"({small:.3f} s -> {large:.3f} s; the reference is ~2x): "
        "find a GPU's counters by key (dict), not by scanning a list")


