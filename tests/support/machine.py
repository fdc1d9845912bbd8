"""How much slower this machine is right now than an idle one, for the few wall-clock bounds
left in the tests (most assert order and outcome instead).

:func:`factor` times a fixed pure-Python workload once per process and divides by
:data:`REFERENCE_SECONDS`, its time on an idle core; :func:`within` scales a bound by it and
by :data:`GENEROUS`. A bound so derived still fails a wait that never ends, or one that took
the sequential time where the test proves concurrency, but not a busy machine.
"""

from __future__ import annotations

import functools
import statistics
import time

#: The workload's time on one idle core, estimated (unsourced: the shared 2-core development
#: machine was never idle while this was written; it measured 0.27-0.62 s at load 14, about
#: seven runnable processes per core). Set low, so the factor errs high.
REFERENCE_SECONDS = 0.03
#: Headroom on top of the factor: a busy machine's load changes within a run.
GENEROUS = 3.0


def _workload() -> float:
    started = time.perf_counter()
    total = 0
    for i in range(300_000):
        total += i * i % 7
    return time.perf_counter() - started


@functools.cache
def factor() -> float:
    """This machine's slowness now: at least 1 (an idle machine)."""
    return max(1.0, statistics.median(_workload() for _ in range(5)) / REFERENCE_SECONDS)


def within(seconds: float) -> float:
    """``seconds`` on an idle machine, as a bound on this one now."""
    return seconds * factor() * GENEROUS
