"""Hidden checks for xid_log_parser: the fields of a line (host spacing, pid, name, MIG suffix)."""

from __future__ import annotations

import pytest
from xid_log_parser import MalformedXidLine, parse_line
from xid_log_parser_helpers import either, fields, mismatches, xid


@pytest.mark.category("edge_cases")
def test_runs_of_spaces_before_kernel_never_make_an_empty_host() -> None:
    """Runs of spaces before kernel: are one separator: the host is the word before, never ""."""
    cases = {
        "two_spaces_after_the_host": ("Dec  2 10:43:35 node-17  kernel: [1.5] ", "node-17"),
        "three_spaces_after_the_host": ("Dec  2 10:43:35 node-17   kernel: ", "node-17"),
        "two_spaces_after_a_journal_time": ("May 18 19:02:39  kernel: ", "dflt"),
        # A tab is not a space (rule 3): either the word before it or default_host.
        "a_tab_before_kernel": ("Dec  2 10:43:35 node-17\tkernel: ", either("node-17", "dflt")),
    }
    wrong = mismatches(cases, lambda pre: fields(xid("0000:3b:00", 79, pre=pre), "dflt")[0])
    assert not wrong, (
        "host of parse_line(prefix + line, default_host='dflt'); a host is None or non-empty:\n"
        + "\n".join(wrong))


def test_unquoted_unknown_pid_is_no_pid_and_not_message_text() -> None:
    """pid=<unknown>, quoted or not, is no pid; it and name=<unknown> are not message text."""
    cases = {
        "unquoted": ("79, pid=<unknown>, name=<unknown>, GPU has fallen off the bus",
                     (None, None, "GPU has fallen off the bus")),
        "quoted": ("79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus",
                   (None, None, "GPU has fallen off the bus")),
        "unquoted_without_name": ("31, pid=<unknown>, MMU Fault", (None, None, "MMU Fault")),
    }
    wrong = mismatches(cases, lambda tail: fields(
        "NVRM: Xid (PCI:0000:2a:00): " + tail)[3:])
    assert not wrong, "parse_line (pid, process, message):\n" + "\n".join(wrong)


def test_a_process_name_runs_to_the_next_comma_and_space() -> None:
    """The process name runs to the next ", ": a comma inside the name belongs to the name."""
    cases = {
        "comma_in_name": ("13, pid=7, name=worker,2, Graphics Exception",
                          (7, "worker,2", "Graphics Exception")),
        "commas_in_name": ("13, pid=7, name=a,b,c, Ch 11", (7, "a,b,c", "Ch 11")),
    }
    wrong = mismatches(cases, lambda tail: fields("NVRM: Xid (PCI:0000:3b:00): " + tail)[3:])
    assert not wrong, "parse_line (pid, process, message):\n" + "\n".join(wrong)


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("suffix", [" GPU-CI:01", " GPU-I:zz", " GPU-I:", " GPU-I:05 junk",
                                    " GPU-CI:01 GPU-I:05"],
                         ids=["compute_instance_alone", "instance_not_decimal", "instance_empty",
                              "trailing_junk", "reversed_order"])
def test_a_broken_mig_suffix_is_malformed(suffix: str) -> None:
    """A MIG suffix other than GPU-I:NN, then possibly GPU-CI:NN, makes the line malformed."""
    line = f"NVRM: Xid (PCI:0000:3b:00{suffix}): 79, GPU has fallen off the bus"
    try:
        got = parse_line(line)
    except MalformedXidLine:
        return
    pytest.fail(f"parse_line({line!r}) returned {got!r}, expected MalformedXidLine (rule 5)")


def _not_malformed(cases: dict[str, str]) -> list[str]:
    """One line per case whose line parse_line does not refuse with MalformedXidLine."""
    wrong = []
    for name, line in cases.items():
        try:
            got = parse_line(line)
        except MalformedXidLine:
            continue
        wrong.append(f"{name}: parse_line({line!r}) returned {got!r}")
    return wrong


@pytest.mark.category("bad_input")
def test_a_pci_address_of_non_ascii_digits_is_malformed() -> None:
    """The PCI address is ASCII hex: Arabic-Indic or fullwidth digits in the domain, bus or
    device make the line malformed."""
    cases = {
        "arabic_indic_domain": "NVRM: Xid (PCI:\u0660\u0660\u0660\u0660:3b:00): 79, msg",
        "arabic_indic_bus": "NVRM: Xid (PCI:0000:\u0663b:00): 79, msg",
        "fullwidth_device": "NVRM: Xid (0000:3b:\uff10\uff10): 79, msg",
    }
    wrong = _not_malformed(cases)
    assert not wrong, ("expected MalformedXidLine (rule 5: the address is hex, and a digit is an "
                       "ASCII digit; \\d in a regex takes any Unicode digit):\n" + "\n".join(wrong))


@pytest.mark.category("bad_input")
def test_a_mig_number_of_non_ascii_digits_is_malformed() -> None:
    """The NN of GPU-I:NN and GPU-CI:NN is ASCII digits: Arabic-Indic digits make the line
    malformed."""
    cases = {
        "instance": "NVRM: Xid (PCI:0000:3b:00 GPU-I:\u0660\u0665): 79, msg",
        "compute_instance": "NVRM: Xid (PCI:0000:01:00 GPU-I:05 GPU-CI:\u0661): 94, Contained",
    }
    wrong = _not_malformed(cases)
    assert not wrong, ("expected MalformedXidLine (rule 5: NN is one or more ASCII digits, as for "
                       "the code; \\d in a regex takes any Unicode digit):\n" + "\n".join(wrong))


@pytest.mark.category("bad_input")
def test_a_pci_function_number_in_the_address_is_malformed() -> None:
    """The Xid address is DOMAIN:BB:DD: a PCI function (0000:3b:00.0, as SXid lines write it)
    makes the line malformed."""
    cases = {
        "function_zero": "NVRM: Xid (PCI:0000:3b:00.0): 79, GPU has fallen off the bus.",
        "function_then_mig_suffix": "NVRM: Xid (PCI:0000:01:00.0 GPU-I:05): 94, Contained",
        "no_pci_keyword": "NVRM: Xid (0000:3b:00.1): 13, pid=7, name=python3, Ch 08",
    }
    wrong = _not_malformed(cases)
    assert not wrong, ("expected MalformedXidLine (rule 5: the parentheses hold [PCI:]DOMAIN:BB:DD "
                       "and an optional MIG suffix, nothing else):\n" + "\n".join(wrong))


@pytest.mark.category("bad_input")
def test_the_code_follows_the_parenthesis_a_colon_and_one_space() -> None:
    """The code follows "): " exactly: no space, two spaces or a tab before it is malformed."""
    cases = {
        "no_space": "NVRM: Xid (PCI:0000:3b:00):79, GPU has fallen off the bus",
        "two_spaces": "NVRM: Xid (PCI:0000:3b:00):  79, GPU has fallen off the bus",
        "a_tab": "NVRM: Xid (PCI:0000:3b:00):\t79",
    }
    wrong = _not_malformed(cases)
    assert not wrong, "expected MalformedXidLine (rule 5: `: ` and the code):\n" + "\n".join(wrong)


@pytest.mark.category("bad_input")
def test_pci_and_mig_keywords_are_upper_case() -> None:
    """Only the hex digits may be either case: pci:, gpu-i: or gpu-ci: make the line malformed."""
    cases = {
        "lower_case_pci": "NVRM: Xid (pci:0000:3b:00): 79, GPU has fallen off the bus",
        "mixed_case_pci": "NVRM: Xid (Pci:0000:3b:00): 79",
        "lower_case_instance": "NVRM: Xid (PCI:0000:3b:00 gpu-i:05): 94, Contained",
        "lower_case_compute_instance": "NVRM: Xid (PCI:0000:3b:00 GPU-I:05 gpu-ci:01): 94, x",
    }
    wrong = _not_malformed(cases)
    assert not wrong, ("expected MalformedXidLine (rule 5: `PCI:`, `GPU-I:NN`, `GPU-CI:NN` as "
                       "written):\n" + "\n".join(wrong))


@pytest.mark.category("bad_input")
def test_the_code_is_followed_by_a_comma_or_the_end_of_the_line() -> None:
    """The code is followed by "," or the end of the line: a space or tab before the comma is
    malformed."""
    cases = {
        "space_before_the_comma": "NVRM: Xid (PCI:0000:3b:00): 79 , GPU has fallen off the bus",
        "spaces_before_the_comma": "NVRM: Xid (PCI:0000:3b:00): 79  ,GPU has fallen off the bus",
        "tab_before_the_comma": "NVRM: Xid (PCI:0000:3b:00): 13\t, pid=7, name=python3, x",
    }
    wrong = _not_malformed(cases)
    assert not wrong, ("expected MalformedXidLine (rule 5: the code is followed by `,` or the end "
                       "of the line):\n" + "\n".join(wrong))


def test_a_pid_of_zero_is_pid_zero() -> None:
    """pid=0 (the kernel's idle task) is the pid 0, not None: only an absent or <unknown> pid is
    None."""
    cases = {
        "idle_task": (", pid=0, name=swapper/0, GPU has fallen off the bus",
                      (0, "swapper/0", "GPU has fallen off the bus")),
        "without_name": (", pid=0, Ch 00000001", (0, None, "Ch 00000001")),
    }
    wrong = mismatches(cases, lambda tail: fields(xid("0000:3b:00", 79, tail))[3:])
    assert not wrong, "parse_line (pid, process, message):\n" + "\n".join(wrong)


def _pid_reading(tail: str) -> object:
    """(pid, process, message) of an Xid 79 line with this tail, or "malformed"."""
    try:
        return fields(xid("0000:3b:00", 79, tail))[3:]
    except MalformedXidLine:
        return "malformed"


@pytest.mark.category("edge_cases")
def test_a_pid_is_a_whole_number_of_ascii_digits() -> None:
    """A pid is a whole number of ASCII digits: pid=٧٩ (Arabic-Indic digits) and pid=12abc are
    not pids."""
    cases = {
        # Open in the statement: message text or a malformed line, never the pid 79.
        "arabic_indic_digits": (", pid=٧٩, Ch 08", either((None, None, "pid=٧٩, Ch 08"),
                                                          "malformed")),
        "devanagari_digits": (", pid=४२, name=python3, x",
                              either((None, None, "pid=४२, name=python3, x"), "malformed")),
        "digits_then_letters": (", pid=12abc, Ch 08", (None, None, "pid=12abc, Ch 08")),
    }
    wrong = mismatches(cases, _pid_reading)
    assert not wrong, ("parse_line (pid, process, message) (rule 5: numbers are ASCII digits; "
                       "rule 4: anything else after pid= starts the message):\n" + "\n".join(wrong))
