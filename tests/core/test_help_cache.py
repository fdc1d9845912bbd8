"""The help cache on a terminal: the replayed page is the bytes typer writes there."""

from __future__ import annotations

import fcntl
import io
import os
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from cloudbroker.cli import help_cache

#: Runs the entry point as the console script does (``main()``: the cache is offered the
#: page) or as an embedder does (``main(argv)``: typer writes straight to the terminal),
#: then tells in a file (stdout and stderr are the terminal) whether typer was imported.
PROBE = """
import sys
how, flag, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.argv = ["cloudbroker", *argv]
try:
    from cloudbroker.cli import main
    main() if how == "cached" else main(argv)
finally:
    with open(flag, "w") as f:
        f.write(str("typer" in sys.modules))
"""


def in_terminal(
    argv: list[str], env: dict[str, str], cache: Path | None, columns: int
) -> tuple[bytes, bool]:
    """What a terminal ``columns`` wide shows for ``cloudbroker ARGV`` (through the help
    cache at ``cache``, or straight from typer if None); and whether typer was used."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, columns, 0, 0))
    flag = Path(env["HOME"]) / "typer-used"
    how = "direct" if cache is None else "cached"
    process = subprocess.Popen(
        [sys.executable, "-c", PROBE, how, str(flag), *argv],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=dict(env, CLOUDBROKER_CACHE=str(cache or Path(env["HOME"]) / "none")),
    )
    os.close(slave)
    shown = b""
    try:
        while chunk := os.read(master, 65536):
            shown += chunk
    except OSError:  # EIO: the child has closed the terminal
        pass
    finally:
        os.close(master)
    assert process.wait(timeout=60) == 0, shown
    return shown, flag.read_text() == "True"


@pytest.fixture
def terminal_env(clean_env):
    """A colour terminal as a user has one: no variable forcing colours, width or a mode."""
    env = {
        k: v
        for k, v in clean_env.items()
        if k not in help_cache.ENV and not k.startswith(("_TYPER", "TYPER", "CLOUDBROKER"))
    }
    return dict(env, TERM="xterm-256color", LANG="C.UTF-8")


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["--help"], ["quote", "--help"], []])
def test_a_terminals_help_page_is_replayed_byte_for_byte(terminal_env, tmp_path, argv):
    cache = tmp_path / "cache"
    first, typer_first = in_terminal(argv, terminal_env, cache, 100)
    second, typer_second = in_terminal(argv, terminal_env, cache, 100)
    typer_wrote, _ = in_terminal(argv, terminal_env, None, 100)

    assert typer_first and not typer_second  # recorded, then replayed without typer
    assert first == second == typer_wrote
    assert b"\x1b[" in first and b"Usage:" in first  # rendered for a colour terminal
    assert b"\r\n" in first  # through the terminal's own line discipline

    narrow, typer_narrow = in_terminal(argv, terminal_env, cache, 60)
    assert typer_narrow and narrow != first  # another width: another page, rendered anew
    assert max(len(line) for line in narrow.split(b"\r\n")) < max(
        len(line) for line in first.split(b"\r\n")
    )


def test_the_key_tells_a_terminal_from_a_pipe(monkeypatch):
    class Stdout(io.TextIOWrapper):
        tty = False

        def isatty(self) -> bool:
            return self.tty

    stdout = Stdout(io.BytesIO(), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", stdout)
    piped = help_cache.key(["--help"])
    stdout.tty = True
    assert help_cache.key(["--help"]) not in (None, piped)
    for name, value in [("COLORTERM", "truecolor"), ("PY_COLORS", "1"), ("TERM", "dumb")]:
        before = help_cache.key(["--help"])
        monkeypatch.setenv(name, value)
        assert help_cache.key(["--help"]) != before, name


def test_the_recording_buffer_answers_isatty_as_stdout_did(monkeypatch, tmp_path):
    monkeypatch.setenv("CLOUDBROKER_CACHE", str(tmp_path))
    seen = []
    for tty in (False, True):

        class Stdout(io.TextIOWrapper):
            def isatty(self, tty: bool = tty) -> bool:
                return tty

        monkeypatch.setattr(sys, "stdout", Stdout(io.BytesIO(), encoding="utf-8"))
        with help_cache.record(["--help"]):
            seen.append(sys.stdout.isatty())
            print("page")
    assert seen == [False, True]
    assert len(list((tmp_path / "help").iterdir())) == 2  # one page per kind of stdout
