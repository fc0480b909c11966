"""Where on the page each part of a transcription came from.

A page's layout is its blocks in reading order (type, Markdown, box in page points), and for
OCR'd pages the words with their boxes, which the searchable PDF's invisible text is set from.
The engines build layouts (``text_layer``, ``ocr``, ``grounding``); the service stores them
with the page and derives the other outputs from them (``chunks``, ``searchable_pdf``).
"""

from model.layout.schema import BLOCK_TYPES, Block, PageLayout, Word, page_size_points

__all__ = ["BLOCK_TYPES", "Block", "PageLayout", "Word", "page_size_points"]
