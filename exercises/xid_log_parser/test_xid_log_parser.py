"""Visible tests for xid_log_parser: the statement's worked examples and two properties.

Run them with `uv run pytest exercises/xid_log_parser`; grade: `uv run grader.py xid_log_parser`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from xid_log_parser import (
    Action,
    MalformedXidLine,
    XidEvent,
    classify,
    main,
    parse_line,
    summarize,
)

HERE = Path(__file__).parent
SYSLOG = "Dec  2 10:43:35 node-17 kernel: [240314.528856] "


def test_parse_line_reads_a_syslog_xid_line() -> None:
    """Example 1: a syslog Xid line gives host, normalized PCI, code, pid, process, message."""
    line = (SYSLOG + "NVRM: Xid (PCI:0000:3B:00): "
            "79, pid=1234, name=python3, GPU has fallen off the bus.\n")
    got = parse_line(line, default_host="ignored")
    want = XidEvent("node-17", "0000:3b:00", 79, 1234, "python3", "GPU has fallen off the bus.")
    assert got == want, f"parse_line({line!r}) returned {got}, expected {want}"


def test_parse_line_drops_the_mig_suffix_and_uses_the_default_host() -> None:
    """Example 1: a MIG line without a syslog host takes default_host; the MIG suffix is dropped."""
    line = "[ 1234.567890] NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE (0x9)"
    got = parse_line(line, default_host="gpu-07")
    want = XidEvent("gpu-07", "0000:01:00", 94, 7194, None, "Contained: CE (0x9)")
    assert got == want, f"parse_line({line!r}) returned {got}, expected {want}"


def test_other_lines_are_none_and_broken_xid_lines_raise() -> None:
    """Lines without NVRM: Xid give None; a broken Xid line raises MalformedXidLine."""
    for line in ("NVRM: GPU at PCI:0000:3b:00: GPU-6a9b2c1e", "usb 1-1: new device", ""):
        assert parse_line(line) is None, f"parse_line({line!r}) should return None"
    with pytest.raises(MalformedXidLine):
        parse_line("NVRM: Xid (PCI:0000:3b:00): 7x9, garbled")


@pytest.mark.parametrize(("code", "message", "want"), [
    (79, "GPU has fallen off the bus.", Action.RESET_GPU),
    (13, "Graphics Exception", Action.RESTART_APP),
    (48, "An uncorrectable double bit error (DBE) has been detected on GPU", Action.RESET_GPU),
    (64, "Dynamic Page Retirement: Failed to retire page", Action.HARDWARE),
    (999, "something new", Action.UNKNOWN),
    (149, "NETIR_LINK_EVT  Fatal   XC0 i0 Link 09", Action.RESET_GPU),
    (145, "RLW_REMAP  Nonfatal XC1 i0 Link 04", Action.IGNORE),
    (154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
     Action.RESET_GPU),
])
def test_classify_worked_examples(code: int, message: str, want: Action) -> None:
    """Example 2: classify follows the table, NVLink5 Fatal/Nonfatal and Xid 154's target."""
    event = XidEvent(None, "0000:3b:00", code, None, None, message)
    got = classify(event)
    assert got == want, f"classify(Xid {code}, {message!r}) returned {got!r}, expected {want!r}"


def test_summarize_worked_example() -> None:
    """Example 3: counts, the top GPUs and the actionable GPUs of a small log."""
    lines = [
        SYSLOG + "NVRM: Xid (PCI:0000:3b:00): 13, pid=48211, name=python3, Graphics Exception\n",
        SYSLOG + "NVRM: Xid (PCI:0000:3B:00): 43, pid=48211, name=python3, Ch 00000008\n",
        SYSLOG + "NVRM: Xid (PCI:0000:af:00): 79, GPU has fallen off the bus.\n",
        SYSLOG + "NVRM: Xid (PCI:0000:d8:00): 7x9, garbled\n",
        SYSLOG + "systemd[1]: Started nvidia-persistenced.service\n",
    ]
    s = summarize(lines, top=1)
    assert (s.lines, s.events, s.malformed) == (5, 3, 1), f"(lines, events, malformed) of {s}"
    assert s.malformed_samples == ((4, lines[3].rstrip("\n")),), f"samples {s.malformed_samples}"
    assert dict(s.by_code) == {13: 1, 43: 1, 79: 1}, f"by_code {s.by_code}"
    assert [(g.pci, g.events, g.action) for g in s.top_gpus] == [
        ("0000:3b:00", 2, Action.RESTART_APP)], f"top_gpus {s.top_gpus}"
    assert [(g.host, g.pci, g.action) for g in s.actionable] == [
        ("node-17", "0000:af:00", Action.RESET_GPU)], f"actionable {s.actionable}"


@pytest.mark.parametrize("sample", ["sample.log", "sample.log.gz"])
def test_program_summarizes_the_sample_log(
    sample: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The program reads the sample log, plain or gzipped, and prints the Summary as JSON."""
    status = main([str(HERE / sample), "--format", "json"])
    out = capsys.readouterr().out
    assert status == 0, f"main([{sample!r}, '--format', 'json']) returned {status}, expected 0"
    got = json.loads(out)
    assert (got["lines"], got["events"], got["malformed"]) == (36, 24, 1), f"totals in {out[:200]}"
    assert got["actionable"][0]["pci"] == "0000:d8:00", "the first actionable GPU needs hardware"


_HEX = "0123456789abcdefABCDEF"
_fields = st.tuples(
    st.text(_HEX, min_size=4, max_size=4), st.text(_HEX, min_size=2, max_size=2),
    st.text(_HEX, min_size=2, max_size=2), st.integers(0, 10**6),
    st.none() | st.integers(1, 4_194_304),
    st.none() | st.text("abcxyzAZ019_./:[]-", min_size=1, max_size=15),
    st.text("abcxyzAZ019 ,.:()=-", max_size=60)
    .map(str.strip)
    .filter(lambda m: not m.startswith(("pid=", "name=", ","))),
)


@settings(max_examples=50)
@given(fields=_fields)
@example(fields=("0000", "3B", "00", 79, None, None, "GPU has fallen off the bus."))
def test_parse_line_round_trips_the_driver_format(
    fields: tuple[str, str, str, int, int | None, str | None, str],
) -> None:
    """Property: a line printed in the driver's format parses back to the fields it was made of."""
    domain, bus, dev, code, pid, name, message = fields
    parts = [f"{code}"]
    parts += [f"pid={pid}"] if pid is not None else []
    parts += [f"name={name}"] if name is not None and pid is not None else []
    parts += [message] if message else []
    line = f"NVRM: Xid (PCI:{domain}:{bus}:{dev}): " + ", ".join(parts) + "\n"
    process = name if pid is not None else None
    want = XidEvent(None, f"{domain}:{bus}:{dev}".lower(), code, pid, process, message)
    got = parse_line(line)
    assert got == want, f"parse_line({line!r}) returned {got}, expected {want}"


_LINES = [  # (line, its GPU; "" for a malformed Xid line, None for other lines)
    ("NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=python3, Graphics Exception\n", "0000:3b:00"),
    ("NVRM: Xid (PCI:0000:3B:00): 79, GPU has fallen off the bus.\n", "0000:3b:00"),
    ("NVRM: Xid (0000:5e:00): 999, something new\n", "0000:5e:00"),
    ("NVRM: Xid (PCI:0000:5e:00 GPU-I:01): 92, High single-bit ECC error rate\n", "0000:5e:00"),
    ("NVRM: Xid (PCI:0000:5e:00): 1x3, garbled\n", ""),
    ("kernel: ib0: link becomes ready\n", None),
]


@settings(max_examples=50)
@given(picks=st.lists(st.sampled_from(_LINES), max_size=50), top=st.integers(0, 3))
@example(picks=_LINES, top=1)
def test_counts_are_exact(picks: list[tuple[str, str | None]], top: int) -> None:
    """Property: lines, events and malformed add up; events = sum(by_code) = sum(by_action)."""
    s = summarize(iter([line for line, _ in picks]), top=top)
    gpus = [gpu for _, gpu in picks if gpu]
    malformed = sum(gpu == "" for _, gpu in picks)
    assert (s.lines, s.events, s.malformed) == (len(picks), len(gpus), malformed), f"got {s}"
    assert sum(s.by_code.values()) == sum(s.by_action.values()) == len(gpus), f"got {s}"
    assert len(s.top_gpus) == min(top, len(set(gpus))), f"top={top} listed {s.top_gpus}"
