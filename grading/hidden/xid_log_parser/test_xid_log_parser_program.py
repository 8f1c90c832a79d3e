"""Hidden checks for xid_log_parser: the program (JSON, gzip, stdin, bad files, bad usage)."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from xid_log_parser import main
from xid_log_parser_helpers import LOG_A, LOG_B, as_json, run_main, write, xid


def test_program_json_is_the_summary_of_all_files_as_one_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format json prints the Summary of all files as one stream (line numbers run on)."""
    a, b = write(tmp_path / "a.log", LOG_A), write(tmp_path / "b.log", LOG_B)
    code, out, _ = run_main(capsys, a, b, "--format", "json", "--host", "n9")
    obj = as_json(out)
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
    plain_gz = write(tmp_path / "kern.log", LOG_A, gz=True)
    named_gz = write(tmp_path / "b.log.gz", LOG_B, gz=True)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("".join(LOG_B).encode())))
    code, out, _ = run_main(capsys, plain_gz, "-", named_gz, "--format", "json", "--top", "1")
    obj = as_json(out)
    assert (code, obj["lines"], obj["events"]) == (0, 10, 6), f"(status, lines, events) of {obj}"
    top = [(g["pci"], g["events"]) for g in obj["top_gpus"]]
    assert top == [("0000:5e:00", 4)], f"--top 1 gave {top}"


def test_program_text_report_shows_totals_and_actionable_gpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default text report shows the totals and each actionable GPU with its action."""
    code, out, _ = run_main(capsys, write(tmp_path / "a.log", LOG_A + LOG_B))
    assert code == 0, f"exit status {code}, expected 0"
    for needle in ("7", "4", "0000:3b:00", "0000:5e:00", "reset_gpu", "hardware"):
        assert needle in out.lower().replace("reset gpu", "reset_gpu"), f"{needle!r} not in:\n{out}"
    with contextlib.suppress(ValueError):
        json.loads(out)
        pytest.fail(f"the default report should be text, not the JSON of --format json:\n{out}")
    code, explicit, _ = run_main(capsys, str(tmp_path / "a.log"), "--format", "text")
    assert (code, explicit) == (0, out), "--format text should print the default report"


def test_program_top_0_lists_no_top_gpus_but_every_actionable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--top 0 is valid: no top GPUs, every actionable GPU; without --top, 10 top GPUs."""
    lines = [xid(f"0000:{i:02x}:00", 79) for i in range(12)]
    path = write(tmp_path / "a.log", lines)
    code, out, err = run_main(capsys, path, "--top", "0", "--format", "json")
    assert code == 0, f"--top 0: exit status {code}, expected 0 ({err.strip()})"
    obj = as_json(out)
    assert (len(obj["top_gpus"]), len(obj["actionable"])) == (0, 12), f"--top 0 gave {obj}"
    code, out, _ = run_main(capsys, path, "--format", "json")
    assert (code, len(as_json(out)["top_gpus"])) == (0, 10), "the default --top is 10"


def test_program_text_report_lists_every_actionable_gpu_whatever_top(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The text report lists every actionable GPU, whatever --top is (--top 0 and --top 3 too)."""
    pcis = [f"0000:{i:02x}:00" for i in range(12)]
    path = write(tmp_path / "a.log", [xid(pci, 79) for pci in pcis])
    for top in ("0", "3"):
        code, out, err = run_main(capsys, path, "--top", top)
        assert code == 0, f"main([a.log, '--top', {top!r}]): exit status {code}, expected 0 {err}"
        missing = [pci for pci in pcis if pci not in out]
        assert not missing, (
            f"main([a.log, '--top', {top!r}]): the text report leaves out the actionable GPUs "
            f"{missing} (rule 12: every actionable GPU, whatever --top; --top cuts only the top "
            f"GPUs):\n{out}")


def test_program_reads_a_file_named_twice_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A FILE named twice is read twice: the files are one stream in the order given, with no
    deduplication."""
    path = write(tmp_path / "a.log", LOG_A)
    code, out, _ = run_main(capsys, path, path, "--format", "json")
    obj = as_json(out)
    got = (code, obj["lines"], obj["events"], obj["malformed"])
    assert got == (0, 8, 4, 2), (
        f"main([a.log, a.log]) gave (status, lines, events, malformed) {got}, expected "
        "(0, 8, 4, 2): a.log (4 lines, 2 events, 1 malformed) counted once per time it is named")


@pytest.mark.category("edge_cases")
def test_program_reads_invalid_utf8_and_crlf_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file with invalid UTF-8 and CRLF endings is summarized, plain or gzipped."""
    data = (b"\xff\xfe junk \xc3\r\n" + xid("0000:3b:00", 79).encode().replace(b"\n", b"\r\n")
            + b"NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=caf\xe9, x\r\n")
    (tmp_path / "a.log").write_bytes(data)
    (tmp_path / "b.log").write_bytes(gzip.compress(data))
    code, out, err = run_main(capsys, str(tmp_path / "a.log"), str(tmp_path / "b.log"),
                              "--format", "json")
    obj = as_json(out)
    got = (code, obj["lines"], obj["events"], obj["malformed"])
    assert got == (0, 6, 4, 0), f"(status, lines, events, malformed) {got}; stderr {err!r}"


class _ClosedPipe:
    """A stdout whose reader has left: every write raises BrokenPipeError."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, s: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        return self.fd


@pytest.mark.category("edge_cases")
def test_program_survives_a_closed_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the reader of stdout leaves early (| head), the program ends without a traceback."""
    path = write(tmp_path / "a.log", LOG_A)
    with (tmp_path / "stdout").open("wb") as sink:
        monkeypatch.setattr(sys, "stdout", _ClosedPipe(sink.fileno()))
        try:
            main([path])
        except SystemExit:
            pass  # any status: the report could not be written
        finally:
            monkeypatch.undo()


@pytest.mark.points(3)
@pytest.mark.category("bad_input")
def test_unreadable_file_is_reported_and_the_rest_summarized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing file, a directory or a corrupt gzip is named on stderr, the rest summarized."""
    (tmp_path / "a_directory").mkdir()
    (tmp_path / "corrupt.gz").write_bytes(gzip.compress(b"x\n" * 5000)[:40])
    good = write(tmp_path / "a.log", LOG_A)
    for bad in ("missing.log", "a_directory", "corrupt.gz"):
        code, out, err = run_main(capsys, str(tmp_path / bad), good, "--format", "json")
        assert code == 1, f"exit status {code}, expected 1 when {bad} cannot be read"
        assert bad in err, f"stderr should name {bad}: {err!r}"
        assert as_json(out)["events"] == 2, f"with {bad}, the other file should be summarized"


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("argv", [[], ["--top", "-1"], ["--top", "x"], ["--format", "xml"],
                                  ["--host", ""]],
                         ids=["no_file", "negative_top", "top_not_int", "bad_format", "empty_host"])
def test_bad_usage_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Bad usage exits with status 2 and a message on stderr."""
    files = [write(tmp_path / "a.log", LOG_A)] if argv else []
    # main may return 2 or raise SystemExit(2), as argparse does: run_main takes both.
    code, _, err = run_main(capsys, *files, *argv)
    assert code == 2, f"main({files + argv}) exit status {code}, expected 2"
    assert err.strip(), f"main({files + argv}) should explain the usage error on stderr"
    assert "Traceback" not in err, f"main({files + argv}) printed a traceback:\n{err}"


def test_program_gunzips_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Standard input (-) is gunzipped too when its content is gzip."""
    data = gzip.compress("".join(LOG_A + LOG_B).encode())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(data))))
    code, out, _ = run_main(capsys, "-", "--format", "json")
    obj = as_json(out)
    got = (code, obj["lines"], obj["events"], obj["malformed"])
    assert got == (0, 7, 4, 2), f"(status, lines, events, malformed) {got} of gzipped stdin"


def _reported_then_summarized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str, why: str
) -> dict[str, Any]:
    """The JSON of main([bad, a.log]), after checking that `bad` (in tmp_path) was named on
    stderr without a traceback, a.log summarized, and the status is 1."""
    good = write(tmp_path / "a.log", LOG_A)
    code, out, err = run_main(capsys, str(tmp_path / bad), good, "--format", "json")
    assert code == 1, f"exit status {code}, expected 1 when {bad} {why}"
    assert bad in err and "Traceback" not in err, f"stderr should name {bad}: {err!r}"
    obj = as_json(out)
    assert any(g["host"] == "node-17" for g in obj["actionable"]), "a.log was not summarized"
    return obj


@pytest.mark.category("bad_input")
def test_truncated_gzip_counts_what_was_read_and_reports_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gzip cut short mid-file: the lines read before the cut count, the file is named on
    stderr, the other files are summarized, and the exit status is 1."""
    lines = [xid(f"0000:{i % 200:02x}:00", 13, f", pid={i * 7919 % 100_003}, Ch {i:08x}")
             for i in range(6000)]
    data = gzip.compress("".join(lines).encode())
    (tmp_path / "cut.gz").write_bytes(data[: len(data) // 2])
    obj = _reported_then_summarized(tmp_path, capsys, "cut.gz", "breaks while it is read")
    read = obj["events"] - 2  # a.log holds 2 events
    assert 0 < read < len(lines), (
        f"{read} events came from the first half of cut.gz ({len(lines)} in the whole file): "
        "the lines read before the cut count, and a.log is summarized too")


@pytest.mark.category("bad_input")
def test_gzip_with_corrupt_data_is_reported_and_the_rest_summarized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gzip whose compressed data is corrupt is named on stderr, the rest summarized, status 1."""
    data = gzip.compress(b"NVRM: Xid (PCI:0000:3b:00): 79\n" * 50)
    (tmp_path / "bad.gz").write_bytes(data[:10] + bytes(b ^ 0x55 for b in data[10:30]) + data[30:])
    _reported_then_summarized(tmp_path, capsys, "bad.gz", "holds corrupt deflate data")


def test_program_json_writes_a_missing_host_as_null(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format json writes a GPU without a host (no syslog host, no --host) with host null."""
    path = write(tmp_path / "a.log", [xid("0000:3b:00", 79)])
    code, out, _ = run_main(capsys, path, "--format", "json")
    obj = as_json(out)
    hosts = [g["host"] for g in obj["top_gpus"] + obj["actionable"]]
    assert (code, hosts) == (0, [None, None]), (
        f"(status, hosts of top_gpus and actionable) ({code}, {hosts}); expected (0, [None, None]):"
        " a missing host is null in the JSON")


def test_program_text_report_names_actions_by_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The text report shows each GPU's action by its value (reset_gpu), not its enum name
    (RESET_GPU)."""
    code, out, _ = run_main(capsys, write(tmp_path / "a.log", LOG_A + LOG_B))
    assert code == 0, f"exit status {code}, expected 0"
    rows = [row for row in out.splitlines() if "0000:3b:00" in row]
    assert "RESET_GPU" not in out and "reset_gpu" in out, (
        "the GPU 0000:3b:00 (Xid 79) should read reset_gpu, the action's value (rule 14), not "
        "RESET_GPU, its name; its rows:\n" + "\n".join(rows))


@pytest.mark.category("edge_cases")
def test_program_prints_a_host_with_invalid_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file whose syslog host holds invalid UTF-8 is summarized and its text report printed
    (to a strict UTF-8 stdout), status 0."""
    path = tmp_path / "a.log"
    path.write_bytes(b"Dec  2 10:43:35 n\xffde kernel: NVRM: Xid (PCI:0000:3b:00): 79, x\n")
    try:
        code, out, err = run_main(capsys, str(path))
    except UnicodeError as exc:
        pytest.fail(f"main([{path.name!r}]) raised {type(exc).__name__}: {exc} (decode invalid "
                    "bytes with replacement characters, so every host can be printed)")
    assert (code, "0000:3b:00" in out) == (0, True), (
        f"main([{path.name!r}]): status {code}, expected 0, and a report naming 0000:3b:00:\n"
        f"{out}{err}")
