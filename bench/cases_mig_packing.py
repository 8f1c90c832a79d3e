"""Benchmark of mig_packing: plan for a fleet against a floor of building the instances."""

from __future__ import annotations

from typing import Any

from bench.core import Context, Row, best_of, ratio_note, solution

# Each GPU of the fleet holds one of these layouts: (profile, start) pairs on an A100-80GB.
_MIX = (
    tuple(("1g.10gb", s) for s in range(7)),
    (("2g.20gb", 0), *(("1g.10gb", s) for s in range(2, 7))),
    (*(("1g.10gb", s) for s in range(4)), ("3g.40gb", 4)),
    (("4g.40gb", 0), ("1g.10gb", 4), ("1g.10gb", 5), ("1g.20gb", 6)),
    (("2g.20gb", 0), ("2g.20gb", 2), ("2g.20gb", 4), ("1g.20gb", 6)),
    (("3g.40gb", 0), ("3g.40gb", 4)),
    (("7g.80gb", 0),),
)


def _requests(gpus: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for g in range(gpus):
        for name, _ in _MIX[g % len(_MIX)]:
            counts[name] = counts.get(name, 0) + 1
    return counts


def _floor(ref: Any, gpus: int) -> list[list[Any]]:
    """The least any plan does: build each instance of the known answer and sort each GPU."""
    table = ref.PROFILES["A100-80GB"]
    out = []
    for g in range(gpus):
        layout = [ref.Instance(n, s, s + table[n].memory) for n, s in _MIX[g % len(_MIX)]]
        layout.sort(key=lambda i: i.start)
        out.append(layout)
    return out


def mig_packing(ctx: Context, gpus: int = 1_200) -> list[Row]:
    ref = solution("mig_packing")
    many, few = _requests(gpus), _requests(gpus // 8)
    instances = sum(many.values())
    ctx.progress(f"mig_packing: plan for {gpus:,} GPUs, {instances:,} instances")
    took, base, small = best_of(
        7,
        lambda: ref.plan(many, gpus, "A100-80GB"),
        lambda: _floor(ref, gpus),
        lambda: ref.plan(few, gpus // 8, "A100-80GB"),
    )
    return [
        Row("mig_packing", f"plan / building the known layouts, {gpus:,} GPUs, "
            f"{instances:,} instances", took / base, "x", "<= 3x", 3.0,
            ratio_note(took, base, "plan", "floor")),
        Row("mig_packing", f"plan time({gpus:,} GPUs) / time({gpus // 8:,})", took / small, "x",
            "<= 10 (8x the fleet)", 10.0, ratio_note(took, small, "n", "n/8")),
    ]
