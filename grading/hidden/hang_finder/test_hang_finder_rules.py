"""Hidden checks for hang_finder: the rules, the report's shape, scan and the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hang_finder import Finding, Report, find_hang, main, scan
from hang_finder_helpers import (
    Doc,
    document,
    dumps_of,
    entry,
    job,
    report_of,
    summary,
    two_rank,
)


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
    for word in ("5", "3", "missing_rank", "dp", "nccl:all_reduce"):
        assert word in out, f"the paragraph should mention {word!r}: {out!r}"
    assert not out.startswith(("{", "[")), f"the text format is a paragraph, not JSON: {out!r}"
    cases = [("sizes", 3, "mismatch"), ("crash", 6, "missing_rank"), ("all_entered", 1, "")]
    for fault, culprit, kind in cases:
        for path in tmp_path.iterdir():
            path.unlink()
        _write(tmp_path, job(8, 2, 2, fault=fault, culprit=culprit, hang_op=2).docs)
        code = main([str(tmp_path), "--format", "text"])
        out = capsys.readouterr().out.strip()
        assert code == 1, f"exit status {code} for a hang ({fault}), expected 1"
        for word in ("dp", kind or fault, str(culprit) if kind else "3"):
            assert word in out, f"{fault}: the paragraph should mention {word!r}: {out!r}"


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
    (tmp_path / "trace_9.json").write_text("{", encoding="utf-8")
    main([str(tmp_path), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"kind", "findings", "no_dump", "unreadable"}, sorted(data)
    (bad,) = data["unreadable"]
    assert set(bad) == {"file", "reason"} and bad["file"] == "trace_9.json", bad
    assert isinstance(bad["reason"], str) and bad["reason"], bad


def test_the_command_line_exits_zero_without_a_hang(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No hang and every dump present: exit status 0."""
    _write(tmp_path, job(4, 2, 2).docs)
    code = main([str(tmp_path), "--world-size", "4"])
    out = capsys.readouterr().out
    assert code == 0, f"exit status {code} for a healthy job, expected 0; printed {out!r}"
    assert out.strip(), "a healthy job still gets one paragraph saying so"
    code = main([str(tmp_path), "--world-size", "6"])
    out = capsys.readouterr().out
    assert code == 1, f"--world-size 6 with dumps of ranks 0-3: exit {code}, expected 1: {out!r}"


def test_entries_newer_than_pg_status_count_and_completed_sends_do_not() -> None:
    """A rank's newest and completed seq take its entries into account when pg_status lags;
    a completed send/recv repeating a seq does not complete that collective."""
    def rank(status: tuple[int, int, int], entries: list[Doc]) -> Doc:
        send = entry(20, 0, 6, name="nccl:send", p2p=True, p2p_seq=2, sizes=[[64]])
        return two_rank({"0": status, "1": (0, -1, 0)}, [*entries, send])

    docs = {0: rank((4, -1, 4), [entry(5, 0, 4), entry(6, 0, 4, name="nccl:recv", p2p=True,
                                                        p2p_seq=1, sizes=[[64]]),
                                 entry(7, 0, 5), entry(8, 0, 6, state="scheduled")]),
            1: rank((6, -1, 5), [entry(7, 0, 5), entry(8, 0, 6, state="scheduled")])}
    got = summary(report_of(docs, 2))
    want: list[Any] = [("0", (0, 1), 6, "all_entered", (), (), ())]
    assert got == want, f"rank 0's pg_status says 4, 4 but its entries reach 6 (5 done): {got}"


def test_a_group_missing_from_pg_status_is_judged_by_its_entries() -> None:
    """A pg_config group without a pg_status item counts as -1 there: only its entries count."""
    docs = {0: two_rank({"0": (3, -1, 3)}, [entry(4, 1, 1, state="scheduled", desc="tp")]),
            1: two_rank({"0": (3, -1, 3)}, [])}
    got = summary(report_of(docs, 2))
    want: list[Any] = [("1", (0, 1), 1, "missing_rank", (1,), (), ())]
    assert got == want, f"group '1' has no pg_status; rank 0 entered its seq 1, rank 1 not: {got}"


def test_a_rank_that_completed_seq_is_not_compared_and_op_is_empty_without_entries() -> None:
    """A member that completed seq is neither missing nor mismatched; op is "" with no entry."""
    group = {"0": ("default_pg", [0, 1, 2])}
    # Rank 0 completed seq 6 by its pg_status, whether or not its entry there says so yet.
    for state in ("completed", "scheduled"):
        docs = {0: document(group, {"0": (6, -1, 6)}, [entry(9, 0, 6, sizes=[[8]], state=state)])}
        for r in (1, 2):
            docs[r] = document(group, {"0": (6, -1, 5)}, [entry(9, 0, 6, state="scheduled")])
        (f,) = report_of(docs, 3).findings
        assert (f.seq, f.kind, f.mismatched, f.op) == (6, "all_entered", (), "nccl:all_reduce"), (
            f"rank 0 completed seq 6 (pg_status), its entry there {state}: {f}")
    rotated = {r: two_rank({"0": (5, -1, 4), "1": (0, -1, 0)}, []) for r in (0, 1)}
    (f,) = report_of(rotated, 2).findings
    assert (f.seq, f.kind, f.op) == (5, "all_entered", ""), f"no entry at seq 5 is left: {f}"


def test_findings_are_sorted_by_members_then_id_whatever_the_config_order() -> None:
    """Findings sort by member ranks, then by id, not by id or by pg_config order."""
    def rank(cfg: dict[str, tuple[str, list[int]]], lagging: str = "") -> Doc:
        return document(cfg, {pg: (0 if pg == lagging else 1, -1, 0) for pg in cfg},
                        [entry(i, int(pg), 1, state="scheduled") for i, pg in enumerate(cfg)
                         if pg != lagging])

    both = {"1": ("tp", [0, 1]), "0": ("default_pg", [0, 1])}
    # Rank 1 lists first a group it is not in, then has not entered tp seq 1.
    docs = {0: rank({"2": ("solo", [0]), **both}),
            1: rank({"7": ("stranger", [5]), **both}, lagging="1")}
    got = summary(report_of(docs, 2))
    want = [("2", (0,), 1, "all_entered", (), (), ()),
            ("0", (0, 1), 1, "all_entered", (), (), ()),
            ("1", (0, 1), 1, "missing_rank", (1,), (), ())]
    assert got == want, f"three stuck groups: got {got}, expected {want}"


def test_one_rank_world_and_scan_infers_world_size(tmp_path: Path) -> None:
    """world_size 1 is valid; scan infers it from file names (readable or not) and groups, and
    checks only a readable dump's rank against it."""
    one = job(1, 1, 2).docs
    assert find_hang(dumps_of(one), 1) == Report("no_hang", (), ()), "a 1-rank healthy job"
    _write(tmp_path, one)
    (tmp_path / "README.txt").write_text("dumps of job 7\n", encoding="utf-8")
    for world in (None, 1):
        report = scan(tmp_path, world)
        assert (report.kind, report.no_dump) == ("no_hang", ()), f"1 rank, world {world}: {report}"
        assert [n for n, _ in report.unreadable] == ["README.txt"], report.unreadable
    (tmp_path / "README.txt").unlink()
    (tmp_path / "corrupt_rank_7.json").write_text("{", encoding="utf-8")
    assert scan(tmp_path).no_dump == tuple(range(1, 8)), "an unreadable rank-7 file: world 8"
    report = scan(tmp_path, 1)  # only a readable dump's rank is checked against world_size
    assert (report.no_dump, [n for n, _ in report.unreadable]) == ((), ["corrupt_rank_7.json"]), (
        f"scan(world_size=1) of rank 0's dump and an unreadable corrupt_rank_7.json: {report}")
    for path in tmp_path.iterdir():
        path.unlink()
    _write(tmp_path, job(2, 1, 1).docs)
    (tmp_path / "nccl_trace_rank_3.json").write_text(json.dumps(document({}, {}, [])),
                                                   encoding="utf-8")
    assert scan(tmp_path).no_dump == (2,), "rank 3's file (no groups) makes world_size 4"
    for path in tmp_path.iterdir():
        path.unlink()
    j = job(4, 2, 2, fault="crash", culprit=3, hang_op=2)
    _write(tmp_path, j.docs)
    assert scan(tmp_path) == find_hang(dumps_of(j.docs), 4), "rank 3 crashed: groups name it"


def _default4(status: tuple[int, int, int], entries: list[Doc]) -> Doc:
    return document({"0": ("default_pg", [0, 1, 2, 3])}, {"0": status}, entries)


def test_only_members_still_in_seq_vote_for_the_reference() -> None:
    """Members that completed seq do not vote for the reference signature: only those still in
    it do (three completed 12 with [[3, 4]], one sits in it with [[4, 5]]: all_entered)."""
    done = [entry(10, 0, 11, sizes=[[3, 4]]), entry(11, 0, 12, sizes=[[3, 4]])]
    docs = {r: _default4((12, -1, 12), done) for r in range(3)}
    docs[3] = _default4((12, -1, 11), [entry(10, 0, 11, sizes=[[3, 4]]),
                                       entry(11, 0, 12, sizes=[[4, 5]], state="scheduled")])
    (f,) = report_of(docs, 4).findings
    got = (f.seq, f.kind, f.op, f.missing, f.mismatched)
    want = (12, "all_entered", "nccl:all_reduce", (), ())
    assert got == want, (
        f"ranks 0-2 completed seq 12 with [[3, 4]], rank 3 sits in it with [[4, 5]]: seq, kind, "
        f"op, missing, mismatched = {got}, expected {want} (rank 3 alone is still in seq 12, "
        f"so its signature is the reference)")


def test_nothing_completed_yet_means_seq_1() -> None:
    """-1 in pg_status ("none yet") counts as 0: a group where nothing completed is at seq 1."""
    docs = {0: two_rank({"0": (1, -1, -1), "1": (-1, -1, -1)},
                        [entry(0, 0, 1, state="scheduled")]),
            1: two_rank({"0": (-1, -1, -1), "1": (-1, -1, -1)}, [])}
    got = summary(report_of(docs, 2))
    want: list[Any] = [("0", (0, 1), 1, "missing_rank", (1,), (), ())]
    assert got == want, (
        f"rank 0 entered seq 1 of group 0, rank 1 nothing, neither completed anything (-1): "
        f"got {got}, expected {want}")


def test_a_member_whose_dump_does_not_list_the_group_is_missing() -> None:
    """A member whose dump does not list the group issued nothing in it: it is missing, and seq
    comes from the members that list the group."""
    waiting = [entry(10, 0, 11), entry(11, 0, 12, state="scheduled")]
    docs = {r: _default4((12, -1, 11), waiting) for r in range(3)}
    docs[3] = document({"5": ("solo", [3])}, {"5": (4, -1, 4)}, [entry(3, 5, 4, desc="solo")])
    report = report_of(docs, 4)
    got = summary(report)
    want: list[Any] = [("0", (0, 1, 2, 3), 12, "missing_rank", (3,), (), ())]
    assert got == want, (
        f"ranks 0-2 wait in seq 12 of group 0 [0, 1, 2, 3]; rank 3's dump lists only its own "
        f"group 5: got {got}, expected {want}")
    assert (report.kind, report.no_dump) == ("missing_rank", ()), (
        f"rank 3 left a dump: Report kind, no_dump = {report.kind!r}, {report.no_dump}")


def test_findings_with_the_same_members_sort_by_id_as_a_string() -> None:
    """Findings of groups with the same members sort by id as a string: "10", "2", "9"."""
    cfg = {pg: (f"pg{pg}", [0, 1]) for pg in ("9", "10", "2")}
    docs = {r: document(cfg, {pg: (1, -1, 0) for pg in cfg},
                        [entry(i, int(pg), 1, state="scheduled", desc=f"pg{pg}")
                         for i, pg in enumerate(cfg)]) for r in (0, 1)}
    got = [f.group for f in report_of(docs, 2).findings]
    assert got == ["10", "2", "9"], (
        f"groups 9, 10 and 2 of ranks 0 and 1 are all stuck: findings in order {got}, expected "
        f"['10', '2', '9'] (ids compare as strings)")


def test_scan_of_an_empty_folder_reports_rank_0_without_a_dump(tmp_path: Path) -> None:
    """scan of an empty folder infers world_size 1: rank 0 left no dump (missing_rank)."""
    got = scan(tmp_path)
    assert got == Report("missing_rank", (), (0,)), (
        f"scan(empty folder) returned {got}, expected Report('missing_rank', (), (0,))")
    got = scan(tmp_path, 3)
    assert (got.kind, got.no_dump) == ("missing_rank", (0, 1, 2)), (
        f"scan(empty folder, world_size=3) returned {got}: ranks 0-2 have no dump")


def test_a_member_that_completed_seq_makes_the_group_stuck_for_the_members_behind() -> None:
    """A group is stuck when some member's newest seq reaches seq, even if that member completed
    it: rank 0 completed 12 while rank 1 stopped at 11, so rank 1 is missing at 12."""
    group = {"0": ("default_pg", [0, 1])}
    docs = {0: document(group, {"0": (12, -1, 12)}, [entry(11, 0, 12)]),
            1: document(group, {"0": (11, -1, 11)}, [entry(10, 0, 11)])}
    got = summary(report_of(docs, 2))
    want: list[Any] = [("0", (0, 1), 12, "missing_rank", (1,), (), ())]
    assert got == want, (
        f"rank 0 issued and completed seq 12, rank 1 stopped at 11 (nothing in flight on either "
        f"rank): got {got}, expected {want} (rule 6: stuck when a member's newest reaches seq)")


@pytest.mark.points(2)
@pytest.mark.parametrize("field", ["output_sizes", "output_dtypes"])
def test_other_output_sizes_or_output_dtypes_are_a_mismatch(field: str) -> None:
    """A member whose entry at the stuck seq differs only in output_sizes, or only in
    output_dtypes, is mismatched."""
    wrong: dict[str, Any] = {"output_sizes": [[4096, 4096]], "output_dtypes": ["BFloat16"]}
    j = job(8, 2, 2, fault="all_entered", culprit=3, hang_op=2)
    last = j.docs[3]["entries"][-1]
    assert last["state"] == "scheduled" and last["collective_seq_id"] == 3, last
    last[field] = wrong[field]
    got = summary(report_of(j.docs, 8))
    want: list[Any] = [("2", (1, 3, 5, 7), 3, "mismatch", (), (3,), ())]
    assert got == want, (
        f"rank 3's entry at dp seq 3 has {field} {wrong[field]}, its peers' the same as their "
        f"inputs: got {got}, expected {want} (rule 8 compares outputs too)")



def test_a_completed_entry_newer_than_pg_status_means_the_rank_reached_it() -> None:
    """A rank whose pg_status lags (11, 11) but whose entry shows collective 12 completed reached
    12: it is not missing there (rule 3: newest counts every entry, completed ones too)."""
    cfg = {"0": ("default_pg", [0, 1, 2])}
    docs = {0: document(cfg, {"0": (11, -1, 11)}, [entry(5, 0, 11), entry(6, 0, 12)])}
    for r in (1, 2):
        docs[r] = document(cfg, {"0": (12, -1, 11)},
                           [entry(5, 0, 11), entry(6, 0, 12, state="scheduled")])
    got = summary(report_of(docs, 3))
    want: list[Any] = [("0", (0, 1, 2), 12, "all_entered", (), (), ())]
    assert got == want, (
        f"rank 0's pg_status says 11, 11 but its entry shows 12 completed; ranks 1 and 2 sit in "
        f"12: findings {got}, expected {want} (rank 0 reached 12, so it is not missing)")


def test_a_finding_names_the_group_by_its_id_not_its_name() -> None:
    """Finding.group is the group's pg_config id ("3"), not its name ("my_tp")."""
    cfg = {"3": {"name": "my_tp", "desc": "tp", "ranks": "[0, 1]"}}
    docs = {}
    for r, (status, state) in enumerate((((2, -1, 1), "scheduled"), ((1, -1, 1), ""))):
        rows = [entry(0, 3, 1, desc="tp")]
        if state:
            rows.append(entry(1, 3, 2, state=state, desc="tp"))
        docs[r] = {"version": "2.9", "pg_config": cfg, "entries": rows,
                   "pg_status": {"3": dict(zip(("last_enqueued_collective",
                                                "last_started_collective",
                                                "last_completed_collective"), status,
                                               strict=True))}}
    got = [(f.group, f.desc, f.missing) for f in report_of(docs, 2).findings]
    assert got == [("3", "tp", (1,))], (
        f"group id '3' named 'my_tp', rank 1 never entered its collective 2: findings (group, "
        f"desc, missing) = {got}, expected [('3', 'tp', (1,))] (group is the id)")


def test_op_is_empty_when_only_members_that_completed_seq_hold_its_entry() -> None:
    """op is "" when no member still in seq holds its entry there, even if members that
    completed seq still do: they make no reference."""
    group = {"0": ("default_pg", [0, 1, 2])}
    docs = {r: document(group, {"0": (6, -1, 6)}, [entry(9, 0, 6)]) for r in (0, 1)}
    docs[2] = document(group, {"0": (6, -1, 5)}, [])  # its entry at 6 rotated out
    (f,) = report_of(docs, 3).findings
    assert (f.seq, f.kind, f.op) == (6, "all_entered", ""), (
        f"ranks 0 and 1 completed 6 (entries kept), rank 2 sits in 6 with no entry left: seq, "
        f"kind, op = {(f.seq, f.kind, f.op)}, expected (6, 'all_entered', '') (rule 8)")
