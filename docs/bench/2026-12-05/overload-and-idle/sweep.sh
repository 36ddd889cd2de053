#!/bin/bash
# usage: sweep.sh PID PORT RATES...
ppid=$1 port=$2; shift 2
tck=$(getconf CLK_TCK)
cpu() { awk -v t=$tck '{print ($14+$15)/t}' /proc/$pid/stat; }
for r in "$@"; do
  pid=$(pgrep -P $ppid -x cowd | head -1); [ -n "$pid" ] || pid=$ppid
  c0=$(cpu)
  out=$(taskset -c 1 httperf --server 127.0.0.1 --port $port --uri /f12k --http-version 1.1 --rate $r --num-conns $((r*5)) --num-calls 5 --timeout 5 2>&1)
  c1=$(cpu)
  rps=$(echo "$out" | awk '/^Total: connections/{d=$9} /^Reply status:/{for(i=1;i<=NF;i++) if($i~/^2xx=/){sub(/2xx=/,"",$i);ok=$i}} END{printf "%.0f", ok/d}')
  rt=$(echo "$out" | awk '/^Reply time/{print $5+$7}')
  errs=$(echo "$out" | awk '/^Errors: total/{print $3}')
  echo "rate=$r cpu=$(awk -v a=$c0 -v b=$c1 'BEGIN{print b-a}') rps=$rps rt=$rt errs=$errs"
  sleep 2
done
