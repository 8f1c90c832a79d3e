"""Hidden checks for xid_log_parser: malformed Xid lines, numbers too long, bad arguments."""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import Any

import pytest
from xid_log_parser import MalformedXidLine, parse_line, summarize
from xid_log_parser_helpers import MALFORMED, SYSLOG, nonzero, refused, xid


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("line", MALFORMED)
def test_malformed_xid_lines_raise(line: str) -> None:
    """A line with NVRM: Xid that breaks the grammar raises MalformedXidLine (a ValueError)."""
    with pytest.raises(MalformedXidLine):
        parse_line(line)
    assert issubclass(MalformedXidLine, ValueError), "MalformedXidLine must subclass ValueError"


@pytest.mark.category("bad_input")
def test_empty_default_host_is_refused() -> None:
    """An empty default_host is refused with ValueError, whatever the lines (a host is None or
    non-empty)."""
    with pytest.raises(ValueError):
        parse_line(xid("0000:3b:00", 79), default_host="")
    for lines in ([xid("0000:3b:00", 79)], [], ["usb 1-1: new device\n"]):
        refused(ValueError, lambda: summarize(lines, default_host=""),  # noqa: B023
                f"summarize({lines!r}, default_host='')")


@pytest.mark.category("bad_input")
def test_parse_line_refuses_a_default_host_that_is_not_a_str() -> None:
    """parse_line refuses a default_host that is neither a str nor None (17, b"node-1") with
    TypeError, as summarize does."""
    line = xid("0000:3b:00", 79)
    bad_hosts: list[Any] = [17, b"node-1", 0]
    for bad in bad_hosts:
        refused(TypeError, functools.partial(parse_line, line, default_host=bad),
                f"parse_line({line!r}, default_host={bad!r})")


@pytest.mark.category("bad_input")
def test_a_malformed_sample_keeps_its_trailing_spaces() -> None:
    """A malformed line's sample is the line without its ending: trailing spaces and tabs before
    the ending are kept."""
    line = "NVRM: Xid (PCI:0000:3b:00): 7x9, garbled  \t "
    s = summarize(["noise\n", line + "\r\n", line + "\n"])
    want = [(2, line), (3, line)]
    assert [tuple(x) for x in s.malformed_samples] == want, (
        f"malformed_samples {s.malformed_samples}, expected {want} (rule 8: only the line ending "
        "is cut, \\r\\n or \\n, not the spaces before it)")


@pytest.mark.points(2)
@pytest.mark.category("bad_input")
def test_malformed_lines_are_counted_sampled_and_skipped() -> None:
    """Malformed Xid lines never stop summarize: counted, the first 10 kept with line numbers."""
    lines = ["noise\n", xid("0000:3b:00", 13)]
    lines += [f"NVRM: Xid (PCI:0000:3b:00): {i}x, bad\r\n" for i in range(12)]
    lines.append(xid("0000:3b:00", 79))
    s = summarize(lines)
    assert (s.lines, s.events, s.malformed) == (15, 2, 12), f"(lines, events, malformed) of {s}"
    got = [(n, text.rstrip("\r\n")) for n, text in s.malformed_samples]
    want = [(3 + i, f"NVRM: Xid (PCI:0000:3b:00): {i}x, bad") for i in range(10)]
    assert got == want, f"malformed_samples {s.malformed_samples}, expected {want}"


@pytest.mark.points(2)
@pytest.mark.category("bad_input")
def test_summarize_counts_every_malformed_line_shape() -> None:
    """summarize counts every shape of malformed Xid line, and samples it as written (only the
    line ending cut), blank lines counted in the line numbers."""
    shapes = [*MALFORMED, "NVRM: Xid (PCI:0000:3b:00): 7x9, trailing spaces  \t ",
              "NVRM: Xid: 79, GPU has fallen off the bus. RST: X"]
    shapes[1] += ", then NVRM: Xid (PCI:0000:3b:00): 13, a well-formed one"
    lines: list[str | bytes] = []
    for i, shape in enumerate(shapes):  # every third shape as bytes, after str lines
        lines += ["\n", shape.encode() + b"\r\n" if i % 3 == 2 else shape + "\r\n", ""]
    s = summarize(lines)
    got = (s.lines, s.events, s.malformed)
    assert got == (len(lines), 0, len(shapes)), f"(lines, events, malformed) {got} of {lines}"
    want = [(3 * i + 2, shape) for i, shape in enumerate(shapes[:10])]
    assert [tuple(x) for x in s.malformed_samples] == want, (
        f"malformed_samples {s.malformed_samples}, expected {want}")


@pytest.mark.category("bad_input")
def test_numbers_too_long_for_int_do_not_crash() -> None:
    """A code of over 4,300 digits, or of non-ASCII digits, is malformed; summarize never crashes
    on one."""
    assert parse_line(xid("0000:3b:00", int("9" * 4300))) is not None, "a 4,300-digit code is valid"
    for line in (xid("0000:3b:00", 0, "9" * 4300), "NVRM: Xid (PCI:0000:3b:00): ٧٩, Arabic digits"):
        # MalformedXidLine is a ValueError; int()'s own ValueError is accepted from parse_line.
        refused(ValueError, lambda: parse_line(line), f"parse_line({line[:60]!r}...)")  # noqa: B023
    lines = [xid("0000:3b:00", 0, "9" * 5000), SYSLOG + "NVRM: Xid (PCI:0000:3b:00): 13, pid="
             + "7" * 5000 + ", x\n", xid("0000:3b:00", 79)]
    s = summarize(lines)
    # The 5,000-digit pid is not a pid (rule 4); a solution may count that line as malformed.
    assert (s.lines, s.events + s.malformed) == (3, 3), f"(lines, events + malformed) of {s}"
    assert s.malformed >= 1, f"a 5,000-digit code should be counted as malformed: {s}"
    assert nonzero(s.by_code).get(79) == 1, f"the line after them should count: {s}"


@pytest.mark.category("bad_input")
def test_summarize_refuses_bad_arguments() -> None:
    """summarize refuses a negative top (ValueError), a top that is not an int (True, 2.0), a
    default_host that is not a str (b"" and 0 too), and a single string (TypeError)."""
    with pytest.raises(ValueError, match="-1"):
        summarize([xid("0000:3b:00", 79)], top=-1)
    with pytest.raises(TypeError):
        summarize(xid("0000:3b:00", 79))
    bad: list[dict[str, object]] = [{"top": True}, {"top": 2.0}, {"top": "3"},
                                    {"default_host": 5}, {"default_host": b"node-1"},
                                    {"default_host": b""}, {"default_host": 0}]
    for kwargs in bad:
        refused(TypeError, lambda: summarize([], **kwargs),  # type: ignore[arg-type]  # noqa: B023
                f"summarize([], **{kwargs})")


_Cases = list[tuple[dict[str, object], type[Exception]]]
_BAD_ARGUMENTS: _Cases = [
    ({"top": -1}, ValueError), ({"top": True}, TypeError), ({"top": "3"}, TypeError),
    ({"default_host": ""}, ValueError), ({"default_host": b""}, TypeError),
]


def _not_refused_before_reading(cases: _Cases) -> list[str]:
    """One line per (kwargs, exception) where summarize(lines, **kwargs) does not raise that
    exception before it reads the first line."""
    wrong = []
    for kwargs, exc in cases:
        first = xid("0000:3b:00", 79)
        lines = iter([first, "usb 1-1: new device\n"])
        try:
            summarize(lines, **kwargs)  # type: ignore[arg-type]
            got = "returned"
        except exc:
            got = ""
        except Exception as e:  # the wrong type is reported with the other cases
            got = f"raised {type(e).__name__}: {e}"
        if got:
            wrong.append(f"summarize(lines, **{kwargs}) {got}, expected {exc.__name__}")
        elif next(lines, None) != first:
            wrong.append(f"summarize(lines, **{kwargs}) raised {exc.__name__} but read lines "
                         "first: the arguments are checked before the first line is read")
    return wrong


@pytest.mark.category("bad_input")
def test_summarize_checks_its_arguments_before_reading_a_line() -> None:
    """summarize refuses bad arguments before it reads a line: the stream is left untouched."""
    wrong = _not_refused_before_reading(_BAD_ARGUMENTS)
    assert not wrong, "\n".join(wrong)


@pytest.mark.category("bad_input")
def test_summarize_refuses_a_top_that_is_not_an_int_before_reading_a_line() -> None:
    """summarize refuses a top that is a float or a Decimal (2.5, 2.0, Decimal(3)) with
    TypeError before it reads a line, not when it cuts the top GPUs at the end."""
    wrong = _not_refused_before_reading([({"top": 2.5}, TypeError), ({"top": 2.0}, TypeError),
                                         ({"top": Decimal(3)}, TypeError)])
    assert not wrong, "\n".join(wrong)
