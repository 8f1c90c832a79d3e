"""Shared data for the kv_cache checks: published configs, an oracle, strategies, a CPU clock.

Each config holds the fields of the model's published `config.json` on the Hugging Face Hub that
the rules read, plus a few that they do not (vocab_size, rope_theta, ...), with the published
values.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st
from kv_cache import Attention, KVShape

GiB = 2**30
BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}

# meta-llama/Llama-3.1-8B
LLAMA_31_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 131072, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "rope_theta": 500000.0,
    "torch_dtype": "bfloat16", "vocab_size": 128256, "tie_word_embeddings": False,
}
# meta-llama/Llama-3.1-70B
LLAMA_31_70B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
    "intermediate_size": 28672, "max_position_embeddings": 131072, "num_attention_heads": 64,
    "num_hidden_layers": 80, "num_key_value_heads": 8, "rope_theta": 500000.0,
    "torch_dtype": "bfloat16", "vocab_size": 128256, "rms_norm_eps": 1e-05,
}
LLAMA_31_70B_WEIGHTS = 70_553_706_496 * 2  # parameters x 2 bytes (bf16)
# mistralai/Mixtral-8x7B-v0.1
MIXTRAL_8X7B: dict[str, Any] = {
    "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "num_attention_heads": 32,
    "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "num_local_experts": 8, "rope_theta": 1e6, "sliding_window": None, "vocab_size": 32000,
}
# Qwen/Qwen2.5-72B-Instruct: a window is named, and switched off.
QWEN25_72B: dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 8192,
    "intermediate_size": 29568, "max_position_embeddings": 32768, "num_attention_heads": 64,
    "num_hidden_layers": 80, "num_key_value_heads": 8, "rope_theta": 1000000.0,
    "sliding_window": 131072, "use_sliding_window": False, "vocab_size": 152064,
}
# deepseek-ai/DeepSeek-V3: num_key_value_heads is there, and is not what the cache holds.
DEEPSEEK_V3: dict[str, Any] = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
    "hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512,
    "max_position_embeddings": 163840, "moe_intermediate_size": 2048, "n_routed_experts": 256,
    "num_attention_heads": 128, "num_hidden_layers": 61, "num_key_value_heads": 128,
    "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "first_k_dense_replace": 3, "vocab_size": 129280,
}
# mistralai/Mistral-7B-v0.1: every layer keeps a 4,096-token window.
MISTRAL_7B_V01: dict[str, Any] = {
    "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "rope_theta": 10000.0,
    "sliding_window": 4096, "vocab_size": 32000,
}
# google/gemma-2-27b: head_dim 128, not 4608 / 32 = 144; local and global layers alternate.
GEMMA2_27B: dict[str, Any] = {
    "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 4608,
    "head_dim": 128, "intermediate_size": 36864, "max_position_embeddings": 8192,
    "num_attention_heads": 32, "num_hidden_layers": 46, "num_key_value_heads": 16,
    "query_pre_attn_scalar": 144, "sliding_window": 4096, "cache_implementation": "hybrid",
    "attn_logit_softcapping": 50.0, "vocab_size": 256000,
}

# name: (config, shape, bf16 bytes per token)
REAL: dict[str, tuple[dict[str, Any], KVShape, int]] = {
    "Llama-3.1-8B": (LLAMA_31_8B, KVShape("gqa", 32, 8, 128, 2), 131_072),
    "Llama-3.1-70B": (LLAMA_31_70B, KVShape("gqa", 80, 8, 128, 2), 327_680),
    "Mixtral-8x7B": (MIXTRAL_8X7B, KVShape("gqa", 32, 8, 128, 2), 131_072),
    "Qwen2.5-72B": (QWEN25_72B, KVShape("gqa", 80, 8, 128, 2), 327_680),
    "DeepSeek-V3": (DEEPSEEK_V3, KVShape("mla", 61, 1, 576, 1), 70_272),
    "Mistral-7B-v0.1": (MISTRAL_7B_V01, KVShape("gqa", 32, 8, 128, 2, 32, 4096), 131_072),
    "Gemma-2-27B": (GEMMA2_27B, KVShape("gqa", 46, 16, 128, 2, 23, 4096), 376_832),
}


def oracle(shape: KVShape, *, gpu_memory: int, weights: int, tp: int, context: int,
           block_tokens: int = 16, dtype: str = "bf16", reserve: float = 0.0) -> int:
    """The statement's arithmetic, written the long way: every layer's blocks, one by one."""
    heads = math.ceil(shape.kv_heads / tp)
    free = gpu_memory - math.ceil(gpu_memory * reserve) - -(-weights // tp)
    per_block = block_tokens * shape.kv_factor * heads * shape.head_dim * BYTES[dtype]
    held = min(context, shape.window) if shape.window is not None else context
    need = 0
    for layer in range(shape.layers):
        tokens = held if layer < shape.sliding_layers else context
        need += math.ceil(tokens / block_tokens) * per_block
    return max(free, 0) // need


def shapes(max_heads: int = 16) -> st.SearchStrategy[KVShape]:
    """Small consistent shapes: any attention kind, with or without sliding layers."""

    @st.composite
    def build(draw: st.DrawFn) -> KVShape:
        layers = draw(st.integers(1, 6))
        sliding = draw(st.integers(0, layers))
        window = draw(st.sampled_from([16, 40, 64, 100])) if sliding else None
        if draw(st.booleans()):
            return KVShape("mla", layers, 1, draw(st.sampled_from([8, 24, 72])), 1,
                           sliding, window)
        kv_heads = draw(st.sampled_from([h for h in (1, 2, 4, 8, 16) if h <= max_heads]))
        kind: Attention = draw(st.sampled_from(["mha", "gqa"]))
        return KVShape(kind, layers, kv_heads, draw(st.sampled_from([4, 8, 16])), 2,
                       sliding, window)

    return build()
