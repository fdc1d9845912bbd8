"""Leases of placements (with fencing tokens) and the registry of ``watch --all`` processes.

Expiry is judged by the database's ``clock()`` (PostgreSQL's: one clock for every host).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cloudbroker.state.connection import Connection

#: Placements per statement of a batch release (SQLite before 3.32 takes 999 arguments).
BATCH = 500
LEASE_COLUMNS = "placement_id, holder, token, expires_at, expires_at > clock() AS live"


class Leases(Connection):
    """Who acts for a placement now, and which watchers are alive."""

    def acquire_lease(self, placement_id: str, holder: str, ttl: float) -> int | None:
        """Take (or renew) the lease; its fencing token, or None while another holds it live.

        Taking it over from another holder (live or expired) increments the token and writes
        a ``lease-taken`` event; from then on every write of this placement through this store
        checks the token.
        """
        with self.transaction(placement_id) as tx:
            row = tx.one(
                "SELECT holder, token, expires_at > clock() AS live FROM leases "
                "WHERE placement_id = ?",
                (placement_id,),
            )
            if row and row["holder"] != holder and row["live"]:
                return None
            taken = row is None or row["holder"] != holder
            token = 1 if row is None else row["token"] + taken
            tx.execute(
                "INSERT INTO leases (placement_id, holder, expires_at, token) "
                "VALUES (?, ?, clock() + ?, ?) "
                "ON CONFLICT(placement_id) DO UPDATE SET holder = excluded.holder, "
                "expires_at = excluded.expires_at, token = excluded.token",
                (placement_id, holder, ttl, token),
            )
            if taken:
                came_from = None if row is None else row["holder"]
                detail = {"holder": holder, "from": came_from, "token": token}
                self._event(tx, placement_id, "lease-taken", detail)
        self._fences[placement_id] = (holder, token)
        return token

    def renew_leases(self, holder: str, tokens: Mapping[str, int], ttl: float) -> set[str]:
        """Extend every lease ``holder`` holds with these tokens, in one statement; the
        placements whose lease was lost (taken over: another holder or token)."""
        if not tokens:
            return set()
        pairs = [value for pair in tokens.items() for value in pair]
        values = ", ".join(["(?, ?)"] * len(tokens))
        renewed = self._rows(
            "UPDATE leases SET expires_at = clock() + ? WHERE holder = ? AND "
            f"(placement_id, token) IN (VALUES {values}) RETURNING placement_id",
            (ttl, holder, *pairs),
        )
        return set(tokens) - {r["placement_id"] for r in renewed}

    def release_lease(self, placement_id: str, holder: str) -> None:
        """Let the lease go now; the row (and its token) stays so tokens only ever grow."""
        self.release_leases(holder, [placement_id])

    def release_leases(self, holder: str, placement_ids: Iterable[str]) -> None:
        """:meth:`release_lease` of each placement, in one statement per :data:`BATCH` (a
        watcher stopping gives back thousands: not one round trip each)."""
        ids = list(dict.fromkeys(placement_ids))
        for placement_id in ids:
            self._fences.pop(placement_id, None)
        for start in range(0, len(ids), BATCH):
            batch = tuple(ids[start : start + BATCH])
            self._rows(
                "UPDATE leases SET expires_at = 0 WHERE holder = ? AND placement_id IN "
                f"({', '.join('?' * len(batch))})",
                (holder, *batch),
            )

    def lease(self, placement_id: str) -> dict[str, Any] | None:
        """The lease row (``live``: not expired by the database's clock), or None."""
        leases = self._leases("placement_id", placement_id)
        return leases[0] if leases else None

    def leases(self, holder: str | None = None) -> list[dict[str, Any]]:
        """Every lease row (only ``holder``'s if given), expired and released ones too:
        placement_id, holder, token, expires_at and ``live``."""
        return self._leases("holder", holder)

    def _leases(self, column: str, value: str | None) -> list[dict[str, Any]]:
        query = f"SELECT {LEASE_COLUMNS} FROM leases"
        args: tuple[Any, ...] = ()
        if value is not None:
            query, args = f"{query} WHERE {column} = ?", (value,)
        rows = self._rows(query + " ORDER BY placement_id", args)
        return [{**r, "live": bool(r["live"])} for r in rows]

    # -- watchers (``watch --all``) -------------------------------------------------------

    def register_watcher(self, holder: str, host: str, pid: int, ttl: float) -> None:
        """Say that this watcher is alive for ``ttl`` seconds more (call it as a heartbeat)."""
        self._rows(
            "INSERT INTO watchers (holder, host, pid, seen_at, expires_at) "
            "VALUES (?, ?, ?, clock(), clock() + ?) "
            "ON CONFLICT(holder) DO UPDATE SET host = excluded.host, pid = excluded.pid, "
            "seen_at = excluded.seen_at, expires_at = excluded.expires_at",
            (holder, host, pid, ttl),
        )

    def live_watchers(self) -> list[dict[str, Any]]:
        """The watchers whose last heartbeat has not expired: holder, host, pid, seen_at."""
        return self._rows(
            "SELECT holder, host, pid, seen_at FROM watchers WHERE expires_at > clock() "
            "ORDER BY holder"
        )

    def remove_watcher(self, holder: str) -> None:
        self._rows("DELETE FROM watchers WHERE holder = ?", (holder,))
