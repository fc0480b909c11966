"""Lines the bundled OCR models cannot read, read by Tesseract in the page's script.

RapidOCR's wheel ships one recognition model, for Chinese, Japanese, English and the Latin
alphabets; a Korean, Arabic, Persian, Hebrew, Cyrillic, Greek, Devanagari or Thai line comes
back unread (under its 0.5 confidence) or as Chinese characters. Tesseract's language data
comes as Debian packages (``tesseract-ocr-kor``, ``-ara``, ``-fas``, …), read here through
tesserocr (a wheel with its own libtesseract; the data is Debian's, found through
``TESSDATA_PREFIX`` or Debian's own folder). Where the data is installed:

- the page's language is the job's ``ocr_language`` (Tesseract's codes, ``kor`` or
  ``fas+ara``), or else found where the engine already says the page's script is unknown to
  its models (more than ``MAX_UNREAD_SHARE`` of the detected text unread): a few of the
  doubtful lines are read in each installed language of a script RapidOCR does not read,
  and the most confident wins if it reaches ``MIN_DETECTED_CONFIDENCE``; Tesseract's own
  script detection (OSD) needs its legacy engine, which the wheel's library is built without;
- then every doubtful line (read under ``REREAD_BELOW``, or in Chinese characters on a page
  whose script is not Chinese) is read by Tesseract in that language (with the script's
  other installed languages, ``fas+ara``), and its reading kept where it is the more
  confident and reaches RapidOCR's own 0.5.

Tesseract's confidence (0-100 per word, ``MeanTextConf``) is read as a share. On the real
scans' doubtful lines, Korean lines read in ``kor`` scored 78-96 and in ``ara`` or ``eng``
under 47; Persian lines 61-91 in ``fas`` or ``ara`` and under 47 in ``kor``.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from model.engines.line_reread import REREAD_BELOW, OcrLines, spread_words
from model.engines.ocr_output import MAX_UNREAD_SHARE, TEXT_SCORE

logger = logging.getLogger(__name__)

# The scripts of Tesseract's language codes that RapidOCR's bundled model does not read; a
# code not named here is taken for one it reads (the Latin alphabets, Chinese, Japanese).
LANGUAGE_SCRIPTS = {
    **dict.fromkeys(("kor", "kor_vert"), "Hangul"),
    **dict.fromkeys(("ara", "fas", "urd", "pus", "snd", "uig", "kur_ara"), "Arabic"),
    **dict.fromkeys(("heb", "yid"), "Hebrew"),
    **dict.fromkeys(
        ("rus", "ukr", "bel", "bul", "mkd", "srp", "kaz", "kir", "mon", "tgk", "tat"),
        "Cyrillic",
    ),
    "ell": "Greek",
    **dict.fromkeys(("hin", "mar", "nep", "san"), "Devanagari"),
    **dict.fromkeys(("ben", "asm"), "Bengali"),
    "tha": "Thai",
    "tam": "Tamil",
    "tel": "Telugu",
    "kan": "Kannada",
    "mal": "Malayalam",
    "guj": "Gujarati",
    "pan": "Gurmukhi",
    "sin": "Sinhala",
    "khm": "Khmer",
    "lao": "Lao",
    "mya": "Myanmar",
    "amh": "Ethiopic",
    "kat": "Georgian",
    "hye": "Armenian",
}
# A language found on the page reads its sample at least this confidently (Tesseract's
# mean word confidence as a share): the right script scored 0.6-0.96 on the real scans'
# doubtful lines, a wrong one under 0.47.
MIN_DETECTED_CONFIDENCE = 0.6
# How many of the page's doubtful lines (the widest) each candidate language reads.
SAMPLE_LINES = 3
_HAN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
# Where Debian's tesseract-ocr packages put the data (Tesseract 5, then 4).
_DEBIAN_TESSDATA = ("/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata")


@dataclass(frozen=True)
class ScriptReading:
    """What Tesseract did on a page: the language it read in (None: none installed reads
    the page's script, or none was needed), and how many lines took its reading."""

    language: str | None = None
    script: str | None = None
    lines: int = 0
    missing: str | None = None  # the job's language, where its data is not installed
    # The page's clockwise rotation (0 or 180) as its script reads: RapidOCR's Latin
    # recognizer, which decides the page's orientation, reads an Arabic page no better one
    # way than the other, and turned one of the real scans over.
    rotation: int | None = None


def tessdata_dir() -> Path | None:
    """Tesseract's language data: ``TESSDATA_PREFIX`` (Tesseract's own variable), else
    Debian's folder; None where neither holds any."""
    candidates = [os.environ.get("TESSDATA_PREFIX", ""), *_DEBIAN_TESSDATA]
    for candidate in candidates:
        if candidate and any(Path(candidate).glob("*.traineddata")):
            return Path(candidate)
    return None


@lru_cache(maxsize=1)
def installed_languages() -> frozenset[str]:
    """The languages Tesseract can read here (empty without tesserocr or data)."""
    folder = tessdata_dir()
    if folder is None:
        return frozenset()
    try:
        import tesserocr
    except ImportError:
        return frozenset()
    _, languages = tesserocr.get_languages(str(folder) + "/")
    return frozenset(languages) - {"osd", "equ"}


def unbundled_script(language: str) -> str | None:
    return LANGUAGE_SCRIPTS.get(language.split("+")[0])


class TesseractLines:
    """Tesseract's line reader, one API per language, built on first use. Not thread-safe:
    the engine calls it under its OCR lock."""

    def __init__(self) -> None:
        self._apis: dict[str, Any] = {}

    def read(self, image: np.ndarray, language: str) -> tuple[str, float]:
        api = self._apis.get(language)
        if api is None:
            import tesserocr

            api = tesserocr.PyTessBaseAPI(
                path=str(tessdata_dir()) + "/",
                lang=language,
                psm=tesserocr.PSM.SINGLE_LINE,
                oem=tesserocr.OEM.LSTM_ONLY,
            )
            self._apis[language] = api
        api.SetImage(Image.fromarray(image))
        text = " ".join(api.GetUTF8Text().split())
        return text, (api.MeanTextConf() / 100 if text else 0.0)


def read_unread_lines(
    output: Any,
    pixels: np.ndarray,
    rotation: int,
    crop: Any,
    reader: TesseractLines,
    *,
    unread: float,
    language: str | None = None,
) -> tuple[OcrLines | Any, ScriptReading]:
    """``output`` (RapidOCR's, every detected line) with its doubtful lines read by
    Tesseract in ``language`` or the page's detected one; ``unread`` is the share of the
    detected text RapidOCR left unread. Upright and upside-down pages only (``rotation``
    0 or 180), as ``line_reread``."""
    installed = installed_languages()
    boxes, txts = getattr(output, "boxes", None), getattr(output, "txts", None)
    scores = getattr(output, "scores", None)
    if boxes is None or txts is None or scores is None or rotation not in (0, 180):
        return output, ScriptReading()
    if language is not None and not set(language.split("+")) <= installed:
        return output, ScriptReading(missing=language)
    if not installed or (language is None and unread <= MAX_UNREAD_SHARE):
        return output, ScriptReading()
    bundled_page = language is not None and unbundled_script(language) is None
    doubtful = [
        i
        for i, (text, score) in enumerate(zip(txts, scores, strict=False))
        if float(score) < REREAD_BELOW or (not bundled_page and _HAN.search(str(text)))
    ]
    if not doubtful:
        return output, ScriptReading(language=language)
    # RapidOCR's crop, of a copy of the box (it reorders the corners in place)
    crops = {i: crop(pixels, np.array(boxes[i], dtype=np.float32)) for i in doubtful}
    if language is None:
        found = _detect(crops, rotation, installed, reader)
        if found is None:
            return output, ScriptReading()
        language, rotation = found
    crops = {i: _upright(image, rotation) for i, image in crops.items()}
    words = list(getattr(output, "word_results", None) or ())
    lines = OcrLines(list(boxes), [str(t) for t in txts], [float(s) for s in scores], words)
    for i, image in crops.items():
        text, confidence = reader.read(image, language)
        if confidence < max(TEXT_SCORE, lines.scores[i]) or not text:
            continue
        lines.txts[i], lines.scores[i] = text, confidence
        if len(words) == len(lines.txts):
            quad = np.asarray(boxes[i], dtype=np.float32)
            lines.word_results[i] = spread_words(text, confidence, quad, rotation)
        lines.reread += 1
    return lines, ScriptReading(language, unbundled_script(language), lines.reread, None, rotation)


def _upright(image: np.ndarray, rotation: int) -> np.ndarray:
    return np.ascontiguousarray(np.rot90(image, 2)) if rotation == 180 else image


def _detect(
    crops: dict[int, np.ndarray], rotation: int, installed: frozenset[str], reader: Any
) -> tuple[str, int] | None:
    """The installed language (with its script's others) that reads the widest doubtful
    lines most confidently, if any reaches ``MIN_DETECTED_CONFIDENCE``, and the page's
    rotation (0 or 180) under which it read them so."""
    sample = sorted(crops.values(), key=lambda image: image.shape[1], reverse=True)
    candidates = sorted(code for code in installed if code in LANGUAGE_SCRIPTS)
    best: tuple[str, int] | None = None
    best_confidence = MIN_DETECTED_CONFIDENCE
    for turned in (rotation, 180 - rotation):
        images = [_upright(image, turned) for image in sample[:SAMPLE_LINES]]
        for code in candidates:
            readings = [reader.read(image, code) for image in images]
            length = sum(len(text) for text, _ in readings)
            confidence = sum(c * len(text) for text, c in readings) / max(length, 1)
            if confidence >= best_confidence:
                best, best_confidence = (code, turned), confidence
    if best is None:
        return None
    code, turned = best
    script = LANGUAGE_SCRIPTS[code]
    others = [other for other in candidates if other != code and LANGUAGE_SCRIPTS[other] == script]
    return "+".join([code, *others]), turned
