"""A FastMTP head for the tiny checkpoint, distilled from the checkpoint's own decoding.

``tiny_draft``'s heads are right or wrong by construction, and their attention is a plain
average (zero queries and keys), so two implementations agreeing on them says nothing about the
draft's attention, its RoPE or its KV cache. This head is trained instead, the way FastMTP
trains one (``model.fastmtp.training``: one block applied recursively, steps weighted by
FastMTP's decay), from random weights, its queries and keys included, on what the verifier
itself decodes:

- walks of the verifier's greedy decoding from random tokens, and
- page-shaped sequences (BOS, a page's features at image positions, jina-ocr-v1's prompt, the
  verifier's answer), the draft reading the features where the verifier did,

for a fixed budget of ``STEPS`` that leaves it right on some of the verifier's tokens and wrong
on others. Which drafts survive then depends on everything the draft computes, and the tier
checks that vLLM and Folio's decoder keep the same ones at every step.

The verifier here is the tiny checkpoint's decoder computed from its own tensors: its
attention and MLP outputs are zero (``tiny_draft.decoder_tensors``), so its last hidden state
at a position that read ``x`` is ``w ⊙ rmsnorm(x)`` and its greedy choice is the output head's
argmax on that. The tier checks the same decoder on vLLM (``expected_output``).
"""

from __future__ import annotations

import random

DISTILLED = "distilled"  # tiny_checkpoint.tensors(draft=DISTILLED)
STEPS = 22  # the training budget: acceptance lands between 0.3 and 0.9 (the tier checks)
LEARNING_RATE = 7e-4
BATCH = 8
WALK = 40  # tokens per walk of the verifier's decoding
IMAGE_POSITIONS = (16, 64, 128, 272)  # page-shaped sequences' feature runs
K_TRAIN = 3  # the checkpoint's mtp_num_speculative_steps
SEED = 21


def distilled_tensors(torch, decoder: dict, config: dict, prompt: list[int], bos: int) -> dict:
    """The trained head's parameters under block names (``MTPDraftBlock``'s), float32, without
    the final norm: with ``mtp_share_norm`` it is the target's ``model.norm.weight``."""
    from model.fastmtp.draft import MTPDraftBlock
    from model.fastmtp.loader import block_config
    from model.fastmtp.training import recursive_draft_loss

    torch.manual_seed(SEED)
    embed = decoder["embed"].float()
    weight = decoder["norm"].float()
    head = decoder["head"].float()
    feature = decoder["feature"].float()
    eps = float(config["language_config"]["rms_norm_eps"])

    def verifier_hidden(x):  # what the verifier's last layer hands its output head
        return weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

    following = (verifier_hidden(embed) @ head.T).argmax(-1)  # its greedy choice after each token

    embedding = torch.nn.Embedding.from_pretrained(embed, freeze=True)
    output = torch.nn.Linear(embed.shape[1], embed.shape[0], bias=False)
    output.weight = torch.nn.Parameter(head, requires_grad=False)
    block = MTPDraftBlock(block_config(config), embed.shape[0]).share(embedding, output)
    block.norm.weight = torch.nn.Parameter(weight.clone(), requires_grad=False)

    rng = random.Random(SEED)
    ordinary = list(range(bos + 1, embed.shape[0]))

    def walk(start: int, length: int) -> list[int]:
        out = [start]
        while len(out) < length:
            out.append(int(following[out[-1]]))
        return out

    def batch():
        sequences, features, scored = [], [], []
        for _ in range(BATCH // 2):  # walks from random tokens: every token a target
            sequences.append(walk(rng.choice(ordinary), WALK))
            features.append(0)
            scored.append(WALK)
        for _ in range(BATCH - BATCH // 2):  # pages: the answer's tokens are the targets
            m = rng.choice(IMAGE_POSITIONS)
            answer = walk(prompt[-1], WALK)[1:]
            sequences.append([bos, *[bos] * m, *prompt, *answer])
            features.append(m)
            scored.append(len(answer))
        width = max(len(s) for s in sequences)
        tokens = torch.zeros(len(sequences), width, dtype=torch.long)
        valid = torch.zeros(len(sequences), width, dtype=torch.bool)
        targets = torch.zeros_like(valid)
        for row, s in enumerate(sequences):
            tokens[row, : len(s)] = torch.tensor(s)
            valid[row, : len(s)] = True
            targets[row, len(s) - scored[row] : len(s)] = True
        read = embed[tokens]
        for row, m in enumerate(features):  # the page's features where the verifier read them
            read[row, 1 : 1 + m] = feature
        return verifier_hidden(read), tokens, valid, read, targets

    trained = [p for p in block.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trained, lr=LEARNING_RATE, weight_decay=0.01)
    block.train()
    for _ in range(STEPS):
        hidden, tokens, valid, read, targets = batch()
        loss = recursive_draft_loss(
            block, hidden, tokens, valid, K_TRAIN, embeds=read, scored=targets
        )
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        optimiser.step()
    state = {name: t.detach().clone() for name, t in block.state_dict().items()}
    state.pop("norm.weight")
    return state
