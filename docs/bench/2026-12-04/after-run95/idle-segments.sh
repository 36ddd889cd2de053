# idle-segments.sh: as idle-profile.sh, with nstat over 8 s of each wrk run (SERVER=cowd|h2o), 17:54 UTC
#!/usr/bin/env bash
set -u
CLONE=/tmp/fc95
BENCH_DIR=$CLONE/scripts/bench
. $BENCH_DIR/common.sh; . $BENCH_DIR/docs.sh; . $BENCH_DIR/servers.sh
COWD_BIN=${COWD_BIN:-/tmp/fc95/build/src/cowd}
ulimit -n 20000; MAX_FDS=20000; MAX_CONNS=19936
STARTED_PIDS=(); HELPER_PIDS=()
set_pinning
trap stop_all_servers EXIT
W=/tmp/idlechk/p; rm -rf $W; mkdir -p $W/doc
DOCROOT=$W/doc; make_docroot "$DOCROOT"
server_start ${SERVER:-cowd} $DOCROOT $W/srv idle || exit 1
warm_docroot "$SRV_PORT"
worker=$(pgrep -P $SRV_PID | head -1 || true); [ -n "$worker" ] || worker=$SRV_PID
echo "master $SRV_PID worker $worker"
prof() {
  "${PIN_CLIENT[@]}" wrk -t1 -c50 -d12s http://127.0.0.1:$SRV_PORT/f12k > $W/wrk-$1.txt &
  local wp=$!
  sleep 1
  nstat -n; sleep 8; nstat -z > /tmp/idlechk/nstat-$SRV_NAME-$1.txt
  ss -tin state established "( sport = :$SRV_PORT )" > /tmp/idlechk/ss-$SRV_NAME-$1.txt
  wait $wp
  grep Requests $W/wrk-$1.txt
}
prof noidle
"${PIN_CLIENT[@]}" python3 $BENCH_DIR/idle_conns.py "$SRV_PORT" 10000 /f2k 600 60 > $W/idle.out 2>&1 &
hp=$!; HELPER_PIDS+=($hp)
for i in $(seq 700); do grep -q '^READY' $W/idle.out && break; sleep 0.1; done
grep READY $W/idle.out; sleep 3
prof idle
kill -USR1 $hp; sleep 2; kill $hp 2>/dev/null
server_stop
