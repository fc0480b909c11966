"""The local engine's text-layer path: whether a PDF page is read from its text layer or
by OCR, and the text layer's Markdown from pymupdf4llm with the layout model, repaired
(``model.markdown_repair``, formulas, right-to-left fixes, the table format)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pymupdf
from PIL import Image

from model import layout_model
from model.drop_caps import join_drop_caps
from model.engines.base import EngineOptions
from model.engines.table_pass import cheaper_tables
from model.footnote_marks import set_off_footnote_marks
from model.formula_stacks import stacked_formulas
from model.formulas import place_formulas
from model.hangul_spacing import has_hangul, respace_hangul
from model.layout import PageLayout
from model.layout.furniture import drop_furniture
from model.layout.reading_order import reorder_chunk
from model.layout.side_panels import panels_apart
from model.layout.text_layer import text_layer_layout
from model.markdown_hygiene import readable_markdown
from model.markdown_repair import repair_text_layer
from model.math_runs import page_formulas
from model.postprocess import tidy_markdown
from model.rendering import DEFAULT_LONG_SIDE, render_zoom
from model.rtl import (
    apply_fixes,
    apply_run_order,
    has_arabic,
    ligature_fixes,
    run_order_fixes,
    table_cell_order,
    table_column_order,
)
from model.table_format import auto_tables, html_tables
from model.word_spacing import respace_words

# A page with fewer letters and digits than this in its text layer is read as a scan
# (a stamped page number or "Scanned by ..." on top of a page image is not a text layer).
MIN_TEXT_LAYER_CHARS = 20
# ... and so is a page that is mostly one picture with only a caption's worth of text on it.
SCAN_IMAGE_COVERAGE = 0.7
SCAN_MAX_CHARS_OVER_IMAGE = 200
# Text whose fonts lack a Unicode map extracts as U+FFFD; past this share OCR reads better.
MAX_UNMAPPED_SHARE = 0.3
# A page at least this much wider than tall, with no text in a strip this share of its width
# down the middle and this many lines on each side, is two pages side by side.
SPREAD_ASPECT = 1.2
SPREAD_GUTTER = 0.02
SPREAD_MIN_LINES = 5
# The repairs read the glyphs, never the pictures; PyMuPDF's default "dict" and "rawdict"
# carry each image's pixels, and a page with one large picture spent 7.4 s in
# get_text("dict") against 0.06 s without them.
TEXT_DICT_FLAGS = pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES
TEXT_RAWDICT_FLAGS = pymupdf.TEXTFLAGS_RAWDICT & ~pymupdf.TEXT_PRESERVE_IMAGES
# Those are also the flags of "text" and "words", so one MuPDF text page made with them serves
# every read the engine makes of the page it transcribes (``text_page``).
assert TEXT_DICT_FLAGS == TEXT_RAWDICT_FLAGS == pymupdf.TEXTFLAGS_TEXT == pymupdf.TEXTFLAGS_WORDS


def text_page(page: pymupdf.Page) -> pymupdf.TextPage:
    """The page's glyphs as MuPDF extracts them, made once for several reads of the page
    ("text", "dict", "rawdict", "words"): each ``get_text`` without one builds it again, about
    4 ms a page on the real set's text-layer pages. It holds its page weakly, and
    ``get_text`` takes it only with that same ``Page`` object: keep the object
    (``doc[0]`` makes a new one each time)."""
    return page.get_textpage(flags=TEXT_DICT_FLAGS)


def needs_ocr(page: pymupdf.Page, textpage: pymupdf.TextPage | None = None) -> bool:
    """Whether a PDF page's text layer is missing, negligible or unreadable."""
    text = page.get_text("text", textpage=textpage)
    readable = sum(1 for ch in text if ch.isalnum())
    unmapped = text.count("\ufffd")
    if readable < MIN_TEXT_LAYER_CHARS:
        return True
    if unmapped / (readable + unmapped) > MAX_UNMAPPED_SHARE:
        return True
    return readable < SCAN_MAX_CHARS_OVER_IMAGE and image_coverage(page) > SCAN_IMAGE_COVERAGE


def image_coverage(page: pymupdf.Page) -> float:
    area = abs(page.rect)
    if not area:
        return 0.0
    covered = max(
        (abs(pymupdf.Rect(info["bbox"]) & page.rect) for info in page.get_image_info()), default=0.0
    )
    return float(covered / area)


def pdf_page_image(page: pymupdf.Page) -> Image.Image:
    zoom = render_zoom(page.rect, DEFAULT_LONG_SIDE)
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False, colorspace="rgb")
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def text_layer_markdown(
    doc: pymupdf.Document, options: EngineOptions
) -> tuple[str, PageLayout | None, list[str]]:
    """The page's Markdown and its blocks, from one pass of pymupdf4llm (``page_chunks``
    returns the layout model's boxes beside the text), repaired (``model.markdown_repair``),
    and what could not be recovered (notes for the quality signals)."""
    # The glyphs' geometry, which Markdown has lost: spacing of code lines, the sizes and
    # baselines that make a formula's scripts, and so which running heads hold a formula.
    page = doc[0]
    textpage = text_page(page)
    page_dict = page.get_text("dict", textpage=textpage)
    markdown, layout = pymupdf4llm_markdown(doc, options, page_dict)
    if options.table_format == "auto":
        markdown = auto_tables(markdown)
    elif options.table_format == "html":
        markdown = html_tables(markdown)
    page_lines = [
        "".join(span["text"] for span in line["spans"])
        for block in page_dict["blocks"]
        for line in block.get("lines", [])
    ]
    repaired, repairs = repair_text_layer(
        markdown, drop_running=options.headers == "drop", page_lines=page_lines
    )
    repaired = join_drop_caps(repaired, page_dict)
    # Fractions with a rule and radicals need the glyphs one by one and the page's drawings.
    rawdict = page.get_text("rawdict", textpage=textpage)
    stacked, stack_notes = stacked_formulas(page, rawdict)
    # The runs of math inside a stacked formula's box are its own, unless it could not be
    # placed and stays text: then they are placed as on a page without it.
    placed_boxes = []
    for formula in stacked:
        repaired, missed = place_formulas(repaired, [formula])
        stack_notes += missed
        if not missed and formula.box:
            placed_boxes.append(formula.box)
    runs = page_formulas(page_dict, skip=placed_boxes)
    repaired, formula_notes = place_formulas(repaired, runs)
    # After the formulas: they are found by the Markdown's spacing, and their lines kept.
    repaired = set_off_footnote_marks(respace_words(repaired, page_lines), page_dict)
    if any(has_hangul(line) for line in page_lines):
        repaired = respace_hangul(repaired, rawdict)
    formula_notes = stack_notes + formula_notes
    if any(has_arabic(line) for line in page_lines):
        repaired = apply_run_order(repaired, run_order_fixes(page_dict))
        repaired = table_cell_order(repaired, page_lines)
        repaired = table_column_order(repaired)
        repaired = apply_fixes(repaired, ligature_fixes(rawdict))
    return tidy_markdown(readable_markdown(repaired)), layout, repairs.notes + formula_notes


def pymupdf4llm_markdown(
    doc: pymupdf.Document, options: EngineOptions, page_dict: dict[str, Any]
) -> tuple[str, PageLayout | None]:
    layout_model.activate()
    import pymupdf4llm

    kwargs: dict[str, Any] = {
        "pages": [0],
        # This path is for pages with a text layer; scans never reach it, and pymupdf4llm's
        # OCR would otherwise look for an engine and print about it.
        "use_ocr": False,
        # Every box, the layout model's running heads and page numbers too: under ``drop``
        # they are cut out here, all but those holding a formula (``drop_furniture``).
        # Footnotes are always kept (the layout model labels them apart from page footers).
        "header": True,
        "footer": True,
        "show_progress": False,
        "page_chunks": True,
    }
    if options.table_format in ("html", "auto"):
        # pymupdf4llm's HTML tables keep merged cells, and their cells' text whole (its pipe
        # tables split "Europe" across the columns it spans); ``auto`` turns the simple ones
        # back into pipe tables.
        kwargs["table_output"] = "html"
    size = (doc[0].rect.width, doc[0].rect.height)
    if is_spread(doc[0]):
        # Each half is a page of its own: pymupdf4llm drops its heads and feet as asked.
        keep = options.headers == "keep"
        halves = _spread_markdown(doc, {**kwargs, "header": keep, "footer": keep})
        if halves is not None:
            return halves
    # The layout model reads some two-column pages by rows; its boxes are put in reading
    # order (``model.layout.reading_order``) before their Markdown is joined, and a box
    # around two panels side by side is cut in two first (``model.layout.side_panels``).
    with cheaper_tables(), panels_apart() as panels:
        chunk = pymupdf4llm.to_markdown(doc, **kwargs)[0]
    if options.headers == "drop":
        cut = drop_furniture(chunk, page_dict)
        if cut is None:  # boxes that cannot be cut apart: pymupdf4llm drops the heads itself
            kwargs.update(header=False, footer=False)
            with cheaper_tables(), panels_apart() as again:
                cut = pymupdf4llm.to_markdown(doc, **kwargs)[0]
            panels += again
            if not tidy_markdown(cut["text"]):
                cut = chunk  # the page's only line was called a head: an empty page is worse
        chunk = cut
    chunk = reorder_chunk(chunk, together=panels)
    markdown = tidy_markdown(chunk["text"])
    if not markdown:
        # pymupdf4llm 2.0 returns nothing for some rotated pages (/Rotate 90, 180, 270 in
        # the corpus's habibi-rotated.pdf); plain text blocks beat an empty page.
        return _plain_text_markdown(doc[0]), None
    return markdown, text_layer_layout(chunk, size)


def is_spread(page: pymupdf.Page) -> bool:
    """Whether the page is two pages side by side (a scanned or exported spread): landscape,
    several lines on each half, and no line of text within a strip down the middle. The
    layout model reads such a page across, question 23 of the left page after question 26
    of the right one (docling's ``table_mislabeled_as_picture``)."""
    width, height = page.rect.width, page.rect.height
    if width < SPREAD_ASPECT * height:
        return False
    middle, strip = width / 2, SPREAD_GUTTER * width
    left = right = 0
    for block in page.get_text("dict", flags=TEXT_DICT_FLAGS)["blocks"]:
        for line in block.get("lines", []):
            if not "".join(span["text"] for span in line["spans"]).strip():
                continue
            x0, _, x1, _ = line["bbox"]
            if x0 < middle + strip and x1 > middle - strip:
                return False
            left += x1 <= middle
            right += x0 >= middle
    return min(left, right) >= SPREAD_MIN_LINES


def _spread_markdown(
    doc: pymupdf.Document, kwargs: dict[str, Any]
) -> tuple[str, PageLayout | None] | None:
    """A spread read as its two pages, left then right: each half shown on a page of its own
    (its text stays text), read by pymupdf4llm, the blocks put back where they are."""
    import pymupdf4llm

    width, height = doc[0].rect.width, doc[0].rect.height
    half = width / 2
    pages = pymupdf.open()
    try:
        for x in (0.0, half):
            target = pages.new_page(width=half, height=height)
            target.show_pdf_page(target.rect, doc, 0, clip=pymupdf.Rect(x, 0, x + half, height))
        with cheaper_tables():
            read = pymupdf4llm.to_markdown(pages, **{**kwargs, "pages": [0, 1]})
        chunks = [reorder_chunk(chunk) for chunk in read]
    finally:
        pages.close()
    parts = [tidy_markdown(chunk["text"]) for chunk in chunks]
    if not all(parts):
        return None
    blocks = []
    for x, chunk in zip((0.0, half), chunks, strict=True):
        for block in text_layer_layout(chunk, (half, height)).blocks:
            x0, y0, x1, y1 = block.bbox
            blocks.append(replace(block, bbox=(x0 + x, y0, x1 + x, y1)))
    return "\n".join(parts), PageLayout(width, height, blocks, "text-layer")


def _plain_text_markdown(page: pymupdf.Page) -> str:
    blocks = page.get_text("blocks", sort=True)
    paragraphs = [" ".join(block[4].split()) for block in blocks if block[6] == 0]
    return tidy_markdown("\n\n".join(p for p in paragraphs if p))
