"""Hidden checks for hang_finder: the rules, the report's shape, scan and the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hang_finder import Finding, Report, find_hang, main, scan
from hang_finder_helpers import Doc, dumps_of, entry, job, report_of, summary, two_rank


def _write(folder: Path, docs: dict[int, Doc]) -> None:
    for r, doc in docs.items():
        (folder / f"nccl_trace_rank_{r}.json").write_text(json.dumps(doc), encoding="utf-8")


@pytest.mark.points(2)
def test_a_healthy_job_has_no_hang() -> None:
    """Every member completed everything it issued: kind no_hang, no findings, no_dump empty."""
    for world, tp in ((2, 1), (8, 2), (8, 8)):
        report = report_of(job(world, tp, 3, buffer=5, sends=True).docs, world)
        assert report == Report("no_hang", (), ()), f"healthy {world}-rank job: got {report}"


def _check_mismatch(fault: str) -> None:
    j = job(8, 2, 2, fault=fault, culprit=3, hang_op=2)
    report = report_of(j.docs, 8)
    got = summary(report)
    want = [("2", (1, 3, 5, 7), 3, "mismatch", (), (3,), ())]
    assert got == want, f"rank 3 issued a different dp collective ({fault}): got {got}"
    assert report.findings[0].op == "nccl:all_reduce", (
        f"Finding.op is {report.findings[0].op!r}: the op most members entered is nccl:all_reduce")


@pytest.mark.points(3)
def test_a_different_op_is_a_mismatch() -> None:
    """A member whose entry at the stuck seq is another op (broadcast for all_reduce) mismatches."""
    _check_mismatch("op")


@pytest.mark.points(6)
def test_other_sizes_or_dtypes_are_a_mismatch() -> None:
    """A member whose entry at the stuck seq has other sizes, or other dtypes, is mismatched."""
    _check_mismatch("sizes")
    _check_mismatch("dtype")


@pytest.mark.points(2)
def test_the_odd_one_out_is_judged_against_the_majority() -> None:
    """The reference signature is the one most members share, even when rank 0 is the odd one."""
    j = job(4, 4, 2, fault="sizes", culprit=0, hang_op=0)
    got = summary(report_of(j.docs, 4))
    want: list[Any] = [("1", (0, 1, 2, 3), 5, "mismatch", (), (0,), ())]
    assert got == want, f"rank 0 alone issued other sizes in tp seq 5: got {got}"
    j = job(4, 2, 2, fault="sizes", culprit=0, hang_op=0)
    got = summary(report_of(j.docs, 4))
    want = [("1", (0, 1), 5, "mismatch", (), (1,), ())]
    assert got == want, f"a 1-1 tie is judged against the lowest rank's signature: got {got}"


@pytest.mark.points(2)
def test_every_stuck_group_gets_a_finding_sorted_by_members() -> None:
    """Faults in different groups give one Finding each, sorted by member ranks then id."""
    a = job(8, 2, 2, fault="missing", culprit=5, hang_op=1).docs
    b = job(8, 2, 2, fault="sizes", culprit=3, hang_op=1).docs
    docs = {r: (a if r in (4, 5) else b)[r] for r in range(8)}
    report = report_of(docs, 8)
    got = summary(report)
    want = [("1", (2, 3), 6, "mismatch", (), (3,), ()),
            ("1", (4, 5), 6, "missing_rank", (5,), (), ())]
    assert got == want, f"tp (2, 3) mismatched, tp (4, 5) missing a rank: got {got}"
    assert report.kind == "missing_rank", f"kind is {report.kind!r}: missing_rank ranks first"


def test_report_kind_ranks_missing_then_mismatch_then_all_entered() -> None:
    """Report.kind is missing_rank if any, else mismatch if any, else all_entered, else no_hang."""
    a = job(8, 2, 2, fault="all_entered", culprit=5, hang_op=1).docs
    b = job(8, 2, 2, fault="dtype", culprit=3, hang_op=1).docs
    report = report_of({r: (a if r in (4, 5) else b)[r] for r in range(8)}, 8)
    assert [f.kind for f in report.findings] == ["mismatch", "all_entered"], summary(report)
    assert report.kind == "mismatch", f"kind is {report.kind!r}, expected mismatch"


def test_the_finding_names_the_group_its_desc_and_op() -> None:
    """A Finding carries the group id, its desc, its members and the op most members entered."""
    j = job(4, 2, 2, fault="missing", culprit=1, hang_op=3)
    (f,) = report_of(j.docs, 4).findings
    want = Finding("0", "default_pg", (0, 1, 2, 3), 3, "missing_rank", "nccl:all_reduce",
                   (1,), (), ())
    assert f == want, f"default group stuck at seq 3 without rank 1: got {f}"


def test_a_group_the_rank_is_not_in_is_ignored() -> None:
    """A pg_config group that does not list the dump's own rank is ignored."""
    stranger = {"0": ("default_pg", [0, 1]), "1": ("tp", [0, 1]), "7": ("other", [5, 6])}
    docs = {r: two_rank({"0": (2, -1, 2), "1": (0, -1, 0), "7": (9, -1, 3)}, [entry(1, 0, 2)],
                        groups=stranger) for r in (0, 1)}
    report = report_of(docs, 2)
    assert report.kind == "no_hang", f"group 7 lists neither rank: got {summary(report)}"


def test_find_hang_reads_its_input_once_as_a_generator() -> None:
    """find_hang accepts a generator of dumps and reads it once."""
    j = job(4, 2, 2, fault="missing", culprit=2, hang_op=0)
    got = summary(find_hang(dumps_of(j.docs), 4))
    assert got == [("1", (2, 3), 5, "missing_rank", (2,), (), ())], got


@pytest.mark.points(2)
def test_scan_reads_a_folder_of_dumps(tmp_path: Path) -> None:
    """scan finds the rank in each file name, infers world_size, and gives find_hang's report."""
    j = job(8, 2, 2, fault="crash", culprit=6, hang_op=2)
    _write(tmp_path, j.docs)
    report = scan(tmp_path)
    want = find_hang(dumps_of(j.docs), 8)
    assert report == want, f"scan of 7 dumps (rank 6 crashed): got {report}, expected {want}"
    report = scan(tmp_path, world_size=10)
    assert report.no_dump == (6, 8, 9), f"scan(world_size=10).no_dump is {report.no_dump}"


@pytest.mark.points(2)
def test_the_command_line_prints_a_paragraph_naming_the_culprit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """python -m hang_finder DIR prints one paragraph naming the group, seq and rank; exit 1."""
    # dp group (1, 3, 5, 7) stuck at its collective 3 without rank 5.
    _write(tmp_path, job(8, 2, 2, fault="missing", culprit=5, hang_op=2).docs)
    code = main([str(tmp_path)])
    out = capsys.readouterr().out.strip()
    assert code == 1, f"exit status {code} for a hang, expected 1"
    assert "\n\n" not in out and out, f"expected one paragraph, got {out!r}"
    for word in ("5", "3", "missing_rank", "dp"):
        assert word in out, f"the paragraph should mention {word!r}: {out!r}"


@pytest.mark.points(2)
def test_the_command_line_json_is_the_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--format json prints the Report as one JSON object (field names as in the dataclasses)."""
    _write(tmp_path, job(4, 2, 2, fault="sizes", culprit=3, hang_op=0).docs)
    code = main([str(tmp_path), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1, f"exit status {code} for a hang, expected 1"
    assert data["kind"] == "mismatch" and data["no_dump"] == [], data
    (f,) = data["findings"]
    got = (f["group"], f["ranks"], f["seq"], f["kind"], f["missing"], f["mismatched"],
           f["no_dump"], f["op"], f["desc"])
    assert got == ("1", [2, 3], 5, "mismatch", [], [3], [], "nccl:all_reduce", "tp"), f
    assert data["unreadable"] == [], data


def test_the_command_line_exits_zero_without_a_hang(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No hang and every dump present: exit status 0."""
    _write(tmp_path, job(4, 2, 2).docs)
    code = main([str(tmp_path), "--world-size", "4"])
    out = capsys.readouterr().out
    assert code == 0, f"exit status {code} for a healthy job, expected 0; printed {out!r}"
