"""Typed results: what the server answers, as frozen dataclasses.

Parsing keeps going when the server adds fields (``raw`` keeps the whole answer) and accepts
missing optional ones, so a newer server does not break an older client."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

FINAL_STATUSES = frozenset({"succeeded", "partially_failed", "failed", "cancelled"})


def _time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


@dataclass(frozen=True)
class Progress:
    total: int
    done: int
    failed: int
    cancelled: int
    percent: float
    elapsed_seconds: float
    eta_seconds: float | None

    @property
    def finished(self) -> int:
        """Pages that will not change any more (done, failed or cancelled)."""
        return self.done + self.failed + self.cancelled

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Progress:
        return cls(
            total=int(data.get("total") or 0),
            done=int(data.get("done") or 0),
            failed=int(data.get("failed") or 0),
            cancelled=int(data.get("cancelled") or 0),
            percent=float(data.get("percent") or 0.0),
            elapsed_seconds=float(data.get("elapsed_seconds") or 0.0),
            eta_seconds=_float(data.get("eta_seconds")),
        )


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    tokens: int = 0
    engine_seconds: float = 0.0

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Usage:
        data = data or {}
        input_tokens = int(data.get("input_tokens") or 0)
        output_tokens = int(data.get("output_tokens") or 0)
        return cls(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            tokens=int(data.get("tokens") or input_tokens + output_tokens),
            engine_seconds=float(data.get("engine_seconds") or 0.0),
        )


@dataclass(frozen=True)
class DocumentInfo:
    id: str
    name: str
    mime_type: str
    page_count: int
    size: int
    sha256: str

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> DocumentInfo:
        data = data or {}
        return cls(
            id=str(data.get("id") or ""),
            name=str(data.get("name") or ""),
            mime_type=str(data.get("mime_type") or ""),
            page_count=int(data.get("page_count") or 0),
            size=int(data.get("size") or 0),
            sha256=str(data.get("sha256") or ""),
        )


@dataclass(frozen=True)
class PageStatus:
    number: int
    status: str
    attempts: int = 0
    method: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    render_seconds: float | None = None
    engine_seconds: float | None = None
    queue_wait_seconds: float | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str = ""
    # The engine whose reading the page holds; for an ``auto`` job, whether and why the page
    # was read again by a VLM engine, and which reading was kept (None for other jobs).
    engine: str = ""
    escalation: dict[str, Any] | None = None

    @property
    def escalated(self) -> bool:
        return bool(self.escalation and self.escalation.get("escalated"))

    @classmethod
    def _fields(cls, data: dict[str, Any]) -> dict[str, Any]:
        escalation = data.get("escalation")
        return {
            "number": int(data["number"]),
            "status": str(data.get("status") or ""),
            "attempts": int(data.get("attempts") or 0),
            "method": str(data.get("method") or ""),
            "input_tokens": data.get("input_tokens"),
            "output_tokens": data.get("output_tokens"),
            "render_seconds": _float(data.get("render_seconds")),
            "engine_seconds": _float(data.get("engine_seconds")),
            "queue_wait_seconds": _float(data.get("queue_wait_seconds")),
            "started_at": _time(data.get("started_at")),
            "finished_at": _time(data.get("finished_at")),
            "error": str(data.get("error") or ""),
            "engine": str(data.get("engine") or ""),
            "escalation": dict(escalation) if isinstance(escalation, dict) else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PageStatus:
        return cls(**cls._fields(data))


@dataclass(frozen=True)
class PageResult(PageStatus):
    markdown: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PageResult:
        return cls(**cls._fields(data), markdown=str(data.get("markdown") or ""))


@dataclass(frozen=True)
class Job:
    id: str
    status: str
    engine: str
    page_selection: str
    document: DocumentInfo
    progress: Progress
    usage: Usage
    created_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    expires_at: datetime | None
    error: str
    links: dict[str, str]
    # Every page's details: only in a document asked for with them (``Client.job(id,
    # pages=True)``); ``page_summary`` counts the pages by state in every one.
    pages: list[PageStatus] | None = None
    page_summary: dict[str, int] = field(default_factory=dict)
    webhook_url: str = ""
    # The engine this job waits for while no live worker serves it ("" otherwise); the
    # server fails the job if none comes back in time (``raw["waiting_for"]["fails_at"]``).
    waiting_for: str = ""
    # An ``auto`` job's figures: pages_escalated, share_escalated, vlm_seconds,
    # pages_left_local (and a note when some could not be sent on); None for other jobs.
    auto: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def status_line(self) -> str:
        """The status, or what the job waits for when no worker serves its engine."""
        if self.waiting_for and not self.is_final:
            return f"waiting for a {self.waiting_for} worker"
        return self.status

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    def failure_reason(self) -> str:
        """Why the job did not succeed, in the server's words (its error, else its pages')."""
        if self.succeeded:
            return ""
        reasons = [self.error] if self.error else []
        for page in self.pages or []:
            if page.status == "failed" and page.error:
                reasons.append(f"page {page.number}: {page.error}")
        return "; ".join(reasons) or self.status

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Job:
        pages = data.get("pages")
        return cls(
            id=str(data["id"]),
            status=str(data["status"]),
            engine=str(data.get("engine") or ""),
            page_selection=str(data.get("page_selection") or ""),
            document=DocumentInfo.from_json(data.get("document")),
            progress=Progress.from_json(data.get("progress") or {}),
            usage=Usage.from_json(data.get("usage")),
            created_at=_time(data.get("created_at")),
            started_at=_time(data.get("started_at")),
            finished_at=_time(data.get("finished_at")),
            expires_at=_time(data.get("expires_at")),
            error=str(data.get("error") or ""),
            links=dict(data.get("links") or {}),
            pages=[PageStatus.from_json(p) for p in pages] if isinstance(pages, list) else None,
            page_summary={
                str(k): int(v) for k, v in (data.get("page_summary") or {}).items() if v is not None
            },
            webhook_url=str(data.get("webhook_url") or ""),
            waiting_for=str((data.get("waiting_for") or {}).get("engine") or ""),
            auto=dict(data["auto"]) if isinstance(data.get("auto"), dict) else None,
            raw=data,
        )


@dataclass(frozen=True)
class JobResult:
    """A finished job's pages with their Markdown, tokens and timings."""

    id: str
    status: str
    pages: list[PageResult]
    usage: Usage
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def markdown(self) -> str:
        return "\n\n".join(page.markdown.strip() for page in self.pages if page.markdown)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobResult:
        return cls(
            id=str(data.get("id") or ""),
            status=str(data.get("status") or ""),
            pages=[PageResult.from_json(page) for page in data.get("pages") or []],
            usage=Usage.from_json(data.get("usage")),
            raw=data,
        )


def _listing(data: dict[str, Any]) -> dict[str, Any]:
    """The fields every list of the API answers with, beside its results."""
    return {
        "count": int(data.get("count") or 0),
        "page": int(data.get("page") or 1),
        "page_size": int(data.get("page_size") or 0),
        "next": data.get("next"),
        "previous": data.get("previous"),
    }


@dataclass(frozen=True)
class JobList:
    """One page of ``GET /v1/jobs``."""

    count: int
    page: int
    page_size: int
    next: str | None
    previous: str | None
    results: list[Job]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobList:
        return cls(
            **_listing(data), results=[Job.from_json(job) for job in data.get("results") or []]
        )


@dataclass(frozen=True)
class PageList:
    """One page of ``GET /v1/jobs/{id}/pages``."""

    count: int
    page: int
    page_size: int
    next: str | None
    previous: str | None
    results: list[PageStatus]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PageList:
        return cls(
            **_listing(data),
            results=[PageStatus.from_json(page) for page in data.get("results") or []],
        )


@dataclass(frozen=True)
class Engine:
    """An engine the server runs now (``GET /v1/models``)."""

    id: str
    owned_by: str = ""


@dataclass(frozen=True)
class Health:
    live: bool
    ready: bool
    checks: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class UsageTotals:
    """Usage summed over a set of jobs."""

    jobs: int = 0
    pages: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tokens: int = 0
    engine_seconds: float = 0.0

    def add(self, job: Job) -> UsageTotals:
        return UsageTotals(
            jobs=self.jobs + 1,
            pages=self.pages + job.progress.done,
            input_tokens=self.input_tokens + job.usage.input_tokens,
            output_tokens=self.output_tokens + job.usage.output_tokens,
            tokens=self.tokens + job.usage.tokens,
            engine_seconds=self.engine_seconds + job.usage.engine_seconds,
        )
