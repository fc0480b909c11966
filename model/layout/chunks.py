"""Heading-aware chunks for retrieval, each with the pages and boxes it came from.

Blocks are taken in reading order across pages. A heading (or title) closes the chunk before
it and opens a section: every chunk carries the path of headings it sits under. Blocks are
packed into a chunk up to ``max_tokens``; a longer paragraph is cut between sentences (or
words, for a sentence longer than the bound). Tables and formulas are never cut: one that is
longer than the bound is a chunk of its own, and the only kind that may exceed it.
Running heads and feet are left out (they repeat on every page and say nothing).

Token counts are ``model.tokens.count_tokens``'s approximation (within ~15 % of GPT-style
tokenizers on English prose), so leave a margin under a model's hard limit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from model.layout.schema import Block, PageLayout
from model.tokens import count_tokens

# Sized for the common embedding models, whose inputs stop at 512 tokens (the BERT family:
# e5, bge, MiniLM): the approximate count stays under it with the margin it needs.
DEFAULT_MAX_TOKENS = 400
MIN_MAX_TOKENS = 32
MAX_MAX_TOKENS = 8192
_UNSPLITTABLE = ("table", "formula")
_SKIPPED = ("page_header", "page_footer")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_HEADING_MARKUP = re.compile(r"^#{1,6}\s+")


@dataclass
class Chunk:
    text: str = ""
    tokens: int = 0
    headings: list[str] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)
    boxes: list[dict[str, Any]] = field(default_factory=list)

    def add(self, text: str, tokens: int, page: int, index: int, block: Block) -> None:
        self.text = f"{self.text}\n\n{text}" if self.text else text
        self.tokens += tokens
        if page not in self.pages:
            self.pages.append(page)
        box = {"page": page, "block": index, "bbox": [round(v, 2) for v in block.bbox]}
        if box not in self.boxes:
            self.boxes.append(box)

    def to_dict(self, index: int) -> dict[str, Any]:
        return {
            "index": index,
            "text": self.text,
            "tokens": self.tokens,
            "headings": self.headings,
            "pages": self.pages,
            "boxes": self.boxes,
        }


def chunk_document(
    pages: Iterable[tuple[int, PageLayout]], *, max_tokens: int = DEFAULT_MAX_TOKENS
) -> list[dict[str, Any]]:
    """Chunks over the pages' blocks (``(page number, layout)`` in page order)."""
    chunks: list[Chunk] = []
    path: list[tuple[int, str]] = []  # (level, heading text)
    current = Chunk()

    def flush() -> None:
        nonlocal current
        if current.text:
            chunks.append(current)
        current = Chunk(headings=[text for _, text in path])

    for page, layout in pages:
        for index, block in enumerate(layout.blocks):
            if block.type in _SKIPPED or not block.markdown.strip():
                continue
            if block.type in ("title", "heading"):
                flush()
                level = block.level or (1 if block.type == "title" else 2)
                while path and path[-1][0] >= level:
                    path.pop()
                path.append((level, _HEADING_MARKUP.sub("", block.markdown).strip()))
                current.headings = [text for _, text in path]
                current.add(block.markdown, count_tokens(block.markdown), page, index, block)
                continue
            for piece in _pieces(block, max_tokens):
                tokens = count_tokens(piece)
                if current.text and current.tokens + tokens > max_tokens:
                    flush()
                current.add(piece, tokens, page, index, block)
    flush()
    return [chunk.to_dict(i) for i, chunk in enumerate(chunks)]


def _pieces(block: Block, max_tokens: int) -> list[str]:
    text = block.markdown.strip()
    if block.type in _UNSPLITTABLE or count_tokens(text) <= max_tokens:
        return [text]
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        for part in _bounded(sentence, max_tokens):
            if pieces and count_tokens(f"{pieces[-1]} {part}") <= max_tokens:
                pieces[-1] = f"{pieces[-1]} {part}"
            else:
                pieces.append(part)
    return pieces


def _bounded(sentence: str, max_tokens: int) -> list[str]:
    """A sentence, cut between words where it is longer than the bound."""
    if count_tokens(sentence) <= max_tokens:
        return [sentence]
    parts: list[str] = []
    for word in sentence.split():
        if parts and count_tokens(f"{parts[-1]} {word}") <= max_tokens:
            parts[-1] = f"{parts[-1]} {word}"
        else:
            parts.append(word)
    return parts
