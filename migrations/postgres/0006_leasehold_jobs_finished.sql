-- no-transaction
-- The prune scan: terminal jobs by the store time they finished (a
-- terminal row never changes again, so `updated_at` is its finish time).
-- The scan reads at most a batch of entries from the oldest one, however
-- large the table; without this index it would read the whole table.
--
-- Built CONCURRENTLY, outside a transaction (hence the first line, which
-- tells sqlx so, and this file's single statement): on a table that
-- already holds millions of jobs, a plain CREATE INDEX would block every
-- enqueue, claim and release until it finished.
CREATE INDEX CONCURRENTLY IF NOT EXISTS leasehold_jobs_finished
    ON leasehold_jobs (updated_at, id)
    WHERE state IN ('succeeded', 'dead', 'cancelled');
