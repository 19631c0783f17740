#!/usr/bin/env bash
# Usage: scripts/with-postgres.sh scripts/pg-layout-experiment.sh
#
# Per-job server cost of claim + release on PostgreSQL, one backend, no
# client (docs/PERFORMANCE.md, "A layout with HOT updates"): the store's
# layout (partial indexes on `state`) against one whose job-row updates can
# be HOT (claimable and running jobs in tables of their own). N jobs (env,
# default 153,600) are claimed 256 at a time with FOR UPDATE SKIP LOCKED
# and released, in PL/pgSQL loops. Prints time and WAL per job and the
# share of HOT updates. Needs a database without these tables (a fresh
# cluster from with-postgres.sh).
set -euo pipefail
P="psql $DATABASE_URL -Xq -v ON_ERROR_STOP=1"
N=${N:-153600}
$P <<SQL
CREATE TABLE cur (id bigint primary key, queue text not null, payload bytea not null, priority int not null, run_at bigint not null, state text not null, attempt bigint not null, token bigint not null, holder text, expires_at bigint, result bytea, version bigint not null, updated_at bigint not null);
CREATE INDEX cur_pending ON cur (queue, priority DESC, run_at, id) WHERE state = 'pending';
CREATE INDEX cur_running ON cur (expires_at, id) WHERE state = 'running';
INSERT INTO cur SELECT g,'bench','\x0001020304050607',0,1000+g,'pending',0,0,NULL,NULL,NULL,1,0 FROM generate_series(1,$N) g;

CREATE TABLE hot (id bigint primary key, queue text not null, payload bytea not null, priority int not null, run_at bigint not null, state text not null, attempt bigint not null, token bigint not null, holder text, expires_at bigint, result bytea, version bigint not null, updated_at bigint not null) WITH (fillfactor = 40);
CREATE TABLE hot_pending (id bigint primary key, queue text not null, priority int not null, run_at bigint not null);
CREATE INDEX hot_pending_order ON hot_pending (queue, priority DESC, run_at, id);
CREATE TABLE hot_running (id bigint primary key, expires_at bigint not null);
CREATE INDEX hot_running_exp ON hot_running (expires_at, id);
INSERT INTO hot SELECT g,'bench','\x0001020304050607',0,1000+g,'pending',0,0,NULL,NULL,NULL,1,0 FROM generate_series(1,$N) g;
INSERT INTO hot_pending SELECT id, queue, priority, run_at FROM hot;
VACUUM ANALYZE;
SQL
$P <<'SQL'
CREATE FUNCTION run_cur(batches int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE ids bigint[]; b int;
BEGIN
 FOR b IN 1..batches LOOP
  -- claim 256
  WITH c AS (SELECT id FROM cur WHERE queue='bench' AND state='pending' ORDER BY priority DESC, run_at, id LIMIT 256 FOR UPDATE SKIP LOCKED)
  , u AS (UPDATE cur j SET state='running', token=token+1, holder='w', expires_at=99999, attempt=attempt+1, version=version+1, updated_at=2 FROM c WHERE j.id=c.id RETURNING j.id)
  SELECT array_agg(id) INTO ids FROM u;
  -- release them
  UPDATE cur j SET state='succeeded', holder=NULL, expires_at=NULL, result='\x01', version=version+1, updated_at=3 FROM unnest(ids) u(id) WHERE j.id=u.id;
 END LOOP;
END $$;
CREATE FUNCTION run_hot(batches int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE ids bigint[]; b int;
BEGIN
 FOR b IN 1..batches LOOP
  WITH c AS (SELECT id FROM hot_pending WHERE queue='bench' ORDER BY priority DESC, run_at, id LIMIT 256 FOR UPDATE SKIP LOCKED),
       d AS (DELETE FROM hot_pending p USING c WHERE p.id=c.id RETURNING p.id),
       r AS (INSERT INTO hot_running SELECT id, 99999 FROM d RETURNING id)
  SELECT array_agg(id) INTO ids FROM r;
  UPDATE hot j SET state='running', token=token+1, holder='w', expires_at=99999, attempt=attempt+1, version=version+1, updated_at=2 FROM unnest(ids) u(id) WHERE j.id=u.id;
  DELETE FROM hot_running WHERE id = ANY(ids);
  UPDATE hot j SET state='succeeded', holder=NULL, expires_at=NULL, result='\x01', version=version+1, updated_at=3 FROM unnest(ids) u(id) WHERE j.id=u.id;
 END LOOP;
END $$;
SQL
for t in cur hot; do
  $P -c "CHECKPOINT"
  w0=$($P -At -c "select pg_current_wal_lsn()")
  t0=$(date +%s.%N)
  $P -c "select run_$t($N/256)"
  t1=$(date +%s.%N)
  w1=$($P -At -c "select pg_current_wal_lsn()")
  echo "$t: $(echo "($t1-$t0)*1000000/$N" | bc) us per job, $($P -At -c "select pg_wal_lsn_diff('$w1','$w0')/$N") WAL bytes per job, $($P -At -c "select n_tup_hot_upd||' of '||n_tup_upd||' updates HOT' from pg_stat_user_tables where relname='$t'")"
done
