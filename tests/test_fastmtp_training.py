"""FastMTP's recursive training loss (``model.fastmtp.training``): it reads what inference
reads, scores only what it is told to, and teaches a draft what the verifier decodes."""

from __future__ import annotations

import pytest

from tests import FASTMTP_EXTRA

pytestmark = pytest.mark.slow  # PyTorch models trained on the CPU: seconds each

torch = pytest.importorskip("torch", reason=FASTMTP_EXTRA)

from model.fastmtp import (  # noqa: E402
    BlockConfig,
    CausalLMAdapter,
    MTPDraftBlock,
    SpecCounters,
    greedy_decode,
    speculative_decode,
)
from model.fastmtp.tiny import TinyCausalLM  # noqa: E402
from model.fastmtp.training import recursive_draft_loss  # noqa: E402

CFG = BlockConfig(hidden_size=32, num_heads=2, num_kv_heads=2, intermediate_size=48)
VOCAB, EOS = 40, 1


def _models(seed: int) -> tuple[CausalLMAdapter, MTPDraftBlock]:
    torch.manual_seed(seed)
    verifier = CausalLMAdapter(TinyCausalLM(CFG, VOCAB, 2).double().eval())
    block = MTPDraftBlock(CFG, VOCAB).double()
    return verifier, block.share(verifier.embedding, verifier.head)


def _batch(verifier: CausalLMAdapter, seed: int, n: int = 8, length: int = 24):
    g = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(2, VOCAB, (4,), generator=g).tolist() for _ in range(n)]
    outputs = greedy_decode(verifier, prompts, max_new_tokens=length, eos_token_id=None)
    tokens = torch.tensor([p + o for p, o in zip(prompts, outputs, strict=True)])
    with torch.no_grad():
        hidden = verifier.model(input_ids=tokens, output_hidden_states=True).hidden_states[-1]
    return hidden, tokens, torch.ones_like(tokens, dtype=torch.bool)


def test_the_first_step_reads_the_given_embeddings_in_place_of_the_tokens():
    verifier, block = _models(3)
    hidden, tokens, valid = _batch(verifier, 4)
    plain = recursive_draft_loss(block, hidden, tokens, valid, 3)
    same = recursive_draft_loss(block, hidden, tokens, valid, 3, embeds=block.embed(tokens))
    features = block.embed(tokens).clone()
    features[:, 2:6] = torch.randn(features[:, 2:6].shape, dtype=features.dtype)
    read = recursive_draft_loss(block, hidden, tokens, valid, 3, embeds=features)

    assert torch.allclose(plain, same, rtol=0, atol=1e-12)
    assert not torch.allclose(plain, read)


def test_only_the_scored_positions_count():
    # The last token is read by no entry that predicts anything: it counts only as a target.
    verifier, block = _models(5)
    hidden, tokens, valid = _batch(verifier, 6)
    other = tokens.clone()
    other[:, -1] = (tokens[:, -1] + 1) % VOCAB
    before_last = valid.clone()
    before_last[:, -1] = False

    def loss(t, scored=None):
        return recursive_draft_loss(block, hidden, t, valid, 3, scored=scored)

    assert torch.equal(loss(tokens), loss(tokens, scored=valid))
    assert not torch.allclose(loss(tokens), loss(other))
    assert torch.equal(loss(tokens, scored=before_last), loss(other, scored=before_last))


def test_training_teaches_the_draft_what_the_verifier_decodes():
    verifier, block = _models(7)

    def acceptance() -> float:
        counters = SpecCounters(k=3)
        prompts = [[3, 9, 14, 20], [5, 6, 7, 8]]
        with torch.no_grad():
            speculative_decode(
                verifier, block.eval(), prompts, k=3, max_new_tokens=32, counters=counters
            )
        return counters.accepted_tokens / counters.draft_tokens

    before = acceptance()
    optimiser = torch.optim.AdamW(block.parameters(), lr=3e-3)
    block.train()
    for step in range(150):
        hidden, tokens, valid = _batch(verifier, 100 + step)
        loss = recursive_draft_loss(block, hidden, tokens, valid, 3)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
    after = acceptance()

    assert before < 0.2 and after > before + 0.3, (before, after)
