-- The audit log, one row per write statement instead of one per event.
--
-- Measured with pg_waldump on the batched Worker (issue 26): the per-event
-- rows of `lease_events` were 45% of the write-ahead log a job costs (three
-- events a job, each a heap tuple with its own index entry). A
-- `leasehold_audit` row holds every event one statement wrote, as a JSON
-- array in the order they were applied: a batch costs one tuple and one
-- index entry, and an array above TOAST's threshold (about 2 kB) is
-- compressed. Nothing is dropped: every event is still stored, in order.
CREATE TABLE leasehold_audit (
    seq    BIGSERIAL PRIMARY KEY,
    events JSON NOT NULL CHECK (json_typeof(events) = 'array')
);

-- Keep every event written under the previous schema, in its order: each
-- becomes a one-event row with its old sequence number.
INSERT INTO leasehold_audit (seq, events)
    SELECT seq, json_build_array(event) FROM lease_events ORDER BY seq;
SELECT setval(pg_get_serial_sequence('leasehold_audit', 'seq'),
              COALESCE((SELECT max(seq) FROM leasehold_audit), 1),
              (SELECT count(*) FROM leasehold_audit) > 0);
DROP TABLE lease_events;

-- One row per event, as the old table had them (`pos`: the event's place
-- in its row, from 1). Order by (seq, pos) for insertion order.
CREATE VIEW lease_events AS
    SELECT a.seq, e.pos,
           (e.event ->> 'job')::bigint     AS job_id,
           (e.event ->> 'version')::bigint AS version,
           (e.event ->> 'at')::bigint      AS at,
           e.event
    FROM leasehold_audit AS a
    CROSS JOIN LATERAL json_array_elements(a.events) WITH ORDINALITY AS e (event, pos);
