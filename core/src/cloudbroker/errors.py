"""Typed errors: the only exceptions that cross the provider contract.

Providers translate their SDK's exceptions into these, so the core (and the user) sees one
vocabulary whatever the cloud. Every message is one line meant for a person: it says what
went wrong and, where possible, what to do. Secrets never go into a message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

#: What an error carries for its caller to show (a sync's result, a mirror's deletions):
#: typed by the raiser, so this ground floor imports nothing of the rest.
Carried = TypeVar("Carried")

QUOTED_CHARS = 60

#: How an argument is spelled where a message is shown: its keyword by the library
#: (``data_from``), its option by the CLI (``--data-from``), so no library message names a flag.
Spelling = Callable[[str], str]

#: Around an argument's name in a message (:func:`arg`); never in a quoted value, which
#: :func:`quoted` shows escaped.
_ARG = "\x1f"


def keyword(field: str) -> str:
    """The library's spelling of an argument in a message: its keyword."""
    return field


def arg(field: str) -> str:
    """An argument's name in an error message, spelled when the message is shown: the
    raiser names the argument once and knows nothing of who called it."""
    return f"{_ARG}{field}{_ARG}"


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
        return self.spelled(keyword)

    def spelled(self, name: Spelling) -> str:
        """The message with each argument spelled by ``name`` (the CLI: as its option)."""
        parts = super().__str__().split(_ARG)  # odd parts: the arguments marked by arg()
        message = "".join(name(part) if i % 2 else part for i, part in enumerate(parts))
        return f"{self.provider}: {message}" if self.provider else message


class UsageError(CloudBrokerError):
    """The user's input is invalid (bad option, unknown GPU, malformed value)."""

    exit_code = 2


class ConfigError(CloudBrokerError):
    """A required setting is missing or malformed in the user's config or environment."""

    exit_code = 2


class NoOfferError(CloudBrokerError):
    """Nothing matched the job's filters (bad input); the message says what is closest."""

    exit_code = 2


class AuthError(CloudBrokerError):
    """Credentials are missing, wrong or not allowed to do this."""


class CapacityError(CloudBrokerError):
    """The cloud has no capacity for this instance type in this zone right now."""


class LaunchFailed(CloudBrokerError):
    """The cloud accepted a launch, then the instance failed (its state is ``failed``, as
    Tencent ``LAUNCH_FAILED`` or Huawei ``ERROR``): the broker tries the next offer."""


class NotFoundError(CloudBrokerError):
    """The instance, bucket or resource does not exist (any more)."""


class ThrottledError(CloudBrokerError):
    """The cloud asked us to slow down; retried with backoff before it surfaces."""


class ProviderUnavailable(CloudBrokerError):
    """The cloud or the plugin could not answer (network, 5xx, timeout, crash)."""


class PluginError(CloudBrokerError):
    """A plugin broke the contract: failed to load, or returned data that does not validate."""


class CatalogError(CloudBrokerError, ValueError):
    """A catalog or provider data file is unusable as a whole (missing, or does not parse).

    Also a ValueError: a catalog row's parser skips a row whose values raise one, and a bad
    value met while parsing a row is one.
    """


class DeadlineExceeded(ProviderUnavailable):
    """An rclone run did not finish within its time bound and was killed."""


class VerificationError(CloudBrokerError, Generic[Carried]):
    """A sync's destination does not hold what its source does, or rclone logged an error;
    ``result`` (a :class:`cloudbroker.storage.syncing.SyncResult`) lists the differences and
    errors."""

    def __init__(self, message: str, result: Carried) -> None:
        super().__init__(message)
        self.result = result


class DeleteRefused(UsageError, Generic[Carried]):
    """A mirror was stopped before it deleted anything; ``plan`` (a
    :class:`cloudbroker.storage.syncing.DeletePlan`) says what it would delete."""

    def __init__(self, message: str, plan: Carried) -> None:
        super().__init__(message)
        self.plan = plan


class StateError(CloudBrokerError):
    """The state file cannot be used: missing, corrupt, read-only, full, deleted."""


class Conflict(CloudBrokerError):
    """A write refused because the placement moved on (down requested, failover finished)."""


class LeaseLost(Conflict):
    """Another process took over the placement's lease: this one must not act on it."""


class SandboxError(CloudBrokerError):
    """The sandbox could not be started or stopped cleanly."""


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
