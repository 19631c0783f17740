-- Retention (pruning finished jobs), SQLite. See leasehold_core::transition::prune.

-- The prune scan: terminal jobs by the store time they finished. A
-- terminal row never changes again, so `updated_at` is its finish time.
CREATE INDEX leasehold_jobs_finished
    ON leasehold_jobs (updated_at, id)
    WHERE state IN ('succeeded', 'dead', 'cancelled');

-- Job ids are MAX(id) + 1 under the write lock. Pruning the newest job
-- would hand its id out again, and a late release naming the pruned job
-- could then reach the new one: this single row keeps the largest id
-- ever pruned, and ids start above it.
CREATE TABLE leasehold_pruned_ids (
    one    INTEGER PRIMARY KEY CHECK (one = 1),
    max_id INTEGER NOT NULL
);

-- Per schedule name, the latest plan time whose job was pruned: a fire of
-- a plan time at or before it is refused, since the key that answered it
-- went with the job. Kept when the schedule is removed.
CREATE TABLE leasehold_pruned_plan_times (
    name      TEXT    PRIMARY KEY,
    plan_time INTEGER NOT NULL
);
