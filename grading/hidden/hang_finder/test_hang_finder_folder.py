"""Hidden checks for hang_finder: what scan makes of a folder (sub-folders, links that lead
nowhere, groups of other ranks), and the command line with a file name or a desc that UTF-8
cannot show, and with several stuck groups."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest
from hang_finder import main, scan
from hang_finder_helpers import Doc, document, entry, job


def _write(folder: Path, docs: dict[int, Doc]) -> None:
    for r, doc in docs.items():
        (folder / f"nccl_trace_rank_{r}.json").write_text(json.dumps(doc), encoding="utf-8")


def test_scan_skips_sub_folders(tmp_path: Path) -> None:
    """scan skips a sub-folder: it is not an unreadable file, and the number in its name
    raises no world_size."""
    _write(tmp_path, job(2, 1, 1).docs)
    old = tmp_path / "old_3"
    old.mkdir()
    (old / "nccl_trace_rank_3.json").write_text("{", encoding="utf-8")
    report = scan(tmp_path)
    got = (report.kind, report.no_dump, [name for name, _ in report.unreadable])
    assert got == ("no_hang", (), []), (
        f"scan of a healthy 2-rank job's dumps beside a sub-folder old_3/: kind, no_dump, "
        f"unreadable names = {got}, expected ('no_hang', (), []) (scan skips sub-folders)")


def test_scan_infers_world_size_from_groups_that_leave_out_the_files_rank(
        tmp_path: Path) -> None:
    """scan's default world_size counts every group in a dump's pg_config, also one that does
    not list that dump's own rank."""
    docs = job(2, 1, 1).docs
    docs[1]["pg_config"]["7"] = {"name": "7", "desc": "pp", "ranks": "[4, 5]"}
    _write(tmp_path, docs)
    report = scan(tmp_path)
    got = (report.kind, report.no_dump)
    assert got == ("missing_rank", (2, 3, 4, 5)), (
        f"rank 1's pg_config also lists group 7 of ranks [4, 5] (rule 2 ignores it on rank 1): "
        f"scan's kind, no_dump = {got}, expected ('missing_rank', (2, 3, 4, 5)) (world_size is "
        f"one more than the highest rank in any group)")


@pytest.mark.category("bad_input")
def test_scan_never_raises_for_a_link_that_leads_nowhere(tmp_path: Path) -> None:
    """A dangling link in the folder is skipped or listed in unreadable; scan never raises for
    it."""
    _write(tmp_path, {0: job(2, 1, 1).docs[0]})
    try:
        os.symlink(tmp_path / "gone", tmp_path / "nccl_trace_rank_1.json")
    except (OSError, NotImplementedError):
        pytest.skip("this file system makes no symbolic links")
    try:
        report = scan(tmp_path, 2)
    except OSError as err:
        pytest.fail(f"scan raised {type(err).__name__} for a link that leads nowhere: {err}")
    assert report.no_dump == (1,), (
        f"rank 0's dump beside nccl_trace_rank_1.json, a link to a file that does not exist, "
        f"world_size 2: no_dump is {report.no_dump}, expected (1,)")
    names = [name for name, _ in report.unreadable]
    assert names in ([], ["nccl_trace_rank_1.json"]), (
        f"unreadable lists {names}: only the link may be there")


def _main_beside_a_name_not_utf8(folder: Path, monkeypatch: pytest.MonkeyPatch,
                                 options: list[str]) -> tuple[int, str]:
    """main's exit status and stdout for a healthy 2-rank job beside an unreadable
    trace_2\\xff.json, printed to a strict UTF-8 stdout (skips where the name is refused)."""
    _write(folder, job(2, 1, 1).docs)
    try:
        with open(os.path.join(os.fsencode(folder), b"trace_2\xff.json"), "wb") as f:
            f.write(b"\x00\xff garbage")
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses a file name that is not UTF-8")
    out = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="utf-8", errors="strict"))
    argv = [str(folder), *options]
    try:
        code = main(argv)
        sys.stdout.flush()
    except UnicodeEncodeError as err:
        pytest.fail(f"main({argv}) raised UnicodeEncodeError printing the report: {err}")
    return code, out.getvalue().decode("utf-8")


def test_the_command_line_prints_a_file_name_that_is_not_utf8(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder holding a file whose name is not UTF-8 still gets its paragraph (the name shown
    escaped, say): main does not crash printing it to a UTF-8 stdout."""
    code, text = _main_beside_a_name_not_utf8(tmp_path, monkeypatch, [])
    assert code == 1 and "trace_2" in text, (
        f"a folder with an unreadable trace_2\\xff.json: exit {code}, printed {text!r}; expected "
        f"exit 1 and a paragraph naming the file")


def test_the_command_line_json_shows_a_file_name_that_is_not_utf8(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--format json of a folder holding a file whose name is not UTF-8 prints one JSON object
    (the name escaped) to a UTF-8 stdout, never a traceback."""
    code, text = _main_beside_a_name_not_utf8(tmp_path, monkeypatch, ["--format", "json"])
    try:
        data = json.loads(text)
    except ValueError:
        pytest.fail(f"main(--format json) printed {text!r}: not one JSON object")
    files = [bad.get("file", "") for bad in data.get("unreadable", [])]
    assert code == 1 and len(files) == 1 and files[0].startswith("trace_2"), (
        f"a folder with an unreadable trace_2\\xff.json: exit {code}, unreadable {files}; "
        f"expected exit 1 and that one file listed")


def test_scan_reads_a_file_whose_name_starts_with_a_dot(tmp_path: Path) -> None:
    """scan reads every file, a hidden one too: .nccl_trace_rank_1 is rank 1's dump."""
    docs = job(2, 1, 1).docs
    (tmp_path / "nccl_trace_rank_0").write_text(json.dumps(docs[0]), encoding="utf-8")
    (tmp_path / ".nccl_trace_rank_1").write_text(json.dumps(docs[1]), encoding="utf-8")
    report = scan(tmp_path, 2)
    got = (report.kind, report.no_dump)
    assert got == ("no_hang", ()), (
        f"a healthy 2-rank job whose rank 1 dump is .nccl_trace_rank_1: kind, no_dump = {got}, "
        f"expected ('no_hang', ()) (rule 12: scan reads every file in the folder)")


@pytest.mark.category("bad_input")
def test_a_broken_file_named_like_a_readable_dump_is_unreadable_not_a_duplicate(
        tmp_path: Path) -> None:
    """A broken leftover whose name gives the rank of a readable dump (rank_1.json.bak beside
    rank_1.json) is listed in unreadable: only two readable files of one rank make scan raise."""
    docs = job(2, 1, 1).docs
    for r, doc in docs.items():
        (tmp_path / f"rank_{r}.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "rank_1.json.bak").write_text('{"vers', encoding="utf-8")
    try:
        report = scan(tmp_path)
    except ValueError as err:
        pytest.fail(f"rank_0.json, rank_1.json and a cut-short rank_1.json.bak: scan raised "
                    f"ValueError ({err}); expected rank_1.json.bak listed in unreadable")
    got = (report.kind, [name for name, _ in report.unreadable])
    assert got == ("no_hang", ["rank_1.json.bak"]), (
        f"rank_0.json, rank_1.json and a cut-short rank_1.json.bak: kind, unreadable names = "
        f"{got}, expected ('no_hang', ['rank_1.json.bak'])")


def test_the_command_line_exits_0_for_no_hang_beside_an_unreadable_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A healthy job's dumps beside a stray README.txt: the report is no_hang, so main exits 0
    (rule 13), whatever it says about the file it could not read."""
    _write(tmp_path, job(2, 1, 1).docs)
    (tmp_path / "README.txt").write_text("dumps of job A\n", encoding="utf-8")
    for argv in ([str(tmp_path)], [str(tmp_path), "--format", "json"]):
        code = main(argv)
        capsys.readouterr()
        assert code == 0, (
            f"main({argv}) over a healthy 2-rank job and a stray README.txt returned {code}, "
            f"expected 0: the report's kind is no_hang (rule 13)")


def _two_stuck_groups(folder: Path, desc: str = "tp") -> None:
    """Ranks 0 and 1 both wait in group 0 (seq 2) and in group 1 (seq 5): two Findings."""
    for r in range(2):
        doc = document({"0": ("default_pg", [0, 1]), "1": (desc, [0, 1])},
                       {"0": (2, -1, 1), "1": (5, -1, 4)},
                       [entry(0, 0, 2, state="scheduled"),
                        entry(1, 1, 5, state="scheduled", desc=desc)])
        (folder / f"nccl_trace_rank_{r}.json").write_text(json.dumps(doc), encoding="utf-8")


def test_the_command_line_prints_one_paragraph_for_several_stuck_groups(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two stuck groups still get one paragraph: no blank line between their sentences."""
    _two_stuck_groups(tmp_path)
    code = main([str(tmp_path)])
    out = capsys.readouterr().out.strip()
    blank = [i for i, line in enumerate(out.splitlines()) if not line.strip()]
    assert code == 1 and out and not blank, (
        f"two stuck groups (0 and 1, ranks 0 and 1): exit {code}, printed {out!r}; expected "
        f"exit 1 and one paragraph (rule 13), no blank line in it")


def test_the_command_line_prints_a_desc_that_utf8_cannot_encode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A group desc holding a lone surrogate (JSON "\\ud800") still gets its paragraph on a
    strict UTF-8 stdout (the character escaped, say), in both formats, never a traceback."""
    _two_stuck_groups(tmp_path, desc="tp\ud800")
    for options in ([], ["--format", "json"]):
        out = io.BytesIO()
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="utf-8",
                                                            errors="strict"))
        argv = [str(tmp_path), *options]
        try:
            code = main(argv)
            sys.stdout.flush()
        except UnicodeEncodeError as err:
            pytest.fail(f"main({argv}) raised UnicodeEncodeError printing a group whose desc is "
                        f"'tp\\ud800': {err}")
        text = out.getvalue().decode("utf-8")
        assert code == 1 and "tp" in text, (
            f"main({argv}), a stuck group whose desc is 'tp\\ud800': exit {code}, printed "
            f"{text!r}; expected exit 1 and the report naming it")


def test_the_command_line_escapes_a_desc_an_ascii_stdout_cannot_show(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A group desc "café" still gets its paragraph on a strict ASCII stdout (LANG=C, say): main
    escapes what stdout cannot show, in both formats, never a traceback."""
    _two_stuck_groups(tmp_path, desc="caf\u00e9")
    for options in ([], ["--format", "json"]):
        out = io.BytesIO()
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="ascii",
                                                            errors="strict"))
        argv = [str(tmp_path), *options]
        try:
            code = main(argv)
            sys.stdout.flush()
        except UnicodeEncodeError as err:
            pytest.fail(f"main({argv}) raised UnicodeEncodeError printing a group whose desc is "
                        f"'caf\\u00e9' to an ASCII stdout: {err}")
        text = out.getvalue().decode("ascii", errors="backslashreplace")
        assert code == 1 and "caf" in text, (
            f"main({argv}), a stuck group whose desc is 'caf\\u00e9', ASCII stdout: exit {code}, "
            f"printed {text!r}; expected exit 1 and the report naming it")
