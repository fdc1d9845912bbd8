"""What every provider's ``errors.translate`` shares: one policy and one-line error text.

A provider maps its cloud SDK's exceptions to :mod:`cloudbroker.errors` types in one function,
``translate(exc)``, which :func:`cloudbroker.plugins.retry.call` applies to whatever a call raised.

Policy for exceptions that are not the SDK's, the same for every provider
(:func:`sdk_exception`): ``translate`` maps what the SDK raises, and what the SDK lets
through from its transport (each provider names these); anything else is a bug in the
adapter and is raised unchanged, so the plugin manager reports it as a plugin error instead
of retrying it or passing it off as the cloud's answer.

Error text: SDK messages span lines (stack traces, a string-to-sign, an HTML error page),
arrive as bytes, or run to kilobytes; a cloudbroker error is one line meant for a person
(:func:`one_line`).
"""

from __future__ import annotations

from typing import TypeVar

E = TypeVar("E", bound=BaseException)
MAX_CHARS = 300


def sdk_exception(exc: Exception, *sdk: type[E]) -> E:
    """``exc`` when it is an instance of one of the ``sdk`` types; else ``exc`` is raised
    unchanged (the policy above)."""
    if isinstance(exc, sdk):
        return exc
    raise exc


def one_line(text: object, limit: int = MAX_CHARS) -> str:
    """``text`` with every run of whitespace (newlines too) made one space, bytes decoded as
    UTF-8, and cut to ``limit`` characters with ``...`` when longer; ``""`` for None."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    line = " ".join(str("" if text is None else text).split())
    return line if len(line) <= limit else f"{line[: limit - 3]}..."
