"""A tiny checkpoint in jina-ocr-v1's layout, made in the test (nothing is downloaded).

- ``config.json`` with DeepSeek-OCR's keys: ``DeepseekOCRForCausalLM``, model type
  ``deepseek_vl_v2``, a ``language_config`` of the DeepSeek-V2 MoE shape (dense first layer,
  routed + shared experts, top-k greedy routing, plain multi-head attention: the
  ``qk_*_head_dim`` 0), scaled down to hidden 64 and 2 layers.
- A word-level tokenizer with DeepSeek-OCR's special tokens, ``<image>`` among them, and a
  chat template that renders an image part and a text part.
- Remote code (``tiny_remote/``, named by ``auto_map``) that
  ``AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)`` loads: the decoder
  below with DeepSeek-OCR's public calling convention and a stand-in for its vision tower.
- ``model.safetensors`` with the decoder's weights under DeepSeek-OCR's Hugging Face names
  (``model.embed_tokens``, ``model.layers.N.*``, ``model.norm``, ``lm_head``) and a FastMTP
  draft head under ``mtp_module.*`` (one dense decoder layer, DeepSeek-V3's MTP names, no own
  embedding or output head: both are the decoder's).

Weights, chosen so that decoding is deterministic and the draft is right: every attention
output projection and every MLP's down projection is zero, so the residual stream carries the
current token's embedding through both layers, and the output head maps token ``t`` to a fixed
successor: decoding walks one long cycle of the vocabulary, and after ``STEPS_TO_EOS`` tokens
from the prompt's last word it says end-of-sequence. The draft head's ``eh_proj`` passes the
token half of its input through unchanged and its block is zero too, so its prediction from
token ``t`` is the decoder's own: the draft is *copied* from the verifier, so vLLM accepts its
drafts, which is what the tier checks (with random weights nothing is accepted).

The vision tower (SAM-B and CLIP-L, which vLLM builds whatever the config says) is not in the
file: the tier's loader fills what the file lacks at random (``tests/vllm/shim``).
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
BOS, EOS = 0, 1
VOCAB_SIZE = 512
HIDDEN = 64
LAYERS = 2
HEADS = 2
INTERMEDIATE = 128
MOE_INTERMEDIATE = 32
ROUTED_EXPERTS = 4
SHARED_EXPERTS = 1
STEPS_TO_EOS = 24
# The output head's scale: logits of about ±6, far from ties in bfloat16.
HEAD_SCALE = 0.1
SEED = 14


def language_config() -> dict:
    return {
        "architectures": ["DeepseekV2ForCausalLM"],
        "model_type": "deepseek_v2",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "moe_intermediate_size": MOE_INTERMEDIATE,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": HEADS,
        "n_routed_experts": ROUTED_EXPERTS,
        "n_shared_experts": SHARED_EXPERTS,
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
        "bos_token_id": BOS,
        "eos_token_id": EOS,
        "pad_token_id": 2,
        "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


def config() -> dict:
    return {
        "architectures": ["DeepseekOCRForCausalLM"],
        "model_type": "deepseek_vl_v2",
        "language_config": language_config(),
        "projector_config": {"input_dim": 2048, "n_embed": HIDDEN, "projector_type": "linear"},
        "vision_config": {"image_size": 1024, "width": 1024, "layers": 2, "heads": 4},
        "tile_tag": "2D",
        "global_view_pos": "head",
        "candidate_resolutions": [[1024, 1024]],
        "vocab_size": VOCAB_SIZE,
        "bos_token_id": BOS,
        "eos_token_id": EOS,
        "torch_dtype": "bfloat16",
        # The remote code Transformers loads with trust_remote_code=True (vLLM reads none of it).
        "auto_map": {
            "AutoConfig": "configuration_tiny_ocr.TinyOcrConfig",
            "AutoModel": "modeling_tiny_ocr.TinyOcrForCausalLM",
            "AutoModelForCausalLM": "modeling_tiny_ocr.TinyOcrForCausalLM",
        },
    }


# A user message of an image part and a text part, rendered the way DeepSeek-OCR's public
# ``infer`` formats its prompt (the "plain" conversation template: the content alone, the image
# as ``<image>`` on a line of its own before the text).
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['content'] is string %}"
    "{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>\n{% elif part['type'] == 'text' %}"
    "{{ part['text'] }}{% endif %}{% endfor %}{% endif %}{% endfor %}"
)
REMOTE_CODE = Path(__file__).parent / "tiny_remote"


def words() -> list[str]:
    """The ordinary words: jina-ocr-v1's prompt's words first (so the prompt is not all
    unknown tokens), then fillers up to the vocabulary's size."""
    from model.engines.vllm.prompt import JINA_OCR_PROMPT

    prompt = list(dict.fromkeys(JINA_OCR_PROMPT.split()))
    fill = VOCAB_SIZE - len(SPECIAL_TOKENS) - 1 - len(prompt)
    return [*prompt, *(f"w{i}" for i in range(fill))]


def vocabulary() -> dict[str, int]:
    return {t: i for i, t in enumerate([*SPECIAL_TOKENS, "[UNK]", *words()])}


def tokenizer_json() -> str:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel(vocab=vocabulary(), unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.add_special_tokens(SPECIAL_TOKENS)
    return tokenizer.to_str()


def successor_cycle() -> list[int]:
    """The order decoding walks: from the prompt's last word through every ordinary token."""
    import random

    from model.engines.vllm.prompt import JINA_OCR_PROMPT

    vocab = vocabulary()
    start = vocab[JINA_OCR_PROMPT.split()[-1]]
    others = [i for i in range(len(SPECIAL_TOKENS), VOCAB_SIZE) if i != start]
    random.Random(SEED).shuffle(others)
    return [start, *others]


def expected_output() -> list[int]:
    """The token ids greedy decoding must produce after the prompt (EOS included)."""
    cycle = successor_cycle()
    return [*cycle[1 : STEPS_TO_EOS + 1], EOS]


def expected_text() -> str:
    """The words of ``expected_output`` (what a page's Markdown holds, EOS dropped)."""
    names = {i: t for t, i in vocabulary().items()}
    return " ".join(names[i] for i in expected_output()[:-1])


def tensors() -> dict:
    import torch

    g = torch.Generator().manual_seed(SEED)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * 0.02

    zeros, ones = torch.zeros, torch.ones
    # Rows of norm sqrt(HIDDEN): RMSNorm (weight 1) leaves them as they are.
    embed = torch.randn(VOCAB_SIZE, HIDDEN, generator=g)
    embed = embed / embed.norm(dim=1, keepdim=True) * HIDDEN**0.5
    head = zeros(VOCAB_SIZE, HIDDEN)
    cycle = successor_cycle()
    for here, after in zip(cycle[:STEPS_TO_EOS], cycle[1 : STEPS_TO_EOS + 1], strict=True):
        head[after] = embed[here] * HEAD_SCALE
    head[EOS] = embed[cycle[STEPS_TO_EOS]] * HEAD_SCALE
    for here, after in zip(cycle[STEPS_TO_EOS + 1 :], cycle[STEPS_TO_EOS + 2 :], strict=False):
        head[after] = embed[here] * HEAD_SCALE

    out: dict[str, torch.Tensor] = {
        "model.embed_tokens.weight": embed,
        "model.norm.weight": ones(HIDDEN),
        "lm_head.weight": head,
    }

    def attention(prefix: str) -> None:
        for name in ("q_proj", "k_proj", "v_proj"):
            out[f"{prefix}self_attn.{name}.weight"] = rand(HIDDEN, HIDDEN)
        out[f"{prefix}self_attn.o_proj.weight"] = zeros(HIDDEN, HIDDEN)
        out[f"{prefix}input_layernorm.weight"] = ones(HIDDEN)
        out[f"{prefix}post_attention_layernorm.weight"] = ones(HIDDEN)

    def dense(prefix: str, width: int) -> None:
        out[f"{prefix}gate_proj.weight"] = rand(width, HIDDEN)
        out[f"{prefix}up_proj.weight"] = rand(width, HIDDEN)
        out[f"{prefix}down_proj.weight"] = zeros(HIDDEN, width)

    for layer in range(LAYERS):
        prefix = f"model.layers.{layer}."
        attention(prefix)
        if layer == 0:
            dense(prefix + "mlp.", INTERMEDIATE)
            continue
        out[prefix + "mlp.gate.weight"] = rand(ROUTED_EXPERTS, HIDDEN)
        for expert in range(ROUTED_EXPERTS):
            dense(f"{prefix}mlp.experts.{expert}.", MOE_INTERMEDIATE)
        dense(prefix + "mlp.shared_experts.", MOE_INTERMEDIATE * SHARED_EXPERTS)

    # The FastMTP head: eh_proj keeps the embedding half ([I | 0]), its block adds nothing.
    attention("mtp_module.")
    dense("mtp_module.mlp.", INTERMEDIATE)
    out["mtp_module.enorm.weight"] = ones(HIDDEN)
    out["mtp_module.hnorm.weight"] = ones(HIDDEN)
    out["mtp_module.eh_proj.weight"] = torch.cat([torch.eye(HIDDEN), zeros(HIDDEN, HIDDEN)], 1)
    out["mtp_module.shared_head.norm.weight"] = ones(HIDDEN)
    return {name: t.to(torch.bfloat16).contiguous() for name, t in out.items()}


def write(folder: Path, *, weights: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config(), indent=2))
    (folder / "tokenizer.json").write_text(tokenizer_json())
    (folder / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": SPECIAL_TOKENS[BOS],
                "eos_token": SPECIAL_TOKENS[EOS],
                "pad_token": SPECIAL_TOKENS[2],
                "add_bos_token": True,
                "add_eos_token": False,
                "model_max_length": 8192,
                "chat_template": CHAT_TEMPLATE,
            }
        )
    )
    (folder / "special_tokens_map.json").write_text(
        json.dumps(
            {
                "bos_token": SPECIAL_TOKENS[BOS],
                "eos_token": SPECIAL_TOKENS[EOS],
                "pad_token": SPECIAL_TOKENS[2],
            }
        )
    )
    for module in REMOTE_CODE.glob("*.py"):
        (folder / module.name).write_text(module.read_text())
    if weights:
        from safetensors.torch import save_file

        save_file(tensors(), str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


if __name__ == "__main__":
    import sys

    print(write(Path(sys.argv[1])))
