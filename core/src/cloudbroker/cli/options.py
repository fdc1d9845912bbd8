"""Option values shared by several commands: bounded numbers, durations, names, rates, files.

Every value a user types is checked here, against a stated range, before the library sees it:
a huge, non-finite, over-precise or empty value is one line naming the option and what it
accepts, never an overflow deep in the arithmetic. Declare an option with its kind::

    hours: Decimal = options.option(options.HOURS, "1", "--hours", help="Job length in hours.")

Bounds (documented in the README, "Input limits"): a job or a horizon at most 100 years,
data at most 10 PB, at most 64 GPUs per instance, durations from 1 ms to 30 days, at most
9 digits after the decimal point, names of at most 256 printable characters, a startup
script of at most 64 KiB (no cloud accepts more user data than 32 KiB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import typer

from cloudbroker.config import read_text
from cloudbroker.errors import UsageError, quoted
from cloudbroker.money import FxRate, parse_fx

#: Digits after the decimal point a number may have: enough for any price or share, and no
#: 1e-400 that the money arithmetic cannot round.
PLACES = 9

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_SECONDS = {"ms": Decimal("0.001"), "s": 1, "m": 60, "h": 3600, None: 1}


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
    """A number from ``low`` to ``high`` (``low`` itself excluded when ``open_low``) of ``unit``.

    ``whole`` numbers are returned as ``int``, the others as ``Decimal``.
    """

    low: Decimal | int
    high: Decimal | int
    unit: str
    note: str = ""
    open_low: bool = False
    whole: bool = False

    @property
    def metavar(self) -> str:  # type: ignore[override]
        return "INTEGER" if self.whole else "NUMBER"

    @property
    def accepted(self) -> str:
        if self.whole:
            span = f"{self.low:,} to {self.high:,}"
        else:
            span = f"{'(' if self.open_low else '['}{self.low:,}, {self.high:,}]"
        return " ".join(part for part in (span, self.unit, self.note and f"({self.note})") if part)

    def parse(self, text: str, option: str) -> Decimal | int:
        def bad(must: str) -> UsageError:
            return UsageError(
                f"{option} must be {must}, got {quoted(text)}; accepted: {self.accepted}"
            )

        try:
            number = Decimal(str(text).strip())
        except InvalidOperation:
            raise bad("a whole number" if self.whole else "a number") from None
        if not number.is_finite():
            raise bad("a finite number")
        if self.whole and number != number.to_integral_value():
            raise bad("a whole number")
        if number < self.low or (self.open_low and number == self.low):
            raise bad(
                f"at least {self.low}" if self.whole or not self.open_low else f"> {self.low}"
            )
        if number > self.high:
            raise bad(f"at most {self.high:,}")
        if not self.whole and number.normalize().as_tuple().exponent < -PLACES:  # type: ignore[operator]
            raise bad(f"a number with at most {PLACES} digits after the decimal point")
        return int(number) if self.whole else number + 0  # + 0: -0 is 0


@dataclass(frozen=True)
class Duration(Kind):
    """``30s``, ``15m``, ``1h``, ``500ms`` or plain seconds, from 1 ms to ``days`` days: seconds."""

    days: int = 30
    metavar = "DURATION"

    def parse(self, text: str, option: str) -> float:
        accepted = f"1ms to {self.days} days, e.g. 500ms, 30s, 15m, 1h"
        match = _DURATION.match(str(text).strip())
        if not match:
            raise UsageError(
                f"{option} must be a duration, got {quoted(text)}; accepted: {accepted}"
            )
        seconds = Decimal(match.group(1)) * _SECONDS[match.group(2)]
        if not Decimal("0.001") <= seconds <= self.days * 86400:
            raise UsageError(
                f"{option} must be from 1ms to {self.days} days, got {quoted(text)}; "
                f"accepted: {accepted}"
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


@dataclass(frozen=True)
class Fx(Kind):
    """``CURRENCY=RATE`` per US dollar, the rate bounded like any number."""

    metavar = "CUR=RATE"

    def parse(self, text: str, option: str) -> FxRate:
        rate = parse_fx(TEXT.parse(text, option), date.today())
        RATE.parse(str(rate.rate), f"{option} rate")
        return rate


@dataclass(frozen=True)
class TextFile(Kind):
    """A UTF-8 text file of at most ``limit`` bytes, read safely (no FIFO, no device): its text."""

    limit: int
    metavar = "FILE"

    def parse(self, text: str, option: str) -> str:
        return read_text(Path(TEXT.parse(text, option)).expanduser(), option, self.limit)


def option(kind: Kind, default: Any, *names: str, **extra: Any) -> Any:
    """A ``typer.Option`` whose value (each value, when repeated) ``kind`` parses."""
    return typer.Option(
        default, *names, parser=str, callback=kind.callback, metavar=kind.metavar, **extra
    )


TEXT = Text()

GPUS = Number(1, 64, "GPUs per instance", whole=True)
HOURS = Number(0, 876_000, "hours", "100 years", open_low=True)
YEARS = Number(0, 100, "years", open_low=True)
DAYS = Number(0, 36_500, "days", "100 years")
MINUTES = Number(0, 10_080, "minutes", "one week")
GB = Number(0, 10_000_000, "GB", "10 PB")
GPU_MEMORY_GB = Number(0, 10_000, "GB per GPU")
SHARE = Number(0, 1, "", "a share of the time: 0.3 is 30 %", open_low=True)
PER_DAY = Number(0, 1_440, "per day", "one a minute")
PERCENT = Number(0, 99, "%")
RATE = Number(0, 1_000_000, "units of the currency per USD", open_low=True)
OFFERS = Number(1, 10_000, "offers", whole=True)
#: The shape of a model and of its work (``size``, and ``quote --model``).
LAYERS = Number(1, 10_000, "layers", whole=True)
HIDDEN = Number(1, 1_000_000, "", whole=True)
HEADS = Number(1, 100_000, "heads", whole=True)
VOCAB = Number(1, 10_000_000, "tokens", whole=True)
BATCH = Number(1, 1_000_000, "sequences per GPU", whole=True)
TOKENS = Number(1, 100_000_000, "tokens", whole=True)
ZERO = Number(0, 3, "", "the ZeRO stage", whole=True)
PARALLEL = Number(1, 100_000, "GPUs", whole=True)
RANK = Number(1, 100_000, "", whole=True)
SEQUENCES = Number(1, 1_000_000, "sequences", whole=True)
#: ``tco``'s on-prem inputs, amounts in the currency given with them.
ONPREM = {
    "server_price": Number(0, 1_000_000_000, "per server"),
    "power_kw": Number(0, 1_000, "kW"),
    "pue": Number(1, 10, "", "facility power / IT power"),
    "electricity": Number(0, 100, "per kWh"),
    "colo": Number(0, 100_000, "per kW-month"),
}
FAILURES = Number(1, 1_000, "consecutive failed checks", whole=True)
DURATION = Duration()
FX = Fx()
#: No cloud accepts more than 32 KiB of user data: read at most twice that (each cloud's own
#: limit is checked before any launch).
SCRIPT = TextFile(64 * 1024)
