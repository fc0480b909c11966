"""The hostile-input classes of the issue-26 review, counted again: each document of the
hostile corpora (``tests/hostile.py``, ``tests/office.py``, ``tests/hostile_office.py``) is
submitted through ``job_submit`` (what every upload endpoint calls) and sorted into:

- refused: a clear refusal (``SubmissionError``: the API's 4xx) with nothing stored (no job
  and no document row more than before);
- accepted: a job was written (expected for the documents that convert: a linked image, an
  EPUB 3 book, a page selection of a long PDF; listed, so that an unexpected one shows);
- 500: any other exception;
- held: the submission took longer than ``--held`` seconds (the web process would hold a
  request that long).

Method: in-process, against the database of ``DATABASE_URL`` (migrated) and the broker of
``FOLIO_BROKER_URL``; no worker runs (the engine's "is it served" check is skipped; accepted
jobs are deleted and their messages purged). What a worker then makes of an accepted document
is what ``tests/test_no_network.py`` and ``tests/test_converter_guards.py`` check.

    DATABASE_URL=... FOLIO_BROKER_URL=... FOLIO_SECRET_KEY=... python bench/hostile_classes.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

URL = "http://127.0.0.1:9"  # nothing listens there; nothing is fetched either way


def classes():
    from tests import documents, hostile, hostile_office, office

    made = {
        "zero bytes": hostile.zero_bytes,
        "a pdf cut after its header": hostile.header_only_pdf,
        "a corrupt pdf": hostile.corrupt_pdf,
        "an encrypted pdf": hostile.encrypted_pdf,
        "a program named .pdf": documents.non_document,
        "a 20,000 x 20,000 px page": hostile.huge_page_png,
        "a decompression bomb png": hostile.decompression_bomb_png,
        "a 10,000-page pdf": hostile.many_pages_pdf,
        "a 2,000-frame tiff": hostile.many_frames_tiff,
        "a zip bomb docx": office.zip_bomb_docx,
        "10,001 parts docx": office.many_parts_docx,
        "billion laughs docx": office.entity_expansion_docx,
        "remote template docx": office.remote_template_docx,
        "external workbook xlsx": office.ole_link_xlsx,
        "absurd sheet xlsx": office.absurd_sheet_xlsx,
        "macro docm (accepted, never run)": office.macro_docm,
        "xxe_bom.docx": hostile_office.xxe_bom_docx,
        "xxe_utf16.docx": hostile_office.xxe_utf16_docx,
        "lol_bom.odt": hostile_office.lol_bom_odt,
        "xxe_bom.epub": hostile_office.xxe_bom_epub,
        "EPUB 3 book (accepted)": hostile_office.epub3_book,
        "1,100,000 rows without r xlsx": lambda: hostile_office.xlsx_rows_without_references(
            1_100_000
        ),
        "1,000,001 rows without r xlsx (one past the cell limit)": lambda: (
            hostile_office.xlsx_rows_without_references(1_000_001)
        ),
        "999,999 rows without r xlsx (under the cell limit, 4,003 pages)": lambda: (
            hostile_office.xlsx_rows_without_references(999_999)
        ),
        "1,100,000 rows of 4 empty formatted cells xlsx": lambda: (
            hostile_office.xlsx_with_sheet_data(
                b'<row r="%d"><c r="A%d" s="1"/><c r="B%d" s="2"/><c r="C%d" s="3"/>'
                b'<c r="D%d" s="4"/></row>' % ((n,) * 5)
                for n in range(1, 1_100_001)
            )
        ),
        "100,000 nested divs": hostile_office.html_nested,
        "100,000 nested divs and a nav": lambda: hostile_office.html_nested(furniture=True),
        "10,000 slides under q:": hostile_office.pptx_slides_under_another_prefix,
        "linked section odt": lambda: hostile_office.odt_section_source(URL),
        "docling's docx_external_image (accepted)": lambda: office.corpus(
            "docx/sources/docx_external_image.docx"
        ),
        "docling's powerpoint_with_image (accepted)": lambda: office.corpus(
            "pptx/sources/powerpoint_with_image.pptx"
        ),
    }
    for name, (make, _) in hostile_office.LINKING.items():
        made[f"linked image, {name} (accepted, never fetched)"] = lambda make=make: make(URL)
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--held", type=float, default=30.0)
    args = parser.parse_args()

    import django

    django.setup()
    from django.contrib.auth.models import User

    from tests.workers import purge_queues
    from webapp.jobs.models import Document, Job
    from webapp.jobs.services import job_submit, submission
    from webapp.jobs.services.options import SubmissionError

    submission._engine_served_check = lambda engine: None  # no worker needed here
    owner, _ = User.objects.get_or_create(username="bench-hostile")
    counts = {"refused": 0, "accepted": 0, "500": 0, "held": 0}
    for name, make in classes().items():
        data = make()
        before = (Job.objects.count(), Document.objects.count())
        started = time.perf_counter()
        try:
            job = job_submit(owner=owner, data=data, filename="hostile")
            outcome = "accepted"
            Job.objects.filter(pk=job.pk).delete()
        except SubmissionError as exc:
            stored = (Job.objects.count(), Document.objects.count()) != before
            outcome = "500" if stored else "refused"
            detail = str(exc)[:90]
        except Exception as exc:  # what the API would answer with a 500
            outcome, detail = "500", repr(exc)[:90]
        else:
            detail = f"{job.pages_total} pages"
        seconds = time.perf_counter() - started
        if seconds > args.held:
            outcome = "held"
        counts[outcome] += 1
        print(f"{outcome:<9} {seconds:6.2f} s  {name}: {detail}")
    purge_queues("ocr.local")
    total = sum(counts.values())
    print(
        f"\n{total} classes: {counts['refused']} refused with nothing stored, "
        f"{counts['accepted']} accepted, {counts['500']} 500s, {counts['held']} held "
        f"past {args.held:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
