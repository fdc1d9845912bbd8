"""Emulator answers kept during a test, read after it against the cloud SDK's own response
models: an emulator must not answer what the SDK does not read, nor leave out what it does
(each provider's ``tests/providers/<cloud>/sdk_models.py`` says how its SDK reads one)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

#: ``check(action, answer)``: what in the answer disagrees with the SDK's model, one line each.
Check = Callable[[str, Any], list[str]]


class Recorder:
    """Every answer ``emulator`` gave (its ``handle``, wrapped), kept to be checked."""

    def __init__(
        self,
        emulator: Any,
        check: Check,
        body: Callable[[Any], Any] = lambda response: response.body,
        kept: Callable[[Any], bool] = lambda response: True,
    ) -> None:
        self.emulator = emulator
        self.check = check
        self.answers: list[tuple[str, Any]] = []
        handle = emulator.handle

        def recorded(action: str, request: Any) -> Any:
            response = handle(action, request)
            if kept(response):
                self.answers.append((action, body(response)))
            return response

        emulator.handle = recorded

    def problems(self) -> list[str]:
        return sorted({p for action, answer in self.answers for p in self.check(action, answer)})


def answers_checked(recorders: list[Recorder]) -> Iterator[None]:
    """The body of a provider's autouse fixture: the test runs, then each answer given
    during it is read against the SDK's model; the test fails on any disagreement."""
    for recorder in recorders:
        recorder.answers.clear()
    yield
    problems = [p for recorder in recorders for p in recorder.problems()]
    assert not problems, "the emulator answered what the SDK's models do not read:\n" + (
        "\n".join(problems)
    )
