-- leasehold job store, SQLite.
-- Times are store-clock milliseconds since the Unix epoch (INTEGER), read
-- from the adapter's StoreClock inside each write transaction.
-- Unsigned 64-bit values (ids, tokens, versions, digests) are stored as
-- INTEGER; the outcome digest keeps its bit pattern.

CREATE TABLE leasehold_jobs (
    id               INTEGER PRIMARY KEY,
    queue            TEXT    NOT NULL,
    payload          BLOB    NOT NULL,
    priority         INTEGER NOT NULL,
    run_at           INTEGER NOT NULL,
    state            TEXT    NOT NULL
        CHECK (state IN ('pending', 'running', 'succeeded', 'dead', 'cancelled')),
    attempt          INTEGER NOT NULL CHECK (attempt >= 0),
    max_attempts     INTEGER NOT NULL CHECK (max_attempts >= 1),
    token            INTEGER NOT NULL CHECK (token >= 0),
    holder           TEXT,
    expires_at       INTEGER,
    cancel_requested INTEGER NOT NULL,
    result           BLOB,
    error            TEXT,
    released_token   INTEGER,
    released_digest  INTEGER,
    idempotency_key  TEXT,
    version          INTEGER NOT NULL CHECK (version >= 1),
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);

-- Idempotency keys are unique; jobs without a key cost no index entry.
CREATE UNIQUE INDEX leasehold_jobs_idempotency_key
    ON leasehold_jobs (idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Claim: due pending jobs of a queue in claim order.
CREATE INDEX leasehold_jobs_pending
    ON leasehold_jobs (queue, priority DESC, run_at, id)
    WHERE state = 'pending';

-- Sweep: running jobs by expiry.
CREATE INDEX leasehold_jobs_running
    ON leasehold_jobs (expires_at, id)
    WHERE state = 'running';

-- Parallelism counts a queue's running jobs through leasehold_jobs_running
-- (running jobs are few: at most the workers' total concurrency).

-- Audit log: one row per accepted transition, written in the same
-- transaction, holding the core's history event as JSON text.
CREATE TABLE lease_events (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id  INTEGER NOT NULL,
    version INTEGER NOT NULL,
    at      INTEGER NOT NULL,
    event   TEXT    NOT NULL
);
