"""Markdown a reader can read (``model.markdown_hygiene``): each repair on the kind of
fragment an extractor writes, and what it leaves alone."""

from __future__ import annotations

from model.markdown_hygiene import (
    balance_emphasis,
    normalise_quotes,
    outside_code,
    plain_superscript_words,
    readable_markdown,
    tighten_emphasis,
    unstrike_rules,
)


def test_a_page_struck_through_from_top_to_bottom_is_a_ruled_page():
    ruled = "~~Dear diary, today I went~~\n~~to the market and bought~~\nbread"
    assert unstrike_rules(ruled) == "Dear diary, today I went\nto the market and bought\nbread"


def test_a_few_struck_words_stay_struck():
    text = "The meeting is on ~~Monday~~ Tuesday at the usual place, as agreed last week."
    assert unstrike_rules(text) == text


def test_a_superscript_word_is_text_and_a_footnote_mark_stays():
    assert plain_superscript_words("the <sup>Kobayashi</sup> metric") == "the Kobayashi metric"
    assert plain_superscript_words("Center<sup>1</sup> reports") == "Center<sup>1</sup> reports"
    assert plain_superscript_words("x<sup>ab</sup>") == "x<sup>ab</sup>"


def test_doubled_single_quotes_are_double_quotes():
    assert normalise_quotes("‘‘spiritual gifts.’’") == "“spiritual gifts.”"
    assert normalise_quotes("it was ``spiritual gifts.''") == "it was “spiritual gifts.”"
    assert normalise_quotes("f'' and g'") == "f'' and g'"


def test_an_unpaired_bold_marker_goes():
    assert balance_emphasis("**Note:** see **below") == "**Note:** see below"
    assert balance_emphasis("**Note:** see below") == "**Note:** see below"
    assert balance_emphasis("call __init__ first") == "call __init__ first"


def test_code_is_written_as_the_page_has_it():
    markdown = "Use `a ``b'' c` here.\n\n```\n**x ‘‘y’’\n```\n\n**open"
    assert readable_markdown(markdown) == "Use `a ``b'' c` here.\n\n```\n**x ‘‘y’’\n```\n\nopen"


def test_emphasis_keeps_to_the_punctuation_and_brackets_print_sets_against_it():
    assert tighten_emphasis("ein **metrischer Raum** .") == "ein **metrischer Raum**."
    assert tighten_emphasis("Das Paar ( _X, d_ ) heißt") == "Das Paar (_X, d_) heißt"
    assert tighten_emphasis("**bold** and _it_ here") == "**bold** and _it_ here"
    assert tighten_emphasis("a_b and c_ d") == "a_b and c_ d"


def test_inline_code_keeps_to_the_punctuation_and_brackets_print_sets_against_it():
    # pymupdf4llm sets a code span off with spaces (physics.sty's manual: "behave like \qty().")
    markdown = "braces that behave like `\\qty()` . Names ( `sine` , `cosine` ) and `a` b."
    assert readable_markdown(markdown) == (
        "braces that behave like `\\qty()`. Names (`sine`, `cosine`) and `a` b."
    )
    assert readable_markdown("Run `make` . Then `x . y`") == "Run `make`. Then `x . y`"
    assert readable_markdown("accent ( `\\hat{A}` ).") == "accent (`\\hat{A}`)."


def test_the_latex_logo_reads_as_its_name():
    # TeX Live's manuals: the raised "A" comes out as a superscript, in headings in bold.
    assert readable_markdown("In ordinary L<sup>A</sup> TEX the") == "In ordinary LaTeX the"
    assert readable_markdown("**Въведение в L**<sup>**A**</sup>**TEX 2**") == (
        "**Въведение в LaTeX 2**"
    )
    assert readable_markdown("L<sup>A</sup>TEX2ε, TEX and TEXT") == "LaTeX2ε, TeX and TEXT"
    # in a footnote's size the "A" is not raised enough to be a superscript
    footnote = readable_markdown("L<sup>A</sup> TEX.\n\n> 1 Basic LATEX3")
    assert footnote == "LaTeX.\n\n> 1 Basic LaTeX3"
    # Without the logo, TEX is someone's capitals; in code it is what the page has.
    assert readable_markdown("TEX, the state code") == "TEX, the state code"
    korean = readable_markdown("L<sup>A</sup> TEX이 설치, 즉TEX 매크로")
    assert korean == "LaTeX이 설치, 즉TeX 매크로"
    assert readable_markdown("`L<sup>A</sup>TEX`") == "`L<sup>A</sup>TEX`"


def test_two_bold_runs_that_touch_are_one():
    assert tighten_emphasis("**LaTeX2****_ε_ 입문**") == "**LaTeX2_ε_ 입문**"
    assert tighten_emphasis("ELSE '*****' END") == "ELSE '*****' END"
    assert tighten_emphasis("****") == "****"


def test_a_symbol_crossed_by_its_formulas_bar_is_not_struck_out():
    # amsmath's guide: a radical's overline runs through the "√" MuPDF reads beside it.
    assert readable_markdown("so good:<sup>_~~√~~_</sup> _β k_") == "so good:<sup>_√_</sup> _β k_"
    assert readable_markdown("(_X,_ ~~T~~ _X_ ~~)~~heißt") == "(_X,_ T _X_)heißt"
    words = "A page of ordinary words, and a few ~~struck out~~ by hand."
    assert readable_markdown(words) == words


def test_punctuation_keeps_to_the_code_before_a_footnote_mark():
    # booktabs: "compatability with `longtable` .<sup>1</sup>"
    assert readable_markdown("with `longtable` .<sup>1</sup>") == "with `longtable`.<sup>1</sup>"
    assert readable_markdown("the **end** .<sup>2</sup> Then") == "the **end**.<sup>2</sup> Then"


def test_a_page_of_code_alone_comes_back_as_it_was():
    # No text to repair: the repair is not run on an empty text, whose one empty line would
    # have been added after the code.
    block = "```\nx = a**2\n```"
    assert outside_code(block, lambda text: text + " repaired") == block
    assert outside_code("```\nx\n```\nprose", lambda text: text.upper()) == "```\nx\n```\nPROSE"
