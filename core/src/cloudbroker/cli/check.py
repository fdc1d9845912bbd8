"""``cloudbroker check``: which clouds have usable credentials and answer a call, a line each.

Every provider is asked at once (the plugin manager's fan-out, one thread each, bounded by
``--timeout``): first ``provider_info`` (are credentials configured, and where from: never a
value), then, for those with credentials, one read-only live call, ``list_instances`` of the
instances this tool tagged (what ``gc`` asks), in the provider's configured regions.
"""

from __future__ import annotations

import time
from typing import Any

import typer

from cloudbroker import plugins
from cloudbroker.cli import app, fail, options
from cloudbroker.cli.output import console, print_json
from cloudbroker.launching import MANAGED_TAG

#: The tag every launched instance carries: the call lists only this tool's instances.
MANAGED = {MANAGED_TAG: "true"}


@app.command("check", rich_help_panel="Setup")
def check_command(
    timeout: float = options.option(
        options.DURATION, "20s", "--timeout", help="How long each cloud may take to answer."
    ),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Which clouds have usable credentials and can be called: one line each, all at once.

    Exits 1 when no cloud can be called.
    """
    manager = plugins.load(offline=False)
    infos = manager.provider_info(timeout=timeout)
    rows: dict[str, dict[str, Any]] = {}
    ready = []
    for name in sorted(manager.providers()):
        info = infos.results.get(name)
        if info is None:
            failure = next((f.reason for f in infos.failures if f.provider == name), "no answer")
            rows[name] = {"name": name, "usable": False, "said": f"plugin failed: {failure}"}
        elif not info.credentials.configured:
            hint = f": {info.credentials.hint}" if info.credentials.hint else ""
            rows[name] = {"name": name, "usable": False, "said": f"no credentials{hint}"}
        elif not manager.implements(name, "list_instances"):
            source = info.credentials.source or "configured"
            said = f"credentials from {source}; no live call to try (no list_instances)"
            rows[name] = {"name": name, "usable": False, "said": said}
        else:
            ready.append(name)
            rows[name] = {"name": name, "source": info.credentials.source}
    started = time.monotonic()
    answers = manager.list_instances(None, MANAGED, providers=ready, timeout=timeout)
    seconds = round(time.monotonic() - started, 3)
    for name in ready:
        source = rows[name].get("source") or "configured"
        if name in answers.results:
            count = len(answers.results[name])
            said = f"ok: credentials from {source}, called in {seconds:g} s ({count} managed)"
            rows[name].update(usable=True, said=said)
        else:
            reason = next((f.reason for f in answers.failures if f.provider == name), "")
            said = f"credentials from {source}, but the call failed: {reason}"
            rows[name].update(usable=False, said=said)
    if json_output:
        print_json(list(rows.values()))
    else:
        width = max((len(n) for n in rows), default=0)
        for row in rows.values():
            console.print(f"{row['name']:<{width}}  {row['said']}", markup=False, soft_wrap=True)
    if not any(row["usable"] for row in rows.values()):
        fail("no cloud can be called with the credentials found", 1)
