#!/bin/bash
# run.sh OLD NEW: trickle.py against each binary in turn, 2 rounds: 20 connections, one byte per send, a round of sends every 0.5 ms
set -u
mkdir -p /tmp/trickle/root; echo "Hello" > /tmp/trickle/root/hello.txt
for round in 1 2; do
  for name in old new; do
    bin=$1; [ $name = new ] && bin=$2
    port=$((19000 + RANDOM % 1000))
    taskset -c 0 $bin --listen 127.0.0.1:$port --root /tmp/trickle/root --header-timeout 60 --workers 1 --user root 2>/dev/null &
    pid=$!
    sleep 0.5
    w=$(pgrep -P $pid | head -1)
    for piece in 1; do
      printf "round %d %s " $round $name
      taskset -c 1 python3 /tmp/trickle/trickle.py $port $w $piece 20 95 0.5
    done
    kill $pid; wait $pid 2>/dev/null
  done
done
