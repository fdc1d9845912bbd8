"""Sandbox instances: each emulated instance runs its user data as a local process.

An instance gets its own working directory (``instances/<cloud>/<instance id>/``) with the
user data, a ``root/`` standing in for the paths the broker's preamble writes (``/etc``,
``/opt``), and ``output.log`` with everything the script prints. It runs in a process group
of its own with the environment a cloud image gives a job: ``HOME``, a ``PATH`` with only
what the sandbox's image has (:mod:`.images`: its system tools and python3, no rclone, never
the controller's Python), and no credentials: the preamble gets the instance role's from the
sandbox's metadata service of the cloud (:mod:`.metadata`), as it would on the cloud. Terminating or
reclaiming the instance sends SIGTERM to the group, then SIGKILL after the cloud's spot
notice period times the sandbox's time factor. The instance's requests to the metadata
service carry its id (``/i/<id>`` after the service's address), so that service can serve a
reclaim notice to that instance alone. ``gpu/<cloud>/`` is first on its ``PATH``: the fake
``nvidia-smi`` that ``sandbox gpu-util`` writes there (none until then: not installed).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from cloudbroker.sandbox import images
from cloudbroker.sandbox.images import Image
from cloudbroker.sandbox.processes import PidBook

#: Absolute paths the broker's user-data preamble writes; redirected under the instance dir.
ROOT_PATHS = ("/etc/cloudbroker.env", "/etc/cloudbroker.keys", "/opt/cloudbroker")


def localise(script: str, root: Path) -> str:
    """The script with :data:`ROOT_PATHS` moved under ``root`` (no write outside it)."""
    for path in ROOT_PATHS:
        script = script.replace(path, shlex.quote(str(root) + path))
    return script


def gpu_bin(directory: Path, cloud: str) -> Path:
    """Where the fake ``nvidia-smi`` of the cloud's instances lives (first on their PATH)."""
    return directory / "gpu" / cloud


def nvidia_smi(percent: int) -> str:
    """A fake ``nvidia-smi`` answering ``--query-gpu=... --format=csv,noheader,nounits`` for
    one GPU at ``percent`` utilisation; memory figures it does not know are ``[N/A]``, as the
    real one prints for fields a GPU does not report."""
    return (
        "#!/bin/sh\n# cloudbroker sandbox: a fake nvidia-smi (sandbox gpu-util)\n"
        f"echo '{percent}, [N/A], [N/A]'\n"
    )


def log_path(directory: Path, cloud: str, instance_id: str) -> Path:
    return directory / "instances" / cloud / instance_id / "output.log"


class ProcessRunner:
    """The emulators' :class:`~cloudbroker.testing.emulator.InstanceRunner` for one cloud."""

    def __init__(
        self,
        directory: Path,
        cloud: str,
        notice_seconds: float,
        pids: PidBook,
        metadata_url: str | None = None,
        image: Image | None = None,
    ) -> None:
        """``image``: the profile whose tools ``up`` made under ``directory`` (the default
        profile's when not given)."""
        self.directory = directory
        self.cloud = cloud
        self.notice_seconds = notice_seconds
        self.pids = pids
        self.metadata_url = metadata_url
        self.image = image or images.image(images.DEFAULT)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def environment(self, home: Path, instance_id: str) -> dict[str, str]:
        env = images.environment(self.directory, self.image)
        return env | {
            "HOME": str(home),
            "PATH": os.pathsep.join([str(gpu_bin(self.directory, self.cloud)), env["PATH"]]),
            "LANG": "C.UTF-8",
            "CLOUDBROKER_SANDBOX_INSTANCE": f"{self.cloud}:{instance_id}",
        }

    def started(self, emulator: Any, instance: Any) -> None:
        log = log_path(self.directory, self.cloud, instance.instance_id)
        home = log.parent
        (home / "root" / "etc").mkdir(parents=True, exist_ok=True)
        script = emulator.startup_script(instance)
        with log.open("ab") as out:
            out.write(_note(f"{instance.instance_type} in {instance.zone or instance.region}"))
            if script is None:
                out.write(_note("no user data: nothing to run"))
                return
            path = home / "user-data"
            script = localise(script, home / "root")
            if self.metadata_url:  # the instance's own address on the service
                own = f"{self.metadata_url}/i/{instance.instance_id}"
                script = re.sub(re.escape(self.metadata_url) + r"(?![0-9])", own, script)
            path.write_text(script, encoding="utf-8")
            path.chmod(0o700)
            command = [str(path)] if script.startswith("#!") else ["/bin/sh", str(path)]
            process = subprocess.Popen(
                command,
                cwd=home,
                env=self.environment(home, instance.instance_id),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pids.add(process.pid, f"{self.cloud} instance {instance.instance_id}", group=True)
        self.processes[instance.instance_id] = process
        threading.Thread(target=self._reap, args=(log, process), daemon=True).start()

    def ended(self, emulator: Any, instance: Any) -> None:
        process = self.processes.get(instance.instance_id)
        if process is None or process.poll() is not None:
            return
        why = "reclaimed" if instance.terminated is None else "terminated"
        log = log_path(self.directory, self.cloud, instance.instance_id)
        with log.open("ab") as out:
            out.write(_note(f"{why}: SIGTERM, SIGKILL in {self.notice_seconds:g} s"))
        _signal(process, signal.SIGTERM)
        timer = threading.Timer(self.notice_seconds, _signal, (process, signal.SIGKILL))
        timer.daemon = True
        timer.start()

    def stop_all(self, grace: float) -> None:
        """SIGTERM every instance still running, SIGKILL after ``grace`` seconds."""
        running = [p for p in self.processes.values() if p.poll() is None]
        for process in running:
            _signal(process, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            _signal(process, signal.SIGKILL)

    @staticmethod
    def _reap(log: Path, process: subprocess.Popen[bytes]) -> None:
        code = process.wait()
        with log.open("ab") as out:
            out.write(_note(f"exited with code {code}"))


def _note(text: str) -> bytes:
    stamp = time.strftime("%H:%M:%S")
    return f"[sandbox {stamp}] {text}\n".encode()


def _signal(process: subprocess.Popen[bytes], signum: int) -> None:
    """Signal the instance's whole process group (the script and what it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)
