from __future__ import annotations

from model.plaintext import markdown_to_text


def test_headings_emphasis_links_and_lists_lose_their_markup():
    text = markdown_to_text(
        "# Title\n\nSome **bold** and *italic* text with a [link](https://x.org).\n\n"
        "- first item\n- second item\n1. numbered\n"
    )

    assert text == (
        "Title\n\nSome bold and italic text with a link.\n\nfirst item\nsecond item\nnumbered\n"
    )


def test_a_markdown_table_becomes_tab_separated_rows():
    text = markdown_to_text("| A | B |\n|---|---|\n| 1 | 2 |\n")

    assert text == "A\tB\n1\t2\n"


def test_an_html_table_becomes_tab_separated_rows_without_tags():
    text = markdown_to_text(
        "<table><tr><th>A</th><th>B</th></tr><tr><td>1 &amp; 2</td><td>3</td></tr></table>"
    )

    assert text == "A\tB\n1 & 2\t3\n"


def test_snake_case_words_and_arithmetic_survive():
    assert (
        markdown_to_text("keep snake_case_names and 2 * 3 * 4")
        == "keep snake_case_names and 2 * 3 * 4\n"
    )
