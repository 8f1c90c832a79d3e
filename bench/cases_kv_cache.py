"""Benchmark of kv_cache: a capacity planner calls max_concurrency across a sweep.

The floor is the same arithmetic written inline with no validation: what a call must cost at
the least. The growth figure shows that the time does not depend on the answer.
"""

from __future__ import annotations

import math
from typing import Any

from bench.core import Context, Row, best_of, per_call, ratio_note, solution

GiB = 2**30
# meta-llama/Llama-3.1-70B's config.json fields that matter, and its bf16 weights.
_LLAMA_70B: dict[str, Any] = {"num_hidden_layers": 80, "num_attention_heads": 64,
                              "num_key_value_heads": 8, "hidden_size": 8192}
_WEIGHTS = 70_553_706_496 * 2


def _bare(layers: int, kv_heads: int, head_dim: int, gpu_memory: int, weights: int, tp: int,
          context: int, block: int, reserve: float) -> int:
    """The floor: the statement's arithmetic for a GQA model, inline, nothing checked."""
    free = gpu_memory - math.ceil(gpu_memory * reserve) - -(-weights // tp)
    per_sequence = layers * -(-context // block) * block * 2 * max(1, kv_heads // tp) \
        * head_dim * 2
    return max(0, free) // per_sequence


def kv_cache(ctx: Context, calls: int = 100_000) -> list[Row]:
    ref = solution("kv_cache")
    shape = ref.kv_shape(_LLAMA_70B)
    ctx.progress(f"kv_cache: {calls:,} max_concurrency calls, reference vs inline arithmetic")

    def planned(gpu_memory: int) -> object:
        return ref.max_concurrency(shape, gpu_memory=gpu_memory, weights=_WEIGHTS, tp=4,
                                   context=8192, dtype="bf16", reserve=0.1)

    def bare() -> object:
        return _bare(80, 8, 128, 80 * GiB, _WEIGHTS, 4, 8192, 16, 0.1)

    assert planned(80 * GiB) == bare() == 62, "the reference and the floor disagree"
    ref_s, bare_s = best_of(5, per_call(lambda: planned(80 * GiB), calls), per_call(bare, calls))
    rows = [Row("kv_cache", "max_concurrency / inline arithmetic, Llama-3.1-70B",
                ref_s / bare_s, "x", "<= 2x", 2.0,
                ratio_note(ref_s / calls, bare_s / calls, "per call", "inline"))]

    ctx.progress("kv_cache: max_concurrency time, 62 sequences vs a million times the memory")
    huge = 1_000_000 * 80 * GiB  # a million times the memory: a million times the answer
    small_s, huge_s = best_of(5, per_call(lambda: planned(80 * GiB), calls),
                              per_call(lambda: planned(huge), calls))
    rows.append(Row("kv_cache", "max_concurrency time at 10^6x the memory / at 62 sequences",
                    huge_s / small_s, "x", "<= 1.5 (flat)", 1.5,
                    ratio_note(huge_s / calls, small_s / calls, "per call", "per call")))

    ctx.progress(f"kv_cache: {calls:,} kv_shape calls on a published config")
    (shape_s,) = best_of(5, per_call(lambda: ref.kv_shape(_LLAMA_70B), calls))
    rows.append(Row("kv_cache", "kv_shape of Llama-3.1-70B's config, per call", shape_s / calls
                    * 1e6, "µs", "report", None, "validation of every field it reads"))
    return rows
