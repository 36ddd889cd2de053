#!/bin/bash
# usage: pstat.sh PID PORT RATE  -> perf stat of PID during one httperf run
pid=$1 port=$2 r=$3
ev=raw_syscalls:sys_enter
for s in sendmsg sendto recvmsg accept4 read recvfrom readv writev write sendfile64 close shutdown epoll_wait epoll_pwait epoll_ctl setsockopt getsockopt sched_yield futex clock_gettime gettimeofday fcntl ioctl; do
  [ -d /sys/kernel/tracing/events/syscalls/sys_enter_$s ] || [ -d /sys/kernel/debug/tracing/events/syscalls/sys_enter_$s ] && ev="$ev,syscalls:sys_enter_$s"
done
perf stat -e "$ev,task-clock,context-switches" -p $pid -o pstat.$pid.$r.txt &
pp=$!
sleep 0.2
out=$(taskset -c 1 httperf --server 127.0.0.1 --port $port --uri /f12k --http-version 1.1 --rate $r --num-conns $((r*5)) --num-calls 5 --timeout 5 2>&1)
kill -INT $pp; wait $pp
ok=$(echo "$out" | awk '/^Reply status:/{for(i=1;i<=NF;i++) if($i~/^2xx=/){sub(/2xx=/,"",$i);print $i}}')
conns=$(echo "$out" | awk '/^Total: connections/{print $3}')
errs=$(echo "$out" | awk '/^Errors: total/{print $3}')
echo "rate=$r replies=$ok conns=$conns errs=$errs"
awk -v ok=$ok '/^ *[0-9,.]+ /{gsub(",","",$1); printf "  %-40s %12s  %8.3f per reply\n", $2, $1, $1/ok}' pstat.$pid.$r.txt
