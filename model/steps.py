"""The steps after an engine's raw reading, each isolated: a step that raises leaves the page
with the reading from before it, instead of failing the page.

A step is a function marked ``@page_step(name, fallback=...)`` where it is defined. When it
raises, its fallback's answer (given the same arguments) is used instead: the Markdown it was
given, no formulas found, no layout. The failure is logged once with its traceback, and
recorded for the page being read (``steps_recorded``), whose quality report then names the
step (``failed_steps``) and flags the page for review.

The mark sits on the function itself, so every caller goes through it, wherever the function
moves. What a step must never swallow (a worker's time limit, raised inside whatever runs
when it fires) is registered with ``let_through``.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, cast

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class StepFailure:
    """A step that raised on the page: its name and the exception, in one line."""

    step: str
    error: str

    def as_dict(self) -> dict[str, str]:
        return {"step": self.step, "error": self.error}


@dataclass
class Step:
    """One registered step function. ``function`` is looked up on every call, so a test can
    put a failing one in its place (``tests/test_step_isolation.py``)."""

    name: str
    qualname: str
    function: Callable[..., Any]
    fallback: Callable[..., Any]
    calls: int = 0


# Every step function by its module and name, in the order they were defined.
STEPS: dict[str, Step] = {}

_failures: contextvars.ContextVar[list[StepFailure] | None] = contextvars.ContextVar(
    "folio_step_failures", default=None
)
_let_through: tuple[type[BaseException], ...] = ()


def page_step(
    name: str, *, fallback: Callable[..., object]
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Mark a function as the page step ``name`` (several functions may make one step: the
    formula rebuilding finds, then places). ``fallback`` takes the same arguments and
    answers what the page had before the step."""

    def mark(function: Callable[P, R]) -> Callable[P, R]:
        qualname = f"{function.__module__}.{function.__qualname__}"
        step = Step(name, qualname, function, fallback)
        STEPS[qualname] = step
        signature = inspect.signature(function)

        @functools.wraps(function)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            step.calls += 1
            try:
                return cast(R, step.function(*args, **kwargs))
            except _let_through:
                raise
            except Exception as exc:
                step_failed(name, exc, where=qualname)
                # The arguments as the signature names them: the Markdown given by keyword
                # is still the fallback's first argument.
                bound = signature.bind(*args, **kwargs)
                return cast(R, step.fallback(*bound.args, **bound.kwargs))

        return run

    return mark


def step_failed(name: str, exc: BaseException, *, where: str = "") -> None:
    """Record that step ``name`` raised on the page being read, and log it with its
    traceback, once: the page goes on, and the same failure of the same step again on this
    page (normalisation fails on the Markdown and on each block alike) is neither logged nor
    recorded twice."""
    failure = StepFailure(name, f"{type(exc).__name__}: {exc}"[:300])
    failures = _failures.get()
    if failures is not None and failure in failures:
        return
    logger.error("page step %r failed%s; the page keeps its reading from before it",
                 name, f" ({where})" if where else "", exc_info=exc)  # fmt: skip
    if failures is not None:
        failures.append(failure)


@contextmanager
def steps_recorded() -> Iterator[list[StepFailure]]:
    """The steps that fail within the block (on this thread), in order."""
    failures: list[StepFailure] = []
    token = _failures.set(failures)
    try:
        yield failures
    finally:
        _failures.reset(token)


def let_through(*kinds: type[BaseException]) -> None:
    """Exceptions no step may swallow: they are not a step's bug (a worker's soft time limit
    fires inside whatever code is running)."""
    global _let_through
    _let_through = tuple(dict.fromkeys((*_let_through, *kinds)))


# --- fallbacks --------------------------------------------------------------------------------


def unchanged(first: R, *args: object, **kwargs: object) -> R:
    """The step's first argument as it came: the Markdown (or reading) before the step."""
    return first


def unchanged_with_no_notes(first: R, *args: object, **kwargs: object) -> tuple[R, list[str]]:
    return first, []


def nothing(*args: object, **kwargs: object) -> None:
    return None


def no_findings(*args: object, **kwargs: object) -> list[Any]:
    return []


def no_findings_no_notes(*args: object, **kwargs: object) -> tuple[list[Any], list[str]]:
    return [], []


def no_fixes(*args: object, **kwargs: object) -> dict[str, str]:
    return {}
