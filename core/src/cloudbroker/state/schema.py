"""The state file's schema: versioned migrations, applied in order (they only add)."""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema
    """
    CREATE TABLE placements (
        id TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        spec TEXT NOT NULL,            -- JSON: the plan (job, both sides, offers, costs)
        primary_side TEXT NOT NULL,    -- 'a' or 'b'
        status TEXT NOT NULL           -- planned | starting | up | failing-over | stopping | down
    );
    CREATE TABLE instances (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        placement_id TEXT NOT NULL REFERENCES placements(id),
        side TEXT NOT NULL,
        provider TEXT NOT NULL,
        region TEXT NOT NULL,
        instance_type TEXT NOT NULL,
        idempotency_key TEXT NOT NULL UNIQUE,
        instance_id TEXT,              -- NULL until the cloud answered
        state TEXT NOT NULL,           -- launching | unconfirmed | pending | running | ...
        updated_at REAL NOT NULL
    );
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        placement_id TEXT NOT NULL,
        at REAL NOT NULL,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL           -- JSON
    );
    CREATE TABLE leases (
        placement_id TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at REAL NOT NULL
    );
    CREATE TABLE failovers (
        placement_id TEXT PRIMARY KEY,
        attempt INTEGER NOT NULL,
        step TEXT NOT NULL,
        data TEXT NOT NULL             -- JSON: detected_at, reason, rpo, offers tried, ...
    );
    """,
    # 2: fencing tokens (grow on every take-over of a lease; a release keeps the row)
    """
    ALTER TABLE leases ADD COLUMN token INTEGER NOT NULL DEFAULT 0;
    """,
)
