"""Where a sandbox lives and the environment that points cloudbroker at it.

Everything is under one directory, new or empty when ``sandbox up`` takes it:
``.cloudbroker-sandbox`` (:data:`MARKER`, written first: whether ``up`` made the directory),
``sandbox.json`` (what runs where, with the sandbox's own fake keys; mode 0600),
``config.toml``, ``state.sqlite3``, ``data/`` (catalogs written by ``catalog refresh``),
``instances/`` (each instance's working dir and log), ``image/`` (the tools of the image
profile the instances see), ``pids/`` and ``supervisor.log``
(:data:`FILES`, :data:`FOLDERS`: all that ``sandbox down`` ever removes). The environment
sets every path cloudbroker would otherwise take from the user's home, so nothing the sandbox
does touches the user's config, catalogs or state.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from pathlib import Path
from typing import Any

from cloudbroker.errors import UsageError

DIR_ENV = "CLOUDBROKER_SANDBOX"
#: The image profile the sandbox's instances stand in for (``sandbox up --image``): shown only.
IMAGE_ENV = "CLOUDBROKER_SANDBOX_IMAGE"
#: Written by ``sandbox up`` before anything else; ``sandbox down`` touches no directory without.
MARKER = ".cloudbroker-sandbox"
#: The files a sandbox makes (the state store with SQLite's companions) and its folders.
FILES = (
    "sandbox.json",
    "sandbox.tmp",
    "config.toml",
    "state.sqlite3",
    "state.sqlite3-wal",
    "state.sqlite3-shm",
    "state.sqlite3-journal",
    "supervisor.log",
    "aws-config",
    "aws-credentials",
)
FOLDERS = ("data", "instances", "pids", "gpu", "image")
#: What a record must hold to be a sandbox's (a stray ``sandbox.json`` is not).
INFO_KEYS = {"pid", "started", "time_factor", "clouds"}
CLOUD_KEYS = {"api", "storage", "key", "secret", "notice_seconds"}
#: Variables from the user's shell that would mix a real account into the sandbox.
UNSET = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "CLOUDBROKER_DISABLE_PLUGINS")


def default_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"cloudbroker-sandbox-{os.getuid()}"


def sandbox_dir(explicit: str | Path | None = None) -> Path:
    """``explicit``, else ``$CLOUDBROKER_SANDBOX``, else a per-user directory in the temp dir.

    An empty ``explicit`` is refused, never read as the current directory (an empty
    ``$CLOUDBROKER_SANDBOX`` is unset).
    """
    if explicit is not None and not str(explicit).strip():
        raise UsageError("the sandbox directory must not be empty")
    chosen = explicit or os.environ.get(DIR_ENV, "").strip() or default_dir()
    return Path(chosen).expanduser().resolve()


def info_path(directory: Path) -> Path:
    return directory / "sandbox.json"


def read_info(directory: Path) -> dict[str, Any]:
    """What ``sandbox up`` recorded; UsageError when no sandbox is up in ``directory``."""
    path = info_path(directory)
    try:
        info = json.loads(path.read_text())
    except (FileNotFoundError, NotADirectoryError):
        raise UsageError(
            f"no sandbox in {directory}; start one with `cloudbroker sandbox up`"
        ) from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    if not (
        isinstance(info, dict)
        and info.keys() >= INFO_KEYS
        and isinstance(info["pid"], int)
        and isinstance(info["clouds"], dict)
        and all(isinstance(c, dict) and c.keys() >= CLOUD_KEYS for c in info["clouds"].values())
    ):
        raise UsageError(f"{path} is not a sandbox's record (no sandbox in {directory})")
    return info


def write_info(directory: Path, info: dict[str, Any]) -> None:
    path = info_path(directory)
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(info, out, indent=2)
    temporary.replace(path)


def environment(directory: Path, info: dict[str, Any]) -> dict[str, str]:
    """The variables to export: sandbox paths, plugins, endpoints and the fake keys.

    ``CLOUDBROKER_PLUGINS`` names every cloud the sandbox runs (the built-ins and each
    plugin's that ships an emulator): a provider it does not run could be planned on and
    then not launch. Each cloud's variables are those ``up`` recorded for it.
    """
    from cloudbroker.sandbox.clouds import CLOUDS

    env = {
        DIR_ENV: str(directory),
        "CLOUDBROKER_CONFIG": str(directory / "config.toml"),
        "CLOUDBROKER_STATE": str(directory / "state.sqlite3"),
        "CLOUDBROKER_DATA_DIR": str(directory / "data"),
        "CLOUDBROKER_PLUGINS": ",".join(info["clouds"]),
        # no profile or shared file of a real AWS account is read in the sandbox
        "AWS_CONFIG_FILE": str(directory / "aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(directory / "aws-credentials"),
    }
    if info.get("image"):
        env[IMAGE_ENV] = str(info["image"])
    builtin = {cloud.name: cloud for cloud in CLOUDS}
    for name, c in info["clouds"].items():
        if isinstance(c.get("env"), dict):
            env |= {str(k): str(v) for k, v in c["env"].items()}
        elif name in builtin:
            env |= builtin[name].env(c["api"], c["storage"], c["key"], c["secret"])
    return env


def shell_exports(env: dict[str, str]) -> str:
    lines = [f"unset {' '.join(UNSET)}"]
    lines += [f"export {name}={shlex.quote(value)}" for name, value in env.items()]
    return "\n".join(lines) + "\n"


def gone(env: dict[str, str]) -> Path | None:
    """The sandbox directory ``env`` was pointed at by ``sandbox env`` (its state store is the
    sandbox's) when no sandbox is recorded there any more (``sandbox down``, a reboot)."""
    where = env.get(DIR_ENV, "").strip()
    if not where or env.get("CLOUDBROKER_STATE") != str(Path(where) / "state.sqlite3"):
        return None
    return None if info_path(Path(where)).exists() else Path(where)


def bucket_hint(env: dict[str, str], directory: Path | None = None) -> str:
    """What a missing bucket's error adds in a sandbox (``directory``, else the one ``env``
    points at when it is up): the buckets its stores have. "" outside a sandbox."""
    from cloudbroker.sandbox.stores import BUCKET

    if directory is None:
        where = env.get(DIR_ENV, "").strip()
        if not where or env.get("CLOUDBROKER_STATE") != str(Path(where) / "state.sqlite3"):
            return ""
        if not info_path(Path(where)).exists():
            return ""
    return (
        f"; each cloud of the sandbox has one bucket, {BUCKET!r} (e.g. aliyun:{BUCKET}/run1; "
        "`cloudbroker sandbox put` puts files in it)"
    )


def unset_lines(env: dict[str, str]) -> str:
    """``unset`` of what ``sandbox env`` exported: its fixed variables, every built-in cloud's,
    and any other whose value points into the sandbox directory (a plugin cloud's paths)."""
    from cloudbroker.sandbox.clouds import CLOUDS

    names = set(environment(Path(env.get(DIR_ENV) or default_dir()), {"clouds": {}}))
    names.add(IMAGE_ENV)
    for cloud in CLOUDS:
        names |= set(cloud.env("", "", "", ""))
    where = env.get(DIR_ENV, "").strip()
    if where:
        names |= {k for k, v in env.items() if v.startswith(where)}
    return f"unset {' '.join(sorted(names))}\n"
