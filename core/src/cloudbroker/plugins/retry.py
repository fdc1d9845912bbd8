"""Retries with capped exponential backoff and full jitter, for every provider's API calls.

Providers translate their SDK's exceptions into :mod:`cloudbroker.errors` types first; this
module decides from the *typed* error whether to try again, so the policy is the same for
every cloud: throttling and transient unavailability are retried, everything else is not.
Each call has a deadline (:data:`DEADLINE`, 30 s by default) across all its attempts: no retry
starts once it would end past the deadline, so a silent endpoint costs one attempt's own
timeout, not five, and the error says how many attempts were made in how long.

Every attempt is logged at info to the provider's logger (``cloudbroker.plugins.provider.<name>``):
the action, the region, how long it took and the request id the cloud gave it, as text and
as the record's ``action``, ``region``, ``seconds``, ``request_id`` and ``attempt``
attributes (``cloudbroker -v`` shows them). Never a parameter or an answer: they can hold
secrets.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from cloudbroker.errors import CloudBrokerError, ProviderUnavailable, ThrottledError

T = TypeVar("T")

RETRYABLE = (ThrottledError, ProviderUnavailable)
DEADLINE = 30.0  # seconds per call, across every attempt
PROVIDERS_LOG = logging.getLogger("cloudbroker.plugins.provider")


def backoff(attempt: int, *, base: float = 0.2, cap: float = 5.0) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): full jitter up to base x 2^n."""
    return random.uniform(0, min(cap, base * 2 ** (attempt - 1)))


def request_id(answer: object) -> str | None:
    """The request id a cloud gave an answer or an error, where it is: AWS
    ``ResponseMetadata.RequestId`` (also in a botocore error's ``response``), Aliyun and
    Tencent ``RequestId``, the SDK errors' ``request_id`` / ``requestId``; else None."""
    if isinstance(answer, Mapping):
        meta = answer.get("ResponseMetadata")
        found = meta.get("RequestId") if isinstance(meta, Mapping) else answer.get("RequestId")
        return str(found) if found else None
    for name in ("request_id", "requestId"):
        found = getattr(answer, name, None)
        if isinstance(found, str) and found:
            return found
    response = getattr(answer, "response", None)  # botocore's ClientError
    data = getattr(answer, "data", None)  # Tea's exception (Aliyun)
    return request_id(response) if isinstance(response, Mapping) else request_id(data or {})


def _log_attempt(
    log: logging.Logger,
    action: str,
    region: str | None,
    seconds: float,
    attempt: int,
    answer: object,
    outcome: str = "",
) -> None:
    rid = request_id(answer)
    where = f" in {region}" if region else ""
    log.info(
        "%s%s: %.2f s%s%s",
        action,
        where,
        seconds,
        f", request {rid}" if rid else "",
        f"; {outcome}" if outcome else "",
        extra={
            "action": action,
            "region": region,
            "seconds": round(seconds, 3),
            "request_id": rid,
            "attempt": attempt,
        },
    )


def call(
    fn: Callable[[], T],
    *,
    translate: Callable[[Exception], CloudBrokerError],
    action: str = "call",
    region: str | None = None,
    log: logging.Logger = PROVIDERS_LOG,
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
    message says how many attempts were made in how long. Each attempt is logged to ``log``
    as ``action`` in ``region`` (see the module's docstring).
    """
    started = clock()
    for attempt in range(1, attempts + 1):
        begun = clock()
        error: CloudBrokerError
        raw: Exception
        try:
            answer = fn()
        except CloudBrokerError as exc:
            error, raw = exc, exc
        except Exception as exc:
            error, raw = translate(exc), exc
            error.__cause__ = None
        else:
            _log_attempt(log, action, region, clock() - begun, attempt, answer)
            return answer
        took, why = clock() - begun, f"{type(error).__name__}: {error}"
        if not isinstance(error, RETRYABLE):
            _log_attempt(log, action, region, took, attempt, raw, f"failed: {why}")
            raise error
        wait = backoff(attempt, base=base, cap=cap)
        elapsed = clock() - started
        if attempt == attempts or elapsed + wait >= deadline:
            _log_attempt(log, action, region, took, attempt, raw, f"failed, giving up: {why}")
            error.args = (
                f"{error.args[0]} (gave up after {attempt} attempt(s) in {elapsed:.1f} s)",
            )
            raise error
        _log_attempt(log, action, region, took, attempt, raw, f"{why}; retry in {wait:.1f} s")
        sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover
