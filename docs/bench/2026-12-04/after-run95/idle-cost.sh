# idle-cost.sh: 12.5 KB keep-alive replies per server-CPU-second, one server process,
# 3 wrk runs without idle connections, 3 with 10,000 held by scripts/bench/idle_conns.py,
# 3 after they are closed.  Server on CPU 0, wrk and the helper on CPU 1, suite settings
# (scripts/bench/servers.sh, mode idle).  Ad hoc: CLONE and COWD_BIN point at the session's fresh clone.
#!/usr/bin/env bash
# ad-hoc: cost of a 12.5 KB keep-alive reply with and without 10,000 idle
# connections, one server process, suite settings.  Usage: run.sh SERVER ROUNDS
set -u
SERVER=$1 ROUNDS=${2:-3}
CLONE=/tmp/fc95
BENCH_DIR=$CLONE/scripts/bench
. $BENCH_DIR/common.sh; . $BENCH_DIR/docs.sh; . $BENCH_DIR/servers.sh
COWD_BIN=/tmp/fc95/build/src/cowd
ulimit -n 20000; MAX_FDS=20000; MAX_CONNS=19936
STARTED_PIDS=(); HELPER_PIDS=()
set_pinning
trap stop_all_servers EXIT
W=/tmp/idlechk/w-$SERVER; rm -rf $W; mkdir -p $W/doc
DOCROOT=$W/doc; make_docroot "$DOCROOT" >/dev/null 2>&1 || true
ls $DOCROOT | head -3 >&2
server_start $SERVER $DOCROOT $W/srv idle || exit 1
warm_docroot "$SRV_PORT"
meas() { # tag
  local c0 c1 out
  c0=$(proc_tree_stats $SRV_PID | cut -d' ' -f1)
  out=$("${PIN_CLIENT[@]}" wrk -t1 -c50 -d10s http://127.0.0.1:$SRV_PORT/f12k | awk '/Requests\/sec/ {print $2}')
  c1=$(proc_tree_stats $SRV_PID | cut -d' ' -f1)
  echo "$SERVER $1 rps=$out cpu_s=$(awk -v a=$c0 -v b=$c1 'BEGIN{print b-a}') per_cpu_s=$(awk -v a=$c0 -v b=$c1 -v r=$out 'BEGIN{printf "%.0f", r*10/(b-a)}')"
}
for r in $(seq $ROUNDS); do meas noidle; done
"${PIN_CLIENT[@]}" python3 $BENCH_DIR/idle_conns.py "$SRV_PORT" 10000 /f2k 600 60 > $W/idle.out 2>&1 &
hp=$!; HELPER_PIDS+=($hp)
for i in $(seq 700); do grep -q '^READY' $W/idle.out && break; sleep 0.1; done
grep READY $W/idle.out; sleep 3
for r in $(seq $ROUNDS); do meas idle; done
kill -USR1 $hp; sleep 2; kill $hp 2>/dev/null
for r in $(seq $ROUNDS); do meas after; done
server_stop
