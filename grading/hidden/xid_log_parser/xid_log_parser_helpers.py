"""Shared by xid_log_parser's hidden checks: line builders, the brute-force model, the merge of
two summaries, the program's runner, and the measuring tools of the performance checks."""

from __future__ import annotations

import gc
import gzip
import json
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st
from xid_log_parser import Action, Summary, main, parse_line, summarize

A = Action
SEVERITY = [A.IGNORE, A.RESTART_APP, A.UNKNOWN, A.RESET_GPU, A.HARDWARE]
TABLE: dict[int, Action] = {
    **dict.fromkeys((8, 13, 31, 32, 43, 45, 68, 69, 80, 94), A.RESTART_APP),
    **dict.fromkeys((46, 48, 62, 74, 79, 95, 109, 119, 120, 136, 140, 143), A.RESET_GPU),
    **dict.fromkeys((54, 64), A.HARDWARE),
    **dict.fromkeys((63, 92, 121), A.IGNORE),
}
SYSLOG = "Dec  2 10:43:35 node-17 kernel: [240314.528856] "
MALFORMED = [
    "NVRM: Xid (PCI:zz00:3b:00): 79, GPU has fallen off the bus.",
    "NVRM: Xid (PCI:000:3b:00): 79, domain of three digits",
    "NVRM: Xid (PCI:0000:3b): 79, no device",
    "NVRM: Xid PCI:0000:3b:00: 79, no parentheses",
    "NVRM: Xid (PCI:0000:3b:00): 7x9, code not decimal",
    "NVRM: Xid (PCI:0000:3b:00): 79 GPU has fallen off the bus",
    "NVRM: Xid (PCI:0000:3b:00): , no code",
    "Dec  2 10:43:35 node-17 kernel: NVRM: Xid",
]


def xid(pci: str, code: int, tail: str = ", pid=42, name=python3, Ch 08", pre: str = "") -> str:
    return f"{pre}NVRM: Xid (PCI:{pci}): {code}{tail}\n"


def fields(line: str, default_host: str | None = None) -> tuple[Any, ...]:
    event = parse_line(line, default_host=default_host)
    assert event is not None, f"parse_line({line!r}) returned None, expected an XidEvent"
    return (event.host, event.pci, event.code, event.pid, event.process, event.message)


def gpus(reports: Any) -> list[tuple[Any, ...]]:
    return [(g.host, g.pci, g.events, dict(g.codes), g.action) for g in reports]


def nonzero(mapping: Any) -> dict[Any, int]:
    return {k: v for k, v in dict(mapping).items() if v}


def mismatches(cases: dict[str, tuple[Any, Any]], run: Callable[[Any], Any]) -> list[str]:
    """One line per case where run(input) != want, named by the case's id.

    A `want` that is a frozenset lists the answers accepted where the statement leaves a
    question open: any one of them passes.
    """
    wrong = []
    for name, (given_, want) in cases.items():
        try:
            got = run(given_)
        except Exception as exc:  # a crash on one case is reported with the others
            got = f"{type(exc).__name__}: {exc}"
        if got not in want if isinstance(want, frozenset) else got != want:
            shown = " or ".join(map(repr, sorted(want, key=repr))) if isinstance(
                want, frozenset) else repr(want)
            wrong.append(f"{name}: {given_!r} gave {got!r}, expected {shown}")
    return wrong


def refused(exc: type[Exception], call: Callable[[], object], what: str) -> None:
    """Fail the check, naming `what` was called, unless call() raises `exc`."""
    try:
        call()
    except exc:
        return
    pytest.fail(f"{what} returned, expected {exc.__name__}")


def either(*answers: Any) -> frozenset[Any]:
    """The answers a check accepts for an open question (see `mismatches`)."""
    return frozenset(answers)


def event(code: int, message: str = "") -> Any:
    got = parse_line(f"NVRM: Xid (PCI:0000:3b:00): {code}" + (f", {message}" if message else ""))
    assert got is not None
    return got


# ---- the brute-force model of summarize ------------------------------------------------------

CODES = {13: A.RESTART_APP, 31: A.RESTART_APP, 92: A.IGNORE, 79: A.RESET_GPU, 64: A.HARDWARE,
         999: A.UNKNOWN, 48: A.RESET_GPU}
Kind = tuple[str | None, str, int] | str | None  # a GPU event, "bad", or None for other lines
# "NODE-2" sorts before "None": a host of None must sort as "", not as the text "None".
ENTRY = st.one_of(
    st.tuples(st.sampled_from([None, "node-1", "NODE-2"]),
              st.sampled_from(["0000:3b:00", "0000:5e:00", "0018:01:00", "0000:af:00"]),
              st.sampled_from(sorted(CODES)), st.booleans()),
    st.sampled_from(["bad", "noise", "blank", "bad_bytes"]),
)
_OTHER = {"noise": "Dec  2 10:43:35 node-1 kernel: ib0: link becomes ready\n", "blank": "\n"}


def render(entry: Any) -> tuple[str | bytes, Kind]:
    """One log line for a drawn entry, and what it is. Upper-case PCI entries come as bytes."""
    if entry in _OTHER:
        return _OTHER[entry], None
    if entry == "bad":
        return "NVRM: Xid (PCI:0000:3b:00): 7x9, garbled  \n", "bad"
    if entry == "bad_bytes":
        return b"NVRM: Xid (PCI:0000:3b:00): 1x\xff\xfe, garbled\r\n", "bad"
    host, pci, code, upper = entry
    pre = f"Dec  2 10:43:35 {host} kernel: [1.5] " if host else "[ 1.500000] "
    line = xid(pci.upper() if upper else pci, code, ", pid=7, name=cafe, x", pre=pre)
    if upper:  # as bytes, with an invalid UTF-8 byte in the process name
        return line.encode().replace(b"cafe", b"caf\xe9"), (host, pci, code)
    return line, (host, pci, code)


def model(kinds: list[Kind], top: int) -> tuple[Any, ...]:
    """Brute force: every event kept, every GPU sorted."""
    events = [k for k in kinds if isinstance(k, tuple)]
    per: dict[tuple[Any, str], list[int]] = {}
    for host, pci, code in events:
        per.setdefault((host, pci), []).append(code)

    def report(key: tuple[Any, str]) -> tuple[Any, ...]:
        codes = per[key]
        action = max((CODES[c] for c in codes), key=SEVERITY.index)
        return (key[0], key[1], len(codes), dict(Counter(codes)), action)

    reports = [report(k) for k in per]
    by_action = Counter(CODES[c] for _, _, c in events)
    return (len(kinds), len(events), kinds.count("bad"), dict(Counter(c for _, _, c in events)),
            dict(by_action), *rank([tuple(r) for r in reports], top))


def rank(reports: list[tuple[Any, ...]], top: int) -> tuple[list[Any], list[Any]]:
    """(top_gpus, actionable) of (host, pci, events, codes, action) reports, by rules 11-12."""
    top_gpus = sorted(reports, key=lambda r: (-r[2], r[0] or "", r[1]))[:top]
    urgent = [r for r in reports if SEVERITY.index(r[4]) >= 2]
    urgent.sort(key=lambda r: (-SEVERITY.index(r[4]), r[0] or "", r[1]))
    return top_gpus, urgent


OBSERVED = ("lines", "events", "malformed", "by_code", "by_action", "top_gpus", "actionable")


def observed(s: Summary) -> tuple[Any, ...]:
    return (s.lines, s.events, s.malformed, nonzero(s.by_code), nonzero(s.by_action),
            gpus(s.top_gpus), gpus(s.actionable))


def merged(a: Summary, b: Summary, top: int) -> tuple[tuple[Any, ...], list[Any]]:
    """What the summary of a's lines followed by b's lines must be, from the two summaries alone
    (each taken with a `top` that lists all its GPUs), plus the merged samples."""
    per: dict[tuple[Any, str], list[Any]] = {}
    for g in (*a.top_gpus, *b.top_gpus):
        old = per.get((g.host, g.pci))
        if old is None:
            per[g.host, g.pci] = [g.events, Counter(dict(g.codes)), g.action]
        else:
            old[0] += g.events
            old[1].update(dict(g.codes))
            old[2] = max(old[2], g.action, key=SEVERITY.index)
    reports = [(k[0], k[1], v[0], dict(v[1]), v[2]) for k, v in per.items()]
    samples = [*a.malformed_samples, *((n + a.lines, t) for n, t in b.malformed_samples)][:10]
    return (a.lines + b.lines, a.events + b.events, a.malformed + b.malformed,
            nonzero(Counter(nonzero(a.by_code)) + Counter(nonzero(b.by_code))),
            nonzero(Counter(nonzero(a.by_action)) + Counter(nonzero(b.by_action))),
            *rank(reports, top)), [tuple(s) for s in samples]


# ---- the program -------------------------------------------------------------------------------

def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """(status, stdout, stderr) of main(argv): a returned status and SystemExit count alike."""
    try:
        code: object = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return (0 if code is None else code if isinstance(code, int) else 1), out, err


def as_json(out: str) -> dict[str, Any]:
    try:
        obj = json.loads(out)
    except ValueError:
        pytest.fail(f"--format json printed something that is not JSON: {out[:300]!r}")
    assert isinstance(obj, dict), f"--format json should print one object, got {out[:300]!r}"
    return obj


LOG_A = [SYSLOG + "usb 1-1: new device\n", xid("0000:3B:00", 79, pre=SYSLOG),
         xid("0000:3b:00", 13, pre=SYSLOG), "NVRM: Xid (PCI:0000:3b:00): 1x, bad\n"]
LOG_B = [xid("0000:5e:00", 64), "NVRM: Xid (PCI:0000:5e:00): 2x, bad\n", xid("0000:5e:00", 94)]


def write(path: Path, lines: Iterable[str], gz: bool = False) -> str:
    data = "".join(lines).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return str(path)


# ---- performance -------------------------------------------------------------------------------

_NOISE = ("IPv6: ADDRCONF(NETDEV_CHANGE): ib{}: link becomes ready",
          "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link {} egress error",
          "NVRM: GPU at PCI:0000:3b:00: GPU-6a9b2c1e-53d8-41f3-b4c7-1f0e2d3c{:04x}",
          "mlx5_core 0000:{:02x}:00.0: mlx5_cmd_out_err:838: QUERY_VPORT_COUNTER failed",
          "python3[{}]: segfault at 0 ip 00007f3a1c2b4e10 sp 00007ffd6b9c1f40 error 4")
_TAILS = ("13, pid={}, name=python3, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0)",
          "31, pid={}, name=pt_main_thread, Ch 00000010, intr 00000000. MMU Fault",
          "79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.{}",
          "149, NETIR_LINK_EVT  Fatal   XC0 i0 Link {} (0x025525c6 0x0)", "46, {}")


def kernel_log(n: int, *, xid_every: int = 50, gpus: int = 64) -> list[str]:
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


def stream(pool: list[str], n: int) -> Iterator[str]:
    """n lines cycling through pool, each a new string object, as reading a file gives."""
    size = len(pool)
    for i in range(n):
        yield pool[i % size] + "\n"


def peak(lines: Iterator[str]) -> int:
    """Peak traced memory of summarize(lines), above what was allocated before."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        summarize(lines)
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def memory_growth(small: Iterator[str], large: Iterator[str], sizes: str) -> str:
    """"" when the peak memory of summarize(large) is flat against summarize(small) (at most 1.5x
    plus 256 kB), else what grew, with `sizes` naming the two inputs ("1k vs 8k events")."""
    before, after = peak(small), peak(large)
    if after <= 1.5 * before + 256 * 1024:
        return ""
    return f"peak memory grew from {before / 1e6:.2f} MB to {after / 1e6:.2f} MB ({sizes})"
