"""The generated quality corpus: PDFs whose truth is known, and the JSONL tests for them.

    python -m model.quality.corpus OUT_DIR [--ci]

writes ``OUT_DIR/*.pdf`` and ``OUT_DIR/tests.jsonl``. Everything is deterministic (fixed
seeds, PyMuPDF's own fonts through its HTML layout, which falls back to built-in Noto fonts
for Greek, Cyrillic, Chinese and Arabic). No LaTeX toolchain is assumed: formulas are typeset
by PyMuPDF's HTML layout (sub- and superscripts, Greek letters, fractions as a/b) and the
tests carry the LaTeX a model should write for them.

``--ci`` writes the few documents the default test run scores (well under a minute on two
cores); the full corpus is for ``bench/quality.py``.
"""

from __future__ import annotations

import argparse
import io
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymupdf
from PIL import Image, ImageFilter

from model.quality.checks import PageTest, dump_tests, load_test

logger = logging.getLogger(__name__)

A4 = pymupdf.Rect(0, 0, 595, 842)
BODY = pymupdf.Rect(60, 80, 535, 770)
CSS = """
body { font-family: serif; font-size: 11pt; }
h1 { font-size: 18pt; } h2 { font-size: 14pt; }
table { border-collapse: collapse; } td, th { border: 1px solid black; padding: 3px 6px; }
.fn { font-size: 8pt; }
"""

# --- texts -------------------------------------------------------------------------------------

PARAGRAPHS = (
    "The river authority measured the spring flood at four metres above the summer level.",
    "Engineers rebuilt the northern weir with granite blocks quarried upstream in May.",
    "Fish ladders beside the weir let salmon pass while the gates hold back the water.",
    "A new gauge at the old mill records the level every ten minutes and reports by radio.",
    "Farmers downstream were warned two days before the crest reached the lower valley.",
    "The cost of the works was shared by the county and the three riverside villages.",
    "Volunteers planted willows along the banks to slow the current in future floods.",
    "Next year the authority plans to dredge the channel below the stone bridge again.",
    "Records kept since eighteen ninety show the floods arriving earlier every decade.",
)


def _sentences(start: int, count: int) -> list[str]:
    return [PARAGRAPHS[(start + i) % len(PARAGRAPHS)] for i in range(count)]


@dataclass
class Doc:
    name: str
    pages: list[bytes] | bytes
    tests: list[dict[str, Any]]
    category: str


def _html_pdf(pages: list[str], *, header: str = "", footer: str = "") -> bytes:
    doc = pymupdf.open()
    for number, html in enumerate(pages, start=1):
        page = doc.new_page(width=A4.width, height=A4.height)
        page.insert_htmlbox(BODY, html, css=CSS)
        if header:
            page.insert_htmlbox(pymupdf.Rect(60, 30, 535, 60), f"<p>{header}</p>", css=CSS)
        if footer:
            text = footer.format(n=number, total=len(pages))
            page.insert_htmlbox(
                pymupdf.Rect(60, 790, 535, 820), f"<p style='text-align:center'>{text}</p>", css=CSS
            )
    try:
        return bytes(doc.tobytes(garbage=3, deflate=True))
    finally:
        doc.close()


def _columns_pdf(columns: list[list[str]], title: str) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=A4.width, height=A4.height)
    page.insert_htmlbox(pymupdf.Rect(60, 60, 535, 110), f"<h1>{title}</h1>", css=CSS)
    gap = 18
    width = (BODY.width - gap * (len(columns) - 1)) / len(columns)
    for index, paragraphs in enumerate(columns):
        x0 = BODY.x0 + index * (width + gap)
        html = "".join(f"<p style='text-align:justify'>{p}</p>" for p in paragraphs)
        page.insert_htmlbox(pymupdf.Rect(x0, 120, x0 + width, 770), html, css=CSS)
    try:
        return bytes(doc.tobytes(garbage=3, deflate=True))
    finally:
        doc.close()


def _t(kind: str, **fields: object) -> dict[str, Any]:
    return {"type": kind, **fields}


# --- born-digital documents --------------------------------------------------------------------

HEADER = "Riverside Authority Annual Review"
FOOTER = "Folio corpus page {n} of {total}"


def headers_footers() -> Doc:
    pages = [
        "".join(f"<p>{s}</p>" for s in _sentences(0, 4)),
        "".join(f"<p>{s}</p>" for s in _sentences(4, 4)),
    ]
    tests = []
    for number in (1, 2):
        first = _sentences(0 if number == 1 else 4, 1)[0]
        tests += [
            _t("present", page=number, text=first),
            # olmOCR-Bench scores running heads and feet as text that should not be there.
            _t("absent", page=number, text=HEADER, max_diffs=2),
            _t("absent", page=number, text=FOOTER.format(n=number, total=2), max_diffs=2),
            _t("baseline", page=number),
        ]
    return Doc("headers-footers", _html_pdf(pages, header=HEADER, footer=FOOTER), tests, "headers")


def columns(count: int) -> Doc:
    cols = [_sentences(i * 3, 3) for i in range(count)]
    tests = [_t("present", page=1, text=s) for col in cols for s in col]
    for left, right in zip(cols, cols[1:], strict=False):
        # A column is read to its end before the next one starts.
        tests.append(_t("order", page=1, before=left[-1], after=right[0]))
        tests.append(_t("order", page=1, before=left[0], after=right[0]))
    tests.append(_t("order", page=1, before=f"{count} columns report", after=cols[0][0]))
    pdf = _columns_pdf(cols, f"A {count} columns report")
    return Doc(f"columns-{count}", pdf, tests, f"{count}-columns")


TABLE_HTML = """<h2>Flow by station</h2><table>
<tr><th rowspan="2">Station</th><th colspan="2">Mean flow</th><th rowspan="2">Gauge</th></tr>
<tr><th>Spring</th><th>Autumn</th></tr>
<tr><td>Old Mill</td><td>41.5</td><td>18.2</td><td>radar</td></tr>
<tr><td>Stone Bridge</td><td>37.9</td><td>15.6</td><td>float</td></tr>
<tr><td>Lower Valley</td><td>52.3</td><td>22.8</td><td>pressure</td></tr>
<tr><td colspan="3">All stations reported daily</td><td>mixed</td></tr>
</table><p>Flows are in cubic metres per second.</p>"""


def merged_table() -> Doc:
    tests = [
        _t("table", page=1, cell="41.5", left="Old Mill", right="18.2", up="Spring"),
        _t("table", page=1, cell="15.6", left="37.9", top_heading="Autumn"),
        _t("table", page=1, cell="Lower Valley", up="Stone Bridge", right="52.3"),
        _t("table", page=1, cell="pressure", top_heading="Gauge", left_heading="Lower Valley"),
        _t("table", page=1, cell="Spring", right="Autumn"),
        _t("table", page=1, cell="mixed", up="pressure"),
        _t("present", page=1, text="Flows are in cubic metres per second."),
    ]
    return Doc("table-merged", _html_pdf([TABLE_HTML]), tests, "tables")


FOOTNOTE = "Measured at the old mill gauge, corrected for the weir's backwater."


def footnotes() -> Doc:
    body = "".join(f"<p>{s}</p>" for s in _sentences(2, 3))
    html = (
        f"<p>The crest passed the town at noon<sup>1</sup>.</p>{body}"
        "<div style='height:420px'></div>"
        f"<p class='fn'><sup>1</sup> {FOOTNOTE}</p>"
    )
    tests = [
        _t("present", page=1, text=FOOTNOTE, max_diffs=2),
        _t("order", page=1, before=PARAGRAPHS[2], after=FOOTNOTE),
        _t("present", page=1, text="The crest passed the town at noon"),
    ]
    return Doc("footnotes", _html_pdf([html]), tests, "footnotes")


# (HTML that typesets it, the LaTeX a transcription should hold)
FORMULAS = (
    ("E = mc<sup>2</sup>", r"E = mc^{2}"),
    ("a<sup>2</sup> + b<sup>2</sup> = c<sup>2</sup>", r"a^{2} + b^{2} = c^{2}"),
    (
        "x<sub>n+1</sub> = x<sub>n</sub> − f(x<sub>n</sub>) / f′(x<sub>n</sub>)",
        r"x_{n+1} = x_n - f(x_n) / f'(x_n)",
    ),
    (
        "σ<sup>2</sup> = Σ (x<sub>i</sub> − μ)<sup>2</sup> / n",
        r"\sigma^{2} = \sum (x_i - \mu)^{2} / n",
    ),
)


def formulas() -> Doc:
    html = "<h2>Formulas</h2>" + "".join(
        f"<p>Equation {i}: {shown}</p>" for i, (shown, _) in enumerate(FORMULAS, start=1)
    )
    tests = [_t("math", page=1, math=latex) for _, latex in FORMULAS]
    tests.append(_t("present", page=1, text="Equation 3"))
    return Doc("formulas", _html_pdf([html]), tests, "math")


SCRIPTS = (
    ("greek", "Η πλημμύρα της άνοιξης έφτασε τα τέσσερα μέτρα πάνω από το καλοκαίρι."),
    ("cyrillic", "Весенний паводок поднялся на четыре метра выше летнего уровня."),
    ("chinese", "春季洪水比夏季水位高出四米。工程师重建了北部堰坝。"),
    ("arabic", "ارتفع فيضان الربيع أربعة أمتار فوق مستوى الصيف."),
)


def scripts() -> Doc:
    html = "".join(
        f"<p dir='{'rtl' if name == 'arabic' else 'ltr'}'>{text}</p>" for name, text in SCRIPTS
    )
    tests = [_t("present", page=1, text=text, max_diffs=3, category=name) for name, text in SCRIPTS]
    tests.append(_t("baseline", page=1, check_disallowed_characters=False))
    return Doc("scripts", _html_pdf([html]), tests, "non-latin")


# --- scans -------------------------------------------------------------------------------------

SCAN_DPI = 150


def _scan(pdf: bytes, transform: Callable[[Image.Image], Image.Image]) -> bytes:
    """The page as a scanner would deliver it: pixels only, no text layer."""
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        pix = doc[0].get_pixmap(dpi=SCAN_DPI, colorspace=pymupdf.csGRAY, alpha=False)
        image = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    image = transform(image)
    buffer = io.BytesIO()
    image.convert("L").save(buffer, format="JPEG", quality=85)
    out = pymupdf.open()
    page = out.new_page(width=A4.width, height=A4.width * image.height / image.width)
    page.insert_image(page.rect, stream=buffer.getvalue())
    try:
        return bytes(out.tobytes(deflate=True))
    finally:
        out.close()


def _noise(sigma: float, seed: int) -> Callable[[Image.Image], Image.Image]:
    def apply(image: Image.Image) -> Image.Image:
        rng = random.Random(seed)
        noise = Image.effect_noise(image.size, sigma)
        # Salt-and-pepper specks as well: dust on the platen.
        specks = image.copy()
        pixels = specks.load()
        assert pixels is not None  # a loaded image always has its pixels
        for _ in range(int(image.width * image.height * sigma / 20000)):
            x, y = rng.randrange(image.width), rng.randrange(image.height)
            pixels[x, y] = 0 if rng.random() < 0.5 else 255
        return Image.blend(specks, noise, 0.25 if sigma else 0.0)

    return apply


def _blur(radius: float) -> Callable[[Image.Image], Image.Image]:
    return lambda image: image.filter(ImageFilter.GaussianBlur(radius))


def _rotate(degrees: float) -> Callable[[Image.Image], Image.Image]:
    return lambda image: image.rotate(
        degrees, expand=True, fillcolor=255, resample=Image.Resampling.BICUBIC
    )


SCAN_TEXT = _sentences(0, 5)


def _scan_source() -> bytes:
    html = "<h2>Flood report</h2>" + "".join(f"<p>{s}</p>" for s in SCAN_TEXT)
    return _html_pdf([html])


def scan(name: str, transform: Callable[[Image.Image], Image.Image], category: str) -> Doc:
    tests: list[dict[str, Any]] = [
        _t("present", page=1, text=s, max_diffs=3, category=category) for s in SCAN_TEXT
    ]
    tests.append(_t("order", page=1, before=SCAN_TEXT[0], after=SCAN_TEXT[-1], max_diffs=3))
    tests.append(_t("baseline", page=1))
    return Doc(name, _scan(_scan_source(), transform), tests, category)


def blank_page() -> Doc:
    doc = pymupdf.open()
    doc.new_page(width=A4.width, height=A4.height)
    data = doc.tobytes()
    doc.close()
    return Doc("blank", data, [_t("baseline", page=1, max_length=0)], "blank")


# --- the corpus --------------------------------------------------------------------------------


def documents(ci: bool = False) -> list[Doc]:
    if ci:
        # One of each kind the harness scores, and the cheapest scan.
        return [
            headers_footers(),
            columns(2),
            merged_table(),
            formulas(),
            scan("scan-clean", _noise(0, 1), "scan-clean"),
        ]
    return [
        headers_footers(),
        columns(2),
        columns(3),
        merged_table(),
        footnotes(),
        formulas(),
        scripts(),
        blank_page(),
        scan("scan-clean", _noise(0, 1), "scan-clean"),
        scan("scan-noise-1", _noise(20, 2), "scan-noise"),
        scan("scan-noise-2", _noise(45, 3), "scan-noise"),
        scan("scan-noise-3", _noise(80, 4), "scan-noise"),
        scan("scan-blur-1", _blur(0.8), "scan-blur"),
        scan("scan-blur-2", _blur(1.5), "scan-blur"),
        scan("scan-blur-3", _blur(2.5), "scan-blur"),
        scan("scan-skew-2", _rotate(2), "scan-skew"),
        scan("scan-skew-5", _rotate(-5), "scan-skew"),
        scan("scan-rotated-90", _rotate(-90), "scan-rotated"),
        scan("scan-rotated-180", _rotate(180), "scan-rotated"),
    ]


def build(out_dir: Path, *, ci: bool = False) -> list[PageTest]:
    """Write the corpus's PDFs and ``tests.jsonl`` into ``out_dir``; return the tests."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tests: list[PageTest] = []
    for doc in documents(ci):
        pdf = f"{doc.name}.pdf"
        assert isinstance(doc.pages, bytes)
        (out_dir / pdf).write_bytes(doc.pages)
        for index, fields in enumerate(doc.tests, start=1):
            fields = {"category": doc.category, **fields}
            tests.append(load_test({"pdf": pdf, "id": f"{doc.name}-{index:02d}", **fields}))
    dump_tests(tests, out_dir / "tests.jsonl")
    logger.info("wrote %d tests for %d documents to %s", len(tests), len(documents(ci)), out_dir)
    return tests


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--ci", action="store_true", help="only the CI-sized subset")
    args = parser.parse_args(argv)
    build(args.out_dir, ci=args.ci)


if __name__ == "__main__":
    main()
