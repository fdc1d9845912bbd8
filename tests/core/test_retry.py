"""One retry policy for every cloud: what is retried, and for how long at most."""

from __future__ import annotations

import pytest

from cloudbroker.errors import AuthError, ProviderUnavailable, ThrottledError
from cloudbroker.plugins import retry


class SilentEndpoint:
    """Each attempt times out after ``seconds`` on a clock that only moves when used."""

    def __init__(self, seconds: float, error=ProviderUnavailable) -> None:
        self.now, self.seconds, self.error, self.attempts = 0.0, seconds, error, 0

    def __call__(self):
        self.attempts += 1
        self.now += self.seconds
        raise self.error("read timed out")

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def run(endpoint: SilentEndpoint, **options):
    return retry.call(
        endpoint,
        translate=lambda exc: ProviderUnavailable(str(exc)),
        sleep=endpoint.sleep,
        clock=lambda: endpoint.now,
        **options,
    )


def test_a_silent_endpoint_costs_one_attempt_not_five():
    endpoint = SilentEndpoint(seconds=30)
    with pytest.raises(ProviderUnavailable, match=r"gave up after 1 attempt\(s\) in 30.0 s"):
        run(endpoint)
    assert endpoint.attempts == 1 and endpoint.now == 30


@pytest.mark.parametrize("error", [ProviderUnavailable, ThrottledError])
def test_retries_stop_at_the_calls_deadline(error):
    endpoint = SilentEndpoint(seconds=4, error=error)
    with pytest.raises(error, match="gave up after"):
        run(endpoint, attempts=100, cap=0.5)
    # no retry starts past the 30 s deadline; the one under way finishes on its own timeout
    assert 30 - 4 - 0.5 <= endpoint.now <= 30 + 4
    assert endpoint.attempts < 10


def test_a_shorter_deadline_is_honoured_and_errors_that_cannot_improve_are_not_retried():
    endpoint = SilentEndpoint(seconds=1)
    with pytest.raises(ProviderUnavailable):
        run(endpoint, attempts=100, deadline=3)
    assert endpoint.now <= 3 + 1
    refused = SilentEndpoint(seconds=1, error=AuthError)
    with pytest.raises(AuthError) as caught:
        run(refused)
    assert refused.attempts == 1 and "gave up" not in str(caught.value)


def test_a_transient_failure_is_retried_to_success():
    answers = iter([ThrottledError("slow down"), "ok"])

    def flaky():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert retry.call(flaky, translate=lambda exc: exc, sleep=lambda s: None) == "ok"
