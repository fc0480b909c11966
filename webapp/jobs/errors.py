"""The API answer to a refused submission, shared by every API that submits jobs (the jobs
API, the Reader endpoint and its OpenAI-compatible sibling)."""

from __future__ import annotations

from collections.abc import Callable

from rest_framework.exceptions import APIException, Throttled

from webapp.core.errors import ApiError, bad_parameter, too_large, unprocessable
from webapp.jobs.services import Refusal, SubmissionError


def _over_budget(message: str) -> ApiError:
    return ApiError(message, http_status=409, name="BudgetExceededError", detail_code=40904)


class _StorageError(ApiError):
    """A storage refusal, with ``Retry-After`` (DRF's handler sends ``wait`` as the header)."""

    def __init__(self, message: str, *, wait: int, **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.wait = wait


def _storage_answer(exc: SubmissionError) -> APIException:
    wait = exc.retry_after or 60
    if exc.kind is Refusal.STORAGE_FULL:
        return _StorageError(
            str(exc), wait=wait, http_status=507, name="InsufficientStorageError",
            detail_code=50701,
        )  # fmt: skip
    return _StorageError(
        str(exc), wait=wait, http_status=503, name="ServiceUnavailableError", detail_code=50303
    )


_ANSWERS: dict[Refusal, Callable[[str], APIException]] = {
    Refusal.BAD_PARAMETER: bad_parameter,
    Refusal.UNPROCESSABLE: unprocessable,
    Refusal.TOO_LARGE: too_large,
    Refusal.IDEMPOTENCY_MISMATCH: unprocessable,
    Refusal.OVER_BUDGET: _over_budget,
}


def submission_api_error(exc: SubmissionError) -> APIException:
    """A rate limit or quota is a 429 with ``Retry-After`` (DRF's Throttled sets the header);
    a full storage a 507, a failing one a 503, both with ``Retry-After``; the rest take the
    answer their kind names."""
    if exc.kind is Refusal.RATE_LIMITED:
        return Throttled(wait=exc.retry_after, detail=str(exc))
    if exc.kind in (Refusal.STORAGE_FULL, Refusal.STORAGE_FAILED):
        return _storage_answer(exc)
    return _ANSWERS[exc.kind](str(exc))
