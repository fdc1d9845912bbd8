"""Example Cloud's request signature: HMAC-SHA256 over method, path, time and body hash.

Shared by the client (which signs) and the emulator (which verifies), so the two cannot drift.
"""

from __future__ import annotations

import hashlib
import hmac

ACCESS_KEY_HEADER = "X-Ex-Access-Key"
DATE_HEADER = "X-Ex-Date"
SIGNATURE_HEADER = "X-Ex-Signature"
MAX_CLOCK_SKEW_SECONDS = 300


def signature(secret_key: str, method: str, path: str, timestamp: str, body: bytes) -> str:
    """Hex HMAC-SHA256 of ``METHOD\\nPATH\\nTIMESTAMP\\nsha256(body)`` keyed by the secret."""
    digest = hashlib.sha256(body).hexdigest()
    message = "\n".join((method.upper(), path, timestamp, digest)).encode()
    return hmac.new(secret_key.encode(), message, hashlib.sha256).hexdigest()
