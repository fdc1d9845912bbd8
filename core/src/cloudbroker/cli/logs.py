"""Where the library's log records go when the CLI runs: stderr, one line each.

The library logs to ``cloudbroker`` (providers to ``cloudbroker.plugins.provider.<name>``) and never
configures logging; the CLI does it here, for the length of one run, and puts everything back
afterwards, so that an application running :func:`cloudbroker.cli.main` in-process (as the
tests do) keeps its own logging. Levels: warnings by default, ``--quiet`` errors only, ``-v``
the cloud calls made (action, region, duration, request id), ``-vv`` debugging detail. Other
libraries' loggers (the cloud SDKs') stay at warning whatever the verbosity: their debug
output can carry request headers.

Each record is one line: control characters escaped, an exception as its type and first
line (never a traceback), and a warning shown once per run however often it is logged (a
plugin answering two hooks from one catalog warns twice about the same row). With
``--log-format json`` every line, the final ``error:`` included, is one JSON object.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from enum import StrEnum

LIBRARY = "cloudbroker"
PROVIDERS = "cloudbroker.plugins.provider."
#: Record attributes a JSON line carries when a record has them (``extra=`` of the call).
FIELDS = ("provider", "action", "region", "seconds", "request_id", "attempt", "placement", "kind")
LEVELS = {-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO}


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


def one_line(text: str) -> str:
    """``text`` with control characters (a newline, an escape sequence) shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _provider(record: logging.LogRecord) -> str | None:
    if record.name.startswith(PROVIDERS):
        return record.name[len(PROVIDERS) :]
    return getattr(record, "provider", None)


def _message(record: logging.LogRecord) -> str:
    """The record's message, with its exception as ``Type: first line`` (no traceback)."""
    message = record.getMessage()
    if record.exc_info and record.exc_info[1] is not None:
        exc = record.exc_info[1]
        first = str(exc).splitlines()[0] if str(exc) else ""
        message += f": {type(exc).__name__}" + (f": {first}" if first else "")
    return one_line(message)


class TextFormatter(logging.Formatter):
    """``warning: aws: message``: the level, the provider when a provider logged it."""

    def format(self, record: logging.LogRecord) -> str:
        provider = _provider(record)
        message = _message(record)
        if provider and not message.startswith(f"{provider}:"):
            message = f"{provider}: {message}"
        return f"{record.levelname.lower()}: {message}"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, and the call's fields."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": _message(record),
        }
        provider = _provider(record)
        if provider:
            line["provider"] = provider
        line.update(
            {key: getattr(record, key) for key in FIELDS if getattr(record, key, None) is not None}
        )
        return json.dumps(line, ensure_ascii=False, default=str)


class _Once(logging.Filter):
    """Lets each distinct warning (or error) through once; every lower record passes."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[int, str, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.levelno, record.name, record.getMessage())
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


class _StderrHandler(logging.StreamHandler):
    """Writes to the ``sys.stderr`` of the moment, so in-process runs capture it too."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


class _Run:
    """The handler of one CLI run, and the levels it replaced (restored by :func:`finish`)."""

    def __init__(self) -> None:
        self.handler = _StderrHandler()
        self.handler.addFilter(_Once())
        self.handler.setFormatter(TextFormatter())
        self.format = LogFormat.TEXT
        root, library = logging.getLogger(), logging.getLogger(LIBRARY)
        self.saved = [(root, root.level), (library, library.level)]


_run: _Run | None = None


def start() -> None:
    """Warnings (one line each, once) on stderr until :func:`finish`; a second call is a no-op."""
    global _run
    if _run is not None:
        return
    _run = _Run()
    logging.getLogger().addHandler(_run.handler)
    configure(0, LogFormat.TEXT)


def configure(verbosity: int, log_format: LogFormat) -> None:
    """-1 (``--quiet``): errors only; 0: warnings; 1 (``-v``): cloud calls; 2+: debugging."""
    if _run is None:
        start()
    assert _run is not None
    _run.format = log_format
    _run.handler.setFormatter(JsonFormatter() if log_format is LogFormat.JSON else TextFormatter())
    level = LEVELS.get(verbosity, logging.DEBUG)
    logging.getLogger().setLevel(max(level, logging.WARNING) if verbosity >= 0 else level)
    logging.getLogger(LIBRARY).setLevel(level)


def finish() -> None:
    """Remove the run's handler and put back the levels it changed."""
    global _run
    if _run is None:
        return
    logging.getLogger().removeHandler(_run.handler)
    for logger, level in _run.saved:
        logger.setLevel(level)
    _run = None


def error_line(message: str, code: int) -> str:
    """The final ``error: ...`` line of a failed run, in the run's log format."""
    line = one_line(message)
    if _run is not None and _run.format is LogFormat.JSON:
        when = datetime.now(UTC).isoformat(timespec="milliseconds")
        return json.dumps(
            {"time": when, "level": "error", "message": line, "exit_code": code},
            ensure_ascii=False,
        )
    return f"error: {line}"
