#!/bin/bash
# e-test.sh COWD DELAY SECS [IDLE] -> one line: wrk's replies/s and latency
# for (e)'s shape: cowd with the suite's flags on CPU 0 serving ROOT (a
# 12,500-byte f12k in it), idle_conns.py holding IDLE (10,000) connections
# from CPU 1, and wrk -t1 -c50 on CPU 1 for SECS seconds, started DELAY
# seconds after the helper's READY.  Loopback only; everything started is
# stopped by PID.  The server's stderr goes to /tmp/e-srv.err.
ROOT=${ROOT:-/tmp/nap/root}
COWD=$1 delay=$2 secs=$3 idle=${4:-10000} port=$((20000 + RANDOM % 20000))
ulimit -n 20000
taskset -c 0 nice -n -10 "$COWD" --listen 127.0.0.1:$port --root "$ROOT" --foreground --threads 256 --workers 1 \
  --max-keepalive-requests 1000000 --keepalive-timeout 120 --header-timeout 120 --max-connections 19936 2>/tmp/e-srv.err &
pid=$!
for i in $(seq 50); do curl -sf -o /dev/null http://127.0.0.1:$port/f12k && break; sleep 0.1; done
out=/tmp/e-idle.$$; taskset -c 1 python3 "$(dirname "$0")/../../../../../scripts/bench/idle_conns.py" $port $idle /f12k 60 60 > $out 2>&1 &
hp=$!
for i in $(seq 600); do grep -q READY $out && break; sleep 0.1; done
sleep $delay
r=$(taskset -c 1 nice -n -10 wrk -t1 -c50 -d${secs}s --latency http://127.0.0.1:$port/f12k)
kill -USR1 $hp; wait $hp
kill $pid; wait $pid 2>/dev/null
rps=$(echo "$r" | awk '/Requests\/sec/ {print $2}')
avg=$(echo "$r" | awk '/Latency/ && !/Distribution/ {print $2; exit}')
mx=$(echo "$r" | awk '/Latency/ && !/Distribution/ {print $4; exit}')
p50=$(echo "$r" | awk '$1=="50%" {print $2}'); p90=$(echo "$r" | awk '$1=="90%" {print $2}'); p99=$(echo "$r" | awk '$1=="99%" {print $2}')
echo "delay=$delay secs=$secs idle=$idle rps=$rps avg=$avg p50=$p50 p90=$p90 p99=$p99 max=$mx $(head -1 $out)"
rm -f $out
