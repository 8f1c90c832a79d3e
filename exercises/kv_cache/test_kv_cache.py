"""Visible tests for kv_cache: the statement's worked examples and two properties.

Run them with `uv run pytest exercises/kv_cache`; the grader adds hidden checks.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from kv_cache import KVShape, kv_bytes_per_token, kv_shape, max_concurrency

GiB = 2**30

# The fields of meta-llama/Llama-3.1-70B's published config.json that matter, and two that don't.
LLAMA_31_70B: dict[str, Any] = {
    "model_type": "llama", "hidden_size": 8192, "num_attention_heads": 64,
    "num_hidden_layers": 80, "num_key_value_heads": 8, "vocab_size": 128256,
    "rope_theta": 500000.0,
}
LLAMA_31_70B_WEIGHTS = 70_553_706_496 * 2  # bf16
# google/gemma-2-27b: head_dim is given, and is not 4608 / 32.
GEMMA2_27B: dict[str, Any] = {
    "model_type": "gemma2", "hidden_size": 4608, "head_dim": 128, "num_attention_heads": 32,
    "num_hidden_layers": 46, "num_key_value_heads": 16, "sliding_window": 4096,
}
# deepseek-ai/DeepSeek-V3: latent attention.
DEEPSEEK_V3: dict[str, Any] = {
    "model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128,
    "num_hidden_layers": 61, "num_key_value_heads": 128, "kv_lora_rank": 512,
    "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
}


def test_example_1_llama_31_70b_end_to_end() -> None:
    """Example 1: Llama-3.1-70B caches 320 KiB a token, and 4 GPUs of 80 GiB hold 62 sequences
    of 8,192 tokens."""
    shape = kv_shape(LLAMA_31_70B)
    want = KVShape("gqa", 80, 8, 128, 2)
    assert shape == want, f"kv_shape(Llama-3.1-70B) returned {shape}, expected {want}"
    per_token = kv_bytes_per_token(shape, dtype="bf16")
    assert per_token == 327_680, f"kv_bytes_per_token returned {per_token}, expected 327,680"
    for tp, fits in [(2, 5), (4, 62), (8, 177), (16, 204)]:
        got = max_concurrency(shape, gpu_memory=80 * GiB, weights=LLAMA_31_70B_WEIGHTS, tp=tp,
                              context=8192, dtype="bf16", reserve=0.1)
        assert got == fits, f"max_concurrency(tp={tp}) returned {got}, expected {fits}"


def test_example_2_gemma_2_27b_head_dim_and_window() -> None:
    """Example 2: Gemma-2-27B has head_dim 128, and half its layers keep a 4,096-token window."""
    shape = kv_shape(GEMMA2_27B)
    want = KVShape("gqa", 46, 16, 128, 2, 23, 4096)
    assert shape == want, f"kv_shape(Gemma-2-27B) returned {shape}, expected {want}"
    for context, fits in [(4096, 55), (8192, 37)]:
        got = max_concurrency(shape, gpu_memory=80 * GiB, weights=0, tp=1, context=context,
                              dtype="bf16", reserve=0.0)
        assert got == fits, f"max_concurrency(context={context}) returned {got}, expected {fits}"


def test_example_3_deepseek_v3_latent() -> None:
    """Example 3: DeepSeek-V3 caches one 576-element latent per layer: 70,272 bytes a token."""
    shape = kv_shape(DEEPSEEK_V3)
    want = KVShape("mla", 61, 1, 576, 1)
    assert shape == want, f"kv_shape(DeepSeek-V3) returned {shape}, expected {want}"
    got = kv_bytes_per_token(shape, dtype="bf16")
    assert got == 70_272, f"kv_bytes_per_token(DeepSeek-V3, bf16) returned {got}, expected 70,272"


def test_example_4_blocks_are_whole() -> None:
    """Example 4: a 17-token sequence takes two 16-token blocks."""
    shape = KVShape("gqa", 1, 1, 1, 2)  # 4 bytes a token in bf16
    got = max_concurrency(shape, gpu_memory=1280, weights=0, tp=1, context=17, dtype="bf16",
                          reserve=0.0)
    assert got == 10, f"max_concurrency(17 tokens, 1,280 bytes) returned {got}, expected 10"


@pytest.mark.category("bad_input")
def test_an_unknown_dtype_raises_value_error() -> None:
    """A cache dtype other than fp32, bf16, fp16 or fp8 raises ValueError."""
    with pytest.raises(ValueError):
        kv_bytes_per_token(KVShape("gqa", 1, 1, 1, 2), dtype="bfloat16")


_SHAPES = st.builds(
    KVShape, st.just("gqa"), st.integers(1, 8), st.sampled_from([1, 2, 8]),
    st.sampled_from([16, 64, 128]), st.just(2))


@pytest.mark.points(2)
@settings(max_examples=50)
@given(_SHAPES, st.integers(1, 10**8), st.integers(1, 10**7), st.integers(1, 4096),
       st.integers(1, 4096))
@example(KVShape("gqa", 1, 1, 1, 2), 1280, 64, 16, 1)
def test_more_memory_never_fits_fewer_and_longer_contexts_never_more(
        shape: KVShape, gpu_memory: int, more: int, context: int, longer: int) -> None:
    """Capacity never falls with more memory, and never rises with a longer context."""
    def fits(memory: int, tokens: int) -> int:
        return max_concurrency(shape, gpu_memory=memory, weights=0, tp=1, context=tokens,
                               dtype="bf16", reserve=0.0)

    base = fits(gpu_memory, context)
    assert fits(gpu_memory + more, context) >= base, f"{more} more bytes fit fewer ({shape})"
    assert fits(gpu_memory, context + longer) <= base, f"a longer context fits more ({shape})"


_NAMED = {"num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size",
          "head_dim", "kv_lora_rank", "qk_rope_head_dim", "sliding_window",
          "use_sliding_window", "layer_types", "model_type"}


@pytest.mark.points(2)
@settings(max_examples=50)
@given(st.sampled_from([LLAMA_31_70B, GEMMA2_27B, DEEPSEEK_V3]),
       st.dictionaries(st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1).filter(
           lambda k: k not in _NAMED), st.integers() | st.text() | st.none(), max_size=5))
def test_unrelated_keys_change_nothing(config: dict[str, Any], extra: dict[str, Any]) -> None:
    """Keys the rules do not name leave the shape as it was."""
    got, want = kv_shape({**extra, **config}), kv_shape(config)
    assert got == want, f"adding {extra} changed the shape from {want} to {got}"
