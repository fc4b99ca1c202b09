#!/usr/bin/env bash
# The job-transition lab (setup.sql): for each variant and phase, the time of the statements, the WAL
# records they wrote (pg_waldump), the HOT updates, and the CPU of the walsender that feeds Debezium.
# Needs the local stack up (`npm run stack -- up`); drops its scratch schemas at the end.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../../.. && pwd)
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
export PGPASSWORD=sched
P=(psql -h 127.0.0.1 -p 55432 -U sched sched -Atq -v ON_ERROR_STOP=1)
"${P[@]}" -f setup.sql 2>&1 | grep -v NOTICE || true
WS=$("${P[@]}" -c "SELECT pid FROM pg_stat_replication LIMIT 1")
TICK=$(getconf CLK_TCK)
for s in lab_a lab_b lab_c; do
  for ph in create claim start success; do
    bs=2000; if [ "$ph" = start ] || [ "$ph" = success ]; then bs=500; fi
    l0=$("${P[@]}" -c "SELECT pg_current_wal_lsn()"); w0=$(awk '{print $14+$15}' "/proc/$WS/stat")
    h0=$("${P[@]}" -c "SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE schemaname='$s' AND relname='job'")
    t0=$(date +%s%N)
    "${P[@]}" -c "CALL lab_run('$s', '$ph', 100000, $bs)"
    t1=$(date +%s%N)
    sleep 1.5 # the walsender catches up
    l1=$("${P[@]}" -c "SELECT pg_current_wal_lsn()"); w1=$(awk '{print $14+$15}' "/proc/$WS/stat")
    h1=$("${P[@]}" -c "SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE schemaname='$s' AND relname='job'")
    recs=$("$PG_BIN/pg_waldump" -p "$ROOT/.stack/postgres/data/pg_wal" -s "$l0" -e "$l1" --stats 2>/dev/null | awk '/^Total/{print $2}')
    echo "$s $ph: $(( (t1 - t0) / 1000000 )) ms, WAL records $recs, HOT $((h1 - h0)), walsender $(( (w1 - w0) * 1000 / TICK )) ms CPU"
  done
  echo "$s heap: $("${P[@]}" -c "SELECT pg_size_pretty(pg_relation_size('$s.job'))")"
done
"${P[@]}" -c "DROP SCHEMA lab_a CASCADE; DROP SCHEMA lab_b CASCADE; DROP SCHEMA lab_c CASCADE; DROP PROCEDURE lab_run(text, text, int, int)" 2>&1 | grep -v NOTICE || true
