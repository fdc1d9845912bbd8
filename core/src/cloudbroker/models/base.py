"""The base of every contract model, where a fact came from (:class:`Source`), the markets."""

from __future__ import annotations

from datetime import date

from pydantic import BaseModel, ConfigDict, Field

from cloudbroker.models.vocabulary import STALE_AFTER, Market, cautions

__all__ = ["STALE_AFTER", "Market", "Model", "Source", "cautions"]


class Model(BaseModel):
    """Base for contract models: immutable, and strict about unknown fields."""

    # defer_build: a model's validator is built on first use, so a command pays only for
    # the models it touches (startup time matters for `quote`).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Source(Model):
    """Where a fact came from and when it was true: shown by ``quote --explain``."""

    name: str = Field(description="Publisher and document, e.g. 'AWS EC2 docs: capacity blocks'")
    url: str | None = None
    as_of: date = Field(description="When the fact was true: the price's own date where given")
    read_on: date | None = Field(
        default=None,
        description="When we read it; equal to as_of when the source does not date the price",
    )
    trust: str | None = Field(
        default=None,
        pattern=r"^(high|medium|low)(: .+)?$",
        description="For a second-hand value: 'high', 'medium' or 'low', then why, e.g. "
        "'medium: copied from the buy page by a third party, 2023'; None = not stated",
    )
