"""The root command loads a command's module only when that command is asked for."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from cloudbroker.cli import commands
from cloudbroker.cli.root import app, command


def test_the_table_names_every_command_and_the_module_that_registers_it():
    commands.load_all()
    registered = [info.name for info in app.registered_commands]
    groups = [info.name for info in app.registered_groups]
    assert sorted([*registered, *groups]) == sorted(commands.MODULES)  # each once
    for info in app.registered_commands:
        assert info.callback is not None
        assert info.callback.__module__ == commands.MODULES[info.name or ""], info.name
    for group in app.registered_groups:
        module = sys.modules[commands.MODULES[group.name or ""]]
        assert any(value is group.typer_instance for value in vars(module).values()), group.name


def test_the_root_lists_and_builds_every_command():
    root = command()
    assert list(root.commands) == list(commands.MODULES)
    for name in commands.MODULES:
        assert root.commands[name].name == name


def imported_by(argv: list[str]) -> list[str]:
    """The cloudbroker modules a fresh process has imported once ``main(argv)`` returned."""
    program = textwrap.dedent(
        f"""
        import json, sys
        from cloudbroker.cli import main
        try:
            main({argv!r})
        except SystemExit:
            pass
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("cloudbroker"))))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_status_imports_its_own_command_module_and_no_other():
    loaded = imported_by(["status", "--help"])
    assert "cloudbroker.cli.broker.status" in loaded
    others = {module for name, module in commands.MODULES.items() if name != "status"}
    assert not others & set(loaded)


def test_a_typo_is_still_answered_with_the_command_it_resembles(capsys):
    from cloudbroker.cli import main

    try:
        main(["statu"])
    except SystemExit as exc:
        assert exc.code == 2
    assert "Did you mean 'status'?" in capsys.readouterr().err
