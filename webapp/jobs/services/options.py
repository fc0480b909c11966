"""What a submission asks for, and how it is refused: the values the other services share."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from django.conf import settings

from model.engines.base import HEADER_MODES
from model.textnorm import NormalizeError, parse_steps

TABLE_FORMATS = ("markdown", "html", "auto")


class Refusal(StrEnum):
    """Why a submission was refused: each API maps it to its HTTP answer."""

    BAD_PARAMETER = "bad_parameter"
    UNPROCESSABLE = "unprocessable"  # a document that cannot be read
    TOO_LARGE = "too_large"  # the file, the page count or the daily page quota
    OVER_BUDGET = "over_budget"  # the token budget cannot cover the pages
    RATE_LIMITED = "rate_limited"  # with ``retry_after`` seconds
    IDEMPOTENCY_MISMATCH = "idempotency_mismatch"
    STORAGE_FULL = "storage_full"  # no room to store the file; ``retry_after`` seconds
    STORAGE_FAILED = "storage_failed"  # the storage failed the write; ``retry_after`` seconds


class SubmissionError(ValueError):
    """A submission refused before anything was written. ``kind`` picks the HTTP answer."""

    def __init__(
        self,
        message: str,
        *,
        kind: Refusal = Refusal.BAD_PARAMETER,
        retry_after: int | None = None,
    ):
        super().__init__(message)
        self.kind = Refusal(kind)
        self.retry_after = retry_after


# Tesseract's language codes (three letters, a script or variant suffix), joined by "+".
_OCR_LANGUAGE = re.compile(r"^[a-z]{3}(?:_[a-z]+)?(?:\+[a-z]{3}(?:_[a-z]+)?){0,3}$")


@dataclass(frozen=True)
class JobOptions:
    # A request's own, else FOLIO_TABLE_FORMAT (``parse``); this default only fills jobs built
    # in code, and agrees with the server's.
    table_format: str = "auto"
    # Stop the job once its pages have used this many tokens (input + output).
    token_budget: int | None = None
    # Store figure crops beside the result and link them (engines that locate figures).
    figures: bool = False
    # Running heads and feet: "keep" or "drop" (jobs stored before this option dropped them).
    headers: str = "drop"
    # Canonical text normalisation steps (model.textnorm.parse_steps); "" for none.
    normalize: str = ""
    # Pages whose review score reaches this need review; None: the server's
    # FOLIO_REVIEW_THRESHOLD at the time the page finishes.
    review_threshold: float | None = None
    # Documents read from their structure: a presentation's speaker notes, reviewers' comments.
    speaker_notes: bool = False
    comments: bool = False
    # A scan's language for the lines the bundled OCR models cannot read, in Tesseract's
    # codes ("kor", "fas+ara"); None: the local engine finds it on the page.
    ocr_language: str | None = None

    @classmethod
    def parse(
        cls,
        *,
        table_format: str | None = None,
        token_budget: int | None = None,
        figures: bool = False,
        headers: str | None = None,
        normalize: str | bool | None = None,
        review_threshold: float | None = None,
        speaker_notes: bool = False,
        comments: bool = False,
        ocr_language: str | None = None,
    ) -> JobOptions:
        """A request's options; what it leaves out comes from the server's defaults
        (FOLIO_TABLE_FORMAT, FOLIO_HEADERS, FOLIO_NORMALIZE)."""
        table_format = (table_format or settings.FOLIO_TABLE_FORMAT).strip().lower()
        if table_format not in TABLE_FORMATS:
            raise SubmissionError(
                f"table_format {table_format!r} is not one of: {', '.join(TABLE_FORMATS)}"
            )
        headers = (headers or settings.FOLIO_HEADERS).strip().lower()
        if headers not in HEADER_MODES:
            raise SubmissionError(f"headers {headers!r} is not one of: {', '.join(HEADER_MODES)}")
        try:
            steps = parse_steps(settings.FOLIO_NORMALIZE if normalize is None else normalize)
        except NormalizeError as exc:
            raise SubmissionError(str(exc)) from exc
        if review_threshold is not None and not 0.0 < review_threshold <= 1.0:
            raise SubmissionError(
                f"review_threshold must be above 0 and at most 1, not {review_threshold}"
            )
        ocr_language = (ocr_language or "").strip().lower() or None
        if ocr_language is not None and not _OCR_LANGUAGE.match(ocr_language):
            raise SubmissionError(
                f"ocr_language {ocr_language!r} is not a list of Tesseract language codes "
                "joined by '+' (e.g. 'kor' or 'fas+ara'; README, 'OCR languages')"
            )
        if token_budget is not None and token_budget < 1:
            raise SubmissionError(f"the token budget must be a positive number, not {token_budget}")
        return cls(
            table_format=table_format,
            token_budget=token_budget,
            figures=figures,
            headers=headers,
            normalize=steps,
            review_threshold=review_threshold,
            speaker_notes=bool(speaker_notes),
            comments=bool(comments),
            ocr_language=ocr_language,
        )

    @classmethod
    def from_dict(cls, options: dict) -> JobOptions:
        return cls(**{name: options[name] for name in cls.__dataclass_fields__ if name in options})

    def output_options(self) -> dict:
        """The options that change what an engine writes: part of the result cache key."""
        options: dict = {
            "table_format": self.table_format,
            "figures": self.figures,
            "headers": self.headers,
            "normalize": self.normalize,
        }
        # Only when asked for: the cache keys of every other job stay as they were.
        if self.speaker_notes:
            options["speaker_notes"] = True
        if self.comments:
            options["comments"] = True
        if self.ocr_language:
            options["ocr_language"] = self.ocr_language
        return options

    def as_dict(self) -> dict:
        return {
            **self.output_options(),
            "token_budget": self.token_budget,
            "review_threshold": self.review_threshold,
        }

    def review_threshold_or_default(self) -> float:
        if self.review_threshold is not None:
            return self.review_threshold
        return settings.FOLIO_REVIEW_THRESHOLD


@dataclass(frozen=True)
class CachePolicy:
    use: bool = True
    max_age: timedelta | None = None  # None: any age
