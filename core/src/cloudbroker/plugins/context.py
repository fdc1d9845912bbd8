"""The context every hook receives, so the contract can grow without breaking plugins."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class HookContext:
    """Per-provider view of the run: its settings, its environment, its logger.

    ``settings`` is the provider's table from the user's config file (``[providers.aliyun]``);
    ``env`` is where credentials and endpoint overrides are read from (``os.environ`` unless a
    caller injects another mapping, as tests do). Providers read credentials through
    :meth:`secret` so that a missing one yields ``None`` rather than an exception.
    """

    provider: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    timeout: float = 30.0
    offline: bool = False

    @property
    def log(self) -> logging.Logger:
        """``cloudbroker.plugins.provider.<name>``: where the provider's warnings and calls go."""
        return logging.getLogger(f"cloudbroker.plugins.provider.{self.provider}")

    def secret(self, *names: str) -> str | None:
        """The first non-empty environment variable among ``names``, else None."""
        for name in names:
            value = self.env.get(name)
            if value:
                return value
        return None

    def setting(self, name: str, default: Any = None) -> Any:
        return self.settings.get(name, default)
