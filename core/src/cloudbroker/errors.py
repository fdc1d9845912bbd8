"""Typed errors: the only exceptions that cross the provider contract.

Providers translate their SDK's exceptions into these, so the core (and the user) sees one
vocabulary whatever the cloud. Every message is one line meant for a person: it says what
went wrong and, where possible, what to do. Secrets never go into a message.
"""

from __future__ import annotations

QUOTED_CHARS = 60


def quoted(value: object, limit: int = QUOTED_CHARS) -> str:
    """A user's value as a message shows it: quoted and escaped (one line), cut at ``limit``."""
    text = str(value)
    shown = repr(text[:limit])
    return shown if len(text) <= limit else f"{shown}... ({len(text):,} characters)"


class CloudBrokerError(Exception):
    """Base of every error cloudbroker reports to a user (one line, no traceback)."""

    exit_code = 1

    def __init__(self, message: str, *, provider: str | None = None) -> None:
        super().__init__(message)
        self.provider = provider

    def __str__(self) -> str:
        message = super().__str__()
        return f"{self.provider}: {message}" if self.provider else message


class UsageError(CloudBrokerError):
    """The user's input is invalid (bad option, unknown GPU, malformed value)."""

    exit_code = 2


class ConfigError(CloudBrokerError):
    """A required setting is missing or malformed in the user's config or environment."""

    exit_code = 2


class AuthError(CloudBrokerError):
    """Credentials are missing, wrong or not allowed to do this."""


class CapacityError(CloudBrokerError):
    """The cloud has no capacity for this instance type in this zone right now."""


class NotFoundError(CloudBrokerError):
    """The instance, bucket or resource does not exist (any more)."""


class ThrottledError(CloudBrokerError):
    """The cloud asked us to slow down; retried with backoff before it surfaces."""


class ProviderUnavailable(CloudBrokerError):
    """The cloud or the plugin could not answer (network, 5xx, timeout, crash)."""


class PluginError(CloudBrokerError):
    """A plugin broke the contract: failed to load, or returned data that does not validate."""


class NotTerminated(CloudBrokerError):
    """``down`` could not terminate everything a placement launched (its cloud did not
    answer, or a launch is still in flight): those instances may still cost money.

    ``left`` holds ``(provider, instance id or launch key, why)`` for each; calling ``down``
    again terminates them once their cloud answers.
    """

    def __init__(self, placement_id: str, left: list[tuple[str, str, str]]) -> None:
        shown = "; ".join(f"{provider} {what}: {why}" for provider, what, why in left[:3])
        more = f" (and {len(left) - 3} more)" if len(left) > 3 else ""
        super().__init__(
            f"{len(left)} instance(s) of {placement_id} not terminated yet: {shown}{more}; "
            "run down again to terminate them"
        )
        self.placement_id = placement_id
        self.left = left
