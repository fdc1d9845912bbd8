"""``cloudbroker sandbox``: every installed cloud, emulated on this machine; and ``logs``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from cloudbroker.api.sandbox import DEFAULT_IMAGE, IMAGES
from cloudbroker.cli import app, options
from cloudbroker.cli.output import err_console, print_json
from cloudbroker.errors import UsageError

if TYPE_CHECKING:
    from cloudbroker.api.sandbox import Listing

sandbox_app = typer.Typer(
    help="A local sandbox of every installed cloud with an emulator (the built-ins and any "
    "plugin shipping one): try placements and failover offline.",
    no_args_is_help=True,
)
app.add_typer(sandbox_app, name="sandbox", rich_help_panel="Setup")

DIR = options.option(
    options.PATH,
    None,
    "--dir",
    help="Sandbox directory (default: $CLOUDBROKER_SANDBOX, else a temp dir); `up` takes a "
    "new or empty one.",
)


def _env_output(directory: Path, info: dict, json_output: bool) -> None:
    from cloudbroker.api.sandbox import environment, shell_exports

    env = environment(directory, info)
    if json_output:
        print_json(env)
    else:
        sys.stdout.write(shell_exports(env))


@sandbox_app.command("up")
def up(
    directory: str | None = DIR,
    time_factor: float = typer.Option(
        0.01, "--time-factor", help="Scales the clouds' notice periods (0.01: 300 s -> 3 s)."
    ),
    image: str = typer.Option(
        DEFAULT_IMAGE,
        "--image",
        help=f"The cloud image the instances stand in for: {', '.join(IMAGES)} (docs/clouds.md: "
        "what each has; its python3 from pyenv, never rclone).",
    ),
    json_output: bool = typer.Option(False, "--json", help="The environment as one object."),
) -> None:
    """Start the sandbox in the background and print the environment that points at it."""
    from cloudbroker.api.sandbox import sandbox_dir
    from cloudbroker.api.sandbox import up as start
    from cloudbroker.cli.progress import Lines

    where = sandbox_dir(directory)
    with Lines(err_console) as lines:  # on a terminal: what it is starting, as it waits
        info = start(
            where, time_factor, lambda what: lines.start(f"sandbox up: starting {what}"), image
        )
    err_console.print(
        f"sandbox up in {where} (image {info['image']}): {', '.join(info['clouds'])}; "
        f'use it with: eval "$(cloudbroker sandbox env)"',
        markup=False,
    )
    _env_output(where, info, json_output)


@sandbox_app.command("env")
def env(
    directory: str | None = DIR,
    json_output: bool = typer.Option(False, "--json"),
    unset: bool = typer.Option(
        False, "--unset", help="Print `unset` lines instead: back to your own clouds."
    ),
) -> None:
    """Print the environment (``export`` lines) that points cloudbroker at the sandbox."""
    import os

    from cloudbroker.api.sandbox import read_info, sandbox_dir, unset_lines

    if unset:
        sys.stdout.write(unset_lines(dict(os.environ)))
        return
    where = sandbox_dir(directory)
    _env_output(where, read_info(where), json_output)


@sandbox_app.command("status")
def status(directory: str | None = DIR, json_output: bool = typer.Option(False, "--json")) -> None:
    """Which clouds run where, and every process the sandbox started."""
    from cloudbroker.api.sandbox import sandbox_dir
    from cloudbroker.api.sandbox import status as sandbox_status

    report = sandbox_status(sandbox_dir(directory))
    if json_output:
        print_json(report)
        return
    print(f"sandbox in {report['directory']}: {'up' if report['up'] else 'DOWN'}")
    if report["image"]:
        print(f"  image: {_image_line(report['image'])}")
    for name, cloud in report["clouds"].items():
        print(f"  {name}: API {cloud['api']}, storage {cloud['storage']}")
    running = [p for p in report["processes"] if p["running"]]
    print(f"  {len(running)} process(es) running:")
    for process in running:
        print(f"    {process['pid']} {process['what']}")


def _image_line(name: str) -> str:
    """What the instances of an image profile find (``sandbox status``)."""
    profile = IMAGES.get(name)
    if profile is None:  # recorded by another version
        return name
    python = f"python3 {profile.python}" if profile.python else "no python3"
    pip = "pip refuses system installs (PEP 668)" if profile.pip == "pep668" else "no pip"
    return f"{name} ({profile.title}: {python}, {pip}, no rclone)"


def _objects(listing: Listing) -> None:
    from cloudbroker.api.sandbox import human_bytes

    for name, entry in sorted(listing.items()):
        print(f"  {name}  {human_bytes(entry.size)}")


@sandbox_app.command("put")
def put(
    target: str = typer.Argument(
        ...,
        metavar="CLOUD:BUCKET/PATH",
        help="The folder to put the files in, e.g. aliyun:ckpt/run1.",
    ),
    files: list[str] = typer.Argument(..., metavar="FILE...", help="Files, each put by its name."),
    directory: str | None = DIR,
    json_output: bool = typer.Option(False, "--json", help="What was put, as one object."),
) -> None:
    """Put local files into a bucket of the sandbox's object stores, verified (size, MD5)."""
    from cloudbroker.api import sandbox

    pm, ref, where = sandbox.sandbox_plugins(directory, target, "CLOUD:BUCKET/PATH")
    done = sandbox.put(pm, ref, [Path(f) for f in files], where)
    bucket_label, human_bytes = sandbox.bucket_label, sandbox.human_bytes
    if json_output:
        print_json(_listing_json(bucket_label(ref), done))
        return
    size = human_bytes(sum(e.size for e in done.values()))
    print(f"put {len(done)} file(s), {size}, into {bucket_label(ref)} (verified: size and MD5)")
    _objects(done)


@sandbox_app.command("ls")
def ls(
    target: str = typer.Argument(
        ..., metavar="CLOUD:BUCKET[/PREFIX]", help="A bucket or a folder in it, e.g. aliyun:ckpt."
    ),
    directory: str | None = DIR,
    json_output: bool = typer.Option(False, "--json", help="The objects as one object."),
) -> None:
    """List the objects in a bucket (or a folder of it) of the sandbox's object stores."""
    from cloudbroker.api import sandbox

    pm, ref, where = sandbox.sandbox_plugins(directory, target, "CLOUD:BUCKET[/PREFIX]")
    found = sandbox.ls(pm, ref, where)
    bucket_label, human_bytes = sandbox.bucket_label, sandbox.human_bytes
    if json_output:
        print_json(_listing_json(bucket_label(ref), found))
        return
    size = human_bytes(sum(e.size for e in found.values()))
    print(f"{bucket_label(ref)}: {len(found)} object(s), {size}")
    _objects(found)


def _listing_json(where: str, listing: Listing) -> dict[str, Any]:
    return {
        "location": where,
        "objects": [
            {"name": name, "size": e.size, "hashes": dict(e.hashes)}
            for name, e in sorted(listing.items())
        ],
    }


@sandbox_app.command("down")
def down(
    directory: str | None = DIR,
    keep: bool = typer.Option(False, "--keep", help="Keep the directory (logs, state)."),
) -> None:
    """Stop every process the sandbox started; remove what it made unless --keep."""
    from cloudbroker.api.sandbox import down as stop
    from cloudbroker.api.sandbox import sandbox_dir

    where = sandbox_dir(directory)
    done = stop(where, keep=keep)
    note = f" ({done.forced} process(es) ended by signal)" if done.forced else ""
    if keep:
        note += "; directory kept"
    elif done.left:
        from cloudbroker.api.sandbox import named

        note += f"; kept the directory: it holds what the sandbox did not make ({named(done.left)})"
    print(f"sandbox in {where} is down{note}")


@sandbox_app.command("reclaim")
def reclaim(
    provider: str,
    instance: str = typer.Argument(None, help="Default: the cloud's only live instance."),
    directory: str | None = DIR,
    no_notice: bool = typer.Option(
        False, "--no-notice", help="Reclaim at once, without the cloud's in-instance notice."
    ),
) -> None:
    """Reclaim a spot instance as the cloud does: its notice first (AWS, Aliyun, Tencent),
    then the reclaim (the job gets SIGTERM, then SIGKILL)."""
    from cloudbroker.api import sandbox
    from cloudbroker.api.sandbox import read_info, sandbox_dir

    info = read_info(sandbox_dir(directory))
    reclaimed = sandbox.reclaim(info, provider, instance, notice=not no_notice)
    if not no_notice and sandbox.has_notice(provider):
        seconds = sandbox.cloud(info, provider)["notice_seconds"]
        print(f"{provider} {reclaimed}: reclaim notice published; reclaimed in {seconds:g} s")
    else:
        print(f"{provider} {reclaimed} reclaimed")


@sandbox_app.command("gpu-util")
def gpu_util(
    provider: str,
    percent: str = typer.Argument(..., help="0 to 100, or 'missing' (no nvidia-smi)."),
    directory: str | None = DIR,
) -> None:
    """Set the GPU utilisation the fake nvidia-smi of a cloud's instances reports."""
    from cloudbroker.api import sandbox
    from cloudbroker.api.sandbox import read_info, sandbox_dir

    where = sandbox_dir(directory)
    sandbox.cloud(read_info(where), provider)
    value = percent.strip().rstrip("%")
    if value != "missing" and not (value.isdigit() and 0 <= int(value) <= 100):
        raise UsageError(f"the utilisation must be 0 to 100 or 'missing', got {percent!r}")
    sandbox.gpu_util(where, provider, None if value == "missing" else int(value))
    said = "nvidia-smi not installed" if value == "missing" else f"GPUs at {value} %"
    print(f"{provider} instances: {said}")


@sandbox_app.command("outage")
def outage(
    provider: str,
    storage: bool = typer.Option(False, "--storage", help="Its object storage goes dark too."),
    end: bool = typer.Option(False, "--end", help="End the outage."),
    directory: str | None = DIR,
) -> None:
    """The cloud's API (and, with --storage, its object storage) stops answering."""
    from cloudbroker.api import sandbox
    from cloudbroker.api.sandbox import read_info, sandbox_dir

    sandbox.outage(read_info(sandbox_dir(directory)), provider, storage=storage, on=not end)
    what = "API and object storage" if storage else "API"
    print(f"{provider}: outage ended" if end else f"{provider}: {what} unreachable")


@sandbox_app.command("capacity")
def capacity(
    provider: str,
    place: str = typer.Argument(..., help="A region (every zone) or one zone."),
    instance_type: str = typer.Argument(...),
    count: str = typer.Argument(..., help="Launches still possible, or 'unlimited'."),
    directory: str | None = DIR,
) -> None:
    """Set how many more instances of a type the cloud can launch in a region or zone."""
    from cloudbroker.api import sandbox
    from cloudbroker.api.sandbox import read_info, sandbox_dir

    if count != "unlimited" and not count.isdigit():
        raise UsageError(f"the count must be a whole number or 'unlimited', got {count!r}")
    stock = None if count == "unlimited" else int(count)
    sandbox.capacity(read_info(sandbox_dir(directory)), provider, place, instance_type, stock)
    print(f"{provider}: {count} more {instance_type} in {place}")


@app.command("logs", rich_help_panel="Placements and failover")
def logs(
    placement_id: str,
    side: str = typer.Option("primary", "--side", help="primary or standby (the roles now)."),
    state: str = typer.Option(
        None, "--state", help="State file or postgresql:// URL (CLOUDBROKER_STATE)."
    ),
) -> None:
    """The output of the placement's job on one side (sandbox instances)."""
    from cloudbroker.api.sandbox import job_logs

    found = job_logs(state, placement_id, side)
    for provider, instance_id, instance_state, path in found:
        print(f"== {provider} {instance_id} ({instance_state})")
        sys.stdout.write(path.read_text(encoding="utf-8", errors="replace"))
