"""Option values shared by several commands: bounded numbers, durations, names, rates, files.

Every value a user types is checked here, against a stated range, before the library sees it:
a huge, non-finite, over-precise or empty value is one line naming the option and what it
accepts, never an overflow deep in the arithmetic. Declare an option with its kind::

    hours: Decimal = options.option(options.HOURS, "1", "--hours", help="Job length in hours.")

Bounds (documented in docs/commands.md, "Input limits"): the numeric ones are in
:mod:`cloudbroker.models.limits`, where the library checks them too (numbers in ASCII digits only);
names of at most 256 printable characters, a startup script of at most 64 KiB (no cloud
accepts more user data than 32 KiB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudbroker.errors import UsageError, quoted
from cloudbroker.models import limits

if TYPE_CHECKING:  # the fast quote parses with these kinds and imports neither
    import typer

    from cloudbroker.money import FxRate, Money

#: ASCII digits only: ``\d`` alone also matches ``٣`` or ``３``, which no one means as a time.
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)?", re.ASCII)
_SECONDS: dict[str | None, Decimal | int] = {
    "ms": Decimal("0.001"),
    "s": 1,
    "m": 60,
    "h": 3600,
    None: 1,
}


class Kind:
    """How one kind of option value is parsed; ``parse`` raises a UsageError naming the option."""

    metavar = "TEXT"

    def parse(self, text: str, option: str) -> Any:
        raise NotImplementedError

    def callback(self, param: typer.CallbackParam, value: Any) -> Any:
        """Typer's callback: ``param`` names the option in the error."""
        option = param.opts[0] if param.opts else (param.name or "value")
        if value is None:
            return None
        if isinstance(value, list | tuple):
            return [self.parse(v, option) for v in value]
        return self.parse(value, option)


@dataclass(frozen=True)
class Number(Kind):
    """A number within ``range`` (:mod:`cloudbroker.models.limits`, which the library checks too).

    ``whole`` numbers are returned as ``int``, the others as ``Decimal``.
    """

    range: limits.Range

    @property
    def metavar(self) -> str:  # type: ignore[override]
        return "INTEGER" if self.range.whole else "NUMBER"

    @property
    def accepted(self) -> str:
        return self.range.accepted

    def parse(self, text: str, option: str) -> Decimal | int:
        def bad(must: str) -> UsageError:
            return UsageError(
                f"{option} must be {must}, got {quoted(text)}; accepted: {self.accepted}"
            )

        kind = "a whole number" if self.range.whole else "a number"
        written = str(text).strip()
        if not written.isascii():  # Decimal() also reads '١٢' and '１２'
            raise bad(f"{kind} in ASCII digits")
        try:
            number = Decimal(written)
        except InvalidOperation:
            raise bad(kind) from None
        must = self.range.problem(number)
        if must:
            raise bad(must)
        return self.range.value(number)


class Duration(Kind):
    """``30s``, ``15m``, ``1h``, ``500ms`` or plain seconds, from 1 ms to 30 days: seconds."""

    metavar = "DURATION"

    def parse(self, text: str, option: str) -> float:
        accepted = "1ms to 30 days, e.g. 500ms, 30s, 15m, 1h"
        match = _DURATION.fullmatch(str(text).strip())
        if not match:
            raise UsageError(
                f"{option} must be a duration, got {quoted(text)}; accepted: {accepted}"
            )
        seconds = Decimal(match.group(1)) * _SECONDS[match.group(2)]
        if limits.SECONDS.problem(seconds):
            raise UsageError(
                f"{option} must be from 1ms to 30 days, got {quoted(text)}; accepted: {accepted}"
            )
        return float(seconds)


@dataclass(frozen=True)
class Text(Kind):
    """A name (GPU, region, provider...): not empty, printable, at most ``chars`` characters."""

    chars: int = 256

    def parse(self, text: str, option: str) -> str:
        value = str(text).strip()
        if not value:
            raise UsageError(f"{option} must not be empty")
        if not value.isprintable():
            raise UsageError(f"{option} must be printable text, got {quoted(value)}")
        if len(value) > self.chars:
            raise UsageError(
                f"{option} must be at most {self.chars} characters, got {quoted(value)}"
            )
        return value


def parse_fx(text: str, today: date) -> FxRate:
    """Parse ``--fx CNY=7.10`` (units of CNY per USD) into a rate dated ``today``."""
    from cloudbroker.money import CURRENCIES, PIVOT, FxRate, parse_currency, parse_decimal

    currency, sep, value = text.partition("=")
    others = ", ".join(c for c in CURRENCIES if c != PIVOT)
    try:
        currency = parse_currency(currency, "--fx currency") if sep else ""
    except UsageError:
        currency = ""
    if not currency or currency == PIVOT:
        raise UsageError(
            f"malformed --fx {text!r}; expected CURRENCY=RATE per {PIVOT}, e.g. --fx CNY=7.10 "
            f"(currencies: {others}; RMB is CNY)"
        )
    amount = parse_decimal(value, "--fx rate", positive=True)
    return FxRate(base=PIVOT, quote=currency, rate=amount, as_of=today, source="--fx (user)")


class Fx(Kind):
    """``CURRENCY=RATE`` per US dollar, the rate bounded like any number."""

    metavar = "CUR=RATE"

    def parse(self, text: str, option: str) -> FxRate:
        rate = parse_fx(TEXT.parse(text, option), date.today())
        RATE.parse(str(rate.rate), f"{option} rate")
        return rate


class Budget(Kind):
    """An amount and a currency, ``5000CNY`` or ``5000 CNY``, bounded: a placement's budget."""

    metavar = "AMOUNT"

    def parse(self, text: str, option: str) -> Money:
        from cloudbroker.api.arguments import budget

        return budget(TEXT.parse(text, option), option)


@dataclass(frozen=True)
class TextFile(Kind):
    """A UTF-8 text file of at most ``limit`` bytes, read safely (no FIFO, no device): its text."""

    limit: int
    metavar = "FILE"

    def parse(self, text: str, option: str) -> str:
        from cloudbroker.api.arguments import read_text

        return read_text(Path(TEXT.parse(text, option)).expanduser(), option, self.limit)


def option(kind: Kind, default: Any, *names: str, **extra: Any) -> Any:
    """A ``typer.Option`` whose value (each value, when repeated) ``kind`` parses."""
    import typer

    # typer reads this annotation to pass the parameter; resolved here, so that parsing a
    # value without typer (cloudbroker.cli.fast) does not import it
    Kind.callback.__annotations__["param"] = typer.CallbackParam
    return typer.Option(
        default, *names, parser=str, callback=kind.callback, metavar=kind.metavar, **extra
    )


TEXT = Text()
#: A file or folder name: printable, at most PATH_MAX (4,096) characters.
PATH = Text(4096)

GPUS = Number(limits.GPUS)
HOURS = Number(limits.HOURS)
YEARS = Number(limits.YEARS)
DAYS = Number(limits.DAYS)
MINUTES = Number(limits.MINUTES)
GB = Number(limits.GB)
GPU_MEMORY_GB = Number(limits.GPU_MEMORY_GB)
SHARE = Number(limits.SHARE)
PER_DAY = Number(limits.PER_DAY)
PERCENT = Number(limits.PERCENT)
RATE = Number(limits.RATE)
OFFERS = Number(limits.OFFERS)
LAYERS = Number(limits.LAYERS)
HIDDEN = Number(limits.HIDDEN)
HEADS = Number(limits.HEADS)
VOCAB = Number(limits.VOCAB)
BATCH = Number(limits.BATCH)
TOKENS = Number(limits.TOKENS)
ZERO = Number(limits.ZERO)
PARALLEL = Number(limits.PARALLEL)
RANK = Number(limits.RANK)
SEQUENCES = Number(limits.SEQUENCES)
WORK_TOKENS = Number(limits.WORK_TOKENS)
SAMPLES = Number(limits.SAMPLES)
EPOCHS = Number(limits.EPOCHS)
MFU = Number(limits.MFU)
ONPREM = {key: Number(bound) for key, bound in limits.ONPREM.items()}
FAILURES = Number(limits.FAILURES)
DURATION = Duration()
FX = Fx()
BUDGET = Budget()
#: No cloud accepts more than 32 KiB of user data: read at most twice that (each cloud's own
#: limit is checked before any launch).
SCRIPT = TextFile(64 * 1024)
