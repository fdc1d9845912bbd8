"""``cloudbroker --help`` (and ``COMMAND --help``) replayed from the cache, without typer.

Typer renders the help from every command's signature, which imports every command module
(and pydantic, through their annotations): half a second for a page that only changes when
the code does. The first time a help page is asked, the full path renders it and
:func:`record` keeps the bytes; the next time :func:`replay` prints them.

The key is everything the rendering depends on: the arguments and the program's name, the
stat of every module of the CLI and of typer, click and rich (an upgrade or an edit is
another key), whether stdout is a terminal and the size of the terminal on
stdin/stdout/stderr (rich reads it even when stdout is piped), and the variables rich,
typer and gettext read (``COLUMNS``, ``TERM``, ``COLORTERM``, ``NO_COLOR``,
``FORCE_COLOR``...). On a terminal the page is rendered into a buffer that answers
``isatty()`` as the terminal does, so rich picks the same colours and width: the bytes kept
are the bytes typer writes to that terminal. An encoding other than UTF-8, or a Windows
console (whose colours rich asks the console API for), is never cached.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import sys
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

from cloudbroker.api.early import cache_dir, write_atomic

#: Variables rich, typer (``typer.rich_utils`` and ``typer.core``, read when imported) and
#: gettext (typer's and click's messages) read when they render.
ENV = (
    "COLUMNS", "LINES", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE",
    "TTY_INTERACTIVE", "TERMINAL_WIDTH", "JUPYTER_COLUMNS", "JUPYTER_LINES", "PYCHARM_HOSTED",
    "PY_COLORS", "GITHUB_ACTIONS", "DATABRICKS_RUNTIME_VERSION",
    "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG",
)  # fmt: skip
_CLI = Path(__file__).parent


def _is_help(argv: list[str]) -> bool:
    """The root help (also no arguments at all) or a command's: words, then ``--help``."""
    if not argv:
        return True
    *words, last = argv
    return last == "--help" and all(w and not w.startswith("-") for w in words)


def _stamps(root: Path) -> list[tuple[str, int, int]]:
    found = []
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        found.append((str(path), st.st_mtime_ns, st.st_size))
    return found


def _terminal(fd: int) -> tuple[int, int] | None:
    try:
        return tuple(os.get_terminal_size(fd))  # type: ignore[return-value]
    except OSError:
        return None


def key(argv: list[str]) -> str | None:
    """The cache key of this help page here and now; None when it must not be cached."""
    encoding = (sys.stdout.encoding or "").lower().replace("-", "")
    if not _is_help(argv) or encoding != "utf8":
        return None
    if sys.stdout.isatty() and sys.platform == "win32":  # rich asks the console itself there
        return None
    from cloudbroker import __version__

    main = sys.modules.get("__main__")  # click names the program from these
    parts: list[object] = [__version__, argv, sys.argv[0], getattr(main, "__package__", None)]
    parts.append(sys.stdout.isatty())
    parts += [_terminal(fd) for fd in (0, 1, 2)]
    parts += [(name, os.environ.get(name)) for name in ENV]
    parts += sorted((k, v) for k, v in os.environ.items() if k.startswith(("_TYPER", "TYPER")))
    parts += _stamps(_CLI)
    for package in ("typer", "click", "rich"):
        spec = find_spec(package)
        if spec is not None and spec.origin:
            parts += _stamps(Path(spec.origin).parent)
    return hashlib.sha256(repr(parts).encode()).hexdigest()


class _Buffer(io.StringIO):
    """Collects what is printed, answering ``isatty()`` as the stream it stands in for.

    Rich and click decide colours from ``isatty()``, and take the size from the file
    descriptors (not from ``sys.stdout``): this is all a terminal's page needs to render
    the same. ``fileno()`` stays unsupported, so nothing can write past the buffer.
    """

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def _path(digest: str) -> Path:
    return cache_dir().parent / "help" / f"{digest}.txt"


def replay(argv: list[str]) -> bool:
    """Print the cached help page of ``argv``; False when there is none to print."""
    try:
        digest = key(argv)
        text = None if digest is None else _path(digest).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return False
    if text is None:
        return False
    sys.stdout.write(text)
    return True


@contextlib.contextmanager
def record(argv: list[str]) -> Iterator[None]:
    """Run the full path inside: its help page is printed and, if it succeeds, kept."""
    digest = key(argv)
    if digest is None:
        yield
        return
    real = sys.stdout
    buffer = _Buffer(real.isatty())
    shown = False  # the page was printed whole (not an error, not an interrupted run)
    sys.stdout = buffer
    try:
        yield
        shown = True
    except SystemExit as exc:
        shown = exc.code in (0, None)
        raise
    finally:
        sys.stdout = real
        text = buffer.getvalue()
        real.write(text)
        if shown and text:
            write_atomic(_path(digest), text.encode("utf-8"))
