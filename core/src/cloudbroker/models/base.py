"""The base of every contract model, where a fact came from (:class:`Source`), the markets."""

from __future__ import annotations

from datetime import date, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Model(BaseModel):
    """Base for contract models: immutable, and strict about unknown fields."""

    # defer_build: a model's validator is built on first use, so a command pays only for
    # the models it touches (startup time matters for `quote`).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Source(Model):
    """Where a fact came from and when it was true: shown by ``quote --explain``."""

    name: str = Field(description="Publisher and document, e.g. 'AWS EC2 docs: capacity blocks'")
    url: str | None = None
    as_of: date
    trust: str | None = Field(
        default=None,
        pattern=r"^(high|medium|low)(: .+)?$",
        description="For a second-hand value: 'high', 'medium' or 'low', then why, e.g. "
        "'medium: copied from the buy page by a third party, 2023'; None = not stated",
    )


#: A price older than this is shown with a caution (prices move; re-check before buying).
STALE_AFTER = timedelta(days=365)


def cautions(as_of: date, trust: str | None, today: date) -> tuple[str, ...]:
    """Why a sourced value needs checking before use: its age, or trust below high."""
    found = []
    if today - as_of > STALE_AFTER:
        found.append(f"as of {as_of.isoformat()}, older than 12 months")
    if trust and not trust.startswith("high"):
        found.append(f"trust {trust}")
    return tuple(found)


class Market(StrEnum):
    """How capacity is bought. The minimum rental is a property of the market, not the cloud."""

    ON_DEMAND = "on-demand"
    SPOT = "spot"
    CAPACITY_BLOCK = "capacity-block"
    SUBSCRIPTION = "subscription"
