"""A tiny checkpoint in jina-ocr-v1's published layout, made in the test (nothing is downloaded).

- ``config.json`` with DeepSeek-OCR's keys: ``DeepseekOCRForCausalLM``, model type
  ``deepseek_vl_v2``, a ``language_config`` of the DeepSeek-V2 MoE shape (dense first layer,
  routed + shared experts, top-k greedy routing, plain multi-head attention: the
  ``qk_*_head_dim`` 0), scaled down to hidden 64 and 2 layers, and jina-ocr-v1's ``mtp_*``
  keys at the top level (the head shares the target's embedding, final norm and output head,
  states K=3, is recursive and dense).
- A word-level tokenizer with DeepSeek-OCR's special tokens, ``<image>`` among them, and a
  chat template that renders an image part and a text part.
- Remote code (``tiny_remote/``, named by ``auto_map``) that
  ``AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)`` loads: the decoder
  below with DeepSeek-OCR's public calling convention and a stand-in for its vision tower.
- ``model.safetensors`` with the decoder's weights under DeepSeek-OCR's Hugging Face names
  (``model.embed_tokens``, ``model.layers.N.*``, ``model.norm``, ``lm_head``, the projector,
  the newline and view separator) and a FastMTP draft head as jina-ocr-v1 publishes it:
  ``mtp_module.heads.0.{enorm,hnorm,eh_proj}.weight`` and ``mtp_module.heads.0.mtp_block.*``,
  no ``shared_head.*`` (``layout`` writes the older layouts too).

The weights (``tiny_draft``) make decoding deterministic and the draft right only when it
reads the target's hidden state at the right position, recycles its own post-norm state and
reads the page's features at image positions; ``draft="swapped"`` is a mis-wired head and
``draft="distilled"`` one trained on the checkpoint's own decoding (``tiny_distill``).

The vision tower (SAM-B and CLIP-L, which vLLM builds whatever the config says) is not in the
file: the tier's loader fills what the file lacks at random (``tests/vllm/shim``); the
projector's zero weight makes the page's features independent of it.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.vllm import tiny_distill, tiny_draft

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
HIDDEN = tiny_draft.HIDDEN
LAYERS = 2
HEADS = 2
INTERMEDIATE = 128
MOE_INTERMEDIATE = 32
ROUTED_EXPERTS = 4
SHARED_EXPERTS = 1
STEPS_TO_EOS = tiny_draft.STEPS_TO_EOS
SEED = tiny_draft.SEED
# jina-ocr-v1's config keys for its FastMTP head (docs/GPU.md cites them).
MTP_KEYS = {
    "mtp_num_heads": 1,
    "mtp_moe": False,
    "mtp_recursive": True,
    "mtp_num_speculative_steps": 3,
    "mtp_share_embedding_weights": True,
    "mtp_share_lm_head": True,
    "mtp_share_norm": True,
    "num_nextn_predict_layers": 1,
}
LAYOUTS = ("published", "mtp_module", "deepseek-v3")


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


def config(layout: str = "published") -> dict:
    keys = MTP_KEYS if layout == "published" else {}
    return {
        **keys,
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


def prompt_ids() -> list[int]:
    from model.engines.vllm.prompt import JINA_OCR_PROMPT

    vocab = vocabulary()
    return [vocab[w] for w in dict.fromkeys(JINA_OCR_PROMPT.split())]


def successor_cycle() -> list[int]:
    """The order decoding walks: from the prompt's last word through every ordinary token."""
    return tiny_draft.successor_cycle(prompt_ids(), list(range(len(SPECIAL_TOKENS), VOCAB_SIZE)))


def expected_output() -> list[int]:
    """The token ids greedy decoding must produce after the prompt (EOS included)."""
    cycle = successor_cycle()
    return [*cycle[1 : STEPS_TO_EOS + 1], EOS]


def expected_text() -> str:
    """The words of ``expected_output`` (what a page's Markdown holds, EOS dropped)."""
    names = {i: t for t, i in vocabulary().items()}
    return " ".join(names[i] for i in expected_output()[:-1])


def tensors(*, layout: str = "published", draft: str = "") -> dict:
    """The checkpoint's tensors (bfloat16); ``draft="swapped"`` mis-wires the head."""
    import torch

    g = torch.Generator().manual_seed(SEED)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * 0.02

    zeros, ones = torch.zeros, torch.ones
    cycle = successor_cycle()
    decoder = tiny_draft.decoder_tensors(torch, cycle, VOCAB_SIZE, EOS)
    feature = decoder["feature"]
    out: dict[str, torch.Tensor] = {
        "model.embed_tokens.weight": decoder["embed"],
        "model.norm.weight": decoder["norm"],
        "lm_head.weight": decoder["head"],
        # The page's features are ``feature`` wherever a page goes, whatever the pixels.
        "model.projector.layers.weight": zeros(HIDDEN, 2048),
        "model.projector.layers.bias": feature,
        "model.image_newline": feature,
        "model.view_seperator": feature,
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

    if draft == tiny_distill.DISTILLED:
        block = tiny_distill.distilled_tensors(torch, decoder, config(layout), prompt_ids(), BOS)
    else:
        block = tiny_draft.draft_tensors(torch, decoder, cycle, prompt_ids(), BOS, draft)
    rename = {
        "published": tiny_draft.published,
        "mtp_module": tiny_draft.flat,
        "deepseek-v3": tiny_draft.deepseek_v3(LAYERS),
    }[layout]
    out.update({rename(name): t for name, t in block.items()})
    if layout != "published":  # the older layouts ship the head's own final norm
        out[rename("shared_head.norm.weight")] = decoder["norm"]
    return {name: t.to(torch.bfloat16).contiguous() for name, t in out.items()}


def write(
    folder: Path,
    *,
    weights: bool = True,
    layout: str = "published",
    draft: str = "",
    tensors_: dict | None = None,
    config_: dict | None = None,
) -> Path:
    """The checkpoint in ``folder``; ``tensors_`` / ``config_`` replace the made ones (the
    tests' refused variants)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config_ or config(layout), indent=2))
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

        made = tensors_ if tensors_ is not None else tensors(layout=layout, draft=draft)
        save_file(made, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


if __name__ == "__main__":
    import sys

    print(write(Path(sys.argv[1])))
