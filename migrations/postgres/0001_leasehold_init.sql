-- leasehold job store, PostgreSQL.
-- Times are store-clock milliseconds since the Unix epoch (BIGINT), read
-- from the database clock (clock_timestamp()) inside each transaction.
-- Unsigned 64-bit values (ids, tokens, versions, digests) are stored as
-- BIGINT; the outcome digest keeps its bit pattern.

CREATE TABLE leasehold_jobs (
    id               BIGINT PRIMARY KEY,
    queue            TEXT    NOT NULL,
    payload          BYTEA   NOT NULL,
    priority         INTEGER NOT NULL,
    run_at           BIGINT  NOT NULL,
    state            TEXT    NOT NULL
        CHECK (state IN ('pending', 'running', 'succeeded', 'dead', 'cancelled')),
    attempt          BIGINT  NOT NULL CHECK (attempt >= 0),
    max_attempts     BIGINT  NOT NULL CHECK (max_attempts >= 1),
    token            BIGINT  NOT NULL CHECK (token >= 0),
    holder           TEXT,
    expires_at       BIGINT,
    cancel_requested BOOLEAN NOT NULL,
    result           BYTEA,
    error            TEXT,
    released_token   BIGINT,
    released_digest  BIGINT,
    idempotency_key  TEXT,
    version          BIGINT  NOT NULL CHECK (version >= 1),
    created_at       BIGINT  NOT NULL,
    updated_at       BIGINT  NOT NULL
);

-- Idempotency keys are unique; jobs without a key cost no index entry.
CREATE UNIQUE INDEX leasehold_jobs_idempotency_key
    ON leasehold_jobs (idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Job ids: taken before the core's enqueue transition builds the row.
CREATE SEQUENCE leasehold_job_ids AS BIGINT START 1;

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
-- transaction, holding the core's history event as JSON. Append-only; read
-- in seq order (per job, seq order is version order). `json`, not `jsonb`:
-- written on every transition, rarely queried.
CREATE TABLE lease_events (
    seq     BIGSERIAL PRIMARY KEY,
    job_id  BIGINT NOT NULL,
    version BIGINT NOT NULL,
    at      BIGINT NOT NULL,
    event   JSON   NOT NULL
);
