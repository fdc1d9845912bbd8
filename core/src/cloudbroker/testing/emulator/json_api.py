"""An emulator of a JSON REST API with one API key: :class:`JsonEmulator`."""

from __future__ import annotations

import functools
import re
from typing import ClassVar

from cloudbroker.testing.emulator.server import Emulator
from cloudbroker.testing.emulator.wire import ApiError, Request, Response


class JsonEmulator(Emulator):
    """An emulator of a JSON REST API with one API key: only :meth:`Emulator.handle` to write.

    Declare :attr:`routes` (``("GET", "/v1/instances/{id}") -> "DescribeInstance"``; the
    ``{name}`` parts land in ``request.params``) and :attr:`Emulator.fault_errors`. Requests
    must carry ``Authorization: Bearer <access_key>`` (the key the test started the
    emulator with; ``secret_key`` is unused); errors are answered as ``{"error": {"code",
    "message", "request_id"}}``, the shape :func:`cloudbroker.plugins.rest.error_fields` reads.
    Override :meth:`authenticate` or :meth:`error` for another scheme or shape.
    """

    #: (method, path pattern) -> action name.
    routes: ClassVar[dict[tuple[str, str], str]] = {}

    def authenticate(self, request: Request) -> None:
        if request.header("authorization") != f"Bearer {self.access_key}":
            raise ApiError(401, "Unauthorized", "missing or unknown API key")

    def action(self, request: Request) -> str:
        for (method, pattern), action in self.routes.items():
            if method != request.method:
                continue
            found = _route_pattern(pattern).fullmatch(request.path)
            if found:
                request.params = found.groupdict()
                return action
        raise ApiError(404, "NotFound", f"no route {request.method} {request.path}")

    def error(self, error: ApiError, request: Request) -> Response:
        detail = {"code": error.code, "message": error.message, "request_id": request.request_id}
        return Response(error.status, {"error": detail})


@functools.cache
def _route_pattern(pattern: str) -> re.Pattern[str]:
    """``/v1/instances/{id}`` as a regular expression with one named group per part."""
    parts = re.split(r"\{(\w+)\}", pattern)
    return re.compile(
        "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^/]+)" for i, p in enumerate(parts))
    )
