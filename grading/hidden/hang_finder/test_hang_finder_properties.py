"""Hidden checks for hang_finder: injected faults against an oracle, and metamorphic relations."""

from __future__ import annotations

from typing import Any

import pytest
from hang_finder import find_hang
from hang_finder_helpers import dumps_of, job, report_of, summary
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)
_FAULTS = ("missing", "crash", "sizes", "op", "dtype", "all_entered")


@st.composite
def _jobs(draw: st.DrawFn) -> dict[str, Any]:
    world = draw(st.sampled_from([2, 4, 8]))
    tp = draw(st.sampled_from([t for t in (1, 2, 4, 8) if t <= world]))
    return {"world": world, "tp": tp, "steps": draw(st.integers(0, 3)),
            "fault": draw(st.sampled_from(_FAULTS)), "culprit": draw(st.integers(0, world - 1)),
            "hang_op": draw(st.integers(0, 3)), "buffer": draw(st.sampled_from([1, 2, 3, 7, 50])),
            "sends": draw(st.booleans()), "timing": draw(st.booleans())}


def _expected(kw: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The one finding an injected fault must produce (the oracle)."""
    j = job(**kw)
    fault, culprit, members = kw["fault"], kw["culprit"], j.members
    if len(members) == 1:
        # A group of one: if its only member issued the op, it entered and never completed.
        return [] if fault in ("missing", "crash") else [
            (j.group, members, j.seq, "all_entered", (), (), ())]
    if fault in ("sizes", "op", "dtype"):
        # In a 1-1 tie the lowest rank's signature is the reference.
        odd = culprit if len(members) > 2 or culprit != members[0] else members[1]
        return [(j.group, members, j.seq, "mismatch", (), (odd,), ())]
    if fault == "all_entered":
        return [(j.group, members, j.seq, "all_entered", (), (), ())]
    if fault == "crash":
        return [(j.group, members, j.seq, "missing_rank", (), (), (culprit,))]
    return [(j.group, members, j.seq, "missing_rank", (culprit,), (), ())]


_EXAMPLE = {"world": 8, "tp": 2, "steps": 3, "fault": "missing", "culprit": 5, "hang_op": 2,
            "buffer": 2, "sends": False, "timing": False}


@pytest.mark.points(5)
@settings(max_examples=40, phases=_PHASES)
@given(_jobs())
@example(_EXAMPLE)
@example({**_EXAMPLE, "steps": 0, "hang_op": 0, "buffer": 1, "fault": "crash", "culprit": 0})
@example({**_EXAMPLE, "world": 2, "tp": 2, "fault": "sizes", "culprit": 0, "hang_op": 1})
@example({**_EXAMPLE, "fault": "all_entered", "sends": True, "timing": True, "buffer": 1})
def test_an_injected_fault_is_named_exactly(kw: dict[str, Any]) -> None:
    """One fault injected in a multi-group job is named exactly: group, seq, kind and rank."""
    j = job(**kw)
    got, want = summary(find_hang(dumps_of(j.docs), j.world)), _expected(kw)
    assert got == want, f"job({kw}): findings {got}, expected {want}"


@pytest.mark.points(3)
@settings(max_examples=25, phases=_PHASES)
@given(_jobs(), st.randoms(use_true_random=False))
@example(_EXAMPLE, __import__("random").Random(0))
def test_the_order_the_dumps_are_read_in_changes_nothing(kw: dict[str, Any], rnd: Any) -> None:
    """Reading the dumps in any order gives the same report."""
    j = job(**kw)
    order = sorted(j.docs)
    want = find_hang(dumps_of(j.docs, order), j.world)
    rnd.shuffle(order)
    got = find_hang(dumps_of(j.docs, order), j.world)
    assert got == want, f"job({kw}) read in order {order}: {got}, in rank order {want}"


@pytest.mark.points(3)
@settings(max_examples=25, phases=_PHASES)
@given(_jobs())
@example({**_EXAMPLE, "buffer": 1})
@example({**_EXAMPLE, "fault": "all_entered", "hang_op": 3, "buffer": 1})
def test_a_smaller_ring_buffer_changes_no_diagnosis(kw: dict[str, Any]) -> None:
    """Keeping fewer entries per rank (down to 1) changes no missing rank, seq or group."""
    full = report_of(job(**{**kw, "buffer": 2000}).docs, kw["world"])
    cut = report_of(job(**kw).docs, kw["world"])
    assert summary(cut) == summary(full), (
        f"job({kw}): with {kw['buffer']} entries kept {summary(cut)}, with all {summary(full)}")
