# workloads.sh -- the six workloads (sourced, bash; needs common.sh,
# servers.sh, docs.sh).
#
# Each workload_X SERVER (workload_a: SERVER..., all side by side) starts a
# fresh instance of SERVER, runs its load from CPU $CLIENT_CPU, samples the
# server's CPU time (whole process tree) before and after every measured
# run, stops the server and appends rows to
#   $OUT/runs.csv   one row per wrk run (workloads b-f)
#   $OUT/runs-disturbed.csv  attempts set aside for steal (wrk_once)
#   $OUT/sweep.csv  one row per httperf rate step (workload a): its median run
#   $OUT/sweep-runs.csv  every httperf run of (a), with its repetition number
# Raw load-generator output is kept in $OUT/raw/.
#
# Settings (set by run from --short/--full, all overridable from the env):
#   WRK_SECS WRK_CONNS WRK_THREADS REPS STEAL_REDO STEAL_REDO_MAX
#   SWEEP_SECS SWEEP_REPS SWEEP_START SWEEP_STEP SWEEP_CAP SWEEP_AFTER_ERRORS
#   IDLE_CONNS IDLE_PATH

HELPER_PIDS=()   # idle-connection helpers we started, for the exit trap

RUNS_HEADER="server,workload,label,rep,replies,duration_s,rps,errors,err_detail,lat_avg_ms,lat_p99_ms,cpu_s,rss_kb,note,client_cpu_s,steal_server_pct,steal_client_pct,bytes_per_reply"
SWEEP_HEADER="server,rate,conns,replies,duration_s,rps,conn_rate,reply_ms,errors,client_timo,connrefused,connreset,fd_unavail,other_err,cpu_s"

init_results() {
    mkdir -p "$OUT/raw"
    [ -f "$OUT/runs.csv" ] || echo "$RUNS_HEADER" >"$OUT/runs.csv"
    [ -f "$OUT/runs-disturbed.csv" ] || echo "$RUNS_HEADER" >"$OUT/runs-disturbed.csv"
    [ -f "$OUT/sweep.csv" ] || echo "$SWEEP_HEADER" >"$OUT/sweep.csv"
    [ -f "$OUT/sweep-runs.csv" ] ||
        echo "$SWEEP_HEADER,rep,steal_server_pct,steal_client_pct" >"$OUT/sweep-runs.csv"
}

cpu_now() { proc_tree_stats "$SRV_PID" | cut -d' ' -f1; }
# ticks_now: "TOTAL STEAL TOTAL STEAL" of the server's then the client's CPU
ticks_now() { echo "$(cpu_ticks "$SERVER_CPU") $(cpu_ticks "$CLIENT_CPU")"; }
# steal_fields BEFORE AFTER (ticks_now readings): "SERVER_PCT,CLIENT_PCT"
steal_fields() {
    local a=($1) b=($2)
    echo "$(steal_pct "${a[*]:0:2}" "${b[*]:0:2}"),$(steal_pct "${a[*]:2:2}" "${b[*]:2:2}")"
}

# children_cpu: CPU seconds (user+sys) of all children this shell has reaped
# so far, from the `times` builtin, which must run in this shell (a $(...)
# subshell sees only its own children). Taken around a load generator run, the
# difference is the client's CPU time.
children_cpu() {   # VAR: sets VAR (not $(...): that would be a subshell)
    local line
    times >"$WORK/times.txt"
    line=$(sed -n 2p "$WORK/times.txt")
    printf -v "$1" '%s' "$(awk '{
        t = 0
        for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] }
        printf "%.2f\n", t
    }' <<<"$line")"
}
rss_now() { proc_tree_stats "$SRV_PID" | cut -d' ' -f2; }

# start SERVER WORKLOAD [MODE]: fresh server for one workload. On failure a
# row with note "start failed" is recorded so the report shows it.
start_for() {
    local server=$1 wl=$2 mode=${3:-normal}
    local d="$WORK/run-$server-$wl"
    rm -rf "$d"
    if server_start "$server" "$DOCROOT" "$d" "$mode"; then
        warm_docroot "$SRV_PORT"
        return 0
    fi
    echo "$server,$wl,-,0,0,0,0,0,,,,,,start failed" >>"$OUT/runs.csv"
    cp "$d/stderr.log" "$OUT/raw/$server-$wl-start-failure.log" 2>/dev/null
    return 1
}

# wrk_measure SERVER WORKLOAD LABEL REP PATH [WRK ARGS...]: one wrk run;
# sets WRK_ROW to its runs.csv row and WRK_STEAL to the larger steal % of
# the two pinned CPUs (empty if unknown).  Extra note text comes from
# $RUN_NOTE.  Status 1 (a row saying why is in WRK_ROW) when there is no
# result to judge.
wrk_measure() {
    local server=$1 wl=$2 label=$3 rep=$4 path=$5; shift 5
    local raw="$OUT/raw/$server-$wl-$label-$rep${WRK_ATTEMPT_TAG:-}.wrk" c0 c1 k0 k1 t0 t1 line
    WRK_STEAL=
    if ! pid_alive "$SRV_PID"; then
        WRK_ROW="$server,$wl,$label,$rep,0,0,0,0,,,,,,server died"
        return 1
    fi
    c0=$(cpu_now)
    children_cpu k0
    t0=$(ticks_now)
    "${PIN_CLIENT[@]}" timeout $((WRK_SECS + 30)) \
        wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d"${WRK_SECS}s" --timeout 5s \
            --latency -s "$BENCH_DIR/bench.lua" "$@" \
            "http://127.0.0.1:$SRV_PORT$path" >"$raw" 2>&1
    t1=$(ticks_now)
    children_cpu k1
    c1=$(cpu_now)
    line=$(grep '^BENCH ' "$raw" | tail -n1)
    if [ -z "$line" ]; then
        warn "$server $label: wrk produced no result (see $raw)"
        WRK_ROW="$server,$wl,$label,$rep,0,0,0,0,,,,,,wrk failed"
        return 1
    fi
    local rss note="${RUN_NOTE:-}" steal
    rss=$(rss_now)
    pid_alive "$SRV_PID" || note="${note:+$note; }server died during run"
    steal=$(steal_fields "$t0" "$t1")
    WRK_STEAL=$(awk -F, '$1 != "" || $2 != "" { printf "%.1f", ($1 > $2 ? $1 : $2) }' <<<"$steal")
    # the BENCH line from bench.lua: requests=.. duration_us=.. err_*=.. lat_*=..
    local requests duration_us bytes err_connect err_read err_write err_status \
        err_timeout lat_mean_us lat_p99_us matched
    parse_bench_line "$line"
    WRK_ROW=$(awk -v s="$server" -v w="$wl" -v l="$label" -v r="$rep" \
        -v req="$requests" -v dur="$duration_us" -v ec="$err_connect" \
        -v er="$err_read" -v ew="$err_write" -v es="$err_status" \
        -v et="$err_timeout" -v lm="$lat_mean_us" -v l99="$lat_p99_us" \
        -v c0="$c0" -v c1="$c1" -v rss="$rss" -v note="$note" \
        -v k0="$k0" -v k1="$k1" -v m="$matched" -v steal="$steal" -v bytes="$bytes" 'BEGIN {
            # with BENCH_EXPECT_STATUS, a reply counts only with that status
            if (m >= 0) es = req - m
            ok = req - es; d = dur / 1e6; errs = ec + er + ew + es + et
            if (ok == 0) note = (note == "" ? "no replies" : "no replies; " note)
            # bytes per reply: everything wrk read (headers and bodies) over
            # the requests it completed, so a server sending less shows
            printf "%s,%s,%s,%s,%d,%.3f,%.1f,%d,connect=%d read=%d write=%d status=%d timeout=%d,%.3f,%.3f,%.2f,%d,%s,%.2f,%s,%s\n",
                s, w, l, r, ok, d, (d > 0 ? ok / d : 0), errs, ec, er, ew, es, et,
                lm / 1000, l99 / 1000, c1 - c0, rss, note, k1 - k0, steal,
                (req > 0 ? sprintf("%.0f", bytes / req) : "")
        }')
}

# wrk_once SERVER WORKLOAD LABEL REP PATH [WRK ARGS...]: one measured wrk run;
# appends a runs.csv row.  A run in which the hypervisor stole STEAL_REDO %
# or more of either pinned CPU's time is run again, on the same server, up
# to STEAL_REDO_MAX more times (0: never): the attempt with the least steal
# is the run's row, and the others go to runs-disturbed.csv.  The rule looks
# at nothing but steal, so it treats every server alike.  A repeat of (c) or
# (f) starts right after the attempt before, among its TIME_WAIT sockets, as
# every run of a round but the first starts among the run before's.
wrk_once() {
    local server=$1 label=$3 rep=$4 attempt=0 best_row= best_steal= rc row
    local tried=()
    while :; do
        WRK_ATTEMPT_TAG=$( [ "$attempt" -gt 0 ] && echo "-redo$attempt") wrk_measure "$@"
        rc=$?
        if [ "$rc" -ne 0 ]; then
            # the run failed (the server died, wrk gave no result): that is
            # its row; the attempts that worked before it are set aside
            for row in "${tried[@]}"; do echo "$row" >>"$OUT/runs-disturbed.csv"; done
            echo "$WRK_ROW" >>"$OUT/runs.csv"
            return 1
        fi
        tried+=("$WRK_ROW")
        if [ -z "$best_row" ] || awk -v a="$WRK_STEAL" -v b="$best_steal" 'BEGIN { exit !(a < b) }'; then
            best_row=$WRK_ROW best_steal=$WRK_STEAL
        fi
        [ -n "$WRK_STEAL" ] && [ "$attempt" -lt "${STEAL_REDO_MAX:-0}" ] &&
            awk -v a="$WRK_STEAL" -v t="${STEAL_REDO:-0}" 'BEGIN { exit !(t > 0 && a >= t) }' || break
        attempt=$((attempt + 1))
        log "  $server $label #$rep: ${WRK_STEAL} % of a pinned CPU stolen -- run again ($attempt of ${STEAL_REDO_MAX})"
    done
    for row in "${tried[@]}"; do
        [ "$row" = "$best_row" ] && continue
        echo "$row" >>"$OUT/runs-disturbed.csv"
    done
    if [ "$attempt" -gt 0 ]; then
        # say in the kept row's note how many attempts it took
        best_row=$(awk -F, -v OFS=, -v n="$((attempt + 1))" '{ $14 = ($14 == "" ? "" : $14 "; ") "best of " n " attempts (steal)"; print }' <<<"$best_row")
    fi
    echo "$best_row" >>"$OUT/runs.csv"
    log "  $server $label #$rep: $(cut -d, -f7 <<<"$best_row") replies/s, errors $(cut -d, -f8 <<<"$best_row")"
}

# wrk_reps SERVER WORKLOAD LABEL PATH [WRK ARGS...]: REPS measured runs, or
# only run number $REP_ONLY when that is set (run interleaves the servers).
wrk_reps() {
    local server=$1 wl=$2 label=$3 path=$4 rep first=1 last=$REPS; shift 4
    if [ -n "${REP_ONLY:-}" ]; then first=$REP_ONLY; last=$REP_ONLY; fi
    for ((rep = first; rep <= last; rep++)); do
        wrk_once "$server" "$wl" "$label" "$rep" "$path" "$@" || break
    done
}

# (a) The CoW paper's test: one 12,500-byte file, HTTP/1.1, exactly 5
# requests per connection, httperf at a fixed connection rate. The rate is
# stepped up until a step has errors (plus SWEEP_AFTER_ERRORS more steps to
# show the plateau, as in the paper's Figures 5 and 6) or SWEEP_CAP.
# Connection-per-request runs leave tens of thousands of TIME_WAIT sockets;
# until they expire (tcp_fin_timeout, 60 s) the client's connect() slows
# down for whichever server runs next, so each such run starts only once
# they are below TW_SETTLE (up to TW_WAIT_MAX seconds; logged).
settle_time_wait() {
    local n waited=0
    while :; do
        n=$(ss -tan state time-wait 2>/dev/null | tail -n +2 | wc -l)
        [ "$n" -le "${TW_SETTLE:-2000}" ] && break
        [ "$waited" -ge "${TW_WAIT_MAX:-75}" ] && { warn "still $n TIME_WAIT sockets after ${waited}s"; break; }
        sleep 5; waited=$((waited + 5))
    done
    [ "$waited" -gt 0 ] && log "  waited ${waited}s for TIME_WAIT sockets to expire ($n left)"
    return 0
}

# workload_a SERVER...: the sweep for all SERVERS side by side.  Every
# server is started first and stays up for the whole sweep (an idle server
# costs the others nothing); each step's SWEEP_REPS runs then go round the
# servers, in an order rotated by one each repetition and by one more each
# step (not starting again at each rate).  A slow stretch of the
# shared machine thus hits one run of every server at the same rate, not the
# whole sweep of whichever server was measured then, and no server is always
# the first after the rate goes up.  Every server runs every step: the sweep
# ends SWEEP_AFTER_ERRORS steps after the step where the last server had its
# first errors (median run), so all peaks come from the same offered rates.
# Past its first errors a server's replies/s can still grow with the offered
# rate; a server dropped earlier would be compared with peers measured at
# rates it never saw.
workload_a() {
    local s rate rep i n raw c0 c1 t0 t1 vals row rps errs going live=() next step
    declare -A a_pid a_port a_after
    settle_time_wait
    for s in "$@"; do
        start_for "$s" a || { warn "$s: cannot start for workload a -- skipped"; continue; }
        a_pid[$s]=$SRV_PID a_port[$s]=$SRV_PORT a_after[$s]=-1
        live+=("$s")
    done
    for ((rate = SWEEP_START; rate <= SWEEP_CAP && ${#live[@]} > 0; rate += SWEEP_STEP)); do
        for s in "${live[@]}"; do : >"$OUT/step-$s.tmp"; done
        # SWEEP_REPS runs per step; the step's row is the run with the median
        # replies/s.  Near saturation a run either keeps up or tips into the
        # client's fd_unavail collapse, and which one is luck as much as the
        # server (scripts/bench/README.md, workload a), so one run per step
        # makes the peak a lottery.
        step=$(( (rate - SWEEP_START) / SWEEP_STEP ))
        for ((rep = 1; rep <= SWEEP_REPS; rep++)); do
            n=${#live[@]}
            for ((i = 0; i < n; i++)); do
                s=${live[$(( (i + rep - 1 + step) % n ))]}
                SRV_PID=${a_pid[$s]} SRV_PORT=${a_port[$s]}
                pid_alive "$SRV_PID" || continue
                raw="$OUT/raw/$s-a-r$rate-$rep.httperf"
                c0=$(cpu_now)
                t0=$(ticks_now)
                "${PIN_CLIENT[@]}" timeout $((SWEEP_SECS + 30)) \
                    httperf --server 127.0.0.1 --port "$SRV_PORT" --uri /f12k \
                        --http-version 1.1 --rate "$rate" \
                        --num-conns $((rate * SWEEP_SECS)) --num-calls 5 --timeout 5 \
                        >"$raw" 2>&1
                t1=$(ticks_now)
                c1=$(cpu_now)
                # a server gone during the run: its CPU reading is of a dead
                # tree, so no row (its sweep ends after this step)
                pid_alive "$SRV_PID" || { warn "$s rate $rate: server died during run $rep"; continue; }
                vals=$(parse_httperf "$raw") || { warn "$s rate $rate: no httperf result"; continue; }
                row="$s,$rate,$vals,$(awk -v a="$c0" -v b="$c1" 'BEGIN{printf "%.2f", b-a}')"
                echo "$row,$rep,$(steal_fields "$t0" "$t1")" >>"$OUT/sweep-runs.csv"
                echo "$row" >>"$OUT/step-$s.tmp"
                log "  $s a: rate $rate conn/s run $rep -> $(echo "$vals" | cut -d, -f4) replies/s," \
                    "$(echo "$vals" | cut -d, -f6) ms, errors $(echo "$vals" | cut -d, -f7)"
            done
        done
        next=()
        for s in "${live[@]}"; do
            if ! pid_alive "${a_pid[$s]}"; then
                warn "$s died during the sweep"
                forget_pid "${a_pid[$s]}"
                a_pid[$s]=     # reaped: the PID may be another process's by the end
            elif [ ! -s "$OUT/step-$s.tmp" ]; then
                warn "$s rate $rate: no httperf result in any run -- its sweep ends here"
            else
                # the median run by replies/s (column 6); with an even count, the lower
                sort -s -t, -k6,6g "$OUT/step-$s.tmp" |
                    sed -n "$(( ($(wc -l <"$OUT/step-$s.tmp") + 1) / 2 ))p" >>"$OUT/sweep.csv"
                rps=$(tail -n1 "$OUT/sweep.csv" | cut -d, -f6); errs=$(tail -n1 "$OUT/sweep.csv" | cut -d, -f9)
                [ "$SWEEP_REPS" -gt 1 ] && log "  $s a: rate $rate conn/s median -> $rps replies/s, errors $errs"
                if [ "${a_after[$s]}" -gt 0 ]; then   # counting the steps past errors
                    a_after[$s]=$((a_after[$s] - 1))
                elif [ "${a_after[$s]}" -lt 0 ] && [ "$errs" -gt 0 ]; then
                    a_after[$s]=$SWEEP_AFTER_ERRORS
                fi
                next+=("$s")
            fi
            rm -f "$OUT/step-$s.tmp"
        done
        live=("${next[@]}")
        going=0
        for s in "${live[@]}"; do [ "${a_after[$s]}" -ne 0 ] && going=1; done
        [ "$going" = 1 ] || break
    done
    for s in "${!a_pid[@]}"; do
        SRV_PID=${a_pid[$s]}
        server_stop
    done
}

# parse_httperf FILE -> conns,replies_2xx,duration_s,rps,conn_rate,reply_ms,
#                       errors,client_timo,connrefused,connreset,fd_unavail,other
# errors = httperf's own (connections that failed) plus every reply that was
# not 2xx (a server shedding load with error pages has not served them);
# other = addrunavail, ftab-full, httperf's "other", socket-timo and those
# non-2xx replies.
parse_httperf() {
    awk '
        /^Total: connections/  { conns = $3; dur = $9; have = 1 }
        /^Connection rate:/    { crate = $3 }
        /^Reply time \[ms\]:/  { rt = $5 + $7 }
        /^Reply status:/       { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]xx=/) {
                                     n = substr($i, 5) + 0
                                     if ($i ~ /^2xx=/) ok = n; else bad += n } }
        /^Errors: total/       { errs = $3; ctimo = $5; stimo = $7; refused = $9; reset = $11 }
        /^Errors: fd-unavail/  { fdun = $3; other = $5 + $7 + $9 }
        END {
            if (!have) exit 1
            printf "%d,%d,%.3f,%.1f,%.1f,%.1f,%d,%d,%d,%d,%d,%d\n", conns, ok, dur,
                (dur > 0 ? ok / dur : 0), crate, rt, errs + bad, ctimo, refused, reset, fdun,
                other + stimo + bad
        }' "$1"
}

# (b) wrk keep-alive, closed loop: WRK_CONNS connections, one thread.
workload_b() {
    local server=$1 f
    start_for "$server" b || return 1
    for f in f2k f12k f64k; do
        wrk_reps "$server" b "$f" "/$f"
    done
    server_stop
}

# (c) one connection per request on 2 KB: wrk sending "Connection: close",
# so the server closes after each response and wrk reconnects (closed loop,
# same client and connection count as b; scripts/bench/README.md says why
# not httperf).
workload_c() {
    local server=$1
    [ -n "${REP_ONLY:-}" ] || settle_time_wait   # interleaved: once per round (run)
    start_for "$server" c || return 1
    wrk_reps "$server" c f2k-close /f2k -H 'Connection: close'
    server_stop
}

# (d) the WebSTONE mix (JAWS paper, Table 1) through bench.lua's weighted
# path choice; keep-alive.
workload_d() {
    local server=$1
    start_for "$server" d || return 1
    BENCH_MIX=$MIX_SPEC wrk_reps "$server" d mix /
    server_stop
}

# (e) workload b on 12.5 KB while IDLE_CONNS keep-alive connections, each
# served one request and then left idle, are held open by idle_conns.py.
workload_e() {
    local server=$1 hp out ready rss0 rss1 i alive label="f12k+idle"
    start_for "$server" e idle || return 1
    out="$OUT/raw/$server-e-idle${REP_ONLY:+-$REP_ONLY}.txt"
    rss0=$(rss_now)
    # no `timeout` wrapper: the helper bounds itself (60 s setup, IDLE_HOLD s
    # hold) and must receive our USR1 directly; nice and taskset exec, so $! is it.
    "${PIN_CLIENT[@]}" "$PY" "$BENCH_DIR/idle_conns.py" "$SRV_PORT" \
        "$IDLE_CONNS" "$IDLE_PATH" "$IDLE_HOLD" 60 >"$out" 2>&1 &
    hp=$!
    HELPER_PIDS+=("$hp")
    for ((i = 0; i < 700; i++)); do
        grep -q '^READY' "$out" && break
        pid_alive "$hp" || break
        sleep 0.1
    done
    ready=$(grep '^READY' "$out")
    if [ -z "$ready" ]; then
        warn "$server e: idle helper did not get ready"
        stop_pid "$hp" 2
        forget_pid "$hp"
        echo "$server,e,$label,0,0,0,0,0,,,,,,idle helper failed" >>"$OUT/runs.csv"
        server_stop
        return 1
    fi
    rss1=$(rss_now)
    log "  $server e: $ready; server RSS $((rss0 / 1024)) -> $((rss1 / 1024)) MiB"
    local ok note
    ok=${ready#*ok=}; ok=${ok%% *}
    note="idle served=$ok/$IDLE_CONNS rss+$(((rss1 - rss0) / 1024))MiB"
    RUN_NOTE=$note \
        wrk_reps "$server" e "$label" /f12k
    kill -USR1 "$hp" 2>/dev/null
    for ((i = 0; i < 300; i++)); do pid_alive "$hp" || break; sleep 0.1; done
    stop_pid "$hp" 2
    forget_pid "$hp"
    alive=$(grep '^ALIVE' "$out")
    log "  $server e: ${alive:-no ALIVE line}"
    # append the survivors to the notes of this server's e rows of this
    # helper's runs (those without a count yet: with interleaved rounds an
    # earlier round's rows already have theirs); "unknown" without a count,
    # and the report does not count such a run (nor one with fewer alive
    # than served: the server did less than the workload asks)
    alive=${alive#ALIVE alive=}; alive=${alive%% *}
    "$PY" - "$OUT/runs.csv" "$server" "${alive:-unknown}" <<'EOF'
import csv, sys
path, server, alive = sys.argv[1:]
rows = list(csv.reader(open(path)))
for r in rows[1:]:
    if r[0] == server and r[1] == "e" and "alive after=" not in r[13]:
        r[13] = (r[13] + "; " if r[13] else "") + f"alive after={alive}"
csv.writer(open(path, "w", newline="")).writerows(rows)
EOF
    server_stop
}

# (f) refused requests: as (c), but every request lacks the Host header
# HTTP/1.1 requires, so the expected reply is a 400 and a close (RFC 9112
# §3.2).  What a flood of malformed requests costs; only 400s count as
# replies (a server that serves such requests has none).
workload_f() {
    local server=$1
    [ -n "${REP_ONLY:-}" ] || settle_time_wait   # interleaved: once per round (run)
    start_for "$server" f || return 1
    BENCH_NO_HOST=1 BENCH_EXPECT_STATUS=400 wrk_reps "$server" f no-host-400 /f2k
    server_stop
}
