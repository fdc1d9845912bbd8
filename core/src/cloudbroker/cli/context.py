"""The application context of one command: the plugin manager, the state stores and the
consoles it works with, each built when first asked for.

The root callback puts one on the click context (``ctx.obj``) and makes it the current one
for the run; a test (or an embedder) passes its own to :func:`cloudbroker.cli.main`
(``context=``) to run a command on fake clouds, with no patching of module attributes.
Every command reaches the core through :mod:`cloudbroker.api` with what this holds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the API is imported when first used: `--help` needs none of it
    from rich.console import Console

    from cloudbroker.api import PluginManager
    from cloudbroker.api.placing import BrokerEvent, Engine, Replicator
    from cloudbroker.api.state import Store


class AppContext:
    """What the commands share. ``plugins``: a manager to use whatever is asked (a test's
    fake clouds); by default every installed provider is loaded once per ``offline`` flag
    (offline: catalogs only; online: they may ask their clouds). ``replicator``: how
    checkpoints are copied (default: rclone). ``console`` / ``err_console``: where the
    answer and the progress go."""

    def __init__(
        self,
        *,
        plugins: PluginManager | None = None,
        replicator: Replicator | None = None,
        console: Console | None = None,
        err_console: Console | None = None,
    ) -> None:
        self._given = plugins
        self._loaded: dict[bool, PluginManager] = {}
        self.replicator = replicator
        self._console, self._err_console = console, err_console

    def plugins(self, *, offline: bool = True) -> PluginManager:
        """The plugin manager; loaded (with the config file's settings) on first use."""
        if self._given is not None:
            return self._given
        if offline not in self._loaded:
            from cloudbroker import api

            self._loaded[offline] = api.load_plugins(offline=offline)
        return self._loaded[offline]

    @property
    def console(self) -> Console:
        """Where the answer goes (stdout)."""
        if self._console is None:
            from cloudbroker.cli.output import console

            self._console = console
        return self._console

    @property
    def err_console(self) -> Console:
        """Where progress, notes and warnings go (stderr)."""
        if self._err_console is None:
            from cloudbroker.cli.output import err_console

            self._err_console = err_console
        return self._err_console

    def state(self, location: str | os.PathLike[str] | None, *, read_only: bool = False) -> Store:
        """The existing state store at ``location``: only ``place`` creates one, so a
        mistyped path is an error."""
        from cloudbroker.api.state import open_state

        return open_state(location, read_only=read_only)

    def state_to_read(self, location: str | os.PathLike[str] | None) -> tuple[Store, bool]:
        """The existing store, and whether it could be opened for writing."""
        from cloudbroker.api.state import state_to_read

        return state_to_read(location)

    def broker(
        self,
        store: Store | Callable[[], Store],
        on_event: Callable[[BrokerEvent], None] | None = None,
    ) -> Engine:
        """The placement engine on ``store`` with the plugins allowed to call their clouds;
        commands that show no progress still say on stderr what they wait for."""
        from cloudbroker.api import placing

        if on_event is None:
            from cloudbroker.cli.progress import Lines

            on_event = Lines(self.err_console).broker
        return placing.engine(
            self.plugins(offline=False), store, replicator=self.replicator, on_event=on_event
        )


_active: ContextVar[AppContext | None] = ContextVar("cloudbroker_cli_context", default=None)


def activate(context: AppContext) -> None:
    """Make ``context`` the current one until the run ends (the root callback's)."""
    _active.set(context)


@contextmanager
def run() -> Iterator[None]:
    """One command's run: whatever context it activates is gone when it ends, so a test's
    fakes never leak into the next command."""
    token = _active.set(None)
    try:
        yield
    finally:
        _active.reset(token)


def current() -> AppContext:
    """The context of the command being run, or a new one outside a command (a function of
    the CLI called directly)."""
    return _active.get() or AppContext()
