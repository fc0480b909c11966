"""Catching runaway repetition after decoding.

DeepSeek-OCR blocks repeated n-grams while it decodes, with a custom logits processor; vLLM
refuses custom logits processors when speculative decoding is on. So with speculation the
loop is caught afterwards: a page that never reached end-of-sequence, or whose output ends in
many copies of one token sequence, is flagged here and transcribed again without speculation.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass

# Longest repeating unit looked for, in tokens: a table row or a few lines of a list.
MAX_PERIOD = 128
# A periodic tail is runaway when it is at least this many tokens and this many copies long.
# A legitimately repetitive page (an empty table, a dotted leader line) that ends with EOS
# rarely repeats one unit this long; one that hit the token cap is flagged anyway.
MIN_RUN_TOKENS = 96
MIN_COPIES = 4


@dataclass(frozen=True)
class Tail:
    """The output ends in ``copies`` copies of a ``period``-token unit, from ``start`` on."""

    period: int
    start: int
    copies: float


@dataclass(frozen=True)
class Verdict:
    runaway: bool
    reason: str  # "" | "no-eos" | "repeated-ngram"
    tail: Tail | None


def periodic_tail(token_ids: Sequence[Hashable], max_period: int = MAX_PERIOD) -> Tail | None:
    """The longest suffix that repeats one unit, over units of 1..max_period tokens (token
    ids, or words: anything compared by equality)."""
    n = len(token_ids)
    best: Tail | None = None
    for period in range(1, min(max_period, n // 2) + 1):
        run = 0  # how many tokens from the end match the token one period earlier
        while run < n - period and token_ids[n - 1 - run] == token_ids[n - 1 - run - period]:
            run += 1
        length = run + period
        if length >= 2 * period and (best is None or length > n - best.start):
            best = Tail(period=period, start=n - length, copies=length / period)
    return best


def without_stop_tail(token_ids: Sequence[int], stop_ids: Collection[int]) -> Sequence[int]:
    """The output less the stop/end-of-sequence ids it ends with.

    vLLM keeps the end-of-sequence id in a finished request's ``token_ids``; a loop that ends
    in it would otherwise never look periodic (its last token breaks every period)."""
    end = len(token_ids)
    while end and token_ids[end - 1] in stop_ids:
        end -= 1
    return token_ids[:end]


def check(
    token_ids: Sequence[int],
    finish_reason: str | None,
    *,
    stop_ids: Collection[int] = (),
    min_run_tokens: int = MIN_RUN_TOKENS,
    min_copies: int = MIN_COPIES,
) -> Verdict:
    """Whether a page's decoding ran away: no end-of-sequence, or a long repeated tail.

    ``stop_ids`` (the tokenizer's end-of-sequence id and any other stop ids) are stripped off
    the end first, so the tail's ``start`` indexes ``token_ids`` either way."""
    token_ids = without_stop_tail(token_ids, stop_ids)
    tail = periodic_tail(token_ids)
    if finish_reason != "stop":
        return Verdict(True, "no-eos", tail)
    if (
        tail is not None
        and len(token_ids) - tail.start >= min_run_tokens
        and tail.copies >= min_copies
    ):
        return Verdict(True, "repeated-ngram", tail)
    return Verdict(False, "", tail)


def trimmed_length(token_ids: Sequence[int], tail: Tail | None) -> int:
    """How many tokens to keep of a runaway output: everything up to one copy of its
    repeating unit (or all of it when nothing repeats)."""
    if tail is None or tail.copies < 2:
        return len(token_ids)
    return tail.start + tail.period
