-- Autovacuum visits leasehold_jobs after 1 % of its rows have died, not 20 %.
--
-- Why: a claim moves a row out of the partial index leasehold_jobs_pending,
-- but the old entry stays in that index until VACUUM removes it, and every
-- later claim scan of the queue steps over it (the entries of claimed jobs
-- sit at the front of the claim order). Measured (docs/PERFORMANCE.md): one
-- claim scan read 9 index pages on a vacuumed table and 617 after 100,000
-- claims; late in a 200,000-job run of the batched Worker it read 2,240
-- buffers in 2.4 ms, a third of a 7.4 ms merged batch.
--
-- PostgreSQL's default waits for dead rows to reach 20 % of the table, and
-- leasehold keeps every finished job, so that wait grows with the table:
-- with 10 million rows, 1 million claims pass between visits. At 1 %, a
-- visit comes after a number of dead rows proportional to the table, so a
-- vacuum's whole-index passes cost the same per job whatever the size.
-- The floor of 1,000 rows keeps a small, busy table from being vacuumed on
-- every pass of the launcher.
--
-- These are storage parameters of the table: an operator's own
-- `ALTER TABLE leasehold_jobs SET (...)` or `RESET (...)` overrides them.
-- How often the launcher looks (`autovacuum_naptime`, a minute by default)
-- is the server's setting, not the table's; see the README.
ALTER TABLE leasehold_jobs SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000
);
