"""OCR'd pages: tables recovered from the boxes' columns, running lines in the margins left
out when asked. Pure: ``pytest -p no:django``."""

from __future__ import annotations

from model.scan_layout import boxes_to_markdown
from model.scan_lines import TextBox
from model.tables import all_tables


def _row(y: float, *cells: tuple[float, str]) -> list[TextBox]:
    return [TextBox(x, y, x + 60 + 6 * len(text), y + 20, text) for x, text in cells]


def _statement() -> list[TextBox]:
    boxes = [TextBox(100, 100, 700, 124, "Results of operations for the year")]
    for n, (label, a, b) in enumerate(
        [("", "2023", "2022"), ("Revenue", "$ 412", "$ 380"), ("Cost of revenue", "178", "141")]
        + [("Gross margin", "234", "239")]
    ):
        y = 160 + 36 * n
        boxes += _row(y, *[c for c in ((100, label), (520, a), (700, b)) if c[1]])
    boxes.append(TextBox(100, 330, 900, 352, "Margins held while the cost of revenue rose."))
    return boxes


def test_a_scanned_statement_keeps_its_rows_and_columns():
    markdown = boxes_to_markdown(_statement(), page_width=1000)
    (table,) = all_tables(markdown)
    assert table.rows[0] == ["", "2023", "2022"]
    assert ["Cost of revenue", "178", "141"] in table.rows
    assert markdown.startswith("Results of operations for the year\n\n|")
    assert markdown.rstrip().endswith("Margins held while the cost of revenue rose.")


def test_html_tables_when_asked():
    markdown = boxes_to_markdown(_statement(), page_width=1000, table_format="html")
    assert "<table><tr><td></td><td>2023</td><td>2022</td></tr>" in markdown


def test_prose_split_into_two_boxes_is_not_a_table():
    boxes = []
    for n in range(6):
        boxes += _row(100 + 30 * n, (100, "words of a justified line"), (480, "that the OCR split"))
    assert all_tables(boxes_to_markdown(boxes, page_width=1000)) == []


def _body() -> list[TextBox]:
    return [
        TextBox(100, 300 + 30 * n, 900, 322 + 30 * n, f"Body line {n} of the page.")
        for n in range(5)
    ]


def test_page_numbers_in_the_margins_go_only_when_asked():
    body = _body()
    foot = TextBox(480, 1340, 520, 1362, "17")
    head = TextBox(100, 40, 400, 62, "Revision: 2.4")
    kept = boxes_to_markdown([head, *body, foot], 1000, page_height=1400)
    dropped = boxes_to_markdown([head, *body, foot], 1000, page_height=1400, drop_running=True)
    assert "17" in kept and "Revision" in kept
    assert "17" not in dropped and "Revision" not in dropped and "Body line 4" in dropped


def test_a_printed_web_pages_count_and_date_go_though_they_share_a_row():
    body = _body()
    count = TextBox(40, 1340, 140, 1362, "1 von 19")
    stamp = TextBox(760, 1340, 960, 1362, "24.08.2016 21:00")
    title = TextBox(40, 40, 240, 62, "Linux - Wikipedia")
    address = TextBox(600, 40, 960, 62, "https://de.wikipedia.org/wiki/Linux")
    boxes = [title, address, *body, count, stamp]
    dropped = boxes_to_markdown(boxes, 1000, page_height=1400, drop_running=True)
    assert "von 19" not in dropped and "2016" not in dropped and "https" not in dropped
    assert "Linux - Wikipedia" in dropped and "Body line 4" in dropped
