"""Hidden checks for hang_finder: the six traps, one named check (or more) each."""

from __future__ import annotations

from typing import Any

import pytest
from hang_finder import Entry, GroupInfo, GroupStatus, RankDump, find_hang
from hang_finder_helpers import Doc, document, entry, job, report_of, summary, two_rank


@pytest.mark.points(3)
def test_a_rank_whose_entries_fell_off_the_buffer_is_judged_by_pg_status() -> None:
    """Ring buffer: a rank with no entry left in a group is judged by pg_status, not by absence."""
    # Hang in the dp group; with 2 entries kept, rank 5 holds no dp entry at all (only tp).
    j = job(8, 2, 3, fault="missing", culprit=5, hang_op=2, buffer=2)
    got = summary(report_of(j.docs, 8))
    want = [("2", (1, 3, 5, 7), 4, "missing_rank", (5,), (), ())]
    assert got == want, f"dp hang at seq 4, rank 5 missing, 2-entry buffers: got {got}"


@pytest.mark.points(3)
def test_a_rank_whose_stuck_entry_fell_off_the_buffer_is_not_missing() -> None:
    """Ring buffer: a rank whose newest record reached the stuck seq has entered it."""
    waiting = entry(40, 0, 5, state="scheduled")
    newer = [entry(41 + i, 1, i + 1, name="nccl:_allgather_base") for i in range(3)]
    docs = {
        0: two_rank({"0": (5, -1, 4), "1": (3, -1, 3)}, [waiting, *newer]),
        # Rank 1 kept 3 entries: its seq-5 entry in group 0 fell off; pg_status still has it.
        1: two_rank({"0": (5, -1, 4), "1": (3, -1, 3)}, newer),
    }
    report = report_of(docs, 2)
    got = summary(report)
    want = [("0", (0, 1), 5, "all_entered", (), (), ())]
    assert got == want, f"both ranks enqueued seq 5 of group 0 (rank 1's entry rotated out): {got}"


@pytest.mark.points(2)
def test_a_group_whose_old_entries_fell_off_every_buffer_is_not_stuck() -> None:
    """Ring buffer: a group with no entries left anywhere but complete in pg_status is idle."""
    j = job(4, 2, 3, fault="missing", culprit=3, hang_op=1, buffer=1)
    got = summary(report_of(j.docs, 4))
    want = [("1", (2, 3), 8, "missing_rank", (3,), (), ())]
    assert got == want, f"only tp group (2, 3) is stuck, at seq 8; 1-entry buffers: got {got}"


@pytest.mark.points(3)
def test_sequence_numbers_are_per_group_not_record_ids() -> None:
    """collective_seq_id counts per process group; record_id (per rank) aligns nothing."""
    j = job(8, 4, 2, fault="missing", culprit=6, hang_op=2)
    got = summary(report_of(j.docs, 8))
    want = [("2", (2, 6), 3, "missing_rank", (6,), (), ())]
    assert got == want, f"dp group (2, 6) stuck at its 3rd collective (record ids differ): {got}"
    healthy = summary(report_of(job(8, 4, 3).docs, 8))
    assert healthy == [], f"a healthy 3-group job must show no stuck group, got {healthy}"


@pytest.mark.points(3)
def test_groups_with_one_id_but_different_members_are_different_groups() -> None:
    """A group is its id and its members: tp groups [0,1] and [4,5] may both be id "1"."""
    j = job(8, 2, 3, fault="missing", culprit=5, hang_op=1)
    got = summary(report_of(j.docs, 8))
    want: list[Any] = [("1", (4, 5), 8, "missing_rank", (5,), (), ())]
    assert got == want, f"only tp group (4, 5) (id '1', like every tp group) is stuck: got {got}"
    # tp = world: group "1" has the same members as the default group "0"; still two groups.
    j = job(4, 4, 2, fault="missing", culprit=2, hang_op=3)
    got = summary(report_of(j.docs, 4))
    want = [("0", (0, 1, 2, 3), 3, "missing_rank", (2,), (), ())]
    assert got == want, f"default group stuck at seq 3; tp group '1' (same ranks) idle: got {got}"


@pytest.mark.points(3)
def test_a_member_with_no_dump_makes_the_group_missing_rank() -> None:
    """A stuck group's member with no dump is a finding (missing_rank), never skipped."""
    j = job(8, 2, 3, fault="crash", culprit=5, hang_op=2)
    report = report_of(j.docs, 8)
    got = summary(report)
    want = [("2", (1, 3, 5, 7), 4, "missing_rank", (), (), (5,))]
    assert got == want, f"rank 5 crashed (no dump) while dp peers wait at seq 4: got {got}"
    assert report.no_dump == (5,), f"Report.no_dump is {report.no_dump}, expected (5,)"
    assert report.kind == "missing_rank", f"Report.kind is {report.kind!r}, expected missing_rank"


@pytest.mark.points(2)
def test_a_missing_dump_alone_makes_the_report_missing_rank() -> None:
    """With no stuck group, a rank in range(world_size) without a dump still makes missing_rank."""
    docs = job(4, 2, 2).docs
    del docs[3]
    report = report_of(docs, 4)
    assert report.no_dump == (3,), f"Report.no_dump is {report.no_dump}, expected (3,)"
    assert report.kind == "missing_rank", f"Report.kind is {report.kind!r}, expected missing_rank"
    report = report_of(job(4, 2, 2).docs, 6)
    assert report.no_dump == (4, 5), f"world_size 6, dumps 0-3: no_dump is {report.no_dump}"


@pytest.mark.points(3)
def test_send_and_recv_are_not_collectives() -> None:
    """A send/recv (is_p2p) that repeats the stuck collective's seq is not a second op there."""
    def rank(name: str) -> Doc:
        return two_rank({"0": (6, -1, 5), "1": (0, -1, 0)}, [
            entry(9, 0, 5), entry(10, 0, 6, state="scheduled"),
            entry(11, 0, 6, name=name, p2p=True, p2p_seq=3, state="scheduled",
                  sizes=[[64]])])

    got = summary(report_of({0: rank("nccl:send"), 1: rank("nccl:recv")}, 2))
    want: list[Any] = [("0", (0, 1), 6, "all_entered", (), (), ())]
    assert got == want, f"both ranks entered all_reduce seq 6, then a send/recv: got {got}"
    j = job(8, 2, 3, fault="missing", culprit=4, hang_op=0, sends=True, buffer=3)
    got = summary(report_of(j.docs, 8))
    want = [("1", (4, 5), 7, "missing_rank", (4,), (), ())]
    assert got == want, f"tp pipeline with sends, rank 4 missing at seq 7: got {got}"


@pytest.mark.points(3)
def test_a_scheduled_entry_counts_as_entered() -> None:
    """scheduled (enqueued, not started) still entered: all scheduled, none done is all_entered."""
    for timing in (False, True):
        j = job(8, 2, 2, fault="all_entered", culprit=3, hang_op=2, timing=timing)
        got = summary(report_of(j.docs, 8))
        want: list[Any] = [("2", (1, 3, 5, 7), 3, "all_entered", (), (), ())]
        state = "started" if timing else "scheduled"
        assert got == want, f"every dp member's seq-3 entry is {state}: got {got}"
    mixed = {r: two_rank({"0": (4, 4 if r == 0 else -1, 3), "1": (0, -1, 0)},
                         [entry(7, 0, 4, state="started" if r == 0 else "scheduled")])
             for r in (0, 1)}
    got = summary(report_of(mixed, 2))
    want = [("0", (0, 1), 4, "all_entered", (), (), ())]
    assert got == want, f"rank 0 started seq 4, rank 1 only scheduled it: got {got}"


@pytest.mark.points(2)
def test_a_member_whose_own_group_of_that_id_has_other_members_is_missing() -> None:
    """A member whose dump lists the group's id only for another group (other members) does not
    list this group: it is missing from it (a group is its id and its members)."""
    docs = {0: document({"1": ("tp", [0, 1])}, {"1": (1, -1, -1)},
                        [entry(0, 1, 1, state="scheduled", desc="tp")]),
            # Rank 1's own group "1" is [1] alone: another group, though the id is the same.
            1: document({"1": ("tp", [1])}, {"1": (-1, -1, -1)}, [])}
    got = summary(report_of(docs, 2))
    want: list[Any] = [("1", (0, 1), 1, "missing_rank", (1,), (), ())]
    assert got == want, (
        f"rank 0 waits in seq 1 of group '1' [0, 1]; rank 1's dump lists a group '1' of [1] "
        f"alone, not [0, 1]: got {got}, expected {want}")


def test_a_member_that_left_a_dump_without_the_group_is_not_in_its_no_dump() -> None:
    """A member whose dump does not list a stuck group left a dump all the same: it is not in
    the Finding's no_dump (nor the Report's)."""
    docs = {0: document({"0": ("default_pg", [0, 1])}, {"0": (2, -1, 1)},
                        [entry(0, 0, 1), entry(1, 0, 2, state="scheduled")]),
            1: document({"5": ("solo", [1])}, {"5": (3, -1, 3)}, [entry(2, 5, 3, desc="solo")])}
    report = report_of(docs, 2)
    got = [(f.group, f.no_dump) for f in report.findings]
    assert got == [("0", ())] and report.no_dump == (), (
        f"rank 0 waits in seq 2 of group 0 [0, 1]; rank 1 left a dump listing only its group 5: "
        f"findings' (group, no_dump) {got}, Report.no_dump {report.no_dump}; expected "
        f"[('0', ())] and ()")


def _shared_dumps(order: list[int]) -> list[RankDump]:
    """Four dumps built in Python that share one GroupInfo per group, and one members tuple
    between groups "0" and "1": group 0 waits at seq 12 for rank 3; in group 1 every rank sits
    in seq 3 and rank 1 has other sizes."""
    members = (0, 1, 2, 3)
    groups = {"0": GroupInfo("0", "default_pg", members), "1": GroupInfo("1", "tp", members)}
    dumps = {}
    for r in range(4):
        rows = [Entry(20 + r, "1", 3, 0, "nccl:all_gather", [[8, 8] if r == 1 else [4, 4]],
                      ["Float"], [[8, 8] if r == 1 else [4, 4]], ["Float"], "scheduled", False)]
        if r != 3:
            rows.insert(0, Entry(10 + r, "0", 12, 0, "nccl:all_reduce", [[3, 4]], ["Float"],
                                 [[3, 4]], ["Float"], "scheduled", False))
        status = {"0": GroupStatus(11 if r == 3 else 12, -1, 11), "1": GroupStatus(3, -1, 2)}
        dumps[r] = RankDump(r, "2.9", groups, status, tuple(rows))
    return [dumps[r] for r in order]


@pytest.mark.points(2)
def test_dumps_built_in_python_that_share_one_group_info_are_read_like_any_others() -> None:
    """Dumps a caller builds in Python may share one GroupInfo (and one members tuple between
    two ids): each group is still its id and its members, and each rank counts once in it."""
    want = [("0", (0, 1, 2, 3), 12, "missing_rank", (3,), (), ()),
            ("1", (0, 1, 2, 3), 3, "mismatch", (), (1,), ())]
    for order in ([0, 1, 2, 3], [3, 2, 1, 0]):
        try:
            got = summary(find_hang(iter(_shared_dumps(order)), 4))
        except Exception as err:  # any exception is the failure reported
            pytest.fail(f"find_hang over 4 hand-built dumps sharing one GroupInfo per group "
                        f"(ranks {order}) raised {type(err).__name__}: {err}")
        assert got == want, (
            f"4 hand-built dumps (ranks {order}) sharing groups 0 and 1 of members (0, 1, 2, "
            f"3): findings {got}, expected {want} (group 0 stuck at 12 without rank 3; group 1 "
            f"all in 3, rank 1 with other sizes)")
