"""Benchmark of mig_packing: plan for a fleet against a floor of one list of instances per GPU."""

from __future__ import annotations

from collections.abc import Callable
from itertools import cycle, islice
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


def _floor(ref: Any, gpus: int) -> Callable[[], list[list[Any]]]:
    """The least any plan does: one list per GPU holding the known answer's instances.

    Instances are frozen values, so GPUs with the same layout may share them; each GPU still
    gets a list of its own. The seven layouts are built once, outside the timing.
    """
    table = ref.PROFILES["A100-80GB"]
    layouts = [sorted((ref.Instance(n, s, s + table[n].memory) for n, s in layout),
                      key=lambda i: i.start) for layout in _MIX]

    def copy() -> list[list[Any]]:
        return [layout.copy() for layout in islice(cycle(layouts), gpus)]

    return copy


def _planner(ref: Any, requests: dict[str, int], gpus: int) -> Callable[[], object]:
    return lambda: ref.plan(requests, gpus, "A100-80GB")


def mig_packing(ctx: Context, gpus: int = 1_200) -> list[Row]:
    ref = solution("mig_packing")
    rows = []
    for fleet in (gpus, 16 * gpus):
        requests = _requests(fleet)
        instances = sum(requests.values())
        ctx.progress(f"mig_packing: plan for {fleet:,} GPUs, {instances:,} instances")
        took, base = best_of(7, _planner(ref, requests, fleet), _floor(ref, fleet))
        rows.append(Row("mig_packing", f"plan / a list of known instances per GPU, {fleet:,} "
                        f"GPUs, {instances:,} instances", took / base, "x", "<= 3x", 3.0,
                        ratio_note(took, base, "plan", "floor")))
    many, few = _requests(gpus), _requests(gpus // 8)
    took, small = best_of(7, lambda: ref.plan(many, gpus, "A100-80GB"),
                          lambda: ref.plan(few, gpus // 8, "A100-80GB"))
    rows.append(Row("mig_packing", f"plan time({gpus:,} GPUs) / time({gpus // 8:,})",
                    took / small, "x", "<= 10 (8x the fleet)", 10.0,
                    ratio_note(took, small, "n", "n/8")))
    return rows
