"""FastMTP decoding is lossless: the same token ids as plain greedy decoding, every time.

CPU-only, deterministic (hypothesis derandomized, models built from drawn seeds), float64 so
that a verifier pass over K+1 positions and one over a single position never round to
different argmaxes on a near tie: what is tested is the algorithm, not float luck.
"""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from tests import FASTMTP_EXTRA

# PyTorch models built and decoded on the CPU: tens of seconds, so not in `make test-fast`.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch", reason=FASTMTP_EXTRA)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from model.fastmtp import (  # noqa: E402
    BlockConfig,
    CausalLMAdapter,
    MTPDraftBlock,
    SpecCounters,
    greedy_decode,
    speculative_decode,
)
from model.fastmtp.cache import realign  # noqa: E402
from model.fastmtp.layout import DraftLoadError  # noqa: E402
from model.fastmtp.loader import load_draft  # noqa: E402
from model.fastmtp.tiny import TinyCausalLM  # noqa: E402

PROPERTY = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def _config(seed: int) -> BlockConfig:
    heads = [(2, 1), (2, 2), (4, 2)][seed % 3]
    return BlockConfig(
        hidden_size=16, num_heads=heads[0], num_kv_heads=heads[1], intermediate_size=24
    )


def _models(seed: int, vocab: int, layers: int) -> tuple[CausalLMAdapter, MTPDraftBlock]:
    torch.manual_seed(seed)
    cfg = _config(seed)
    verifier = TinyCausalLM(cfg, vocab, layers).double().eval()
    adapter = CausalLMAdapter(verifier)
    block = MTPDraftBlock(cfg, vocab, own_embedding=bool(seed % 2)).double().eval()
    return adapter, block.share(adapter.embedding, adapter.head)


@torch.inference_mode()
def _reference(model, prompt: list[int], max_new: int, eos: int | None) -> list[int]:
    """Greedy decoding the slowest, plainest way: the whole sequence again for every token."""
    ids, out = list(prompt), []
    for _ in range(max_new):
        token = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
        out.append(token)
        ids.append(token)
        if token == eos:
            break
    return out


cases = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 10_000),
        "vocab": st.integers(2, 9),  # small vocabularies make random drafts right often
        "layers": st.integers(1, 2),
        "k": st.integers(1, 4),
        "prompts": st.lists(
            st.lists(st.integers(0, 1), min_size=1, max_size=7), min_size=1, max_size=4
        ),
        "max_new": st.integers(1, 14),
        "eos": st.one_of(st.none(), st.integers(0, 8)),
    }
)


@PROPERTY
@given(case=cases)
def test_speculative_decoding_equals_plain_greedy_decoding_token_for_token(case):
    adapter, block = _models(case["seed"], case["vocab"], case["layers"])
    # Token ids drawn as 0/1 are spread over the vocabulary by the seed, prompt by prompt.
    prompts = [
        [(t + case["seed"] + i) % case["vocab"] for i, t in enumerate(p)] for p in case["prompts"]
    ]
    eos = case["eos"] if case["eos"] is None or case["eos"] < case["vocab"] else None
    expected = [_reference(adapter.model, p, case["max_new"], eos) for p in prompts]
    counters = SpecCounters(case["k"])

    got = speculative_decode(
        adapter,
        block,
        prompts,
        k=case["k"],
        max_new_tokens=case["max_new"],
        eos_token_id=eos,
        counters=counters,
    )

    assert got == expected
    assert (
        greedy_decode(adapter, prompts, max_new_tokens=case["max_new"], eos_token_id=eos)
        == expected
    )
    rates = counters.acceptance_rates
    assert all(a >= b for a, b in zip(rates, rates[1:], strict=False))
    assert 1.0 <= counters.tokens_per_step <= case["k"] + 1 or counters.drafts == 0


def test_the_property_cases_exercise_partial_and_full_acceptance_in_one_batch():
    for seed in range(40):
        adapter, block = _models(seed, vocab=3, layers=1)
        counters = SpecCounters(3)
        prompts = [[0, 1, 2], [2], [1, 1, 0, 2, 2]]
        got = speculative_decode(adapter, block, prompts, k=3, max_new_tokens=12, counters=counters)
        assert got == [_reference(adapter.model, p, 12, None) for p in prompts]
        if (
            counters.accepted_per_position[-1]
            and counters.accepted_per_position[0] < counters.drafts
        ):
            break
    else:
        pytest.fail("no seed gave a mix of full and partial acceptance")


def test_a_draft_that_always_agrees_commits_k_plus_one_tokens_per_pass():
    adapter, block = _models(7, vocab=5, layers=2)
    # A zero head makes every logit equal, so the verifier and the draft both pick token 0.
    with torch.no_grad():
        adapter.head.weight.zero_()
    counters = SpecCounters(3)

    got = speculative_decode(
        adapter, block, [[1, 2], [3]], k=3, max_new_tokens=9, counters=counters
    )

    assert got == [[0] * 9, [0] * 9]
    assert counters.acceptance_rates == [1.0, 1.0, 1.0]
    assert counters.tokens_per_step == 4.0
    assert counters.verifier_passes == 2  # 1 token from the prefill, then 4 + 4


def test_it_stops_each_sequence_at_its_own_eos_and_budget():
    adapter, block = _models(3, vocab=4, layers=1)
    prompts = [[1], [2, 3], [0, 0, 1]]
    expected = [_reference(adapter.model, p, 20, 3) for p in prompts]

    got = speculative_decode(adapter, block, prompts, k=4, max_new_tokens=20, eos_token_id=3)

    assert got == expected
    assert all(len(g) <= 20 and (3 not in g[:-1]) for g in got)


@settings(max_examples=10, deadline=None, derandomize=True)
@given(case=cases)
def test_a_prefill_from_input_embeddings_decodes_like_the_token_ids_and_stays_lossless(case):
    adapter, block = _models(case["seed"], case["vocab"], case["layers"])
    prompts = [
        [(t + case["seed"] + i) % case["vocab"] for i, t in enumerate(p)] for p in case["prompts"]
    ]
    common = {"max_new_tokens": case["max_new"], "eos_token_id": None}
    own = [adapter.embedding(torch.tensor(p)) for p in prompts]
    # Embeddings no token has, like a page image's features spliced into a VLM prompt.
    torch.manual_seed(case["seed"])
    foreign = [torch.randn(len(p), 16, dtype=torch.float64) for p in prompts]

    assert greedy_decode(adapter, prompts, prompt_embeds=own, **common) == greedy_decode(
        adapter, prompts, **common
    )
    expected = greedy_decode(adapter, prompts, prompt_embeds=foreign, **common)
    got = speculative_decode(adapter, block, prompts, k=case["k"], prompt_embeds=foreign, **common)
    assert got == expected


def test_a_batch_of_one_rolls_back_by_cropping_and_never_gathers(monkeypatch):
    import model.fastmtp.decoding as decoding

    def no_gather(valid):
        raise AssertionError("uniform acceptance must not realign by gather")

    monkeypatch.setattr(decoding, "realign", no_gather)
    rejected = False
    for seed in range(3):
        adapter, block = _models(seed, vocab=3, layers=1)
        counters = SpecCounters(3)
        got = speculative_decode(
            adapter, block, [[0, 1, 2]], k=3, max_new_tokens=12, counters=counters
        )
        assert got == [_reference(adapter.model, [0, 1, 2], 12, None)]
        rejected |= counters.accepted_tokens < counters.draft_tokens
    assert rejected, "no draft was rejected, so no crop dropped anything"


def test_realign_drops_rejected_slots_and_keeps_time_order():
    valid = torch.tensor([[0, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 0], [0, 0, 1, 0, 1, 1]], dtype=bool)
    how, new = realign(valid)
    assert not isinstance(how, slice)
    picked = torch.arange(6).expand(3, 6).gather(1, how)
    kept = [[s for s in picked[r].tolist() if valid[r, s]] for r in range(3)]
    assert kept == [[1, 2, 3], [0, 1, 2, 3, 4], [2, 4, 5]]
    assert new.tolist() == [
        [False, False, True, True, True],
        [True] * 5,
        [False, False, True, True, True],
    ]
    assert all(valid[r, picked[r][new[r]]].all() for r in range(3))


def test_realign_is_a_plain_crop_when_every_row_rejects_the_same():
    valid = torch.tensor([[0, 1, 1, 0, 0], [1, 1, 1, 0, 0]], dtype=bool)
    how, new = realign(valid)
    assert how == slice(0, 3)
    assert new.tolist() == [[False, True, True], [True, True, True]]


def _layout_names(block: MTPDraftBlock, layout: str) -> dict:
    """The block's tensors under a checkpoint layout's names (the final norm left out)."""
    prefix = {"heads": "mtp_module.heads.0.", "flat": "mtp_module.", "v3": "model.layers.2."}[
        layout
    ]
    tensors = {}
    for name, t in block.state_dict().items():
        if name == "norm.weight":
            continue
        if name == "embed_tokens.weight":
            key = "mtp_embed_tokens.weight" if layout != "v3" else prefix + name
        elif name.startswith("block."):
            nest = "mtp_block." if layout == "heads" else ""
            key = prefix + nest + name.removeprefix("block.")
        else:
            key = prefix + name
        tensors[key] = t.clone()
    return tensors


def _loader_config(**mtp) -> dict:
    cfg = _config(0)
    return {
        **mtp,
        "language_config": {
            "hidden_size": cfg.hidden_size,
            "num_attention_heads": cfg.num_heads,
            "num_key_value_heads": cfg.num_kv_heads,
            "intermediate_size": cfg.intermediate_size,
            "num_hidden_layers": 2,
            "vocab_size": 5,
        },
    }


SHARED = {
    "mtp_share_embedding_weights": True,
    "mtp_share_norm": True,
    "mtp_share_lm_head": True,
    "mtp_num_speculative_steps": 3,
}


def _save(path, tensors: dict) -> None:
    safetensors = pytest.importorskip("safetensors.torch", reason=FASTMTP_EXTRA)
    path.mkdir(parents=True, exist_ok=True)
    safetensors.save_file(tensors, str(path / "model-00001-of-00001.safetensors"))


def test_the_loader_reads_the_published_layout_with_the_targets_final_norm(tmp_path):
    torch.manual_seed(0)
    source = MTPDraftBlock(_config(0), 5)
    target_norm = torch.rand(16) + 0.5
    # jina-ocr-v1 as published: heads.0, the layer under mtp_block, no shared_head.* at all.
    _save(tmp_path, {**_layout_names(source, "heads"), "model.norm.weight": target_norm})

    block, plan = load_draft(tmp_path, _loader_config(**SHARED))

    assert plan.layout == "heads" and plan.head.speculative_steps == 3
    assert torch.equal(block.norm.weight, target_norm)  # mtp_share_norm: the target's
    for name, t in source.state_dict().items():
        if name != "norm.weight":
            assert torch.equal(block.state_dict()[name], t), name


@pytest.mark.parametrize("layout", ["flat", "v3"])
def test_the_loader_keeps_the_older_layouts_with_their_own_norm_and_embedding(tmp_path, layout):
    torch.manual_seed(0)
    source = MTPDraftBlock(_config(0), 5, own_embedding=True)
    tensors = _layout_names(source, layout)
    own_norm = (
        "mtp_module.shared_head.norm.weight"
        if layout == "flat"
        else "model.layers.2.shared_head.norm.weight"
    )
    tensors[own_norm] = source.norm.weight.detach().clone()
    _save(tmp_path, {**tensors, "model.norm.weight": torch.ones(16)})

    block, plan = load_draft(tmp_path, _loader_config())  # no mtp_* keys: its own copies

    assert plan.own_embedding and plan.own_norm and not plan.own_head
    for name, t in source.state_dict().items():
        assert torch.equal(block.state_dict()[name], t), name


def test_shared_keys_decide_between_the_heads_copies_and_the_targets(tmp_path):
    torch.manual_seed(0)
    source = MTPDraftBlock(_config(0), 5, own_embedding=True, own_head=True)
    tensors = _layout_names(source, "heads")
    tensors["mtp_module.heads.0.shared_head.local_head.weight"] = tensors.pop(
        "mtp_module.heads.0.head.weight"
    )
    tensors["mtp_module.heads.0.shared_head.norm.weight"] = torch.full((16,), 2.0)
    _save(tmp_path, {**tensors, "model.norm.weight": torch.ones(16)})

    # Shared: the head's copies are set aside (vLLM's _map_fast_mtp_weight_name skips them).
    block, plan = load_draft(tmp_path, _loader_config(**SHARED))
    assert not (plan.own_embedding or plan.own_head or plan.own_norm)
    assert len(plan.ignored) == 3 and torch.equal(block.norm.weight, torch.ones(16))
    # Not shared: the head's own, each one.
    own = {k: False for k in SHARED if k.startswith("mtp_share")}
    block, plan = load_draft(tmp_path, _loader_config(**own))
    assert plan.own_embedding and plan.own_head and plan.own_norm
    assert torch.equal(block.norm.weight, torch.full((16,), 2.0))
    assert torch.equal(block.head.weight, source.head.weight)


def test_the_loader_refuses_tensors_it_cannot_place_and_gaps_it_cannot_fill(tmp_path):
    tensors = _layout_names(MTPDraftBlock(_config(0), 5), "heads")
    tensors["model.norm.weight"] = torch.ones(16)
    _save(
        tmp_path / "moe",
        {**tensors, "mtp_module.heads.0.mtp_block.mlp.experts.0.up_proj.weight": torch.zeros(1)},
    )
    with pytest.raises(DraftLoadError, match="an MoE block"):
        load_draft(tmp_path / "moe", _loader_config(**SHARED))
    del tensors["mtp_module.heads.0.eh_proj.weight"]
    _save(tmp_path / "gap", tensors)
    with pytest.raises(DraftLoadError, match="leaves unset: eh_proj.weight"):
        load_draft(tmp_path / "gap", _loader_config(**SHARED))
    narrow = _layout_names(MTPDraftBlock(_config(0), 5), "heads")
    narrow["mtp_module.heads.0.mtp_block.mlp.up_proj.weight"] = torch.zeros(12, 16)
    _save(tmp_path / "narrow", {**narrow, "model.norm.weight": torch.ones(16)})
    with pytest.raises(DraftLoadError, match=r"up_proj.weight is \[12, 16\].*\[24, 16\]"):
        load_draft(tmp_path / "narrow", _loader_config(**SHARED))


@settings(max_examples=12, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 1000),
    k=st.integers(1, 4),
    lengths=st.lists(st.integers(1, 6), min_size=1, max_size=3),
)
def test_it_is_lossless_over_a_transformers_llama_too(seed, k, lengths):
    transformers = pytest.importorskip("transformers", reason=FASTMTP_EXTRA)
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=6,
        hidden_size=16,
        intermediate_size=24,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
    )
    llama = transformers.LlamaForCausalLM(config).double().eval()
    adapter = CausalLMAdapter(llama)
    block = MTPDraftBlock(_config(0), 6).double().eval().share(adapter.embedding, adapter.head)
    prompts = [[(seed + 3 * i + j) % 6 for j in range(n)] for i, n in enumerate(lengths)]

    got = speculative_decode(adapter, block, prompts, k=k, max_new_tokens=10)

    assert got == [_reference(llama, p, 10, None) for p in prompts]


def test_importing_model_does_not_import_torch():
    code = "import sys, model; assert 'torch' not in sys.modules, 'model imported torch'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_each_recursive_draft_step_reads_the_previous_steps_post_norm_state():
    # vLLM's DeepSeek MTP layer recycles the post-final-norm hidden state (deepseek_mtp.py).
    adapter, block = _models(seed=5, vocab=9, layers=1)
    calls = []
    step = block.step

    def spy(hidden, tokens, positions, mask, past=None, embeds=None):
        g, kv = step(hidden, tokens, positions, mask, past, embeds)
        calls.append((hidden, g))
        return g, kv

    block.step = spy
    speculative_decode(adapter, block, [[1, 2, 3]], k=3, max_new_tokens=8)
    recursive = [(i, h, g) for i, (h, g) in enumerate(calls) if h.shape[1] == 1]
    pairs = [(a, b) for a, b in zip(recursive, recursive[1:], strict=False) if b[0] == a[0] + 1]
    assert pairs, "K=3 makes two recursive steps per verifier pass"
    for (_, _, g), (_, hidden, _) in pairs:
        assert torch.equal(hidden[:, 0], block.norm(g[:, 0]))
        assert not torch.equal(hidden[:, 0], g[:, 0])


def test_the_token_embedding_at_position_0_is_zeroed_as_vllm_does():
    _, block = _models(seed=8, vocab=9, layers=1)
    hidden = torch.randn(1, 2, 16, dtype=torch.float64)
    mask = torch.ones(1, 2, 2, dtype=torch.bool).tril()
    positions = torch.tensor([[0, 1]])
    g1, _ = block.step(hidden, torch.tensor([[3, 4]]), positions, mask)
    g2, _ = block.step(hidden, torch.tensor([[7, 4]]), positions, mask)
    # Position 0 never sees its token; position 1 attends to position 0 and matches too.
    assert torch.equal(g1, g2)
    g3, _ = block.step(hidden, torch.tensor([[3, 5]]), positions, mask)
    assert not torch.equal(g1[:, 1], g3[:, 1])


def test_rope_scaling_is_honoured_linear_and_yarn():
    from model.fastmtp.layers import inverse_frequencies, rotary

    positions = torch.arange(0, 40).reshape(2, 20)
    plain_cos, plain_sin = rotary(positions.double() / 4, 16, 10000.0, torch.float64)
    cos, sin = rotary(positions, 16, 10000.0, torch.float64, {"rope_type": "linear", "factor": 4})
    assert torch.allclose(cos, plain_cos) and torch.allclose(sin, plain_sin)

    # YaRN at factor 1 is plain RoPE; above 1 the highest frequencies stay, the lowest are
    # interpolated by the factor, and cos/sin grow by 0.1·ln(factor) + 1.
    yarn = {"rope_type": "yarn", "factor": 1.0, "original_max_position_embeddings": 4096}
    assert torch.allclose(
        rotary(positions, 16, 1e4, torch.float64, yarn)[0],
        rotary(positions, 16, 1e4, torch.float64)[0],
    )
    inv, magnitude = inverse_frequencies(64, 10000.0, {**yarn, "factor": 40.0})
    plain, _ = inverse_frequencies(64, 10000.0)
    assert inv[0] == plain[0] and torch.isclose(inv[-1], plain[-1] / 40)
    assert magnitude == pytest.approx(0.1 * math.log(40) + 1)
    with pytest.raises(ValueError, match="'longrope' is not supported"):
        inverse_frequencies(64, 10000.0, {"rope_type": "longrope", "factor": 2.0})


def test_a_draft_block_with_scaled_rope_stays_lossless():
    torch.manual_seed(3)
    cfg = BlockConfig(16, 2, 2, 24, rope_scaling={"rope_type": "linear", "factor": 2.0})
    verifier = TinyCausalLM(cfg, 9, 1).double().eval()
    adapter = CausalLMAdapter(verifier)
    block = MTPDraftBlock(cfg, 9).double().eval().share(adapter.embedding, adapter.head)
    prompts = [[1, 2, 3, 4], [5, 6]]
    greedy = greedy_decode(adapter, prompts, max_new_tokens=12)
    assert speculative_decode(adapter, block, prompts, k=3, max_new_tokens=12) == greedy
