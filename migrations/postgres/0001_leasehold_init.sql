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
    updated_at       BIGINT  NOT NULL,
    CONSTRAINT leasehold_jobs_idempotency_key UNIQUE (idempotency_key)
);

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

-- Parallelism: running jobs per queue.
CREATE INDEX leasehold_jobs_running_queue
    ON leasehold_jobs (queue)
    WHERE state = 'running';

-- Audit log: one row per accepted transition, written in the same
-- transaction, holding the core's history event as JSON.
CREATE TABLE lease_events (
    seq     BIGSERIAL PRIMARY KEY,
    job_id  BIGINT NOT NULL,
    version BIGINT NOT NULL,
    at      BIGINT NOT NULL,
    event   JSONB  NOT NULL
);

CREATE INDEX lease_events_job ON lease_events (job_id, version);
