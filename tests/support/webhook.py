"""A local webhook receiver for the notification tests (Apprise's ``json://`` posts here)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: In the webhook's URL: a token that must never be logged or shown.
SECRET = "s3cr3t-T0KEN"


class Receiver:
    """A local webhook: each POSTed JSON body kept; ``gate`` (when set) holds every answer."""

    def __init__(self, status: int = 200) -> None:
        self.bodies: list[dict] = []
        self.arrived = threading.Semaphore(0)
        self.gate: threading.Event | None = None
        self.answered = 0  # requests answered (a held one is not, until the gate opens)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.bodies.append(json.loads(body))
                receiver.arrived.release()
                if receiver.gate is not None:
                    receiver.gate.wait(30)
                self.send_response(status)
                self.end_headers()
                receiver.answered += 1

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"json://127.0.0.1:{self.server.server_port}/hook?token={SECRET}"

    def wait(self, count: int) -> list[dict]:
        """The bodies once ``count`` have arrived (within 20 s: a failure, not a hang)."""
        while len(self.bodies) < count:
            assert self.arrived.acquire(timeout=20), f"{len(self.bodies)} of {count} arrived"
        return self.bodies

    def close(self) -> None:
        if self.gate is not None:
            self.gate.set()
        self.server.shutdown()
        self.server.server_close()
