#!/bin/bash
# ewrk.sh PID PORT LABEL: one 10 s wrk run (50 conns, 1 thread, pinned CPU 1); prints replies/s and µs CPU per reply
pid=$1 port=$2 label=$3
tck=$(getconf CLK_TCK)
cpu() { awk -v t=$tck '{print ($14+$15)/t}' /proc/$pid/stat; }
c0=$(cpu)
out=$(taskset -c 1 wrk -t1 -c50 -d10s http://127.0.0.1:$port/f12k 2>&1)
c1=$(cpu)
rps=$(echo "$out" | awk '/^Requests\/sec/{print $2}')
n=$(echo "$out" | awk '/requests in/{print $1}')
echo "$label rps=$rps us_per_reply=$(awk -v a=$c0 -v b=$c1 -v n=$n 'BEGIN{printf "%.2f", (b-a)*1e6/n}')"
