"""The sandbox supervisor: one detached process that owns every process of a sandbox.

``up`` starts ``python -m cloudbroker.sandbox.supervisor DIR FACTOR`` in a session of its
own and waits (bounded) until it has written ``sandbox.json``. The supervisor starts one
object store per installed built-in cloud (a child process, behind a :class:`Gate`), that
cloud's emulator selling the packaged catalog (in its own threads), and runs each emulated
instance's user data as a process (:class:`ProcessRunner`). Every child's pid is recorded
under DIR. On SIGTERM it ends instances, emulators and stores; ``down`` then checks that no
recorded process is left (signalling any survivor itself) and removes what the sandbox made.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cloudbroker.errors import SandboxError, UsageError
from cloudbroker.sandbox import images
from cloudbroker.sandbox.env import FILES, FOLDERS, MARKER, info_path, read_info, write_info
from cloudbroker.sandbox.images import DEFAULT as DEFAULT_IMAGE
from cloudbroker.sandbox.processes import PidBook, alive, end_all, start_time, wait_gone

log = logging.getLogger("cloudbroker.sandbox")

START_TIMEOUT = 90.0  # seconds for every store and emulator to come up
STOP_TIMEOUT = 30.0
#: Used when a catalog states no spot notice: the shortest any built-in cloud gives.
FALLBACK_NOTICE_SECONDS = 120


# -- the supervisor process ------------------------------------------------------------------


def notice_seconds(provider: str, package: str) -> int:
    """The cloud's spot notice period from its packaged terms."""
    from cloudbroker.catalogs.catalog import packaged

    notices = [t.spot_notice_seconds for t in packaged(provider, package).terms]
    return next((n for n in notices if n), FALLBACK_NOTICE_SECONDS)


def _config(
    clouds: list[Any], emulators: dict[str, Any], metadata: dict[str, Any], factor: float
) -> str:
    from cloudbroker.agent import GPU_SETTING, POLL_SETTING
    from cloudbroker.sandbox.clouds import launch_settings

    lines = []
    for cloud in clouds:
        settings = launch_settings(cloud, emulators[cloud.name])
        if cloud.name == "aws":
            settings["image"] = emulators["aws"].linux_image()
        if cloud.name in metadata:
            settings["metadata_endpoint"] = metadata[cloud.name].url
        # the notice agent's polling (5 s on a cloud), scaled as the notice periods are; its
        # GPU samples every second (60 s on a cloud): the fake nvidia-smi costs nothing
        settings[POLL_SETTING] = max(0.2, round(5 * factor, 3))
        settings[GPU_SETTING] = 1
        lines.append(f"[providers.{cloud.name}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
        lines.append("")
    return "\n".join(lines)


def _metadata_service(cloud: Any, emulator: Any) -> Any:
    """The cloud's metadata service: a built-in's own, a plugin's from its recipe (None:
    the plugin's cloud has no instance roles)."""
    from cloudbroker.sandbox.metadata import SERVICES, Service

    if cloud.name in SERVICES:
        return SERVICES[cloud.name]
    recipe = getattr(emulator, "instance_credentials", None)
    return None if recipe is None else Service.from_recipe(recipe)


#: The listing lag of every sandbox emulator at the default time factor (0.01), scaled with
#: it: clouds are eventually consistent (EC2 documents it, "Eventual consistency in the
#: Amazon EC2 API"); how long the lag lasts is documented nowhere: a few seconds, unsourced.
LISTING_LAG_SECONDS = 2.0
DEFAULT_TIME_FACTOR = 0.01


def listing_lag(time_factor: float) -> float:
    """The emulators' listing lag for ``time_factor``."""
    return LISTING_LAG_SECONDS * time_factor / DEFAULT_TIME_FACTOR


def _notice_control(emulator: Any, server: Any, seconds: float) -> Any:
    """``/_emulator/notice {"instance_id"}``: the metadata service serves the instance the
    cloud's reclaim notice for ``seconds`` (the reclaim's time rounded up to a whole second,
    as the clouds write it), then the emulator reclaims it (SIGTERM, SIGKILL)."""
    import math
    from datetime import UTC, datetime

    def publish(body: dict[str, Any]) -> None:
        instance_id = str(body["instance_id"])
        if instance_id not in emulator.state.instances:
            raise KeyError(f"no instance {instance_id}")
        at = math.ceil(time.time() + seconds)
        server.publish(instance_id, datetime.fromtimestamp(at, UTC))

        def reclaim() -> None:
            server.publish(instance_id, None)
            with contextlib.suppress(KeyError, ValueError):  # gone, or one it cannot reclaim
                emulator.reclaim(instance_id)

        timer = threading.Timer(max(0.0, at - time.time()), reclaim)
        timer.daemon = True
        timer.start()

    return publish


def run(directory: Path, time_factor: float, image: str = DEFAULT_IMAGE) -> None:
    """Start everything, record it, serve until SIGTERM, then stop everything; the instances
    get the tools of the profile ``image`` (made by ``up`` under ``directory``)."""
    from cloudbroker.sandbox.clouds import installed
    from cloudbroker.sandbox.instances import ProcessRunner
    from cloudbroker.sandbox.metadata import MetadataServer, StsMinter
    from cloudbroker.sandbox.stores import Gate, Store

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    pids = PidBook(directory)
    clouds = _runnable(installed())
    stores: dict[str, Store] = {}
    gates: dict[str, Gate] = {}
    emulators: dict[str, Any] = {}
    runners: dict[str, ProcessRunner] = {}
    metadata: dict[str, MetadataServer] = {}
    try:
        names = ", ".join(cloud.name for cloud in clouds)
        _starting(f"the object stores of {names} (a moto S3 server each)")
        with ThreadPoolExecutor(max_workers=len(clouds) or 1) as pool:
            started = pool.map(
                lambda c: Store.start(directory / "supervisor.log", cloud=c.name), clouds
            )
            for cloud, store in zip(clouds, started, strict=True):
                stores[cloud.name] = store
                pids.add(store.process.pid, f"{cloud.name} object store")
        for cloud in clouds:
            store = stores[cloud.name]
            gates[cloud.name] = gate = Gate(store.port)
            emulator_class = cloud.emulator_class()
            _starting(f"the {cloud.name} emulator ({emulator_class.__name__})")
            make = getattr(emulator_class, "from_catalog", emulator_class)
            emulator = make(access_key=store.key, secret_key=store.secret)
            emulator.listing_lag = listing_lag(time_factor)
            service = _metadata_service(cloud, emulator)
            if service is not None:
                mint = StsMinter(store.port, store.key, store.secret, store.role_arn)
                metadata[cloud.name] = MetadataServer(cloud.name, mint, service=service).start()
            notice = notice_seconds(cloud.name, cloud.package) * time_factor
            served = metadata.get(cloud.name)  # None: a plugin's cloud without instance roles
            runners[cloud.name] = emulator.runner = ProcessRunner(
                directory, cloud.name, notice, pids, None if served is None else served.url,
                images.image(image),
            )  # fmt: skip
            emulator.controls["/_emulator/storage-outage"] = lambda body, g=gate: g.set_closed(
                bool(body["on"])
            )
            if served is not None:  # a notice is served by the metadata service
                emulator.controls["/_emulator/notice"] = _notice_control(emulator, served, notice)
            emulators[cloud.name] = emulator.start()
        (directory / "config.toml").write_text(_config(clouds, emulators, metadata, time_factor))
        write_info(
            directory,
            {
                "pid": os.getpid(),
                "started": start_time(os.getpid()),
                "time_factor": time_factor,
                "image": image,
                "clouds": {
                    cloud.name: _record(cloud, emulators, gates, stores, runners)
                    for cloud in clouds
                },
            },
        )
        log.info("sandbox up: %s", ", ".join(emulators))
        stop.wait()
    finally:
        for runner in runners.values():
            runner.stop_all(grace=min(5.0, runner.notice_seconds))
        for emulator in emulators.values():
            with contextlib.suppress(Exception):
                emulator.stop()
        for gate in gates.values():
            gate.stop()
        for server in metadata.values():
            server.stop()
        with ThreadPoolExecutor(max_workers=len(stores) or 1) as pool:
            list(pool.map(lambda store: store.stop(), stores.values()))
        log.info("sandbox stopped")


#: How the supervisor's log says what it is starting (``up`` shows it while it waits).
STARTING = "sandbox starting: "


def _starting(what: str) -> None:
    log.info("%s%s", STARTING, what)


def starting(log_path: Path, offset: int) -> tuple[str | None, int]:
    """What the supervisor last said it is starting in its log after ``offset`` (None:
    nothing new), and the offset to read on from (whole lines only)."""
    try:
        with log_path.open("rb") as file:
            file.seek(offset)
            data = file.read()
    except OSError:
        return None, offset
    whole = data[: data.rfind(b"\n") + 1]
    said = None
    for line in whole.decode(errors="replace").splitlines():
        if line.startswith(STARTING):
            said = line.removeprefix(STARTING)
    return said, offset + len(whole)


def _runnable(clouds: list[Any]) -> list[Any]:
    """The clouds to run: a plugin's emulator that does not import, or says nothing of how
    to point the plugin at it (``sandbox_env``), is left out with the reason in the log (an
    enabled plugin with no endpoint override would call its real cloud)."""
    from cloudbroker.sandbox.clouds import CLOUDS

    builtin = {cloud.name for cloud in CLOUDS}
    kept = []
    for cloud in clouds:
        if cloud.name not in builtin:
            try:
                declared = cloud.emulator_class().sandbox_env
            except Exception as exc:  # a third party's module: any failure is its own
                log.warning(
                    "sandbox: %s left out: its emulator %s: %s", cloud.name, cloud.emulator, exc
                )
                continue
            if not declared:
                log.warning(
                    "sandbox: %s left out: %s declares no sandbox_env (docs/plugins.md, 10)",
                    cloud.name,
                    cloud.emulator,
                )
                continue
        kept.append(cloud)
    return kept


def _record(cloud: Any, emulators: dict, gates: dict, stores: dict, runners: dict) -> dict:
    """What ``sandbox.json`` says of a cloud, with the environment that points cloudbroker at
    it (so ``sandbox env`` need not import a plugin's emulator)."""
    found = {
        "api": emulators[cloud.name].url,
        "storage": f"http://127.0.0.1:{gates[cloud.name].port}",
        "key": stores[cloud.name].key,
        "secret": stores[cloud.name].secret,
        "notice_seconds": runners[cloud.name].notice_seconds,
    }
    return found | {"env": cloud.env(found["api"], found["storage"], found["key"], found["secret"])}


# -- what the CLI calls ----------------------------------------------------------------------


def up(
    directory: Path,
    time_factor: float,
    progress: Callable[[str], None] | None = None,
    image: str = DEFAULT_IMAGE,
) -> dict[str, Any]:
    """Start a sandbox in ``directory`` (detached) and wait until it serves; its info.

    ``directory`` must be new or empty: ``down`` removes what the sandbox made, so nothing
    of the user's may be in it. ``progress`` hears what the supervisor is starting, as it
    starts it (the object stores, each cloud's emulator). The instances see only what the
    image profile ``image`` has (:mod:`.images`); its python3 must be in pyenv's versions.
    """
    if time_factor <= 0:
        raise UsageError(f"the time factor must be positive, got {time_factor}")
    profile = images.image(image)
    images.interpreter(profile)  # before anything is made: a missing Python is one line
    if importlib.util.find_spec("moto") is None:
        raise SandboxError("the sandbox needs moto: pip install 'cloudbroker[sandbox]'")
    made = _take(directory)
    images.prepare(directory, profile)
    log = directory / "supervisor.log"
    command = [sys.executable, "-m", "cloudbroker.sandbox.supervisor", str(directory)]
    with log.open("ab") as out:
        process = subprocess.Popen(
            [*command, repr(time_factor), image],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=directory,
            env={k: v for k, v in os.environ.items() if not k.startswith("CLOUDBROKER_")},
        )
    PidBook(directory).add(process.pid, "supervisor")
    deadline = time.monotonic() + START_TIMEOUT
    offset = 0
    while not info_path(directory).exists():
        said, offset = starting(log, offset)
        if said is not None and progress is not None:
            progress(said)
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait()
            tail = log.read_text(errors="replace").strip().splitlines()[-3:]
            raise SandboxError(
                f"the sandbox supervisor did not start: {' | '.join(tail) or 'no output'} "
                f"(log: {log}; `cloudbroker sandbox down` removes {'it' if made else 'its files'})"
            )
        time.sleep(0.1)
    return read_info(directory)


def _take(directory: Path) -> bool:
    """Make ``directory`` a sandbox's (the marker first); whether it had to be created.

    UsageError if it is not a directory, holds anything, or holds a sandbox already.
    """
    if (directory / MARKER).is_file():
        info = read_info(directory) if info_path(directory).exists() else None
        if info is not None and alive(info["pid"], info["started"]):
            raise UsageError(
                f"a sandbox is already up in {directory}; `cloudbroker sandbox down` stops it"
            )
        raise UsageError(
            f"{directory} holds a stopped sandbox; remove it with `cloudbroker sandbox down`"
        )
    try:
        made = not directory.exists()
        if not made and not directory.is_dir():
            raise UsageError(f"{directory} is not a directory")
        if not made and any(directory.iterdir()):
            raise UsageError(
                f"{directory} is not empty: a sandbox needs a new or empty directory "
                "(`sandbox down` removes what the sandbox made, nothing else)"
            )
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        (directory / MARKER).write_text(json.dumps({"made_directory": made}))
    except OSError as exc:
        raise UsageError(f"cannot use {directory} for a sandbox: {exc.strerror or exc}") from None
    return made


@dataclass(frozen=True)
class Down:
    """What ``down`` did: processes it had to end itself, and what it left in the directory."""

    forced: int
    left: tuple[str, ...] = ()  # names in the directory the sandbox did not make (kept)


def down(directory: Path, keep: bool = False) -> Down:
    """Stop every process of the sandbox, then remove what it made unless ``keep``.

    Only a directory ``up`` marked is touched, and in it only :data:`~.env.FILES` and
    :data:`~.env.FOLDERS` (never through a symbolic link); the directory itself goes only
    if ``up`` made it and nothing else is left in it.
    """
    marker = directory / MARKER
    try:
        made = json.loads(marker.read_text()).get("made_directory") is True
    except (OSError, ValueError, AttributeError):
        # never stop or remove anything in a folder `sandbox up` did not make (`--dir ~`)
        raise UsageError(f"no sandbox in {directory} (no {MARKER} in it)") from None
    pids = PidBook(directory)
    supervisor = [r for r in pids.records() if r["what"] == "supervisor"]
    for record in supervisor:
        if alive(record["pid"], record["started"]):
            os.kill(record["pid"], signal.SIGTERM)
    wait_gone(supervisor, STOP_TIMEOUT)
    survivors = pids.running()
    left = end_all(survivors, grace=5)
    if left:
        names = ", ".join(f"{r['what']} (pid {r['pid']})" for r in left)
        raise SandboxError(f"could not stop {names}; {directory} is kept")
    if keep:
        return Down(len(survivors))
    return Down(len(survivors), _remove(directory, made))


def _remove(directory: Path, made: bool) -> tuple[str, ...]:
    """Remove the sandbox's own files and folders, the marker last; the names left."""
    for name in FILES:
        path = directory / name
        if path.is_file() and not path.is_symlink():
            path.unlink()
    for name in FOLDERS:
        path = directory / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
    left = tuple(sorted(p.name for p in directory.iterdir() if p.name != MARKER))
    if not left:
        (directory / MARKER).unlink()
        if made:
            directory.rmdir()
    return left


def status(directory: Path) -> dict[str, Any]:
    """The sandbox's clouds and which of its recorded processes run."""
    info = read_info(directory)
    records = PidBook(directory).records()
    running = {r["pid"] for r in records if alive(r["pid"], r["started"])}
    return {
        "directory": str(directory),
        "up": info["pid"] in running,
        "time_factor": info["time_factor"],
        "image": info.get("image"),  # None: a sandbox of a version without image profiles
        "clouds": {
            name: {k: v for k, v in c.items() if k not in ("key", "secret", "env")}
            for name, c in info["clouds"].items()
        },
        "processes": [{**r, "running": r["pid"] in running} for r in records],
    }


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    logging.getLogger("cloudbroker").addHandler(logging.StreamHandler(sys.stdout))  # its log
    logging.getLogger("cloudbroker").setLevel(logging.INFO)
    run(Path(args[0]), float(args[1]), *args[2:3])


if __name__ == "__main__":
    main()
