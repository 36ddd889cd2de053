# adhoc-setup.sh: sourced by this day's ad-hoc check scripts
# (after-run95/idle-measure.sh, after-run97/client-cost.sh) after they set
# CLONE, the fresh clone whose scripts/bench libraries and build they use:
# loads those libraries, picks the cowd binary, raises the descriptor limit
# as the suite does for (e), pins server and client CPUs and stops every
# server the script started when it exits.
BENCH_DIR=$CLONE/scripts/bench
. $BENCH_DIR/common.sh; . $BENCH_DIR/docs.sh; . $BENCH_DIR/servers.sh
COWD_BIN=${COWD_BIN:-$CLONE/build/src/cowd}
ulimit -n 20000; MAX_FDS=20000; MAX_CONNS=19936
STARTED_PIDS=(); HELPER_PIDS=()
set_pinning
trap stop_all_servers EXIT
