"""Hidden checks for kv_cache: max_concurrency, its rules, its traps and its properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from kv_cache import KVShape, kv_bytes_per_token, kv_shape, max_concurrency
from kv_cache_helpers import BYTES, LLAMA_31_70B, LLAMA_31_70B_WEIGHTS, REAL, GiB, oracle, shapes

LLAMA_70B = REAL["Llama-3.1-70B"][1]
DEEPSEEK = REAL["DeepSeek-V3"][1]
MISTRAL = REAL["Mistral-7B-v0.1"][1]
GEMMA = REAL["Gemma-2-27B"][1]
TINY = KVShape("gqa", 1, 1, 1, 2)  # 4 bytes per token in bf16: easy sums by hand


def _call(shape: KVShape, **kw: Any) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
    return f"max_concurrency({shape}, {args})"


def _fits(shape: KVShape, want: int, why: str, **kw: Any) -> None:
    kw = {"weights": 0, "tp": 1, "dtype": "bf16", "reserve": 0.0, **kw}
    got = max_concurrency(shape, **kw)
    assert got == want, f"{_call(shape, **kw)} returned {got}, expected {want}: {why}"


# ---------------------------------------------------------------- the rules, by hand


@pytest.mark.points(2)
def test_worked_example_llama_31_70b() -> None:
    """Statement example: Llama-3.1-70B on 80 GiB GPUs, 8,192 tokens, bf16, 10% reserve; the
    results print as the statement shows them (ints, not floats)."""
    shape = kv_shape(LLAMA_31_70B)
    want_shape = ("KVShape(attention='gqa', layers=80, kv_heads=8, head_dim=128, kv_factor=2, "
                  "sliding_layers=0, window=None)")
    assert repr(shape) == want_shape, f"kv_shape(Llama-3.1-70B) is {shape!r}, expected {want_shape}"
    per_token = kv_bytes_per_token(shape, dtype="bf16")
    assert repr(per_token) == "327680", \
        f"kv_bytes_per_token(Llama-3.1-70B, dtype='bf16') is {per_token!r}, expected 327680"
    got = [max_concurrency(shape, gpu_memory=80 * GiB, weights=LLAMA_31_70B_WEIGHTS, tp=tp,
                           context=8192, dtype="bf16", reserve=0.1) for tp in (2, 4, 8, 16)]
    assert repr(got) == "[5, 62, 177, 204]", \
        f"max_concurrency for tp in (2, 4, 8, 16) is {got!r}, expected [5, 62, 177, 204]"


@pytest.mark.points(3)
def test_tp_beyond_kv_heads_replicates_heads() -> None:
    """Past one KV head per rank, more ranks replicate heads: each rank still holds one."""
    why = "8 KV heads over 16 ranks leave 1 head per rank (40,960 bytes a token), not 0.5"
    _fits(LLAMA_70B, 512, why, gpu_memory=80 * GiB, tp=16, context=4096)
    _fits(LLAMA_70B, 512, "tp=8 holds 1 head per rank too", gpu_memory=80 * GiB, tp=8,
          context=4096)
    why = "a latent is never split: every rank holds all 70,272 bytes a token"
    _fits(DEEPSEEK, 298, why, gpu_memory=80 * GiB, tp=8, context=4096)


@pytest.mark.points(3)
def test_each_sequence_rounds_up_to_whole_blocks() -> None:
    """Each sequence takes whole blocks: 17 tokens take two 16-token blocks."""
    why = "17 tokens take 2 blocks of 16 x 4 bytes = 128 bytes; 1,280 / 128 = 10"
    _fits(TINY, 10, why, gpu_memory=1280, context=17)
    why = "2 layers x 2 blocks of 64 bytes = 256 bytes a sequence; 2,560 / 256 = 10"
    _fits(KVShape("gqa", 2, 1, 1, 2), 10, why, gpu_memory=2560, context=17)
    _fits(TINY, 10, "32 tokens take exactly 2 blocks", gpu_memory=1280, context=32)
    _fits(TINY, 6, "33 tokens take 3 blocks (192 bytes)", gpu_memory=1280, context=33)


@pytest.mark.points(3)
def test_sliding_layers_hold_at_most_the_window() -> None:
    """A sliding layer holds at most the window, however long the context."""
    for context in (4096, 8192, 32768):
        _fits(MISTRAL, 160, f"every Mistral layer holds 4,096 tokens at context {context}",
              gpu_memory=80 * GiB, context=context)
    why = "23 global layers x 8,192 tokens + 23 local layers x 4,096, at 8,192 bytes a token"
    _fits(GEMMA, 37, why, gpu_memory=80 * GiB, context=8192)
    _fits(GEMMA, 55, "at the window, every layer holds the context: 46 x 4,096 x 8,192 bytes",
          gpu_memory=80 * GiB, context=4096)


@pytest.mark.points(2)
def test_weights_are_split_across_ranks() -> None:
    """weights is the whole model's size, split evenly over the tp ranks."""
    why = "each of 4 ranks holds 10 GiB of the 40 GiB of weights, leaving 70 GiB: 70 / 0.3125"
    _fits(LLAMA_70B, 224, why, gpu_memory=80 * GiB, weights=40 * GiB, tp=4, context=4096)
    _fits(LLAMA_70B, 32, "one rank holds all 40 GiB: 40 GiB left / 1.25 GiB",
          gpu_memory=80 * GiB, weights=40 * GiB, tp=1, context=4096)


@pytest.mark.points(2)
def test_reserve_is_a_fraction_of_each_gpu() -> None:
    """reserve is kept back on every GPU, as a fraction of its whole memory."""
    why = "80 GiB - 20 GiB reserve - 10 GiB weights = 50 GiB per rank; 50 / 0.3125"
    _fits(LLAMA_70B, 160, why, gpu_memory=80 * GiB, weights=40 * GiB, tp=4, context=4096,
          reserve=0.25)
    why = "each of 2 ranks keeps back a quarter of its own 80 GiB: 60 GiB left / 0.625 GiB"
    _fits(LLAMA_70B, 96, why, gpu_memory=80 * GiB, tp=2, context=4096, reserve=0.25)


def test_the_reserve_is_a_share_of_the_whole_gpu_not_of_what_the_weights_leave() -> None:
    """On one GPU, the reserve is a fraction of its whole memory, taken before the weights: not
    a fraction of what the weights leave."""
    why = "80 GiB - 20 GiB reserve - 40 GiB weights = 20 GiB; 20 / 1.25 (not 30 GiB: 3/4 of 40)"
    _fits(LLAMA_70B, 16, why, gpu_memory=80 * GiB, weights=40 * GiB, tp=1, context=4096,
          reserve=0.25)


@pytest.mark.points(2)
def test_fp8_cache_holds_twice_the_tokens_of_bf16() -> None:
    """dtype sets the bytes per element: fp8 holds twice what bf16 does, fp32 half."""
    for dtype, want in [("fp8", 20), ("bf16", 10), ("fp16", 10), ("fp32", 5)]:
        _fits(TINY, want, f"32 tokens in {dtype}", gpu_memory=1280, context=32, dtype=dtype)


# ---------------------------------------------------------------- edge cases

edge = pytest.mark.category("edge_cases")


@edge
def test_weights_that_do_not_fit_give_zero() -> None:
    """Weights that fill or exceed what is left of a GPU give 0 sequences, not a negative
    number nor 1."""
    _fits(LLAMA_70B, 0, "141 GB of weights on one 80 GiB GPU", gpu_memory=80 * GiB,
          weights=LLAMA_31_70B_WEIGHTS, tp=1, context=1)
    byte = KVShape("mla", 1, 1, 1, 1)  # one byte a sequence in fp8 with one-token blocks
    for weights, left in [(1000, "nothing"), (1001, "less than nothing")]:
        _fits(byte, 0, f"{weights} bytes of weights on a 1,000-byte GPU leave {left}",
              gpu_memory=1000, weights=weights, context=1, block_tokens=1, dtype="fp8")
    _fits(byte, 1, "one byte left holds one one-byte sequence", gpu_memory=1000, weights=999,
          context=1, block_tokens=1, dtype="fp8")


@edge
def test_weights_beyond_float_precision_are_split_exactly() -> None:
    """ceil(weights / tp) is exact for any int: 2**55 + 2 bytes over 2 ranks is 2**54 + 1 each,
    not a float rounded to 2**54."""
    byte = KVShape("mla", 1, 1, 1, 1)  # one byte a sequence in fp8 with one-token blocks
    _fits(byte, 1, "2**54 + 2 bytes a GPU, 2**55 + 2 of weights over 2 ranks: 1 byte left",
          gpu_memory=2**54 + 2, weights=2**55 + 2, tp=2, context=1, block_tokens=1, dtype="fp8")
    _fits(byte, 0, "2**54 + 1 bytes a GPU, 2**55 + 2 of weights over 2 ranks: nothing left",
          gpu_memory=2**54 + 1, weights=2**55 + 2, tp=2, context=1, block_tokens=1, dtype="fp8")


@edge
def test_an_uneven_share_of_the_weights_rounds_up() -> None:
    """Each rank holds ceil(weights / tp) bytes of the weights: 5 bytes over 2 ranks is 3 bytes
    a rank, not 2."""
    byte = KVShape("mla", 1, 1, 1, 1)  # one byte a sequence in fp8 with one-token blocks
    _fits(byte, 7, "10 bytes a GPU - ceil(5 / 2) = 3 bytes of weights: 7 one-byte sequences",
          gpu_memory=10, weights=5, tp=2, context=1, block_tokens=1, dtype="fp8")
    _fits(byte, 0, "1 byte a GPU - ceil(1 / 4) = 1 byte of weights: nothing left",
          gpu_memory=1, weights=1, tp=4, context=1, block_tokens=1, dtype="fp8")


@edge
def test_the_answer_is_exact_past_float_precision() -> None:
    """The answer is the cache bytes divided by a sequence's bytes, rounded down, in exact int
    arithmetic: past 2**53 bytes a float division rounds up to a sequence that does not fit."""
    why = "2**60 - 1 bytes hold 2**54 - 1 sequences of 64 bytes (one 16-token block), not 2**54"
    _fits(TINY, 2**54 - 1, why, gpu_memory=2**60 - 1, context=16, reserve=0)


@edge
def test_a_context_past_float_precision_takes_exact_blocks() -> None:
    """ceil(context / block_tokens) is exact for any int: 2**53 + 1 one-token blocks are not
    2**53, and 2**54 + 17 tokens take 2**50 + 2 blocks of 16, not 2**50 + 1."""
    why = "2**53 + 1 tokens of 2 bytes (fp8) are 2**54 + 2 bytes: more than the 2**54 free"
    _fits(TINY, 0, why, gpu_memory=2**54, context=2**53 + 1, block_tokens=1, dtype="fp8")
    why = "2**54 + 17 tokens take 2**50 + 2 blocks of 64 bytes: 2**56 + 128 bytes, 1 byte more"
    _fits(TINY, 0, why, gpu_memory=2**56 + 127, context=2**54 + 17)
    _fits(TINY, 1, "the same sequence in exactly its 2**56 + 128 bytes", gpu_memory=2**56 + 128,
          context=2**54 + 17)


@edge
def test_heads_per_rank_are_exact_past_float_precision() -> None:
    """kv_heads / tp is exact for any int: 2**54 + 2 KV heads over 2 ranks are 2**53 + 1 heads a
    rank (a float division says 2**53), 2**54 + 2 bytes a one-token fp8 sequence."""
    huge = KVShape("gqa", 1, 2**54 + 2, 1, 2)
    why = "a sequence costs 2 x (2**53 + 1) = 2**54 + 2 bytes a rank"
    _fits(huge, 1, f"{why}: 2**55 + 3 bytes hold one", gpu_memory=2**55 + 3, tp=2, context=1,
          block_tokens=1, dtype="fp8")
    _fits(huge, 0, f"{why}: 2**54 + 1 bytes hold none", gpu_memory=2**54 + 1, tp=2, context=1,
          block_tokens=1, dtype="fp8")


@edge
def test_a_sequence_larger_than_the_cache_gives_zero() -> None:
    """A sequence bigger than the whole cache gives 0; exactly the cache gives 1."""
    _fits(TINY, 0, "one 64-byte block needed, 63 bytes free", gpu_memory=63, context=1)
    _fits(TINY, 1, "one 64-byte block needed, 64 bytes free", gpu_memory=64, context=1)


@edge
def test_the_reserve_rounds_up_to_whole_bytes() -> None:
    """The reserve is ceil(gpu_memory x reserve) bytes: it never leaves a fraction of a byte."""
    why = "1,000 - ceil(100.5) = 899 bytes free: 8 sequences of 100 bytes, not 9"
    _fits(TINY, 8, why, gpu_memory=1000, context=25, block_tokens=1, reserve=0.1005)


@edge
def test_a_reserve_of_a_tiny_fraction_of_a_byte_still_rounds_up() -> None:
    """The reserve rounds up any fraction of a byte, however small: 1e-7 of 10,000,002 bytes is
    1.0000002 bytes, so 2 are kept back, not 1 (both accepted readings of rule 12 agree here)."""
    byte = KVShape("mla", 1, 1, 1, 1)  # one byte a sequence in fp8 with one-token blocks
    for gpu_memory, reserve, kept in [(10**7 + 2, 1e-7, 2), (10**10 + 1, 1e-10, 2)]:
        left = gpu_memory - kept
        _fits(byte, left, f"{gpu_memory:,} - ceil({gpu_memory:,} x {reserve}) = {left:,} bytes, "
              "each a one-byte sequence", gpu_memory=gpu_memory, context=1, block_tokens=1,
              dtype="fp8", reserve=reserve)


@edge
def test_the_reserve_is_the_fraction_as_written() -> None:
    """The reserve is ceil(gpu_memory x reserve) with reserve the number as written (0.1 is a
    tenth), or that product in floating point: either is accepted, not the float's binary
    expansion (which makes 0.1 of 80 GiB one byte more)."""
    why = "80 GiB - ceil(0.1 x 80 GiB) = 77,309,411,328 bytes: exactly 1,207,959,552 blocks of 64"
    _fits(TINY, 1_207_959_552, why, gpu_memory=80 * GiB, context=16, reserve=0.1)
    kw: dict[str, Any] = {"gpu_memory": 100, "weights": 1, "tp": 1, "context": 1,
                          "block_tokens": 1, "dtype": "bf16", "reserve": 0.07}
    got = max_concurrency(TINY, **kw)
    assert got in (22, 23), (
        f"{_call(TINY, **kw)} returned {got}, expected 23 (a reserve of 7 bytes: 92 // 4) or 22 "
        f"(8 bytes, as 100 * 0.07 is 7.000000000000001 in floating point: 91 // 4)")


@edge
def test_a_reserve_of_many_digits_is_not_snapped_to_a_simple_fraction() -> None:
    """The reserve is the number as written, every digit of it: 0.3333333 is not a third,
    0.1428571 not a seventh, 0.9999999 not 1 (both accepted readings of rule 12 agree here)."""
    byte = KVShape("mla", 1, 1, 1, 1)  # one byte a sequence in fp8 with one-token blocks
    for reserve, kept in [(0.3333333, 28_633_112_444), (0.1428571, 12_271_331_451),
                          (0.9999999, 85_899_337_331)]:
        left = 80 * GiB - kept
        _fits(byte, left, f"80 GiB - ceil({reserve} x 80 GiB) = 80 GiB - {kept:,} = {left:,} "
              "bytes, each a one-byte sequence", gpu_memory=80 * GiB, context=1, block_tokens=1,
              dtype="fp8", reserve=reserve)


@edge
def test_the_reserve_is_taken_off_not_its_complement_kept() -> None:
    """The reserve is gpu_memory - ceil(gpu_memory x reserve): floor(gpu_memory x (1 - reserve))
    in floating point is not it (1 - 0.9 is 0.09999999999999998, a byte short of 80 GiB / 10)."""
    byte = KVShape("mla", 1, 1, 1, 1)  # one byte a sequence in fp8 with one-token blocks
    for reserve, left in [(0.9, 8 * GiB), (0.8, 16 * GiB)]:
        _fits(byte, left, f"80 GiB - ceil({reserve} x 80 GiB) = {left:,} bytes, each a one-byte "
              "sequence", gpu_memory=80 * GiB, context=1, block_tokens=1, dtype="fp8",
              reserve=reserve)


@edge
def test_an_int_reserve_counts_like_a_float() -> None:
    """reserve may be an int: reserve=0 is no reserve, as 0.0 is (with every count at its
    least: one GPU, no weights, one-token blocks and context)."""
    for reserve in (0, 0.0):
        _fits(TINY, 16, "64 bytes hold 16 one-token sequences of 4 bytes", gpu_memory=64,
              context=1, block_tokens=1, reserve=reserve)
    _fits(TINY, 1, "4 bytes hold one 4-byte sequence", gpu_memory=4, context=1, block_tokens=1,
          reserve=0)


@edge
def test_one_token_blocks_and_one_token_contexts() -> None:
    """block_tokens=1 rounds nothing; context=1 still takes one whole block."""
    _fits(TINY, 31, "17 tokens of 4 bytes in blocks of 1: 2,112 / 68", gpu_memory=2112,
          context=17, block_tokens=1)
    _fits(TINY, 33, "1 token takes a whole 16-token block of 64 bytes", gpu_memory=2112,
          context=1)


@edge
def test_a_window_longer_than_the_context_changes_nothing() -> None:
    """A sliding layer with a window longer than the context holds the context."""
    windowed = KVShape("gqa", 2, 1, 1, 2, 2, 1000)
    _fits(windowed, 5, "2 layers x 2 blocks of 64 bytes: 1,280 / 256", gpu_memory=1280,
          context=20)


# ---------------------------------------------------------------- properties

_TP = st.sampled_from([1, 2, 4, 8, 16, 32])
_CONTEXT = st.integers(1, 300)
_BLOCK = st.sampled_from([1, 4, 16, 32])
_DTYPE = st.sampled_from(["bf16", "fp16", "fp8", "fp32"])
_RESERVE = st.sampled_from([0.0, 0.25, 0.5])  # exact in binary: no rounding to argue about
_MEMORY = st.integers(0, 400_000).map(lambda m: m + 1)


@pytest.mark.points(4)
@settings(max_examples=150)
@given(shapes(), _MEMORY, st.integers(0, 100_000), _TP, _CONTEXT, _BLOCK, _DTYPE, _RESERVE)
@example(TINY, 640, 0, 1, 16, 16, "bf16", 0.0)   # exactly 10 blocks: 10
@example(TINY, 639, 0, 1, 16, 16, "bf16", 0.0)   # one byte short: 9
@example(TINY, 1280, 0, 1, 17, 16, "bf16", 0.0)  # 17 tokens take 2 blocks
@example(KVShape("gqa", 3, 8, 4, 2, 2, 16), 50_000, 999, 16, 100, 16, "fp8", 0.25)
@example(KVShape("mla", 2, 1, 72, 1), 60_000, 0, 32, 300, 32, "bf16", 0.5)
def test_agrees_with_the_long_way_arithmetic(shape: KVShape, gpu_memory: int, weights: int,
                                             tp: int, context: int, block_tokens: int,
                                             dtype: str, reserve: float) -> None:
    """max_concurrency agrees with a layer-by-layer, block-by-block count."""
    if shape.kv_heads % tp and tp % shape.kv_heads:
        tp = 1
    kw: dict[str, Any] = {"gpu_memory": gpu_memory, "weights": weights, "tp": tp,
                          "context": context, "block_tokens": block_tokens, "dtype": dtype,
                          "reserve": reserve}
    got, want = max_concurrency(shape, **kw), oracle(shape, **kw)
    assert got == want, f"{_call(shape, **kw)} returned {got}, expected {want}"


@pytest.mark.points(2)
@settings(max_examples=60)
@given(shapes(), _MEMORY, st.integers(1, 100_000), _CONTEXT, st.integers(1, 300), _BLOCK)
def test_more_memory_or_a_shorter_context_never_fits_fewer(
        shape: KVShape, gpu_memory: int, more: int, context: int, longer: int,
        block_tokens: int) -> None:
    """Capacity never falls when memory grows, and never rises when the context grows."""
    kw: dict[str, Any] = {"weights": 0, "tp": 1, "block_tokens": block_tokens, "dtype": "bf16",
                          "reserve": 0.0}
    base = max_concurrency(shape, gpu_memory=gpu_memory, context=context, **kw)
    bigger = max_concurrency(shape, gpu_memory=gpu_memory + more, context=context, **kw)
    assert bigger >= base, f"{more} more bytes fit {bigger} sequences, {base} before " \
                           f"({shape}, context {context})"
    long = max_concurrency(shape, gpu_memory=gpu_memory, context=context + longer, **kw)
    assert long <= base, f"context {context + longer} fits {long} sequences, context " \
                         f"{context} only {base} ({shape}, {gpu_memory} bytes)"


@pytest.mark.points(2)
@settings(max_examples=60)
@given(shapes(), st.integers(1_000, 400_000), _CONTEXT)
@example(LLAMA_70B, 80 * GiB, 8192)
@example(DEEPSEEK, 80 * GiB, 4096)
def test_tp_scales_capacity_up_to_the_kv_heads_then_stays_flat(
        shape: KVShape, gpu_memory: int, context: int) -> None:
    """Without weights, tp ranks fit at least tp times one rank's sequences while tp divides
    kv_heads; past kv_heads, more ranks fit no more."""
    def at(tp: int) -> int:
        return max_concurrency(shape, gpu_memory=gpu_memory, weights=0, tp=tp, context=context,
                               dtype="bf16", reserve=0.0)

    one = at(1)
    for tp in (2, 4, 8, 16):
        got = at(tp)
        if tp <= shape.kv_heads:
            assert got >= tp * one, f"tp={tp} fits {got}, less than {tp} x {one} ({shape})"
        else:
            flat = at(shape.kv_heads)
            assert got == flat, f"tp={tp} fits {got}, but tp={shape.kv_heads} (one KV head " \
                                f"per rank already) fits {flat} ({shape})"


@pytest.mark.points(2)
@settings(max_examples=60)
@given(shapes(), st.integers(1_000, 400_000), _CONTEXT, st.sampled_from([2, 4, 16, 32]))
@example(TINY, 1280, 17, 16)
def test_block_rounding_never_under_counts(shape: KVShape, gpu_memory: int, context: int,
                                           block_tokens: int) -> None:
    """Every sequence counted has its own whole blocks, so blocks never fit more than exact
    per-token accounting (and fit as many when the block size divides every layer's tokens)."""
    def at(block: int) -> int:
        return max_concurrency(shape, gpu_memory=gpu_memory, weights=0, tp=1, context=context,
                               block_tokens=block, dtype="fp8", reserve=0.0)

    paged, exact = at(block_tokens), at(1)
    held = context if shape.window is None else min(context, shape.window)
    per_block = block_tokens * shape.kv_factor * shape.kv_heads * shape.head_dim * BYTES["fp8"]
    blocks = sum(-(-(held if layer < shape.sliding_layers else context) // block_tokens)
                 for layer in range(shape.layers))
    assert paged * blocks * per_block <= gpu_memory, (
        f"{paged} sequences of {blocks} whole blocks of {per_block} bytes do not fit in "
        f"{gpu_memory} bytes ({shape}, context {context}, blocks of {block_tokens})")
    assert paged <= exact, f"blocks of {block_tokens} fit {paged} sequences, more than the " \
                           f"{exact} that fit token by token ({shape}, context {context})"
    if context % block_tokens == 0 and held % block_tokens == 0:
        assert paged == exact, f"blocks of {block_tokens} divide context {context}, yet fit " \
                               f"{paged} sequences, not {exact} ({shape})"
