#!/usr/bin/env bash
# idle-measure.sh MODE [SERVER]: one server process (cowd by default) with the
# suite's settings (scripts/bench/servers.sh, mode idle), one 12 s wrk run on
# /f12k without and one with 10,000 idle connections held by
# scripts/bench/idle_conns.py, something measured for 8 s in the middle of
# each.  MODE:
#   syscalls  perf stat on the worker's system-call tracepoints (idle-syscalls.txt, 17:50 UTC)
#   profile   perf record -g on the worker, plus perf stat (idle-profile.txt, 17:45 UTC)
#   segments  nstat and ss -tin (idle-segments.txt, 17:54 UTC, SERVER cowd and h2o)
# Server on CPU 0, wrk and the helper on CPU 1.  Ad hoc: CLONE and COWD_BIN
# point at the session's fresh clone; output goes to /tmp/idlechk.
# (The session ran three copies of this script, one per mode, with the same steps.)
set -u
MODE=${1:?usage: idle-measure.sh syscalls|profile|segments [SERVER]}
SERVER=${2:-cowd}
CLONE=${CLONE:-/tmp/fc95}
. "$(dirname "$0")/../adhoc-setup.sh"
OUTDIR=/tmp/idlechk; mkdir -p $OUTDIR
W=$OUTDIR/p; rm -rf $W; mkdir -p $W/doc
DOCROOT=$W/doc; make_docroot "$DOCROOT"
server_start $SERVER $DOCROOT $W/srv idle || exit 1
warm_docroot "$SRV_PORT"
worker=$(pgrep -P $SRV_PID | head -1 || true); [ -n "$worker" ] || worker=$SRV_PID
echo "master $SRV_PID worker $worker"
SYSCALLS=syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_recvfrom,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_writev,syscalls:sys_enter_accept4,syscalls:sys_enter_getsockopt,syscalls:sys_enter_setsockopt,syscalls:sys_enter_read,syscalls:sys_enter_write
# measure TAG: 8 s of MODE's measurement on the worker (setsid: perf must
# not signal this script's process group)
measure() {
  local sp
  case $MODE in
    syscalls) setsid perf stat -e task-clock,context-switches,$SYSCALLS -p $worker -o $OUTDIR/stat-$1.txt -- sleep 8 ;;
    profile)  setsid perf stat -e task-clock,context-switches,cpu-migrations,raw_syscalls:sys_enter -p $worker -o $OUTDIR/stat-$1.txt -- sleep 8 &
              sp=$!
              setsid perf record -g -p $worker -o $OUTDIR/perf-$1.data -- sleep 8 2>/dev/null </dev/null
              wait $sp ;;
    segments) nstat -n; sleep 8; nstat -z > $OUTDIR/nstat-$SRV_NAME-$1.txt
              ss -tin state established "( sport = :$SRV_PORT )" > $OUTDIR/ss-$SRV_NAME-$1.txt ;;
    *) echo "unknown mode $MODE" >&2; exit 2 ;;
  esac
}
run() {
  "${PIN_CLIENT[@]}" wrk -t1 -c50 -d12s http://127.0.0.1:$SRV_PORT/f12k > $W/wrk-$1.txt &
  local wp=$!
  sleep 1
  measure $1
  wait $wp
  grep Requests $W/wrk-$1.txt
}
run noidle
"${PIN_CLIENT[@]}" python3 $BENCH_DIR/idle_conns.py "$SRV_PORT" 10000 /f2k 600 60 > $W/idle.out 2>&1 &
hp=$!; HELPER_PIDS+=($hp)
for i in $(seq 700); do grep -q '^READY' $W/idle.out && break; sleep 0.1; done
grep READY $W/idle.out; sleep 3
run idle
kill -USR1 $hp; sleep 2; kill $hp 2>/dev/null
server_stop
