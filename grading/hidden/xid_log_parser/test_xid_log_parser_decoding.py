"""Hidden checks for xid_log_parser: bytes lines are UTF-8, and read the same as str lines."""

from __future__ import annotations

from xid_log_parser import summarize
from xid_log_parser_helpers import xid

_HOSTS = ("nœud-1", "узел-7", "节点3", "hôte")


def test_bytes_lines_are_decoded_as_utf8() -> None:
    """A bytes line is decoded as UTF-8: a non-ASCII host reads as it does from a str line."""
    lines = [xid("0000:3b:00", 79, pre=f"Dec  2 10:43:35 {host} kernel: ") for host in _HOSTS]
    got = sorted(g.host or "" for g in summarize([line.encode() for line in lines]).top_gpus)
    want = sorted(g.host or "" for g in summarize(lines).top_gpus)
    assert got == want == sorted(_HOSTS), (
        f"hosts of UTF-8 bytes lines: {got}; expected {sorted(_HOSTS)}, as from str lines")


def test_a_bytes_sample_is_cut_to_200_characters_not_bytes() -> None:
    """A malformed bytes line's sample is its first 200 characters, as for the same str line."""
    line = "4月 20 19:55:29 host kernel: NVRM: Xid (PCI:0000:3b:00): 7x9, " + "é" * 300 + "\n"
    got = summarize([line.encode()]).malformed_samples
    want = ((1, line.rstrip("\n")[:200]),)
    assert got == want, (
        f"malformed_samples of the UTF-8 bytes line {line[:70]!r}...: a sample of "
        f"{len(got[0][1]) if got else 0} characters {got!r}; expected the line cut to 200 "
        f"characters {want!r}")


def test_invalid_utf8_in_a_host_reads_as_replacement_characters() -> None:
    """Invalid UTF-8 in a bytes line's host reads as replacement characters (U+FFFD), never as a
    lone surrogate, which cannot be printed."""
    line = b"Dec  2 10:43:35 n\xffde kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU fell off\n"
    got = [g.host for g in summarize([line]).top_gpus]
    want = ["n\ufffdde"]
    assert got == want, (
        f"hosts of summarize([{line!r}]).top_gpus: {got!r}; expected {want!r} (the bytes decoded "
        "as UTF-8 with replacement characters)")
