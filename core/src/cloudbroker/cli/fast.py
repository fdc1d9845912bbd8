"""The fast path of ``cloudbroker quote``: a plain quote served without typer or pydantic.

(And of ``cloudbroker providers``, from the same indexes: see
:func:`cloudbroker.api.plain.provider_rows`.)

:func:`serve` takes the process's command line. When it is a plain quote (the options in
:data:`VALUES` and :data:`FLAGS` only, each given once in the ``--name value`` or
``--name=value`` form) and every provider it asks has a current compiled index
(:mod:`cloudbroker.catalogs.catalog_index`), it prints the quote exactly as the full path would and
returns True. Anything else returns False before printing a character, and the full path
(typer) answers: other options, ``--help``, a value it would refuse, an error, a provider
without an index. So the fast path never words an error of its own.

The options are the ``fast`` ones of :data:`cloudbroker.cli.quote_options.QUOTE`, the
one definition the typer command in :mod:`cloudbroker.cli.quote` is built from too.
"""

from __future__ import annotations

from typing import Any

from cloudbroker.cli.quote_options import QUOTE

#: Options with a value: option -> (parameter, kind (None: plain text), repeatable).
VALUES = {
    o.flag: (name, o.kind, o.repeatable)
    for name, o in QUOTE.items()
    if o.fast and o.default is not False
}
#: Flags: option -> parameter.
FLAGS = {o.flag: name for name, o in QUOTE.items() if o.fast and o.default is False}
#: The typer command's defaults of these parameters (parsed by their kinds, as typer does).
DEFAULTS = {name: o.default for name, o in QUOTE.items() if o.fast}


def parse(argv: list[str]) -> dict[str, Any] | None:
    """The parameters of a plain ``quote`` command line, parsed as typer would; None when
    it is not one (or a value would be refused: the full path words the error)."""
    if not argv or argv[0] != "quote":
        return None
    given: dict[str, Any] = {}
    words = iter(argv[1:])
    for word in words:
        name, sep, value = word.partition("=")
        if name in FLAGS and not sep and FLAGS[name] not in given:
            given[FLAGS[name]] = True
            continue
        if name not in VALUES:
            return None
        field, kind, repeatable = VALUES[name]
        if not sep:
            value = next(words, "")
            if not value or value.startswith("-"):
                return None  # missing, or an option typer may read either way
        if field in given and not repeatable:
            return None
        parsed = value if kind is None else kind.parse(value, name)
        given[field] = [*given.get(field, []), parsed] if repeatable else parsed
    values = {**DEFAULTS, **given}
    for field in ("hours", "market", "currency", "top"):
        if field not in given:
            option = f"--{field}"
            kind = VALUES[option][1]
            assert kind is not None
            values[field] = kind.parse(DEFAULTS[field], option)
    return values


def serve(argv: list[str]) -> bool:
    """Print the answer to ``argv`` if it is a plain quote or ``providers`` the indexes
    answer; False (nothing printed) if not.

    Declining is :class:`~cloudbroker.quote.fast_quote.Fallback` or a
    :class:`~cloudbroker.errors.CloudBrokerError` (a value the full path refuses, a broken
    config: it words them). Any other exception is a bug of the fast path: it is logged (a
    warning naming it, the traceback at debug level), and the full path answers.
    """
    try:
        answer = _answer(argv)
    except Exception as exc:
        from cloudbroker.api.plain import Fallback
        from cloudbroker.errors import CloudBrokerError

        if not isinstance(exc, Fallback | CloudBrokerError):
            import logging

            log = logging.getLogger(__name__)
            log.warning(
                "the fast path failed (%s: %s); the full path answers", type(exc).__name__, exc
            )
            log.debug("the fast path's failure", exc_info=exc)
        return False
    if answer is None:
        return False
    from cloudbroker.cli.output import console, output_width

    console.width = output_width()
    answer()
    return True


def _answer(argv: list[str]) -> Any:
    """What prints the answer to ``argv`` (None: not a plain quote or ``providers``); an
    exception when the fast path cannot answer it exactly."""
    values = parse(argv)
    if values is None and argv != ["providers"]:
        return None
    from cloudbroker.api import plain

    if plain.sets_disk():
        return None  # the launched system disk may differ from the priced one: a line
    if values is None:
        from cloudbroker.cli.providers_table import print_table

        rows = plain.provider_rows()
        return lambda: print_table(rows)
    result = plain.run(plain.job(values))
    keys = [k.strip() for k in values["columns"].split(",")] if values["columns"] else None
    from cloudbroker.cli.quote_render import COLUMNS, _print_table

    if keys and not set(keys) <= {c.key for c in COLUMNS if c.key != "availability"}:
        return None  # the full path names the unknown column
    return lambda: _print_table(result, wide=values["wide"], keys=keys, notes=values["notes"])  # type: ignore[arg-type]
