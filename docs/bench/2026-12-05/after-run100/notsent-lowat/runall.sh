#!/bin/bash
cd /tmp/fc101
for rep in 1 2; do
for v in default 131072 0; do
  bin=/tmp/fc101/build/src/cowd; [ $v != default ] && bin=/tmp/lowat/cowd-lowat-$v
  timeout 900 scripts/bench/run --full --no-install --workloads d --servers cowd,lighttpd --cowd $bin --out /tmp/lowat/d-$v-$rep > /tmp/lowat/d-$v-$rep.log 2>&1
  echo "$v $rep rc=$?" >> /tmp/lowat/done
done
done
