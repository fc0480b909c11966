"""The text-layer repairs, on the fragments real pages produced (the real-page set's PDFs).
Pure: ``pytest -p no:django``."""

from __future__ import annotations

from model.formulas import line_formula, place_formulas
from model.markdown_repair import (
    Repairs,
    compose_accents,
    drop_running_lines,
    repair_text_layer,
    respace_code,
    space_style_changes,
    strip_debris,
    toc_tables_to_lists,
)
from model.quality.checks import canonical_latex
from model.rtl import (
    apply_fixes,
    apply_run_order,
    ligature_fixes,
    run_order_fixes,
    table_cell_order,
    table_column_order,
)
from model.table_format import auto_tables, pipe_table, split_stacked_rows


def test_picture_text_becomes_plain_lines_and_marks_go():
    repairs = Repairs()
    page = (
        "Intro.\n\n<!-- Start of picture text -->\n"
        "Boots aircraft nut  Elastic anchor nut<br>Flexloc nut<br><!-- End of picture text -->\n\n"
        "<mark>Lorem ipsum</mark> dolor"
    )
    assert strip_debris(page, repairs) == (
        "Intro.\n\nBoots aircraft nut Elastic anchor nut\nFlexloc nut\n\nLorem ipsum dolor"
    )
    assert repairs.notes == []


def test_br_stays_in_table_cells_only():
    page = "|a<br>b|c|\n|---|---|\nOne<br>Two"
    assert strip_debris(page, Repairs()) == "|a<br>b|c|\n|---|---|\nOne\nTwo"


def test_unmapped_glyphs_are_removed_and_reported():
    repairs = Repairs()
    assert (
        strip_debris("حَبيبي habibi\ufffd\ufffd\ufffdحَبيبي \ufffd", repairs) == "حَبيبي habibi حَبيبي "
    )
    assert repairs.unmapped_characters == 4
    assert repairs.notes == ["4 characters without a Unicode mapping removed"]
    assert strip_debris("**Indonesia**\U000f03d9", Repairs()) == "**Indonesia**"


def test_a_change_of_style_keeps_its_word_gap():
    assert (
        space_style_changes("**STRDBMON**or**ENDDBMON**commands targeting")
        == "**STRDBMON** or **ENDDBMON** commands targeting"
    )
    assert space_style_changes("(**X**), **Y**.") == "(**X**), **Y**."


def test_spacing_accents_are_composed():
    assert compose_accents("J´an Min´aˇc") == "Ján Mináč"
    assert compose_accents("Erd˝os, na¨ıve, ´Ecole") == "Erd˝os, naïve, École"
    assert compose_accents("e\u0301te\u0301") == "été"
    assert compose_accents("it's `code`") == "it's `code`"


def test_a_dot_leader_table_of_contents_is_a_list():
    toc = (
        "# Contents\n\n"
        "|**Notices**. . . . . . . . . . . . . vii|\n|---|\n"
        "|1.1  Security fundamentals. . . . . . . . . . 2|\n"
        "|1.2  Current state of IBM i security. . . . . . . 2|\n"
    )
    assert toc_tables_to_lists(toc) == (
        "# Contents\n\n- Notices — vii\n- 1.1 Security fundamentals — 2\n"
        "- 1.2 Current state of IBM i security — 2\n"
    )


def test_a_contents_table_without_leaders_is_a_list_and_a_real_table_stays():
    toc = "# Contents\n\n|**1**|**Foo**|**2**|\n|---|---|---|\n|**2**|**Bar**|**2**|\n|3|Baz|3|"
    assert toc_tables_to_lists(toc) == "# Contents\n\n- 1 Foo — 2\n- 2 Bar — 2\n- 3 Baz — 3"
    table = "|Year|Flow|\n|---|---|\n|2019|12|\n|2020|14|\n|2021|9|"
    assert toc_tables_to_lists(table) == table


def test_running_lines_on_a_single_page_go():
    page = (
        "Revision: 2.4\n\n# Title\n\nBody text.\n\n"
        "Downloaded from https://example.org on 3 May\n\nxii"
    )
    assert drop_running_lines(page).split() == ["#", "Title", "Body", "text."]
    assert drop_running_lines("Page 3 of 10\n\nBody.\n\n- 12 -").strip() == "Body."
    # a number inside the text stays, and a page that is only a number keeps it
    assert drop_running_lines("Body.\n\n12 apples") == "Body.\n\n12 apples"
    assert drop_running_lines("7") == "7"


def test_repair_keeps_running_lines_when_asked():
    text, _ = repair_text_layer("Body text.\n\n12", drop_running=False)
    assert text == "Body text.\n\n12"
    text, _ = repair_text_layer("Body text.\n\n12", drop_running=True)
    assert text.strip() == "Body text."


# --- formulas and code ---------------------------------------------------------------------------


def _span(text: str, size: float = 11.0, baseline: float = 100.0) -> dict:
    return {"text": text, "size": size, "origin": (0.0, baseline)}


def test_scripts_by_size_and_baseline_become_latex():
    sup, sub = 96.0, 102.0
    line = [
        _span("Equation 4: σ"),
        _span("2", 8, sup),
        _span(" = Σ (x"),
        _span("i", 8, sub),
        _span(" − μ)"),
        _span("2", 8, sup),
        _span(" / n"),
    ]
    formula = line_formula(line)
    assert formula is not None and not formula.whole_line
    assert canonical_latex(formula.latex) == canonical_latex(
        r"\sigma^{2} = \sum (x_i - \mu)^{2} / n"
    )
    markdown = "# Formulas\n\nEquation 4: σ<sup>2</sup> = Σ (xi − μ)<sup>2</sup> / n"
    placed, notes = place_formulas(markdown, [formula])
    assert placed.endswith("Equation 4: $" + formula.latex + "$") and notes == []


def test_a_formula_alone_on_its_line_is_display_math():
    formula = line_formula([_span("a"), _span("2", 7, 96), _span(" "), _span("+ 8 = 12")])
    placed, _ = place_formulas("Text.\n\n## _a_<sup>2</sup> + 8 = 12\n\nMore.", [formula])
    assert placed == "Text.\n\n$$a^{2} + 8 = 12$$\n\nMore."


def test_prose_and_footnote_marks_are_not_formulas():
    assert line_formula([_span("Population 83,190,556"), _span("2", 7, 96)]) is None
    assert line_formula([_span("It rose by"), _span("3", 7, 96), _span(" percent = a lot")]) is None
    assert line_formula([_span("E = mc2")]) is None  # no scripts: nothing to rebuild


def test_a_formula_that_cannot_be_placed_is_reported():
    formula = line_formula([_span("E = mc"), _span("2", 8, 96)])
    placed, notes = place_formulas("Something else entirely.", [formula])
    assert placed == "Something else entirely."
    assert notes == ["formula left as text: E = mc^{2}"]


def test_code_lines_take_the_page_s_word_gaps():
    markdown = "Listing:\n\n```\nfunctionadd(a,b){\nreturna+b;\n}\n```\n\nfunctionadd stays"
    page = ["Listing:", "function", "add(a, b) {", "return a + b;", "}"]
    assert respace_code(markdown, page) == (
        "Listing:\n\n```\nfunction add(a, b) {\nreturn a + b;\n}\n```\n\nfunctionadd stays"
    )


def test_typeset_fractions_are_plain():
    text, _ = repair_text_layer("from No. 6 up to<sup>1</sup> ⁄4 inch, 3⁄8", drop_running=False)
    assert text == "from No. 6 up to 1/4 inch, 3/8"


# --- right to left, and the auto table format ----------------------------------------------------


def _char(c: str, x0: float, x1: float) -> dict:
    return {"c": c, "bbox": (x0, 0.0, x1, 10.0)}


def test_reversed_lam_alef_ligatures_are_put_back_in_logical_order():
    # "الإنتاجية" as MuPDF extracts it: ا, then the lam-alef glyph's two letters turned round
    # (the alef without a width of its own), then the rest
    chars = [_char("ا", 100, 103), _char("إ", 97, 97), _char("ل", 90, 97)]
    chars += [_char(c, 80 - i, 81 - i) for i, c in enumerate("نتاجية")]
    rawdict = {"blocks": [{"lines": [{"spans": [{"chars": chars}]}]}]}
    fixes = ligature_fixes(rawdict)
    assert fixes == {"اإلنتاجية": "الإنتاجية"}
    assert apply_fixes("# تحسين اإلنتاجية", fixes) == "# تحسين الإنتاجية"
    # the article's own alef has a width: left alone
    article = [_char("ا", 100, 103), _char("ل", 96, 100), _char("ب", 90, 96)]
    assert ligature_fixes({"blocks": [{"lines": [{"spans": [{"chars": article}]}]}]}) == {}


def _line(x0: float, x1: float, y0: float, text: str) -> dict:
    return {"bbox": (x0, y0, x1, y0 + 13), "dir": (1.0, 0.0), "spans": [{"text": text}]}


def test_an_arabic_line_cut_into_runs_reads_right_to_left():
    # right_to_left_01's first lines: MuPDF gives each printed line as two lines on one
    # baseline (the run holding "R وPython", then the rest), and pymupdf4llm joined them
    # left to right: the end of the sentence first.
    first = "تعتبر البرمجة بلغة R وPython "
    rest = " من الأدوات القوية التي يمكن أن تعزز الإنتاجية وتساعد في إيجاد حلول فعالة"
    second = "للمشكلات. يمتلك كل من R وPython "
    more = " ميزات فريدة تجعلها مثالية لتحليل البيانات"
    page = {
        "blocks": [
            {
                "lines": [
                    _line(397, 522, 102, first),
                    _line(109, 396, 102, rest),
                    _line(375, 522, 116, second),
                    _line(91, 375, 116, more),
                ]
            }
        ]
    }
    joined = rest.strip() + first.strip() + " " + more.strip() + second.strip()
    fixed = apply_run_order(joined, run_order_fixes(page))
    assert fixed == " ".join(p.strip() for p in (first, rest, second, more))
    # a Latin page's runs are left alone
    latin = {"blocks": [{"lines": [_line(300, 500, 10, "right"), _line(100, 299, 10, "left")]}]}
    assert run_order_fixes(latin) == []


def test_persian_table_cells_read_in_logical_order():
    # right_to_left_03's table, as pymupdf4llm fills it (words sorted left to right)
    table = "|20300|ملی استاندارد شماره|\n|---|---|\n|x|اخذ را مذکور<br>است؟ نموده|"
    lines = ["شماره استاندارد ملی", "اخذ را مذکور", "نموده است؟"]
    assert table_cell_order(table, lines) == (
        "|20300|شماره استاندارد ملی|\n|---|---|\n|x|اخذ را مذکور<br>نموده است؟|"
    )
    html = "<table><tr><td>ايران کالای بورس شرکت</td><td>R و Python</td></tr></table>"
    assert table_cell_order(html, ["شرکت بورس کالای ايران"]) == (
        "<table><tr><td>شرکت بورس کالای ايران</td><td>R و Python</td></tr></table>"
    )


def test_picture_text_that_the_tables_already_hold_is_not_written_twice():
    # right_to_left_03: a form the layout model called a picture; pymupdf4llm wrote its text
    # as picture text and then the tables it found in it.
    form = (
        "<!-- Start of picture text -->\n20300 شماره استاندارد ملی<br>"
        "سازمان ملی استاندارد ايران مرجع صادرکننده استاندارد<br><!-- End of picture text -->\n\n"
        "|20300|شماره استاندارد ملی|\n|---|---|\n"
        "|سازمان ملی استاندارد ايران|مرجع صادرکننده استاندارد|\n"
    )
    out = strip_debris(form, Repairs())
    assert out.count("مرجع صادرکننده") == 1 and out.lstrip().startswith("|20300|")
    # a figure's labels are kept when no table holds them
    figure = "<!-- Start of picture text -->\nNut case<br>Keyway<br><!-- End of picture text -->\n"
    assert strip_debris(figure + "|a|b|\n|---|---|\n", Repairs()).startswith("Nut case\nKeyway")


def test_right_to_left_tables_put_their_first_column_first():
    # right_to_left_03's standard table, as printed left to right: value, then its label
    table = "|20300|شماره استاندارد ملی|\n|---|---|\n|1403 / 10 / 04|تاريخ پذيرش|\n"
    assert table_column_order(table) == (
        "|شماره استاندارد ملی|20300|\n|---|---|\n|تاريخ پذيرش|1403 / 10 / 04|\n"
    )
    latin = "|Year|Flow|\n|---|---|\n|2019|12|"
    assert table_column_order(latin) == latin
    html = "<table><tr><td>436</td><td>شماره جلسه</td></tr></table>"
    assert table_column_order(html) == "<table><tr><td>شماره جلسه</td><td>436</td></tr></table>"
    merged = '<table><tr><td colspan="2">شماره جلسه</td></tr><tr><td>1</td><td>2</td></tr></table>'
    assert table_column_order(merged) == merged


def test_auto_tables_are_pipe_tables_unless_cells_merge():
    simple = (
        "<table><tr><th>Year</th><th>Flow</th></tr><tr><td>2019</td><td>1<br/>2</td></tr></table>"
    )
    merged = '<table><tr><th colspan="2">TEDs</th></tr><tr><td>a</td><td>b</td></tr></table>'
    assert auto_tables(f"Text.\n\n{simple}\n") == "Text.\n\n|Year|Flow|\n|---|---|\n|2019|1<br>2|\n"
    assert auto_tables(merged) == merged
    assert pipe_table("<table><tr><td>a|b</td></tr></table>") == "|a\\|b|\n|---|"


def test_stacked_rows_are_split_and_their_single_cells_span_them():
    row = (
        "<tr><td>4</td><td>OTSL<br/>HTML</td><td>0.938<br/>0.952</td><td>0.904<br/>0.909</td></tr>"
    )
    assert split_stacked_rows(f"<table>{row}</table>") == (
        '<table><tr><td rowspan="2">4</td><td>OTSL</td><td>0.938</td><td>0.904</td></tr>'
        "<tr><td>HTML</td><td>0.952</td><td>0.909</td></tr></table>"
    )
    prose = (
        "<tr><td>USAGE</td><td>Usage setting:<br/>ALLOWED: The user profile may use it.</td></tr>"
    )
    assert split_stacked_rows(f"<table>{prose}</table>") == f"<table>{prose}</table>"


def test_lines_in_a_font_without_a_unicode_map_are_reported():
    page = [
        "Highlights",
        "]üìÆüéê •ìê °ê£ë†£ûÜüéê †ë ∞†¶£ èÜ•ÜáÜ§ê",
        "Ünïcödé façade in a normal line",
    ]
    _, repairs = repair_text_layer("Highlights", drop_running=False, page_lines=page)
    assert repairs.notes == ["1 lines in a font without a usable Unicode map"]
    _, clean = repair_text_layer("x", drop_running=False, page_lines=["Æsop’s fables, naïve café"])
    assert clean.notes == []
