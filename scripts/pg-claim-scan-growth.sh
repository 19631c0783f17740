#!/usr/bin/env bash
# Usage: scripts/with-postgres.sh scripts/pg-claim-scan-growth.sh
#
# How the claim scan's index reads grow with the dead entries claims leave
# in leasehold_jobs_pending until a VACUUM (docs/PERFORMANCE.md, "The claim
# scan walks dead index entries"): 200,000 pending jobs, claimed and
# released 256 at a time, with EXPLAIN (ANALYZE, BUFFERS) of one claim scan
# fresh, after each 33,280 claims, and after a VACUUM. Needs a database
# without leasehold's tables (a fresh cluster from with-postgres.sh); run
# from the repository root.
set -euo pipefail
P="psql $DATABASE_URL -Xq -v ON_ERROR_STOP=1"
for f in migrations/postgres/0001*.sql migrations/postgres/0002*.sql migrations/postgres/0003*.sql; do $P -f $f; done
$P -c "insert into leasehold_jobs (id,queue,payload,priority,run_at,state,attempt,max_attempts,token,cancel_requested,version,created_at,updated_at) select g,'bench','\x00',0,1000+g,'pending',0,3,0,false,1,0,0 from generate_series(1,200000) g"
$P -c "vacuum analyze leasehold_jobs"
cat > /tmp/claim.sql <<'SQL'
with c as (select id from leasehold_jobs where queue='bench' and state='pending' and run_at <= 9999999999 order by priority desc, run_at, id limit 256 for update skip locked)
update leasehold_jobs j set state='running', expires_at=99999, token=token+1, version=version+1 from c where j.id=c.id;
update leasehold_jobs set state='succeeded', expires_at=null, version=version+1 where state='running' and expires_at=99999 and id < (select min(id) from leasehold_jobs where state='pending');
SQL
explain_scan() { $P -c "explain (analyze, buffers, costs off, timing off) select id from leasehold_jobs where queue='bench' and state='pending' and run_at <= 9999999999 order by priority desc, run_at, id limit 256 for update skip locked" | grep -E "Buffers|Execution|Index|Rows Removed" | head -6; }
echo "== fresh"; explain_scan
for round in 1 2 3; do
  t0=$(date +%s.%N)
  for i in $(seq 1 130); do $P -f /tmp/claim.sql; done
  t1=$(date +%s.%N)
  echo "== after $((round*130*256)) claims ($(echo "$t1 - $t0" | bc) s for 130 claim+release pairs)"; explain_scan
done
$P -c "vacuum leasehold_jobs"; echo "== after vacuum"; explain_scan
