# common.sh -- shared helpers for the cowd benchmark suite (sourced, bash).
#
# Provides: log/warn/die, PY (python3 to use), free_port, proc_tree_stats,
# cpu_ticks/steal_pct, parse_bench_line, wait_http, and the CPU pinning
# settings SERVER_CPU / CLIENT_CPU.

: "${SERVER_CPU:=0}"     # server pinned here (taskset -c)
: "${CLIENT_CPU:=1}"     # load generators and helpers pinned here
# Priority of servers and load generators. The machine is shared: a nice
# value below 0 (root only) gives our processes most of their CPU when
# someone's build lands on the same core. Runs are short and bounded.
if [ -z "${BENCH_NICE:-}" ]; then
    if [ "$(id -u)" = 0 ]; then BENCH_NICE=-10; else BENCH_NICE=0; fi
fi
# "${PIN_SERVER[@]}" CMD... / "${PIN_CLIENT[@]}" CMD...: run CMD pinned, at
# our nice value. Arrays, not a function: nice and taskset both exec, so $!
# of a backgrounded "${PIN_SERVER[@]}" CMD & is CMD's own PID.
set_pinning() {
    PIN_SERVER=(nice -n "$BENCH_NICE" taskset -c "$SERVER_CPU")
    PIN_CLIENT=(nice -n "$BENCH_NICE" taskset -c "$CLIENT_CPU")
}
set_pinning

# Prefer Debian's interpreter: the pyenv shim adds ~50 ms per call.
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi

log()  { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
warn() { printf '[bench %s] WARNING: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die()  { printf '[bench] ERROR: %s\n' "$*" >&2; exit 1; }

# free_port: print a TCP port on 127.0.0.1 that is free right now.
free_port() {
    "$PY" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# cpu_ticks CPU: print "TOTAL STEAL", that CPU's clock ticks so far from
# /proc/stat (user..steal) and those of them stolen: time the hypervisor gave
# this virtual CPU's turn to another guest.  Nothing where /proc/stat is
# missing (the BSDs).  On a shared virtual machine steal is the noise no
# process inside can see, so every run records it on both pinned CPUs.
# With "idle" as a second argument, a third field: the idle ticks (idle
# and iowait), for how busy the CPU was.
cpu_ticks() {
    awk -v c="cpu$1" -v idle="${2:-}" '$1 == c { t = 0; for (i = 2; i <= 9; i++) t += $i
        if (idle == "idle") print t, $9, $5 + $6; else print t, $9 }' /proc/stat 2>/dev/null
}

# steal_pct "TOTAL STEAL" "TOTAL STEAL": stolen share of the ticks between
# two cpu_ticks readings, in percent with one decimal; empty if unknown.
steal_pct() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (split(a, x, " ") == 2 && split(b, y, " ") == 2 && y[1] > x[1])
            printf "%.1f", 100 * (y[2] - x[2]) / (y[1] - x[1]) }'
}

# parse_bench_line "BENCH k=v ...": sets requests, duration_us, bytes,
# err_connect, err_read, err_write, err_status, err_timeout, lat_mean_us,
# lat_p99_us (0 when absent) and matched (-1 when absent) from bench.lua's
# summary line; the caller declares them local.
parse_bench_line() {
    local kv
    requests=0 duration_us=0 bytes=0 err_connect=0 err_read=0 err_write=0 err_status=0
    err_timeout=0 lat_mean_us=0 lat_p99_us=0 matched=-1
    for kv in ${1#BENCH }; do
        case ${kv%%=*} in
            requests|duration_us|bytes|err_connect|err_read|err_write|err_status|err_timeout|lat_mean_us|lat_p99_us|matched)
                printf -v "${kv%%=*}" '%s' "${kv#*=}" ;;
        esac
    done
}

# proc_tree_stats PID: print "CPU_SECONDS RSS_KB NPROCS" for PID and all its
# descendants. CPU = utime+stime of every live process in the tree plus
# cutime+cstime (children already reaped), so exited workers still count.
proc_tree_stats() {
    "$PY" "$BENCH_DIR/proctree.py" "$1"
}

# wait_http PORT PATH SIZE [TIMEOUT_S] [PID]: wait until GET PATH on
# 127.0.0.1:PORT returns 200 with SIZE body bytes. Returns 1 on timeout,
# 2 at once if PID is given and has exited.
wait_http() {
    local port=$1 path=$2 size=$3 t=${4:-10} pid=${5:-} i got
    for ((i = 0; i < t * 10; i++)); do
        if [ -n "$pid" ] && ! pid_alive "$pid"; then return 2; fi
        got=$(curl -s -o /dev/null -m 2 -w '%{http_code} %{size_download}' \
              "http://127.0.0.1:$port$path" 2>/dev/null) || got=
        [ "$got" = "200 $size" ] && return 0
        sleep 0.1
    done
    return 1
}

# pid_alive PID
pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

# our_child PID: PID is a live child of this shell.  A server that died was
# reaped by bash, and its PID may since have gone to another process (a
# sweep starts thousands): that one is not ours to signal.
our_child() {
    local ppid
    ppid=$(ps -o ppid= -p "$1" 2>/dev/null) || return 1
    [ "${ppid// /}" = "$BASHPID" ]
}

# stop_pid PID [GRACE_S]: TERM, wait up to GRACE_S, then KILL. Only ever used
# on PIDs this suite started itself, and only while they are still its
# children.
stop_pid() {
    local pid=$1 grace=${2:-5} i
    pid_alive "$pid" || return 0
    our_child "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < grace * 10; i++)); do
        pid_alive "$pid" || { wait "$pid" 2>/dev/null; return 0; }
        sleep 0.1
    done
    # still running: kill it and the worker processes it started, so that
    # no orphan keeps a core busy during the next server's runs
    local kids
    kids=$(pgrep -P "$pid" 2>/dev/null || true)
    kill -KILL "$pid" $kids 2>/dev/null
    wait "$pid" 2>/dev/null
    return 0
}

# machine_busy_pct [SECS]: percent of all CPUs busy over SECS (default 2),
# from /proc/stat; taken before the runs to warn about a shared machine.
machine_busy_pct() {
    local a b
    a=$(head -n1 /proc/stat); sleep "${1:-2}"; b=$(head -n1 /proc/stat)
    awk -v a="$a" -v b="$b" 'BEGIN {
        n = split(a, x); split(b, y); tot = 0
        for (i = 2; i <= n; i++) tot += y[i] - x[i]
        idle = (y[5] - x[5]) + (y[6] - x[6])
        printf "%.0f\n", (tot > 0 ? 100 * (tot - idle) / tot : 0)
    }'
}
