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
