"""Post-processing of DeepSeek-OCR / jina-ocr-v1 output: grounding tags, figures, tidying."""

from __future__ import annotations

import io

from PIL import Image

from model.postprocess import Figure, figure_png, scale_box, tidy_markdown, vlm_markdown

GROUNDED = (
    "<|ref|>title<|/ref|><|det|>[[100, 50, 900, 90]]<|/det|>\n# Annual report\n\n"
    "<|ref|>text<|/ref|><|det|>[[100, 100, 900, 200]]<|/det|>\nRevenue grew by $x^2$.\n\n\n\n"
    "<|ref|>image<|/ref|><|det|>[[0, 500, 499, 999]]<|/det|>\n\n"
    "<|ref|>table<|/ref|><|det|>[[100, 300, 900, 400]]<|/det|>\n"
    "<table><tr><td>a</td><td>b</td></tr></table>\n"
)


def test_grounding_tags_are_removed_and_content_is_kept():
    markdown, figures = vlm_markdown(GROUNDED, page_size=(1000, 2000), page_number=1, figures=False)
    assert "<|" not in markdown
    assert markdown.startswith("# Annual report\n\nRevenue grew by $x^2$.\n\n<table>")
    assert figures == []


def test_html_tables_and_latex_pass_through_untouched():
    markdown, _ = vlm_markdown(GROUNDED, page_size=(1000, 2000), page_number=1, figures=False)
    assert "<table><tr><td>a</td><td>b</td></tr></table>" in markdown
    assert "$x^2$" in markdown
    assert "\n\n\n" not in markdown


def test_image_regions_become_links_to_figure_crops_when_asked_for():
    markdown, figures = vlm_markdown(GROUNDED, page_size=(1000, 2000), page_number=3, figures=True)
    assert figures == [Figure(1, (0, 1001, 499, 2000), "figures/page-0003-figure-1.png")]
    assert "![](figures/page-0003-figure-1.png)" in markdown
    assert markdown.index("Revenue") < markdown.index("![](") < markdown.index("<table>")


def test_a_region_with_several_boxes_gives_one_figure_each():
    text = "<|ref|>image<|/ref|><|det|>[[0, 0, 100, 100], [200, 200, 300, 300]]<|/det|>\nEnd"
    markdown, figures = vlm_markdown(text, page_size=(999, 999), page_number=1, figures=True)
    assert [f.index for f in figures] == [1, 2]
    assert markdown.count("![](") == 2


def test_degenerate_and_missing_boxes_give_no_figure():
    text = (
        "<|ref|>image<|/ref|><|det|>[[10, 10, 10, 500]]<|/det|>\n"
        "<|ref|>image<|/ref|><|det|>[]<|/det|>x"
    )
    markdown, figures = vlm_markdown(text, page_size=(1000, 1000), page_number=1, figures=True)
    assert figures == []
    assert markdown == "x\n"


def test_boxes_are_scaled_from_0_999_and_clamped_to_the_page():
    assert scale_box((0, 0, 999, 999), 1190, 1684) == (0, 0, 1190, 1684)
    assert scale_box((999, 999, 0, 0), 100, 100) == (0, 0, 100, 100)
    assert scale_box((500, 250, 1200, 750), 999, 999) == (500, 250, 999, 750)


def test_stray_special_tokens_are_dropped():
    markdown, _ = vlm_markdown(
        "<|grounding|>Hello<|ref|> world<｜end▁of▁sentence｜>",
        page_size=(10, 10),
        page_number=1,
        figures=False,
    )
    assert markdown == "Hello world\n"


def test_a_figure_crop_is_a_png_of_its_box():
    page = Image.new("RGB", (200, 100), (255, 255, 255))
    page.paste((255, 0, 0), (50, 20, 150, 80))
    png = figure_png(page, Figure(1, (50, 20, 150, 80), "figures/x.png"))
    crop = Image.open(io.BytesIO(png))
    assert crop.format == "PNG"
    assert crop.size == (100, 60)
    assert crop.convert("RGB").getpixel((50, 30)) == (255, 0, 0)


def test_the_text_layer_tidier_still_works():
    assert tidy_markdown("# **Title**\n\n\n\nBody  \n") == "# Title\n\nBody\n"
    # A bold heading written run by run around its code: every run unmarked, code kept.
    assert tidy_markdown("# **7.2 The** `scan()` **function**") == "# 7.2 The `scan()` function\n"
    assert tidy_markdown("## a ** b") == "## a ** b\n"  # an odd star is the page's own
    code = "```\n# x = a**2 + b**2\n```\n\n# **Title**"
    assert tidy_markdown(code) == "```\n# x = a**2 + b**2\n```\n\n# Title\n"
