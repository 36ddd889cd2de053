#!/usr/bin/env bash
# client-cost.sh: what a 12.5 KB keep-alive reply costs wrk (the client, CPU 1)
# against each server, one server at a time on CPU 0 with the suite's
# settings, alternating for ROUNDS rounds, over 6 s in the middle of a 10 s
# `wrk -t1 -c50` run.  MODE (environment):
#   calls    (default) per reply: wrk's CPU time (perf task-clock on wrk), its
#            system calls, epoll_wait calls and context switches
#   profile  a `perf record -g` of the client CPU, for 4 s
#   wakeups  per reply: wrk's CPU time; context switches on the server CPU
#            (the server going to sleep and waking), and the wake-up
#            interrupts (reschedule, call-function IPIs) the server CPU took
# With IDLE=N, idle_conns.py holds N idle keep-alive connections to the
# server during the wrk run, as workload (e) does; wrk prints its latency
# distribution (--latency) in every mode.
# Ad hoc: CLONE points at the session's fresh clone; output to /tmp/cc97.
set -u
CLONE=${CLONE:-/tmp/fc70}
. "$(dirname "$0")/../adhoc-setup.sh"
OUTDIR=/tmp/cc97; W=$OUTDIR/w; rm -rf $W; mkdir -p $W/doc
make_docroot $W/doc
FILE=${FILE:-f12k}
for r in $(seq ${ROUNDS:-3}); do
  for s in ${SERVERS:-cowd h2o}; do
    server_start $s $W/doc $W/$s $( [ "${IDLE:-0}" -gt 0 ] && echo idle ) || continue
    warm_docroot $SRV_PORT
    hp=
    if [ "${IDLE:-0}" -gt 0 ]; then
      "${PIN_CLIENT[@]}" python3 $BENCH_DIR/idle_conns.py "$SRV_PORT" "$IDLE" /f2k 120 60 > $W/$s.$r.idle 2>&1 &
      hp=$!; HELPER_PIDS+=($hp)
      for i in $(seq 700); do grep -q '^READY' $W/$s.$r.idle && break; sleep 0.1; done
      grep READY $W/$s.$r.idle; sleep 2
    fi
    "${PIN_CLIENT[@]}" wrk --latency -t1 -c50 -d10s http://127.0.0.1:$SRV_PORT/$FILE > $W/$s.$r.wrk &
    wp=$!
    sleep 2
    MODE=${MODE:-calls}
    if [ "$MODE" = profile ]; then
      setsid perf record -q -g -C $CLIENT_CPU -o $OUTDIR/client-$s.$r.perf -- sleep 4 >/dev/null 2>&1 </dev/null
    elif [ "$MODE" = wakeups ]; then
      setsid perf stat -p $wp -e task-clock -o $W/$s.$r.stat -- sleep 6 </dev/null &
      sp=$!
      setsid perf stat -C $SERVER_CPU -e context-switches,irq_vectors:reschedule_entry,irq_vectors:call_function_single_entry -o $W/$s.$r.srv -- sleep 6 </dev/null
      wait $sp
    else
      setsid perf stat -p $wp -e task-clock,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_read,syscalls:sys_enter_epoll_ctl -o $W/$s.$r.stat -- sleep 6 </dev/null
    fi
    wait $wp
    if [ -n "$hp" ]; then kill -USR1 $hp; for i in $(seq 100); do kill -0 $hp 2>/dev/null || break; sleep 0.1; done; kill $hp 2>/dev/null; grep ALIVE $W/$s.$r.idle; fi
    rps=$(awk '/Requests\/sec/{print $2}' $W/$s.$r.wrk)
    echo "== round $r $s: wrk $rps replies/s; latency $(awk '/^ +(50|75|90|99)%/{printf "p%s %s  ", $1, $2}' $W/$s.$r.wrk)"
    [ "$MODE" = profile ] && { server_stop; continue; }
    awk -v r=$rps '/task-clock/{gsub(",","",$1); printf "  %-34s %8.3f us per reply (%.0f %% of the CPU)\n", "wrk CPU", $1*1000/(r*6), $1/60}
      /context|syscalls|irq_vectors/{gsub(",","",$1); printf "  %-34s %8.3f per reply\n", FILENAME ~ /srv$/ ? "server CPU " $2 : $2, $1/(r*6)}' $W/$s.$r.stat $( [ "$MODE" = wakeups ] && echo $W/$s.$r.srv )
    server_stop
  done
done
