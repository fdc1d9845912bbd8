"""The fast path of ``cloudbroker quote``: a plain quote served without typer or pydantic.

(And of ``cloudbroker providers``, from the same indexes: see :func:`providers`.)

:func:`serve` takes the process's command line. When it is a plain quote (the options in
:data:`VALUES` and :data:`FLAGS` only, each given once in the ``--name value`` or
``--name=value`` form) and every provider it asks has a current compiled index
(:mod:`cloudbroker.catalog_index`), it prints the quote exactly as the full path would and
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


def ask(values: dict[str, Any]) -> Any:
    """The :class:`cloudbroker.quote.Job` of parsed values, checked as
    :func:`cloudbroker.api.prepare_quote` checks them; Fallback when it is not plain."""
    from cloudbroker import limits
    from cloudbroker.currency import parse_currency
    from cloudbroker.fast_quote import MARKETS, Fallback
    from cloudbroker.quote.job import Job
    from cloudbroker.regions import split
    from cloudbroker.vocabulary import MARKET_ALIASES, Ranking, market_named

    if not values["gpu"]:
        raise Fallback("no --gpu")
    market = MARKET_ALIASES.get(values["market"], values["market"])
    if market not in {m.value for m in MARKETS} or values["rank"] not in {r.value for r in Ranking}:
        raise Fallback("another market or ranking")
    count = values["count"]
    floor = values["min_gpu_memory"]
    return Job(
        gpu=values["gpu"],
        count=1 if count is None else limits.GPUS.check(count, "--count"),
        hours=limits.HOURS.check(values["hours"], "--hours"),
        markets=(market_named(market),),
        providers=split(values["provider"] or ()),
        regions=split(values["region"] or ()),
        min_gpu_memory_gb=None
        if floor is None
        else limits.GPU_MEMORY_GB.check(floor, "--min-gpu-memory"),
        currency=parse_currency(values["currency"], "--currency"),
        top=limits.OFFERS.check(values["top"], "--top"),
        ranking=Ranking(values["rank"]),
        count_is_default=count is None,
    )


def providers() -> list[dict[str, Any]]:
    """The rows of ``cloudbroker providers`` from the indexes: every installed provider must
    have a current one (it was loaded, so its status is ok). Fallback otherwise."""
    import os

    from cloudbroker import catalog_index
    from cloudbroker.fast_quote import Fallback
    from cloudbroker.provider_paths import credential_source

    env = os.environ
    installed = catalog_index.installed(env)
    if not installed or env.get("CLOUDBROKER_PLUGINS") or env.get("CLOUDBROKER_DISABLE_PLUGINS"):
        raise Fallback("switches: disabled providers are listed too")
    rows = []
    for name, (distribution, version) in sorted(installed.items()):
        index = catalog_index.open_index(name, (distribution, version))
        if index is None:
            raise Fallback(f"{name}: no current index")
        index.close()  # the header is all it reads
        source = credential_source(env, *index.credentials)
        storage = index.storage_credentials and credential_source(
            env, index.storage_credentials, ()
        )
        rows.append(
            {
                "name": name,
                "distribution": distribution,
                "version": version,
                "status": "ok",
                "hooks": list(index.hooks),
                "credentials": {"configured": source is not None, "source": source},
                "storage_credentials": {"configured": storage is not None, "source": storage}
                if index.storage_credentials
                else None,
                "catalog_as_of": index.as_of.isoformat(),
            }
        )
    return rows


def serve(argv: list[str]) -> bool:
    """Print the answer to ``argv`` if it is a plain quote or ``providers`` the indexes
    answer; False (nothing printed) if not.

    Declining is :class:`~cloudbroker.fast_quote.Fallback` or a
    :class:`~cloudbroker.errors.CloudBrokerError` (a value the full path refuses, a broken
    config: it words them). Any other exception is a bug of the fast path: it is logged (a
    warning naming it, the traceback at debug level), and the full path answers.
    """
    try:
        answer = _answer(argv)
    except Exception as exc:
        from cloudbroker.errors import CloudBrokerError
        from cloudbroker.fast_quote import Fallback

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
    from cloudbroker.config import load_config, provider_settings

    settings = provider_settings(load_config(None))  # a broken one fails on the full path
    if any("disk_gb" in each for each in settings.values()):
        return None  # the launched system disk may differ from the priced one: a line
    if values is None:
        from cloudbroker.cli.providers_table import print_table

        rows = providers()
        return lambda: print_table(rows)
    from cloudbroker.fast_quote import run

    result = run(ask(values))
    keys = [k.strip() for k in values["columns"].split(",")] if values["columns"] else None
    from cloudbroker.cli.quote_render import COLUMNS, _print_table

    if keys and not set(keys) <= {c.key for c in COLUMNS if c.key != "availability"}:
        return None  # the full path names the unknown column
    return lambda: _print_table(result, wide=values["wide"], keys=keys, notes=values["notes"])  # type: ignore[arg-type]
