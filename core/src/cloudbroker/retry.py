"""Retries with capped exponential backoff and full jitter, for every provider's API calls.

Providers translate their SDK's exceptions into :mod:`cloudbroker.errors` types first; this
module decides from the *typed* error whether to try again, so the policy is the same for
every cloud: throttling and transient unavailability are retried, everything else is not.
Each call has a deadline (:data:`DEADLINE`, 30 s by default) across all its attempts: no retry
starts once it would end past the deadline, so a silent endpoint costs one attempt's own
timeout, not five, and the error says how many attempts were made in how long.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from cloudbroker.errors import CloudBrokerError, ProviderUnavailable, ThrottledError

T = TypeVar("T")

RETRYABLE = (ThrottledError, ProviderUnavailable)
DEADLINE = 30.0  # seconds per call, across every attempt


def backoff(attempt: int, *, base: float = 0.2, cap: float = 5.0) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): full jitter up to base x 2^n."""
    return random.uniform(0, min(cap, base * 2 ** (attempt - 1)))


def call(
    fn: Callable[[], T],
    *,
    translate: Callable[[Exception], CloudBrokerError],
    attempts: int = 5,
    base: float = 0.2,
    cap: float = 5.0,
    deadline: float = DEADLINE,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Run ``fn``; on a retryable (translated) error wait and try again, up to ``attempts``
    and while the next try would start within ``deadline`` seconds of the first.

    ``translate`` maps an SDK exception to a typed error; typed errors raised by ``fn``
    itself are used as they are. The last error is raised, typed; when it was retryable, its
    message says how many attempts were made in how long.
    """
    started = clock()
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except CloudBrokerError as exc:
            error = exc
        except Exception as exc:
            error = translate(exc)
            error.__cause__ = None
        if not isinstance(error, RETRYABLE):
            raise error
        wait = backoff(attempt, base=base, cap=cap)
        elapsed = clock() - started
        if attempt == attempts or elapsed + wait >= deadline:
            error.args = (
                f"{error.args[0]} (gave up after {attempt} attempt(s) in {elapsed:.1f} s)",
            )
            raise error
        sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover
