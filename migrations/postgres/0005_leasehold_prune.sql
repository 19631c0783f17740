-- Retention (pruning finished jobs), PostgreSQL. See
-- leasehold_core::transition::prune and docs/RETENTION.md.
--
-- Per schedule name, the latest plan time whose job was pruned: a fire of
-- a plan time at or before it is refused, since the key that answered it
-- (leasehold_jobs_idempotency_key, 0002) went with the job. Kept when the
-- schedule is removed, as its jobs' keys were. Job ids need no mark here:
-- they come from the sequence leasehold_job_ids, which never goes back.
CREATE TABLE leasehold_pruned_plan_times (
    name      TEXT   PRIMARY KEY,
    plan_time BIGINT NOT NULL
);

-- The prune scan: terminal jobs by the store time they finished (a
-- terminal row never changes again, so `updated_at` is its finish time).
-- The scan reads at most a batch of entries from the oldest one, however
-- large the table; without this index it would read the whole table.
--
-- Built in the migration's transaction, which blocks writes to
-- leasehold_jobs while it builds. Not CONCURRENTLY: that waits for every
-- other transaction of the database, including another process's
-- migration waiting on sqlx's migration lock, which this one holds (a
-- deadlock, met when several stores migrated at once). On a table that
-- already holds millions of jobs, build it by hand first, without
-- blocking anyone, and this statement then does nothing:
--   CREATE INDEX CONCURRENTLY leasehold_jobs_finished ON leasehold_jobs
--       (updated_at, id) WHERE state IN ('succeeded', 'dead', 'cancelled');
CREATE INDEX IF NOT EXISTS leasehold_jobs_finished
    ON leasehold_jobs (updated_at, id)
    WHERE state IN ('succeeded', 'dead', 'cancelled');
