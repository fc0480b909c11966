"""Arabic text layers in logical order: the lam-alef ligatures MuPDF turns round.

An Arabic font draws lam followed by alef (لا, لأ, لإ, لآ) as one glyph. MuPDF maps the glyph to
its two letters and then reverses the right-to-left run for display order to logical order, so
the pair comes out reversed: "الإنتاجية" extracts as "اإلنتاجية". The alef of a reversed pair
has no width of its own (it shares the ligature glyph's advance), which tells it apart from a
real alef-lam ("ال", the article), whose alef is a glyph of its own.
"""

from __future__ import annotations

import re
from typing import Any

from model.steps import no_findings, no_fixes, page_step, unchanged

_ALEFS = "اأإآ"
_LAM = "ل"
_ARABIC = re.compile("[\u0600-\u06ff]")
_WORD = re.compile("[\u0600-\u06ff\u0750-\u077f]+")


def has_arabic(text: str) -> bool:
    return bool(_ARABIC.search(text))


@page_step("right-to-left ordering", fallback=no_fixes)
def ligature_fixes(rawdict: dict[str, Any]) -> dict[str, str]:
    """Words as extracted → the same words with their lam-alef pairs in logical order, from a
    page's ``get_text("rawdict")``; only words whose fix is unambiguous."""
    fixes: dict[str, str] = {}
    clashes: set[str] = set()
    for block in rawdict.get("blocks", []):
        for line in block.get("lines", []):
            for span in line.get("spans", []):
                chars = span.get("chars", [])
                extracted = "".join(c["c"] for c in chars)
                fixed = list(extracted)
                changed = False
                for i in range(len(chars) - 1):
                    alef, lam = chars[i], chars[i + 1]
                    if alef["c"] in _ALEFS and lam["c"] == _LAM:
                        x0, _, x1, _ = alef["bbox"]
                        if abs(x1 - x0) < 0.01:  # no advance: half of a ligature glyph
                            fixed[i], fixed[i + 1] = _LAM, alef["c"]
                            changed = True
                if not changed:
                    for word in _WORD.findall(extracted):
                        if word in fixes:
                            clashes.add(word)
                    continue
                for before, after in zip(
                    _WORD.findall(extracted), _WORD.findall("".join(fixed)), strict=False
                ):
                    if before == after:
                        if before in fixes:
                            clashes.add(before)
                        continue
                    if fixes.get(before, after) != after:
                        clashes.add(before)
                    fixes[before] = after
    return {k: v for k, v in fixes.items() if k not in clashes}


@page_step("right-to-left ordering", fallback=unchanged)
def apply_fixes(markdown: str, fixes: dict[str, str]) -> str:
    if not fixes:
        return markdown
    return _WORD.sub(lambda m: fixes.get(m.group(0), m.group(0)), markdown)


# --- the order of a line's runs ----------------------------------------------------------------

# Two pieces of one printed line: their heights overlap by this share of the smaller one ...
_SAME_LINE = 0.6
# ... and they are no further apart than this many times the line's height.
_RUN_GAP = 1.0


@page_step("right-to-left ordering", fallback=no_findings)
def run_order_fixes(page_dict: dict[str, Any]) -> list[tuple[list[str], list[str]]]:
    """Right-to-left lines that MuPDF cut into runs, as (runs left to right, runs right to
    left), from a page's ``get_text("dict")``.

    A line of Arabic with Latin words in it ("تعتبر البرمجة بلغة R وPython من الأدوات ...")
    comes out of MuPDF as two lines on one baseline, each in logical order; pymupdf4llm then
    joins them left to right, so the end of the sentence comes first. Read right to left,
    the runs are in order."""
    pieces = [
        (line["bbox"], "".join(span["text"] for span in line["spans"]))
        for block in page_dict.get("blocks", [])
        for line in block.get("lines", [])
        if line.get("dir", (1, 0))[0] > 0.99
    ]
    pieces = [(bbox, text) for bbox, text in pieces if text.strip()]
    rows: list[list[tuple[Any, str]]] = []
    for bbox, text in sorted(pieces, key=lambda p: (p[0][1], p[0][0])):
        for row in rows:
            x0, y0, x1, y1 = row[-1][0]
            height = min(y1 - y0, bbox[3] - bbox[1])
            overlap = min(y1, bbox[3]) - max(y0, bbox[1])
            near = any(
                abs(bbox[0] - other[0][2]) < _RUN_GAP * height
                or abs(other[0][0] - bbox[2]) < _RUN_GAP * height
                for other in row
            )
            if height > 0 and overlap >= _SAME_LINE * height and near:
                row.append((bbox, text))
                break
        else:
            rows.append([(bbox, text)])
    fixes = []
    for row in rows:
        if len(row) < 2 or not any(has_arabic(text) for _, text in row):
            continue
        ordered = [text.strip() for _, text in sorted(row, key=lambda p: p[0][0])]
        ordered = [text for text in ordered if text]
        if len(ordered) >= 2:
            fixes.append((ordered, ordered[::-1]))
    return fixes


@page_step("right-to-left ordering", fallback=unchanged)
def apply_run_order(markdown: str, fixes: list[tuple[list[str], list[str]]]) -> str:
    """Each line's runs, found joined left to right (with or without a space between them),
    put right to left with a space between them."""
    for left_to_right, right_to_left in fixes:
        pattern = r"\s*".join(_loose(run) for run in left_to_right)
        replacement = " ".join(right_to_left).replace("\\", "\\\\")
        markdown = re.sub(pattern, replacement, markdown, count=1)
    return markdown


def _loose(run: str) -> str:
    """A run as a pattern that allows any whitespace where it has some (pymupdf4llm trims
    and joins spaces)."""
    return r"\s+".join(re.escape(word) for word in run.split())


# --- words in table cells ----------------------------------------------------------------------

_HTML_CELL = re.compile(r"(<t[dh]\b[^>]*>)(.*?)(</t[dh]>)", re.DOTALL)
_RTL_WORD = re.compile("^[\u0600-\u06ff\u0750-\u077f\u200c\u200f]+[.,:;!?؟،]?$")


@page_step("right-to-left ordering", fallback=unchanged)
def table_cell_order(markdown: str, page_lines: list[str]) -> str:
    """Table cells of right-to-left words in logical order.

    pymupdf4llm fills a table's cells from the page's words sorted left to right, so a
    cell of Persian or Arabic words reads backwards ("ايران کالای بورس شرکت" for the
    header "شرکت بورس کالای ايران"). A cell whose every word is in an Arabic-script
    alphabet is turned round, unless the page's text already has it in that order."""
    text = " ".join(" ".join(line.split()) for line in page_lines)

    def fix(cell: str) -> str:
        if "<br>" in cell:  # a cell of several lines: each line on its own
            return "<br>".join(fix(part) for part in cell.split("<br>"))
        words = cell.split()
        if len(words) < 2 or not all(_RTL_WORD.match(w) for w in words):
            return cell
        if " ".join(words) in text:
            return cell
        lead = cell[: len(cell) - len(cell.lstrip())]
        trail = cell[len(cell.rstrip()) :]
        return lead + " ".join(reversed(words)) + trail

    def fix_row(line: str) -> str:
        if not line.startswith("|"):
            return line
        cells = re.split(r"(?<!\\)\|", line)
        return "|".join(fix(cell) for cell in cells)

    markdown = _HTML_CELL.sub(lambda m: m.group(1) + fix(m.group(2)) + m.group(3), markdown)
    return "\n".join(fix_row(line) for line in markdown.split("\n"))


# --- the order of a table's columns ------------------------------------------------------------

# A table is right to left when this share of its cells with letters hold Arabic-script ones.
_RTL_TABLE_SHARE = 0.6
_HTML_TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL | re.IGNORECASE)
_HTML_ROW = re.compile(r"(<tr\b[^>]*>)(.*?)(</tr>)", re.DOTALL | re.IGNORECASE)
_HTML_CELLS = re.compile(r"<t[dh]\b[^>]*>.*?</t[dh]>", re.DOTALL | re.IGNORECASE)


@page_step("right-to-left ordering", fallback=unchanged)
def table_column_order(markdown: str) -> str:
    """Right-to-left tables with their columns in reading order, first column first.

    pymupdf4llm writes a table's columns left to right as printed; on a Persian or Arabic page
    the first column is the rightmost ("نام استاندارد" and then its value), so each row came
    out value first. Pipe tables, and HTML tables without merged cells (a span would have to
    move with its neighbours), are turned round."""
    out: list[str] = []
    block: list[str] = []
    for line in [*markdown.split("\n"), ""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if block:
            out.extend(_reversed_pipe_table(block))
            block = []
        out.append(line)
    text = "\n".join(out[:-1])
    return _HTML_TABLE.sub(lambda m: _reversed_html_table(m.group(0)), text)


def _rtl_cells(cells: list[str]) -> bool:
    # Cells of figures or dates say nothing about the direction; cells with letters do.
    filled = [c for c in cells if any(ch.isalpha() for ch in c)]
    return bool(filled) and sum(map(has_arabic, filled)) >= _RTL_TABLE_SHARE * len(filled)


def _reversed_pipe_table(rows: list[str]) -> list[str]:
    if not all(row.rstrip().endswith("|") for row in rows):
        return rows
    split = [re.split(r"(?<!\\)\|", row.strip())[1:-1] for row in rows]
    if not _rtl_cells([cell for cells in split for cell in cells]):
        return rows
    return ["|" + "|".join(reversed(cells)) + "|" for cells in split]


def _reversed_html_table(table: str) -> str:
    if re.search(r"\b(?:rowspan|colspan)\s*=", table, re.IGNORECASE):
        return table
    texts = [re.sub(r"<[^>]+>", " ", cell) for cell in _HTML_CELLS.findall(table)]
    if not _rtl_cells(texts):
        return table

    def row(match: re.Match[str]) -> str:
        cells = _HTML_CELLS.findall(match.group(2))
        return match.group(1) + "".join(reversed(cells)) + match.group(3)

    return _HTML_ROW.sub(row, table)
