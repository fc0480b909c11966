"""A tiny DeepSeek-OCR-shaped checkpoint that vLLM accepts, made in the test (no download).

Only the configuration and tokenizer are written: vLLM fills the weights at random with
``load_format="dummy"``. The decoder is a 2-layer DeepSeek-V2 MoE of hidden size 64 with plain
multi-head attention (as DeepSeek-OCR has); vLLM hard-codes the SAM-B and CLIP-L vision
towers whatever the configuration says, so they keep their real size (~0.4 B parameters).
"""

from __future__ import annotations

import json
from pathlib import Path

SPECIAL_TOKENS = [
    "<｜begin▁of▁sentence｜>",
    "<｜end▁of▁sentence｜>",
    "<｜▁pad▁｜>",
    "<image>",
    "<|grounding|>",
    "<|ref|>",
    "<|/ref|>",
    "<|det|>",
    "<|/det|>",
    "<td>",
    "</td>",
]
VOCAB_SIZE = 512
HIDDEN = 64


def _language_config() -> dict:
    return {
        "architectures": ["DeepseekV2ForCausalLM"],
        "model_type": "deepseek_v2",
        "hidden_size": HIDDEN,
        "intermediate_size": 128,
        "moe_intermediate_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "n_routed_experts": 4,
        "n_shared_experts": 1,
        "num_experts_per_tok": 2,
        "first_k_dense_replace": 1,
        "moe_layer_freq": 1,
        "topk_method": "greedy",
        "n_group": 1,
        "topk_group": 1,
        "routed_scaling_factor": 1.0,
        "norm_topk_prob": False,
        "scoring_func": "softmax",
        "q_lora_rank": None,
        "kv_lora_rank": None,
        "qk_nope_head_dim": 0,
        "qk_rope_head_dim": 0,
        "v_head_dim": 0,
        "use_mla": False,
        "vocab_size": VOCAB_SIZE,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "pad_token_id": 2,
        "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


def config() -> dict:
    language = _language_config()
    return {
        "architectures": ["DeepseekOCRForCausalLM"],
        "model_type": "deepseek_vl_v2",
        "language_config": language,
        "projector_config": {"input_dim": 2048, "n_embed": HIDDEN, "projector_type": "linear"},
        "vision_config": {"image_size": 1024, "width": 1024, "layers": 2, "heads": 4},
        "tile_tag": "2D",
        "global_view_pos": "head",
        "candidate_resolutions": [[1024, 1024]],
        "vocab_size": VOCAB_SIZE,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "torch_dtype": "bfloat16",
    }


def tokenizer_json() -> str:
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = [f"w{i}" for i in range(VOCAB_SIZE - len(SPECIAL_TOKENS) - 1)]
    vocab = {token: index for index, token in enumerate([*SPECIAL_TOKENS, "[UNK]", *words])}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.add_special_tokens(SPECIAL_TOKENS)
    return tokenizer.to_str()


def write(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config(), indent=2))
    (folder / "tokenizer.json").write_text(tokenizer_json())
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "LlamaTokenizerFast",
                "bos_token": SPECIAL_TOKENS[0],
                "eos_token": SPECIAL_TOKENS[1],
                "pad_token": SPECIAL_TOKENS[2],
                "add_bos_token": True,
                "add_eos_token": False,
                "model_max_length": 8192,
            }
        )
    )
    (folder / "special_tokens_map.json").write_text(
        json.dumps(
            {
                "bos_token": SPECIAL_TOKENS[0],
                "eos_token": SPECIAL_TOKENS[1],
                "pad_token": SPECIAL_TOKENS[2],
            }
        )
    )
    return folder
