"""Hidden checks for kv_cache: reading config.json, on published models and on the traps."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from kv_cache import KVShape, kv_bytes_per_token, kv_shape
from kv_cache_helpers import (
    DEEPSEEK_V3,
    GEMMA2_27B,
    LLAMA_31_8B,
    LLAMA_31_70B,
    MISTRAL_7B_V01,
    MIXTRAL_8X7B,
    QWEN25_72B,
    REAL,
)


def _shape_is(config: Mapping[str, Any], want: KVShape, what: str) -> None:
    got = kv_shape(config)
    assert got == want, f"kv_shape({what}) returned {got}, expected {want}"


def _bytes_are(config: dict[str, Any], dtype: str, want: int, what: str) -> None:
    got = kv_bytes_per_token(kv_shape(config), dtype=dtype)
    assert got == want, f"kv_bytes_per_token(kv_shape({what}), dtype={dtype!r}) returned {got}, " \
                        f"expected {want:,}"


# ---------------------------------------------------------------- published configs


@pytest.mark.parametrize("model", list(REAL))
def test_published_configs_give_their_shapes(model: str) -> None:
    """kv_shape reads each published config (Llama-3.1, Mixtral, Qwen2.5, DeepSeek-V3, Mistral,
    Gemma-2) into the right shape."""
    config, want, _ = REAL[model]
    _shape_is(config, want, model)


@pytest.mark.parametrize("model", list(REAL))
def test_published_configs_cost_their_bytes_per_token(model: str) -> None:
    """kv_bytes_per_token of each published model in bf16 is its known figure."""
    config, _, want = REAL[model]
    _bytes_are(config, "bf16", want, model)


# ---------------------------------------------------------------- the traps


@pytest.mark.points(3)
def test_gqa_caches_kv_heads_not_query_heads() -> None:
    """Grouped-query attention caches num_key_value_heads, not num_attention_heads (8x less)."""
    _bytes_are(LLAMA_31_70B, "bf16", 327_680, "Llama-3.1-70B: 64 query heads, 8 KV heads")
    _bytes_are(LLAMA_31_8B, "fp8", 65_536, "Llama-3.1-8B: 32 query heads, 8 KV heads")
    one = {"num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 1,
           "hidden_size": 1024}
    _shape_is(one, KVShape("gqa", 4, 1, 64, 2), "4 layers, 16 query heads, 1 KV head")


@pytest.mark.points(2)
def test_head_dim_field_wins_over_hidden_size() -> None:
    """A head_dim in the config wins over hidden_size / num_attention_heads (Gemma-2: 128, not
    144)."""
    _bytes_are(GEMMA2_27B, "bf16", 376_832, "Gemma-2-27B: head_dim 128, 4608 / 32 = 144")
    gemma_9b = {"model_type": "gemma2", "num_hidden_layers": 42, "num_attention_heads": 16,
                "num_key_value_heads": 8, "head_dim": 256, "hidden_size": 3584}
    _shape_is(gemma_9b, KVShape("gqa", 42, 8, 256, 2), "Gemma-2-9B without its window")
    null = {**LLAMA_31_8B, "head_dim": None}
    _shape_is(null, KVShape("gqa", 32, 8, 128, 2), "Llama-3.1-8B with head_dim: null")


@pytest.mark.points(3)
def test_latent_attention_caches_one_latent_per_layer() -> None:
    """Latent attention (DeepSeek-V3) caches kv_lora_rank + qk_rope_head_dim elements per layer:
    no K/V factor of 2, no heads."""
    _bytes_are(DEEPSEEK_V3, "bf16", 70_272, "DeepSeek-V3: 61 x (512 + 64) x 2 bytes")
    _bytes_are(DEEPSEEK_V3, "fp8", 35_136, "DeepSeek-V3 with an fp8 cache")
    small = {"num_hidden_layers": 3, "num_attention_heads": 16, "num_key_value_heads": 16,
             "kv_lora_rank": 64, "qk_rope_head_dim": 16, "hidden_size": 1024}
    _shape_is(small, KVShape("mla", 3, 1, 80, 1), "3 layers, kv_lora_rank 64, rope 16")


@pytest.mark.points(2)
def test_standard_attention_caches_a_key_and_a_value() -> None:
    """Multi-head and grouped-query attention cache a key and a value per head: a factor of 2."""
    mha = {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
           "hidden_size": 256}
    _shape_is(mha, KVShape("mha", 2, 4, 64, 2), "2 layers, 4 heads of 64")
    _bytes_are(mha, "fp32", 2 * 2 * 4 * 64 * 4, "2 layers, 4 heads of 64")


def test_missing_kv_heads_means_one_per_query_head() -> None:
    """With no num_key_value_heads (or null), every query head has its own KV head: "mha"."""
    for kv in ({}, {"num_key_value_heads": None}):
        config = {"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096, **kv}
        _shape_is(config, KVShape("mha", 32, 32, 128, 2), f"Llama-2-7B-like {config}")


@pytest.mark.points(3)
def test_dtype_sizes_are_bytes_not_bits() -> None:
    """fp32 is 4 bytes per element, bf16 and fp16 are 2, fp8 is 1."""
    shape = KVShape("gqa", 1, 1, 1, 2)
    for dtype, want in {"fp32": 8, "bf16": 4, "fp16": 4, "fp8": 2}.items():
        got = kv_bytes_per_token(shape, dtype=dtype)
        assert got == want, f"kv_bytes_per_token({shape}, dtype={dtype!r}) returned {got}, " \
                            f"expected {want} (1 layer x K and V x 1 head x 1 element)"


@pytest.mark.points(2)
def test_sliding_window_layers_are_found() -> None:
    """A sliding_window makes every layer sliding (Mistral), every other one for gemma2,
    starting with the first."""
    _shape_is(MISTRAL_7B_V01, KVShape("gqa", 32, 8, 128, 2, 32, 4096), "Mistral-7B-v0.1")
    _shape_is(GEMMA2_27B, KVShape("gqa", 46, 16, 128, 2, 23, 4096), "Gemma-2-27B")
    odd = {**GEMMA2_27B, "num_hidden_layers": 5}
    _shape_is(odd, KVShape("gqa", 5, 16, 128, 2, 3, 4096), "Gemma-2-27B cut to 5 layers")


@pytest.mark.points(2)
def test_a_null_or_switched_off_window_is_no_window() -> None:
    """sliding_window null (Mixtral), absent (Llama) or use_sliding_window false (Qwen2.5) means
    no sliding layers."""
    _shape_is(MIXTRAL_8X7B, KVShape("gqa", 32, 8, 128, 2), "Mixtral-8x7B: sliding_window null")
    _shape_is(QWEN25_72B, KVShape("gqa", 80, 8, 128, 2),
              "Qwen2.5-72B: sliding_window 131072, use_sliding_window false")
    on = {**QWEN25_72B, "use_sliding_window": True}
    _shape_is(on, KVShape("gqa", 80, 8, 128, 2, 80, 131072), "Qwen2.5-72B with the window on")


@pytest.mark.points(2)
def test_layer_types_decide_which_layers_slide() -> None:
    """A layer_types list decides the sliding layers, whatever model_type says."""
    kinds = ["sliding_attention"] * 5 + ["full_attention"]
    config = {"model_type": "gemma3_text", "num_hidden_layers": 6, "num_attention_heads": 8,
              "num_key_value_heads": 4, "head_dim": 256, "hidden_size": 2560,
              "sliding_window": 1024, "layer_types": kinds}
    _shape_is(config, KVShape("gqa", 6, 4, 256, 2, 5, 1024), "a 5:1 local/global layer_types")
    gemma = {**GEMMA2_27B, "num_hidden_layers": 3, "layer_types": ["full_attention"] * 3}
    _shape_is(gemma, KVShape("gqa", 3, 16, 128, 2), "gemma2 whose layer_types are all full")


@pytest.mark.points(2)
def test_latent_attention_ignores_head_dim() -> None:
    """A latent-attention config that also carries head_dim (as configs re-saved by transformers
    do, with head_dim = qk_rope_head_dim) caches kv_lora_rank + qk_rope_head_dim elements."""
    resaved = {**DEEPSEEK_V3, "head_dim": 64}
    _shape_is(resaved, KVShape("mla", 61, 1, 576, 1), "DeepSeek-V3 re-saved with head_dim 64")


@pytest.mark.points(2)
def test_layer_types_win_over_the_window_switch() -> None:
    """A layer_types list decides the sliding layers even beside use_sliding_window: false."""
    kinds = ["sliding_attention", "full_attention"] * 2
    config = {**QWEN25_72B, "num_hidden_layers": 4, "sliding_window": 4096, "layer_types": kinds}
    _shape_is(config, KVShape("gqa", 4, 8, 128, 2, 2, 4096),
              f"use_sliding_window false and layer_types {kinds}")


def test_a_null_window_switch_is_no_switch() -> None:
    """use_sliding_window: null is no switch at all: Mistral's window stays on every layer."""
    config = {**MISTRAL_7B_V01, "use_sliding_window": None}
    _shape_is(config, KVShape("gqa", 32, 8, 128, 2, 32, 4096),
              "Mistral-7B-v0.1 with use_sliding_window null")


def test_a_null_kv_lora_rank_is_standard_attention() -> None:
    """kv_lora_rank: null is as if absent: the config has standard (here grouped-query)
    attention, not a latent to refuse."""
    _shape_is({**LLAMA_31_8B, "kv_lora_rank": None}, KVShape("gqa", 32, 8, 128, 2),
              "Llama-3.1-8B with kv_lora_rank null")


def test_latent_attention_needs_no_query_head_count() -> None:
    """A latent-attention config needs num_hidden_layers, kv_lora_rank and qk_rope_head_dim:
    without num_attention_heads, num_key_value_heads or hidden_size it still reads."""
    bare = {"num_hidden_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64}
    _shape_is(bare, KVShape("mla", 61, 1, 576, 1), f"{bare}")


def test_null_layer_types_are_no_layer_types() -> None:
    """layer_types: null is as if absent: the other window rules decide."""
    _shape_is({**MISTRAL_7B_V01, "layer_types": None}, KVShape("gqa", 32, 8, 128, 2, 32, 4096),
              "Mistral-7B-v0.1 with layer_types null")
    _shape_is({**LLAMA_31_8B, "layer_types": None}, KVShape("gqa", 32, 8, 128, 2),
              "Llama-3.1-8B with layer_types null")


def test_only_gemma2_alternates_its_layers() -> None:
    """Local and global layers alternate for "model_type": "gemma2" only, spelled exactly: any
    other model_type with a sliding_window and no layer_types (gemma3_text, gemma, Gemma2)
    slides every layer."""
    for model_type in ("gemma3_text", "gemma", "gemma2_text", "Gemma2", "gemma2 "):
        config = {"model_type": model_type, "num_hidden_layers": 6, "num_attention_heads": 8,
                  "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 1024}
        _shape_is(config, KVShape("gqa", 6, 4, 256, 2, 6, 1024),
                  f"6 layers, model_type {model_type!r}, sliding_window 1024, no layer_types")


def test_one_head_with_one_kv_head_is_multi_head() -> None:
    """One attention head with one KV head (absent, null or 1) is "mha": the two counts are equal;
    "gqa" is for fewer KV heads than attention heads."""
    for kv in ({}, {"num_key_value_heads": None}, {"num_key_value_heads": 1}):
        config = {"num_hidden_layers": 2, "num_attention_heads": 1, "hidden_size": 64, **kv}
        _shape_is(config, KVShape("mha", 2, 1, 64, 2), f"{config}")


def test_the_window_rules_apply_to_latent_attention() -> None:
    """The window rules (5 to 8) read the window fields whatever the attention kind: a latent
    config with a sliding_window slides every layer, or those its layer_types name."""
    latent = {"num_hidden_layers": 2, "kv_lora_rank": 512, "qk_rope_head_dim": 64}
    _shape_is({**latent, "sliding_window": 4096}, KVShape("mla", 2, 1, 576, 1, 2, 4096),
              "a 2-layer latent config with sliding_window 4096")
    kinds = ["sliding_attention", "full_attention"]
    _shape_is({**latent, "sliding_window": 4096, "layer_types": kinds},
              KVShape("mla", 2, 1, 576, 1, 1, 4096),
              f"a 2-layer latent config with sliding_window 4096 and layer_types {kinds}")


def test_any_mapping_is_a_config() -> None:
    """kv_shape takes any Mapping, not only a dict: a read-only MappingProxyType of a published
    config reads as the dict does."""
    for model in ("Llama-3.1-8B", "DeepSeek-V3", "Gemma-2-27B"):
        config, want, _ = REAL[model]
        _shape_is(MappingProxyType(config), want, f"MappingProxyType({model})")


@pytest.mark.category("edge_cases")
def test_head_dim_from_hidden_size_is_exact_past_float_precision() -> None:
    """hidden_size / num_attention_heads is exact integer arithmetic for any int: 2**60 + 2 over
    2 heads is 2**59 + 1, and 2**60 + 1 does not divide (a float division says 2**59 for both)."""
    base = {"num_hidden_layers": 1, "num_attention_heads": 2}
    _shape_is({**base, "hidden_size": 2**60 + 2}, KVShape("mha", 1, 2, 2**59 + 1, 2),
              "1 layer, 2 heads, hidden_size 2**60 + 2")
    odd = {**base, "hidden_size": 2**60 + 1}
    try:
        got = kv_shape(odd)
    except ValueError as err:
        assert "hidden_size" in str(err), (  # noqa: PT017
            f"kv_shape({odd}) raised {err!r}: the message should name 'hidden_size'")
    else:
        pytest.fail(f"kv_shape({odd}) returned {got}, expected ValueError naming hidden_size: "
                    "2 heads do not divide an odd hidden_size")


# Keys of neighbouring formats: each is honoured by some library, and none is named by the rules.


def test_a_text_config_beside_the_top_level_fields_is_ignored() -> None:
    """A text_config key is ignored like any key the rules do not name: the top-level fields
    decide (for a multimodal model, the caller passes its text_config)."""
    inner = {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64}
    _shape_is({**LLAMA_31_70B, "text_config": inner}, KVShape("gqa", 80, 8, 128, 2),
              f"Llama-3.1-70B plus text_config {inner}")


def test_qwen2_max_window_layers_is_ignored() -> None:
    """Qwen2's max_window_layers is ignored (rule 9): with the window switched on and no
    layer_types, every layer slides (rule 8)."""
    config = {**QWEN25_72B, "num_hidden_layers": 28, "use_sliding_window": True,
              "sliding_window": 4096, "max_window_layers": 28}
    _shape_is(config, KVShape("gqa", 28, 8, 128, 2, 28, 4096),
              "Qwen2.5 cut to 28 layers, use_sliding_window true, sliding_window 4096, "
              "max_window_layers 28")


def test_gemma3_sliding_window_pattern_is_ignored() -> None:
    """Gemma-3's sliding_window_pattern is ignored (rule 9): without layer_types every layer of
    a gemma3_text config slides (rule 8)."""
    config = {"model_type": "gemma3_text", "num_hidden_layers": 12, "num_attention_heads": 8,
              "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 1024,
              "sliding_window_pattern": 6}
    _shape_is(config, KVShape("gqa", 12, 4, 256, 2, 12, 1024),
              "12 gemma3_text layers, sliding_window 1024, sliding_window_pattern 6, "
              "no layer_types")


def test_falcon_num_kv_heads_is_ignored() -> None:
    """Falcon's num_kv_heads is not num_key_value_heads (rule 9): without the latter every
    attention head has its own KV head (rule 2)."""
    config = {"num_hidden_layers": 1, "num_attention_heads": 8, "num_kv_heads": 2,
              "hidden_size": 64}
    _shape_is(config, KVShape("mha", 1, 8, 8, 2), f"{config}")


def test_falcon_multi_query_is_ignored() -> None:
    """Falcon's multi_query is a key the rules do not name (rule 9): without num_key_value_heads
    every attention head has its own KV head (rule 2), multi_query true or not."""
    falcon = {"model_type": "falcon", "hidden_size": 4544, "multi_query": True,
              "new_decoder_architecture": False, "num_attention_heads": 71,
              "num_hidden_layers": 32}
    _shape_is(falcon, KVShape("mha", 32, 71, 64, 2), "a falcon-7b-like config, multi_query true")
    small = {"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 64,
             "multi_query": True}
    _shape_is(small, KVShape("mha", 2, 8, 8, 2), f"{small}")


def test_an_older_sliding_window_size_key_is_ignored() -> None:
    """sliding_window_size is not sliding_window (rule 9): a config with the former and without
    the latter has no sliding layers (rule 6), gemma2 or not."""
    llama2 = {"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096,
              "sliding_window_size": 4096}
    _shape_is(llama2, KVShape("mha", 32, 32, 128, 2), f"{llama2}")
    gemma = {k: v for k, v in GEMMA2_27B.items() if k != "sliding_window"}
    gemma["sliding_window_size"] = 4096
    _shape_is(gemma, KVShape("gqa", 46, 16, 128, 2),
              "Gemma-2-27B with sliding_window_size 4096 and no sliding_window")


@pytest.mark.category("edge_cases")
def test_gemma2_local_layers_are_exact_past_float_precision() -> None:
    """ceil(layers / 2) is exact for any int: a gemma2 config of 2**53 + 1 layers has 2**52 + 1
    local ones (a float division says 2**52)."""
    config = {"model_type": "gemma2", "num_hidden_layers": 2**53 + 1, "num_attention_heads": 1,
              "head_dim": 1, "sliding_window": 4}
    _shape_is(config, KVShape("mha", 2**53 + 1, 1, 1, 2, 2**52 + 1, 4),
              "gemma2 with 2**53 + 1 layers, 1 head of 1, sliding_window 4")


# ---------------------------------------------------------------- metamorphic

_NAMED = {"num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size",
          "head_dim", "kv_lora_rank", "qk_rope_head_dim", "sliding_window", "use_sliding_window",
          "layer_types", "model_type"}
_EXTRA = st.dictionaries(
    st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12).filter(
        lambda k: k not in _NAMED),
    st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.text(max_size=5),
              st.lists(st.integers(0, 3), max_size=3)),
    max_size=6)


@pytest.mark.points(2)
@settings(max_examples=40)
@given(st.sampled_from(list(REAL)), _EXTRA)
@example("DeepSeek-V3", {"num_experts": 0, "attention_kind": "linear", "n_heads": -1})
@example("Gemma-2-27B", {"sliding_window_size": 32768, "query_pre_attn_scalar": 0})
def test_unrelated_keys_leave_published_shapes_alone(model: str, extra: dict[str, Any]) -> None:
    """Adding keys the rules do not name to a config leaves its shape as it was."""
    config, want, _ = REAL[model]
    _shape_is({**extra, **config}, want, f"{model} plus {extra}")
