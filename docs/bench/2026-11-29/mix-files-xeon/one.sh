#!/bin/bash
# one.sh LABEL PATH SECS SERVER-CMD...: start SERVER-CMD (it must listen on
# 127.0.0.1:18080 and be pinned by the caller, e.g. `taskset -c 0 ...`),
# fetch PATH once, run `wrk -t1 -c50` on PATH for SECS from CPU 1, stop the
# server, and print one line: replies/s, the server's CPU busy % and
# replies per server-CPU-second (its whole process tree, scripts/bench/proctree.py),
# wrk's CPU seconds, TCP segments sent per reply (nstat: the whole machine,
# both directions), and server + wrk CPU per reply.  Raw output in $WORK.
label=$1 path=$2 secs=$3; shift 3
WORK=${WORK:-/tmp/mix-files}; mkdir -p "$WORK"
proctree=$(cd "$(dirname "$0")/../../../.." && pwd)/scripts/bench/proctree.py
"$@" > "$WORK/$label.srv.log" 2>&1 &
pid=$!
sleep 1
curl -s -o /dev/null "http://127.0.0.1:18080$path"
cpu() { python3 "$proctree" "$pid" | cut -d' ' -f1; }
nstat -n
c0=$(cpu)
( time taskset -c 1 wrk -t1 -c50 -d"${secs}s" --timeout 5s "http://127.0.0.1:18080$path" > "$WORK/$label.wrk" 2>&1 ) 2> "$WORK/$label.time"
c1=$(cpu)
seg=$(nstat -z TcpOutSegs | awk '/TcpOutSegs/ {print $2}')
kill $pid; wait $pid 2>/dev/null
req=$(awk '/requests in/ {print $1}' "$WORK/$label.wrk")
wcpu=$(awk '/user|sys/ {split($2, a, "m"); t += a[1] * 60 + a[2]} END {print t}' "$WORK/$label.time")
awk -v r="$req" -v c0="$c0" -v c1="$c1" -v l="$label" -v s="$seg" -v w="$wcpu" -v d="$secs" 'BEGIN {
    c = c1 - c0
    printf "%-10s %7.1f rps  srv %.0f%%  %7.0f rep/srv-cpu-s  wrk %.2fs  %.0f segs/reply  total cpu/reply %.3f ms\n",
        l, r / d, c / d * 100, r / c, w, s / r, (c + w) / r * 1000 }'
