#!/bin/bash
# lat.sh NAP CONNS SECS FILE -> one line: nap, connections, replies/s, wrk's
# average, p50 and p99 latency, and the server's CPU microseconds per reply
# (master and worker, utime+stime from /proc).  One cowd (COWD, built with
# nap-experiment.diff; PTH_NAP_US=NAP, 0 = off) on CPU 0 serving ROOT, wrk
# -t1 -cCONNS on CPU 1 for SECS seconds on /FILE.  SLACK (ns) sets the
# server's timer slack (the kernel's default is 50,000).  Loopback only; the
# server is stopped by its PID.
COWD=${COWD:-/tmp/nap/build/src/cowd} ROOT=${ROOT:-/tmp/nap/root}
nap=$1 c=$2 secs=$3 f=$4 port=$((20000 + RANDOM % 20000))
PTH_NAP_SLACK_NS=${SLACK:-50000} PTH_NAP_US=$nap taskset -c 0 nice -n -10 "$COWD" --listen 127.0.0.1:$port --root "$ROOT" --workers 1 \
  --max-keepalive-requests 1000000 --keepalive-timeout 120 --header-timeout 120 --user "$(id -un)" 2>/dev/null &
pid=$!
for i in $(seq 50); do curl -sf -o /dev/null http://127.0.0.1:$port/$f && break; sleep 0.1; done
cpids="$pid $(pgrep -P $pid)"
tk() { local t=0 p; for p in $cpids; do t=$((t + $(awk '{print $14+$15}' /proc/$p/stat))); done; echo $t; }
t0=$(tk)
out=$(taskset -c 1 nice -n -10 wrk -t1 -c$c -d${secs}s --latency http://127.0.0.1:$port/$f)
t1=$(tk)
kill $pid; wait $pid 2>/dev/null
reqs=$(echo "$out" | awk '/requests in/ {print $1}')
rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
avg=$(echo "$out" | awk '/Latency/ && !/Distribution/ {print $2; exit}')
p50=$(echo "$out" | awk '$1=="50%" {print $2}')
p99=$(echo "$out" | awk '$1=="99%" {print $2}')
cpu=$(awk -v a=$t0 -v b=$t1 -v r=$reqs 'BEGIN{printf "%.2f", (b-a)*10000/r}')
echo "nap=$nap c=$c rps=$rps avg=$avg p50=$p50 p99=$p99 cpu_us=$cpu"
