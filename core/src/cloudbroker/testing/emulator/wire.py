"""What an emulator receives and answers: a Request, a Response, an ApiError."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from cloudbroker.testing.emulator.state import Fault


class ApiError(Exception):
    """An error the emulated cloud answers with: HTTP ``status``, the cloud's ``code``, a message.

    Raise it anywhere in :meth:`Emulator.authenticate`, :meth:`Emulator.action` or
    :meth:`Emulator.handle`; the kit logs it and renders it with :meth:`Emulator.error`.
    Injected faults are raised as ``ApiError(*Emulator.fault_errors[kind])``.
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass
class Request:
    """One API request as received: ``headers`` keys are lower-case, ``query`` keeps the last
    value of each name (``query_all(name)`` gives every value of a repeated one), ``body`` is
    the raw bytes (``json()`` decodes it; ``{}`` if empty)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()).upper())
    #: The ``{name}`` parts of a :class:`JsonEmulator` route, e.g. ``{"id": "exi-00000001"}``.
    params: dict[str, str] = field(default_factory=dict)
    #: The query string as sent (``a=1&a=2``), for signatures and repeated names.
    raw_query: str = ""
    #: A launch fault (``fail-later``) this request carries; see :meth:`Emulator.launched`.
    fault: Fault | None = None

    def query_all(self, name: str) -> list[str]:
        """Every value of the query parameter ``name``, in order (``[]`` when absent)."""
        return parse_qs(self.raw_query, keep_blank_values=True).get(name, [])

    def header(self, name: str, default: str = "") -> str:
        return self.headers.get(name.lower(), default)

    def json(self) -> Any:
        return json.loads(self.body or b"{}")


@dataclass
class Response:
    """What :meth:`Emulator.handle` returns: ``body`` is JSON-encoded unless it is bytes."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
