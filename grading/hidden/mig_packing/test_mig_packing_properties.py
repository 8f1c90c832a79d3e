"""Hidden checks for mig_packing: properties of Gpu against an oracle, and metamorphic ones."""

from __future__ import annotations

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st
from mig_packing import Gpu, Instance, plan
from mig_packing_helpers import MODELS, NAMES, TABLE, mask, placeable_oracle, rule_start

_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)
# An operation: ("place", profile index, None), ("at", profile index, start index) or
# ("release", held index, None).
Op = tuple[str, int, int | None]
_OPS = st.lists(st.one_of(
    st.tuples(st.just("place"), st.integers(0, 5), st.none()),
    st.tuples(st.just("at"), st.integers(0, 5), st.integers(0, 6)),
    st.tuples(st.just("release"), st.integers(0, 7), st.none()),
), max_size=25)


def _run(model: str, ops: list[Op], check: bool) -> Gpu:
    """Apply ``ops`` to a new GPU; with ``check``, compare each step with the oracle."""
    gpu, used = Gpu(model), 0
    held: list[Instance] = []
    for i, (kind, k, j) in enumerate(ops):
        if kind == "release":
            if not held:
                continue
            inst = held.pop(k % len(held))
            gpu.release(inst)
            used &= ~mask(inst.start, inst.end - inst.start)
        else:
            name = NAMES[model][k]
            mem, starts = TABLE[model][name]
            start = None if j is None else starts[j % len(starts)]
            got = gpu.place(name, start)
            if start is None:
                want_start = rule_start(model, used, name)
            else:
                want_start = None if used & mask(start, mem) else start
            want = None if want_start is None else Instance(name, want_start, want_start + mem)
            if check:
                assert got == want, (f"step {i}: place({name!r}, {start}) with {held!r} held "
                                     f"returned {got!r}, expected {want!r}")
            if got is not None:
                held.append(got)
                used |= mask(got.start, got.end - got.start)
        if check:
            assert gpu.placeable() == placeable_oracle(model, used), (
                f"after step {i} {ops[:i + 1]}: placeable() is {gpu.placeable()!r}, "
                f"expected {placeable_oracle(model, used)!r}")
    return gpu


@pytest.mark.points(4)
@pytest.mark.parametrize("model", ["A100-40GB", "A100-80GB"])
@settings(max_examples=80, phases=_PHASES)
@example(ops=[("place", 0, None), ("place", 4, None), ("place", 0, None)])
@example(ops=[("place", 3, None), ("place", 3, None), ("place", 0, None)])
@example(ops=[("at", 2, 0), ("place", 2, None), ("place", 2, None), ("place", 2, None)])
@example(ops=[("at", 3, 0), ("at", 2, 2), ("at", 0, 6), ("release", 1, None),
              ("place", 2, None)])
@given(ops=_OPS)
def test_place_and_placeable_agree_with_the_oracle(model: str, ops: list[Op]) -> None:
    """From any state, place picks rule 4's start and placeable() lists exactly what fits."""
    _run(model, ops, check=True)


@pytest.mark.points(2)
@settings(max_examples=60, phases=_PHASES)
@example(ops=[("place", 5, None)])
@example(ops=[("at", 3, 0), ("at", 2, 2), ("at", 0, 6)])
@given(ops=_OPS)
def test_releasing_everything_restores_a_new_gpu(ops: list[Op]) -> None:
    """After releasing every instance held, a GPU is as new: all profiles placeable, none held."""
    gpu = _run("H100-80GB", ops, check=False)
    for inst in gpu.instances():
        gpu.release(inst)
    assert gpu.instances() == [], f"after releasing everything instances() is {gpu.instances()!r}"
    assert gpu.placeable() == set(NAMES["H100-80GB"]), (
        f"after {ops} and releasing everything, placeable() is {gpu.placeable()!r}")
    assert gpu.place("7g.80gb") == Instance("7g.80gb", 0, 8), "a 7g no longer fits"


@pytest.mark.points(2)
@settings(max_examples=60, phases=_PHASES)
@example(ops=[[("place", 3, None), ("place", 3, None)]], gpus=1)
@given(ops=st.lists(_OPS, min_size=1, max_size=3), gpus=st.integers(0, 1))
def test_plan_finds_a_plan_for_what_place_built(ops: list[list[Op]], gpus: int) -> None:
    """Whatever place calls built on some GPUs, in whatever order, plan finds a plan for those
    counts on as many GPUs (or more)."""
    model = "A100-80GB"
    counts = dict.fromkeys(NAMES[model], 0)
    for seq in ops:
        for inst in _run(model, seq, check=False).instances():
            counts[inst.profile] += 1
    got = plan(counts, len(ops) + gpus, model)
    assert got is not None, (
        f"place calls fit {counts} on {len(ops)} GPUs, yet plan(..., {len(ops) + gpus}) is None")


@pytest.mark.points(2)
@pytest.mark.parametrize("model", MODELS)
@settings(max_examples=60, phases=_PHASES)
@example(requests=[("3g.40gb", 2), ("2g.20gb", 4)], gpus=2)
@given(requests=st.lists(st.tuples(st.sampled_from(sorted({n for v in NAMES.values() for n in v})),
                                   st.integers(0, 6)), unique_by=lambda t: t[0], max_size=6),
       gpus=st.integers(0, 3))
def test_plan_does_not_depend_on_the_order_of_requests(
        model: str, requests: list[tuple[str, int]], gpus: int) -> None:
    """Listing the same requests in another order gives the same feasibility."""
    pairs = [(n, c) for n, c in requests if n in TABLE[model]]
    forward, backward = plan(dict(pairs), gpus, model), plan(dict(pairs[::-1]), gpus, model)
    assert (forward is None) == (backward is None), (
        f"plan({dict(pairs)}, {gpus}) is {forward!r} but in reverse order {backward!r}")


@pytest.mark.points(2)
@settings(max_examples=80, phases=_PHASES)
@example(requests={"3g.40gb": 2, "2g.20gb": 4}, gpus=2, drop="2g.20gb")
@example(requests={"1g.20gb": 1, "1g.10gb": 6}, gpus=1, drop="1g.20gb")
@given(requests=st.dictionaries(st.sampled_from(NAMES["A100-80GB"]), st.integers(0, 8),
                                max_size=6),
       gpus=st.integers(0, 3), drop=st.sampled_from(NAMES["A100-80GB"]))
def test_more_gpus_or_fewer_requests_never_break_a_plan(
        requests: dict[str, int], gpus: int, drop: str) -> None:
    """Metamorphic: if a plan exists, one exists with a GPU more, and with one request fewer."""
    model = "A100-80GB"
    if plan(requests, gpus, model) is None:
        return
    assert plan(requests, gpus + 1, model) is not None, (
        f"plan({requests}, {gpus}) exists but plan(..., {gpus + 1}) is None")
    if requests.get(drop, 0) > 0:
        fewer = {**requests, drop: requests[drop] - 1}
        assert plan(fewer, gpus, model) is not None, (
            f"plan({requests}, {gpus}) exists but with one {drop} fewer it is None")
