"""Hidden checks for hang_finder: the report's kind, the order of its ranks, and which number and
which entry judge a member (pg_status when timing is on, the entry at seq among several)."""

from __future__ import annotations

from typing import Any

from hang_finder import find_hang
from hang_finder_helpers import Doc, document, dumps_of, entry, job, report_of, summary


def test_a_missing_dump_outside_every_stuck_group_still_makes_the_report_missing_rank() -> None:
    """Report.kind is missing_rank when a rank left no dump, even if every Finding is a mismatch
    or all_entered (the rank with no dump is in no stuck group)."""
    for fault in ("sizes", "all_entered"):
        docs = job(8, 2, 2, fault=fault, culprit=3, hang_op=1).docs
        del docs[6]  # rank 6 is in no stuck group: only tp group (2, 3) is stuck
        report = report_of(docs, 8)
        kinds = [f.kind for f in report.findings]
        want_kind = "mismatch" if fault == "sizes" else "all_entered"
        assert kinds == [want_kind], f"tp group (2, 3) stuck ({fault}): findings {summary(report)}"
        assert (report.kind, report.no_dump) == ("missing_rank", (6,)), (
            f"rank 6 left no dump and tp group (2, 3) has one {want_kind} Finding: Report kind, "
            f"no_dump = {report.kind!r}, {report.no_dump}, expected 'missing_rank', (6,) (rule 10: "
            f"missing_rank if any Finding is or no_dump is non-empty)")
        report = report_of(job(8, 2, 2, fault=fault, culprit=3, hang_op=1).docs, 9)
        assert (report.kind, report.no_dump) == ("missing_rank", (8,)), (
            f"world_size 9, dumps of ranks 0-7, one {want_kind} Finding: Report kind, no_dump = "
            f"{report.kind!r}, {report.no_dump}, expected 'missing_rank', (8,)")


def _six(status: tuple[int, int, int], entries: list[Doc]) -> Doc:
    cfg = {"0": ("default_pg", list(range(6))), "1": ("tp", list(range(6)))}
    return document(cfg, {"0": status, "1": status}, entries)


def test_the_ranks_of_a_finding_are_ascending_whatever_order_the_dumps_come_in() -> None:
    """missing and mismatched list ranks in ascending order, whichever order the dumps are read in
    (the order of the dumps changes nothing)."""
    docs = {}
    for r in range(6):
        other = r in (1, 3)  # ranks 1 and 3 entered group 0's seq 4 with other sizes
        lagging = r in (2, 4)  # ranks 2 and 4 never entered group 1's seq 4
        rows = [entry(0, 0, 4, sizes=[[8, 8]] if other else [[4, 4]], state="scheduled")]
        if not lagging:
            rows.append(entry(1, 1, 4, state="scheduled", desc="tp"))
        status = (4, -1, 3)
        doc = _six(status, rows)
        if lagging:
            doc["pg_status"]["1"]["last_enqueued_collective"] = 3
        docs[r] = doc
    want: list[Any] = [("0", tuple(range(6)), 4, "mismatch", (), (1, 3), ()),
                       ("1", tuple(range(6)), 4, "missing_rank", (2, 4), (), ())]
    for order in (range(6), [5, 4, 3, 2, 1, 0], [3, 1, 4, 0, 5, 2]):
        got = summary(find_hang(dumps_of(docs, order), 6))
        assert got == want, (
            f"dumps read in rank order {list(order)}: findings {got}, expected {want} (ranks 1 "
            f"and 3 mismatched in group 0, ranks 2 and 4 missing in group 1, each tuple "
            f"ascending)")


def test_pg_status_last_enqueued_counts_as_entered_when_timing_is_on() -> None:
    """With timing on, a rank that enqueued seq but has not started it (last_started below it)
    has still entered it: a rank's newest number is last_enqueued, not last_started."""
    cfg = {"0": ("default_pg", [0, 1, 2])}
    old = [entry(i, 0, 9 + i) for i in range(3)]  # seqs 9-11 completed; seq 12's entry rotated out
    docs = {r: document(cfg, {"0": (12, 11, 11)}, old[1:]) for r in (0, 1)}
    docs[2] = document(cfg, {"0": (11, 11, 11)}, old)
    got = summary(report_of(docs, 3))
    want: list[Any] = [("0", (0, 1, 2), 12, "missing_rank", (2,), (), ())]
    assert got == want, (
        f"ranks 0 and 1: pg_status enqueued 12, started 11, completed 11 (timing on, seq 12 not "
        f"started yet); rank 2 stopped at 11: got {got}, expected {want} (rule 3: newest is "
        f"last_enqueued; scheduled counts as entered)")
    docs = {r: document(cfg, {"0": (12, 11 if r else 12, 11)}, old[1:]) for r in range(3)}
    got = summary(report_of(docs, 3))
    want = [("0", (0, 1, 2), 12, "all_entered", (), (), ())]
    assert got == want, (
        f"every rank enqueued 12, only rank 0 started it (timing on): got {got}, expected {want}")


def test_a_member_is_judged_by_its_entry_at_seq_not_its_newest_entry() -> None:
    """A member that enqueued seq and then the next collective is compared by its entry at seq:
    its newer entry (another op) neither mismatches it nor votes."""
    cfg = {"0": ("default_pg", [0, 1, 2])}
    at_seq = entry(1, 0, 12, sizes=[[3, 4]], state="scheduled")
    ahead = entry(2, 0, 13, name="nccl:_allgather_base", sizes=[[12, 4]], state="scheduled")
    docs = {r: document(cfg, {"0": (12, -1, 11)}, [entry(0, 0, 11), at_seq]) for r in (0, 2)}
    docs[1] = document(cfg, {"0": (13, -1, 11)}, [entry(0, 0, 11), at_seq, ahead])
    (f,) = report_of(docs, 3).findings
    got = (f.seq, f.kind, f.op, f.missing, f.mismatched)
    want = (12, "all_entered", "nccl:all_reduce", (), ())
    assert got == want, (
        f"all three ranks wait in all_reduce seq 12, rank 1 also enqueued an all_gather at 13: "
        f"seq, kind, op, missing, mismatched = {got}, expected {want}")
    # Rank 1's entry at 12 rotated out: it entered 12 (pg_status), but has no entry there to vote.
    docs[1] = document(cfg, {"0": (13, -1, 11)}, [ahead])
    (f,) = report_of(docs, 3).findings
    got = (f.seq, f.kind, f.op, f.missing, f.mismatched)
    assert got == want, (
        f"as before, but rank 1's buffer kept only its all_gather at 13: seq, kind, op, missing, "
        f"mismatched = {got}, expected {want}")



def test_findings_sort_by_member_ranks_as_numbers_not_as_text() -> None:
    """Findings sort by their member ranks as numbers: tp group (2, 3) before (10, 11), and
    (0, 1, 2) before (0, 1, 10)."""
    def stuck(ranks: list[int], pg: str) -> dict[int, Doc]:
        # Every member entered the group's collective 1; none completed it.
        return {r: document({pg: ("tp", ranks)}, {pg: (1, -1, 0)},
                            [entry(0, int(pg), 1, state="scheduled", desc="tp")]) for r in ranks}

    for first, second in (([2, 3], [10, 11]), ([0, 1, 2], [0, 1, 10])):
        docs: dict[int, Doc] = {}
        for r, doc in stuck(second, "1").items():
            docs[r] = doc
        for r, doc in stuck(first, "2").items():
            if r in docs:  # a rank in both groups: one dump listing both
                docs[r]["pg_config"].update(doc["pg_config"])
                docs[r]["pg_status"].update(doc["pg_status"])
                docs[r]["entries"] = [*docs[r]["entries"], *doc["entries"]]
            else:
                docs[r] = doc
        for i, r in enumerate(sorted(docs)):
            for j, e in enumerate(docs[r]["entries"]):
                e["record_id"] = 10 * i + j
        got = [f.ranks for f in find_hang(dumps_of(docs), 12).findings]
        want = [tuple(first), tuple(second)]
        assert got == want, (
            f"two stuck groups, of ranks {first} and {second}: findings in the order {got}, "
            f"expected {want} (rule 10: sorted by member ranks, compared as numbers)")
