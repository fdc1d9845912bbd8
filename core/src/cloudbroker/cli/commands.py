"""Where each command lives, so that a command line imports the module of its command alone.

``cloudbroker status`` needs :mod:`cloudbroker.cli.broker.status`, not the quote engine, the
sandbox and the web server that other commands import: importing every command module cost
``status`` over a second. The root group (:mod:`cloudbroker.cli.root`) reads this table to
list the commands and imports a module when its command is asked for; each module registers
its commands on the app when imported, as before. A test checks the table against what the
modules register.
"""

from __future__ import annotations

import importlib

_BROKER = "cloudbroker.cli.broker."

#: Command (or group) -> the module that registers it, in the order of the help's panels:
#: plan, placements, storage, setup (commands before groups, as typer lists them).
MODULES: dict[str, str] = {
    "quote": "cloudbroker.cli.quote",
    "gpus": "cloudbroker.cli.gpus",
    "size": "cloudbroker.cli.size",
    "tco": "cloudbroker.cli.tco",
    "place": _BROKER + "place",
    "up": _BROKER + "place",
    "status": _BROKER + "status",
    "serve": _BROKER + "serve",
    "down": _BROKER + "control",
    "failover": _BROKER + "control",
    "watch": _BROKER + "control",
    "list": _BROKER + "inventory",
    "gc": _BROKER + "inventory",
    "report": _BROKER + "report",
    "watchers": _BROKER + "watchers",
    "sync": "cloudbroker.cli.sync",
    "providers": "cloudbroker.cli.providers",
    "check": "cloudbroker.cli.check",
    "logs": "cloudbroker.cli.sandbox",
    "catalog": "cloudbroker.cli.catalog",
    "config": "cloudbroker.cli.config",
    "plugin": "cloudbroker.cli.plugin",
    "sandbox": "cloudbroker.cli.sandbox",
}


def load(name: str) -> None:
    """Import the module of command ``name`` (it registers itself on the app)."""
    importlib.import_module(MODULES[name])


def load_all() -> None:
    """Import every command module: for the root's help page, which lists them all."""
    for name in MODULES:
        load(name)
