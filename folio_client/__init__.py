"""Folio's Python SDK and command-line client: the public HTTP API, nothing else.

It imports no part of the service (no Django), so ``pip install`` of the project is enough on
a machine that only talks to a remote Folio server."""

from __future__ import annotations

from folio_client.aio import AsyncClient
from folio_client.client import Client
from folio_client.config import Settings, resolve
from folio_client.errors import (
    ApiError,
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ConflictError,
    ConnectionFailed,
    FolioError,
    GoneError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitedError,
    ServerError,
    UnavailableError,
    UnprocessableError,
    WaitTimeout,
)
from folio_client.models import (
    DocumentInfo,
    Engine,
    Health,
    Job,
    JobList,
    JobResult,
    PageList,
    PageResult,
    PageStatus,
    Progress,
    Usage,
    UsageTotals,
)
from folio_client.retry import RetryPolicy

__all__ = [
    "ApiError",
    "AsyncClient",
    "AuthenticationError",
    "BadRequestError",
    "Client",
    "ConfigError",
    "ConflictError",
    "ConnectionFailed",
    "DocumentInfo",
    "Engine",
    "FolioError",
    "GoneError",
    "Health",
    "Job",
    "JobList",
    "JobResult",
    "PageList",
    "NotFoundError",
    "PageResult",
    "PageStatus",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "Progress",
    "RateLimitedError",
    "RetryPolicy",
    "ServerError",
    "Settings",
    "UnavailableError",
    "UnprocessableError",
    "Usage",
    "UsageTotals",
    "WaitTimeout",
    "resolve",
]
