-- Schedules (periodic jobs), SQLite. See leasehold_core::schedule.
-- A plan time's job is an ordinary row of leasehold_jobs whose
-- idempotency_key is 'leasehold:schedule:<name>@<plan time ms>': the unique
-- index leasehold_jobs_idempotency_key (0001) is the constraint that holds
-- "at most one job per (schedule, plan time)", whichever scheduler fires.
-- Removing a schedule leaves its jobs (and so its keys) in place.

CREATE TABLE leasehold_schedules (
    name         TEXT    PRIMARY KEY,
    queue        TEXT    NOT NULL,
    payload      BLOB    NOT NULL,
    rule_kind    TEXT    NOT NULL CHECK (rule_kind IN ('cron', 'every')),
    cron_expr    TEXT,
    time_zone    TEXT,
    interval_ms  INTEGER CHECK (interval_ms > 0),
    catch_up_max INTEGER CHECK (catch_up_max >= 1),
    jitter_ms    INTEGER NOT NULL CHECK (jitter_ms >= 0),
    max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
    version      INTEGER NOT NULL CHECK (version >= 1),
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    CHECK ((rule_kind = 'cron' AND cron_expr IS NOT NULL AND time_zone IS NOT NULL
            AND interval_ms IS NULL)
        OR (rule_kind = 'every' AND cron_expr IS NULL AND time_zone IS NULL
            AND interval_ms IS NOT NULL))
);
