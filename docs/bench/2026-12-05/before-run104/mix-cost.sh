#!/usr/bin/env bash
# mix-cost.sh: what a reply of the WebSTONE mix (workload d) costs wrk (the
# client, CPU 1) against each server, one server at a time on CPU 0 with the
# suite's settings, alternating for ROUNDS rounds, over 6 s in the middle of
# a 10 s `wrk -t1 -c50 -s bench.lua` run with BENCH_MIX as the suite's.
# MODE: calls (default): per reply wrk's CPU time and system calls, the
#       server CPU's busy share, context switches and wake-up interrupts;
#       profile: `perf record -g` of the client CPU for 4 s.
# COWD_FLAGS (environment) adds cowd flags as in the suite.
set -u
CLONE=${CLONE:-/tmp/fc80}   # a fresh clone with its build (scripts/build CLONE/build)
BENCH_DIR=$CLONE/scripts/bench
. $BENCH_DIR/common.sh; . $BENCH_DIR/docs.sh; . $BENCH_DIR/servers.sh
COWD_BIN=${COWD_BIN:-$CLONE/build/src/cowd}
STARTED_PIDS=(); HELPER_PIDS=()
set_pinning
trap stop_all_servers EXIT
OUTDIR=${OUTDIR:-/tmp/mixcost/out}; W=$OUTDIR/w; rm -rf $W; mkdir -p $W/doc
make_docroot $W/doc
cpu_busy() { awk -v c="cpu$SERVER_CPU" '$1==c{print $2+$3+$4+$7+$8, $5+$6+$9}' /proc/stat; }
for r in $(seq ${ROUNDS:-3}); do
  for s in ${SERVERS:-cowd lighttpd}; do
    server_start $s $W/doc $W/$s || continue
    warm_docroot $SRV_PORT
    BENCH_MIX=$MIX_SPEC "${PIN_CLIENT[@]}" wrk --latency -t1 -c50 -d10s -s $BENCH_DIR/bench.lua http://127.0.0.1:$SRV_PORT/ > $W/$s.$r.wrk &
    wp=$!
    sleep 2
    if [ "${MODE:-calls}" = profile ]; then
      setsid perf record -q -g -C $CLIENT_CPU -o $OUTDIR/client-$s.$r.perf -- sleep 4 >/dev/null 2>&1 </dev/null
    else
      b0=$(cpu_busy)
      setsid perf stat -p $wp -e task-clock,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_read -o $W/$s.$r.stat -- sleep 6 </dev/null &
      sp=$!
      setsid perf stat -C $SERVER_CPU -e context-switches,irq_vectors:reschedule_entry,irq_vectors:call_function_single_entry -o $W/$s.$r.srv -- sleep 6 </dev/null
      wait $sp
      b1=$(cpu_busy)
    fi
    wait $wp
    rps=$(awk '/Requests\/sec/{print $2}' $W/$s.$r.wrk)
    echo "== round $r $s: wrk $rps replies/s; $(awk '/Transfer\/sec/{print $2}' $W/$s.$r.wrk)/s; latency $(awk '/^ +(50|99)%/{printf "p%s %s  ", $1, $2}' $W/$s.$r.wrk)"
    [ "${MODE:-calls}" = profile ] && { server_stop; continue; }
    echo "$b0 $b1" | awk '{b=$3-$1; i=$4-$2; printf "  %-34s %8.1f %%\n", "server CPU busy", 100*b/(b+i)}'
    awk -v r=$rps '/task-clock/{gsub(",","",$1); printf "  %-34s %8.3f us per reply (%.0f %% of the CPU)\n", "wrk CPU", $1*1000/(r*6), $1/60}
      /context|syscalls|irq_vectors/{gsub(",","",$1); printf "  %-34s %8.3f per reply\n", FILENAME ~ /srv$/ ? "server CPU " $2 : $2, $1/(r*6)}' $W/$s.$r.stat $W/$s.$r.srv
    server_stop
  done
done
