"""Keep N processes busy for SECONDS, then stop: a loaded machine for the test suite.

    python scripts/busy.py 4 600      # four busy loops for ten minutes, then exit 0

Each child spins on the CPU and exits by itself at the deadline (no orphan outlives it);
SIGTERM or Ctrl-C stops them all at once. ``pytest --busy 4`` starts this for the run.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
import time

#: At most this long, whatever is asked: the helper must stop by itself.
LONGEST = 6 * 3600.0
USAGE = "usage: busy.py N SECONDS (1 <= N <= 64, 0 < SECONDS <= 21600)"


def spin(deadline: float) -> None:
    """Burn CPU until ``deadline`` (monotonic seconds)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    count = 0
    while time.monotonic() < deadline:
        for _ in range(10_000):
            count += 1


def main(argv: list[str]) -> int:
    try:
        workers, seconds = int(argv[0]), float(argv[1])
    except (IndexError, ValueError):
        print(USAGE, file=sys.stderr)
        return 2
    if not (1 <= workers <= 64 and 0 < seconds <= LONGEST) or len(argv) != 2:
        print(USAGE, file=sys.stderr)
        return 2
    deadline = time.monotonic() + seconds
    children = [
        multiprocessing.Process(target=spin, args=(deadline,), daemon=True) for _ in range(workers)
    ]
    for child in children:
        child.start()

    def stop(number: int, frame: object) -> None:
        for child in children:
            child.terminate()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for child in children:
        child.join(max(0.0, deadline - time.monotonic()) + 5)
        if child.is_alive():
            child.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
