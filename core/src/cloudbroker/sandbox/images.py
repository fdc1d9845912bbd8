"""The cloud images a sandbox's instances stand in for: what their user data finds on PATH.

A real GPU image ships bash, coreutils, curl and the distribution's own ``python3``, and
neither rclone nor (mostly) pip; what runs there must make do. Each profile of
:data:`IMAGES` is one image family of the table in docs/clouds.md ("Images: what an
instance has"), where each row names its source. :func:`prepare` makes the profile's private
``bin`` directory: symbolic links to :data:`TOOLS` (those of them this machine has), ``python3``
pointing at pyenv's interpreter of the image's version, and a ``pip`` that answers as the
image's does. The instance's PATH is that directory alone (and the fake ``nvidia-smi``): never
the controller's virtual environment, never its rclone.
"""

from __future__ import annotations

import os
import pwd
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from cloudbroker.errors import SandboxError, UsageError

#: System tools every profiled image ships (coreutils, grep, sed, gawk/mawk, gzip, procps,
#: tar, findutils, curl, bash); linked from this machine's /usr/bin and /bin where it has them.
TOOLS = (
    "bash", "sh", "env", "curl", "sed", "tr", "gzip", "gunzip", "zcat", "base64",
    "sha256sum", "md5sum", "cat", "mkdir", "chmod", "rm", "rmdir", "mv", "cp", "ln", "ls",
    "sleep", "date", "head", "tail", "grep", "awk", "kill", "ps", "tee", "touch", "printf",
    "echo", "test", "[", "true", "false", "dirname", "basename", "readlink", "realpath",
    "mktemp", "id", "uname", "hostname", "wc", "sort", "uniq", "cut", "xargs", "find",
    "timeout", "nproc", "stat", "tar", "od", "dd", "df", "du", "expr", "seq", "pwd", "yes",
)  # fmt: skip
SYSTEM_DIRS = ("/usr/bin", "/bin")


@dataclass(frozen=True)
class Image:
    """One image family: its ``python3`` (``major.minor``; None: it has none) and how its pip
    answers (``None``: no pip at all; ``"pep668"``: installed, refuses system-wide installs).
    No profile has wget: no source says which images ship it (the strictest reading)."""

    name: str
    title: str
    python: str | None
    pip: str | None = None


#: Keep in step with the table in docs/clouds.md (its rows carry the sources).
IMAGES = {
    image.name: image
    for image in (
        Image("ubuntu-22.04", "Ubuntu 22.04 LTS", "3.10"),
        Image("ubuntu-20.04", "Ubuntu 20.04 LTS", "3.8"),
        Image("ubuntu-24.04", "Ubuntu 24.04 LTS", "3.12", pip="pep668"),
        Image("alinux3", "Alibaba Cloud Linux 3", "3.6"),
        Image("tencentos3", "TencentOS Server 3", "3.6"),
        Image("none", "an image without python3", None),
    )
}
#: The commonest GPU image (docs/clouds.md).
DEFAULT = "ubuntu-22.04"


def image(name: str) -> Image:
    """The profile named ``name``; a one-line UsageError naming the accepted ones."""
    try:
        return IMAGES[name]
    except KeyError:
        raise UsageError(f"unknown sandbox image {name!r}; accepted: {', '.join(IMAGES)}") from None


def pyenv_roots() -> list[Path]:
    """Where pyenv's interpreters may be: ``$PYENV_ROOT``, ``$HOME/.pyenv``, and the user's
    own home's (``sandbox up`` may run with another HOME, as the README test does)."""
    roots = [os.environ.get("PYENV_ROOT", ""), str(Path.home() / ".pyenv")]
    roots.append(str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".pyenv"))
    return [Path(r) for r in dict.fromkeys(roots) if r]


def interpreter(profile: Image) -> Path | None:
    """The ``python3`` of the profile's version: pyenv's (the newest patch release), else a
    ``python3.X`` on PATH that is not this process's own environment (a distribution's or
    deadsnakes'); None for a profile without python3. SandboxError naming the version and
    where it looked if none."""
    if profile.python is None:
        return None
    for root in pyenv_roots():
        found = sorted(
            (root / "versions").glob(f"{profile.python}.*/bin/python3"),
            key=lambda p: [int(x) for x in p.parts[-3].split(".") if x.isdigit()],
        )
        if found:
            return found[-1]
    found_on_path = shutil.which(f"python{profile.python}")
    if found_on_path and _usable(Path(found_on_path)):
        return Path(found_on_path)
    looked = ", ".join(str(r / "versions") for r in pyenv_roots())
    raise SandboxError(
        f"the sandbox image {profile.name} needs Python {profile.python}: none in {looked}, "
        f"no python{profile.python} on PATH (pyenv install {profile.python}, or another image)"
    )


def _usable(python: Path) -> bool:
    """Not pyenv's shim (it needs pyenv on PATH, which an instance has not), nor this
    process's own environment (the controller's, which an instance never gets)."""
    return "shims" not in python.parts and not python.resolve().is_relative_to(
        Path(sys.prefix).resolve()
    )


def image_dir(directory: Path) -> Path:
    """Where ``sandbox up`` makes the instances' tools (one profile per sandbox)."""
    return directory / "image"


def bin_dir(directory: Path) -> Path:
    return image_dir(directory) / "bin"


def lib_dir(directory: Path) -> Path:
    """First on the instances' PYTHONPATH: the ``pip`` module that answers as the image's."""
    return image_dir(directory) / "lib"


#: What ``pip`` answers where the image has none (Ubuntu's python3 without python3-pip).
NO_PIP = 'import sys\nsys.exit(sys.executable + ": No module named pip")\n'
#: What Ubuntu 24.04's pip answers a system-wide install (PEP 668, abridged).
PEP668 = """import sys
sys.exit(
    "error: externally-managed-environment\\n\\n"
    "This environment is externally managed\\n"
    "To install Python packages system-wide, try apt install python3-xyz, where xyz is the "
    "package you are trying to install.\\nhint: See PEP 668 for the detailed specification."
)
"""


def prepare(directory: Path, profile: Image) -> None:
    """Make the profile's ``bin`` (and its ``pip`` module) under ``directory``."""
    python = interpreter(profile)
    tools, lib = bin_dir(directory), lib_dir(directory) / "pip"
    tools.mkdir(parents=True)
    for name in TOOLS:
        found = next((Path(d) / name for d in SYSTEM_DIRS if (Path(d) / name).exists()), None)
        if found is not None:
            (tools / name).symlink_to(found)
    if python is None:
        return
    (tools / "python3").symlink_to(python)
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "__main__.py").write_text(PEP668 if profile.pip == "pep668" else NO_PIP)
    if profile.pip == "pep668":
        for name in ("pip", "pip3"):
            command = tools / name
            command.write_text('#!/bin/sh\nexec python3 -m pip "$@"\n')
            command.chmod(0o755)


def environment(directory: Path, profile: Image) -> dict[str, str]:
    """What an instance of the sandbox gets for its image: PATH (the fake ``nvidia-smi``'s
    directory goes before it) and, with python3, the ``pip`` module first on PYTHONPATH
    (pyenv's interpreters have a pip of their own)."""
    env = {"PATH": str(bin_dir(directory))}
    if profile.python is not None:
        env["PYTHONPATH"] = str(lib_dir(directory))
    return env
