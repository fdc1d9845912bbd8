"""The bounds of every number a job is described by, shared by the library and the CLI.

A huge, non-finite or over-precise number would overflow deep in the arithmetic (a float of
``1e308`` hours times 3,600 is ``inf``) or ask the money arithmetic for digits it cannot
round. The CLI checks what a user types against these ranges (:mod:`cloudbroker.cli.options`,
with messages naming the option); the library checks what a caller passes with
:meth:`Range.check` (messages naming the field, not a flag).

Bounds (documented in docs/commands.md, "Input limits"): a job or a horizon at most 100 years,
data at most 10 PB, at most 64 GPUs per instance, durations from 1 ms to 30 days, at most
9 digits after the decimal point.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Generic, TypeVar, cast

from cloudbroker.errors import UsageError, quoted

#: Digits after the decimal point a number may have: enough for any price or share, and no
#: 1e-400 that the money arithmetic cannot round.
PLACES = 9

#: A number as a library caller may give it.
Number = int | float | Decimal

#: What a range gives: ``int`` for a ``whole`` range, else ``Decimal``.
N = TypeVar("N", int, Decimal)


@dataclass(frozen=True)
class Range(Generic[N]):
    """Numbers from ``low`` to ``high`` (``low`` itself excluded when ``open_low``) of ``unit``.

    ``whole`` numbers are whole (and given as ``int``: declare such a range ``Range[int]``,
    the others ``Range[Decimal]``); ``places`` caps the digits after the point (None: no cap,
    for durations in seconds, which never reach money).
    """

    low: Decimal | int
    high: Decimal | int
    unit: str
    note: str = ""
    open_low: bool = False
    whole: bool = False
    places: int | None = PLACES

    @property
    def accepted(self) -> str:
        if self.whole:
            span = f"{self.low:,} to {self.high:,}"
        else:
            span = f"{'(' if self.open_low else '['}{self.low:,}, {self.high:,}]"
        return " ".join(part for part in (span, self.unit, self.note and f"({self.note})") if part)

    def problem(self, number: Decimal) -> str | None:
        """What ``number`` must be instead ("at most 876,000"), None when it is in range."""
        if not number.is_finite():
            return "a finite number"
        if self.whole and number != number.to_integral_value():
            return "a whole number"
        if number < self.low or (self.open_low and number == self.low):
            return f"at least {self.low}" if self.whole or not self.open_low else f"> {self.low}"
        if number > self.high:
            return f"at most {self.high:,}"
        exponent = number.normalize().as_tuple().exponent
        if not self.whole and self.places is not None and exponent < -self.places:  # type: ignore[operator]
            return f"a number with at most {self.places} digits after the decimal point"
        return None

    def check(self, value: object, what: str) -> N:
        """A library caller's ``value`` if in range (``int`` when whole, else ``Decimal``).

        UsageError naming ``what`` otherwise; a float is read as it prints (0.1 is 0.1).
        """
        must: str | None = "a number"
        if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
            number = Decimal(repr(value) if isinstance(value, float) else value)
            must = self.problem(number)
            if must is None:
                return self.value(number)
        raise UsageError(f"{what} must be {must}, got {quoted(value)}; accepted: {self.accepted}")

    def value(self, number: Decimal) -> N:
        """An in-range ``number`` as it is used: ``int`` when whole, else ``Decimal`` (-0 is 0)."""
        return cast(N, int(number) if self.whole else number + 0)


GPUS: Range[int] = Range(1, 64, "GPUs per instance", whole=True)
HOURS: Range[Decimal] = Range(0, 876_000, "hours", "100 years", open_low=True)
YEARS: Range[Decimal] = Range(0, 100, "years", open_low=True)
DAYS: Range[Decimal] = Range(0, 36_500, "days", "100 years")
MINUTES: Range[Decimal] = Range(0, 10_080, "minutes", "one week")
GB: Range[Decimal] = Range(0, 10_000_000, "GB", "10 PB")
GPU_MEMORY_GB: Range[Decimal] = Range(0, 10_000, "GB per GPU")
SHARE: Range[Decimal] = Range(0, 1, "", "a share of the time: 0.3 is 30 %", open_low=True)
PER_DAY: Range[Decimal] = Range(0, 1_440, "per day", "one a minute")
PERCENT: Range[Decimal] = Range(0, 99, "%")
RATE: Range[Decimal] = Range(0, 1_000_000, "units of the currency per USD", open_low=True)
OFFERS: Range[int] = Range(1, 10_000, "offers", whole=True)
#: How often something happens or how long it may take, in seconds: 1 ms to 30 days.
SECONDS: Range[Decimal] = Range(
    Decimal("0.001"), 30 * 86_400, "seconds", "1 ms to 30 days", places=None
)
#: The shape of a model and of its work (``size``, and ``quote --model``).
LAYERS: Range[int] = Range(1, 10_000, "layers", whole=True)
HIDDEN: Range[int] = Range(1, 1_000_000, "", whole=True)
HEADS: Range[int] = Range(1, 100_000, "heads", whole=True)
VOCAB: Range[int] = Range(1, 10_000_000, "tokens", whole=True)
BATCH: Range[int] = Range(1, 1_000_000, "sequences per GPU", whole=True)
TOKENS: Range[int] = Range(1, 100_000_000, "tokens", whole=True)
ZERO: Range[int] = Range(0, 3, "", "the ZeRO stage", whole=True)
PARALLEL: Range[int] = Range(1, 100_000, "GPUs", whole=True)
RANK: Range[int] = Range(1, 100_000, "", whole=True)
SEQUENCES: Range[int] = Range(1, 1_000_000, "sequences", whole=True)
#: ``tco``'s on-prem inputs, amounts in the currency given with them.
ONPREM: dict[str, Range[Decimal]] = {
    "server_price": Range(0, 1_000_000_000, "per server"),
    "power_kw": Range(0, 1_000, "kW"),
    "pue": Range(1, 10, "", "facility power / IT power"),
    "electricity": Range(0, 100, "per kWh"),
    "colo": Range(0, 100_000, "per kW-month"),
}
FAILURES: Range[int] = Range(1, 1_000, "consecutive failed checks", whole=True)
#: How many placements one ``watch --all`` process may take.
PLACEMENTS: Range[int] = Range(1, 1_000_000, "placements", whole=True)
#: A placement's budget, in the currency it is given in.
BUDGET: Range[Decimal] = Range(0, 1_000_000_000_000, "", open_low=True)
#: Work-based quotes (``quote --tokens / --samples --epochs / --mfu``).
WORK_TOKENS: Range[int] = Range(1, 10**15, "tokens", "a quadrillion", whole=True)
SAMPLES: Range[int] = Range(1, 10**12, "samples per epoch", whole=True)
EPOCHS: Range[Decimal] = Range(0, 100_000, "epochs", open_low=True)
MFU: Range[Decimal] = Range(0, 1, "", "a share of the dense peak: 0.4 is 40 %", open_low=True)
