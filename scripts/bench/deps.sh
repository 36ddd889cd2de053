# deps.sh -- install the suite's tools with apt if they are missing (sourced).
#
# Checks each tool with command -v first and installs only what is missing,
# from the apt sources the system already has (never edits them). The
# suite runs its own instances; the packages' own services are not used,
# but apt starts them on installing where policy-rc.d allows it (most hosts
# that are not containers): they are left running, not ours to stop
# (scripts/bench/README.md says so and how).

# tool:package pairs
DEPS="nginx:nginx lighttpd:lighttpd h2o:h2o httperf:httperf wrk:wrk
gnuplot:gnuplot-nox taskset:util-linux ps:procps curl:curl"

ensure_deps() {
    local spec tool pkg missing=()
    for spec in $DEPS; do
        tool=${spec%%:*} pkg=${spec#*:}
        command -v "$tool" >/dev/null 2>&1 || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" != 0 ]; then
        warn "missing packages (${missing[*]}) and not root: install them by hand"
        return 0
    fi
    log "installing: ${missing[*]}"
    # an empty package list means apt-get update never ran on this machine
    if ! compgen -G '/var/lib/apt/lists/*_Packages' >/dev/null; then
        timeout 300 apt-get update -qq >/dev/null 2>&1 || warn "apt-get update failed"
    fi
    # no timeout(1) around an install: killed while dpkg configures, it
    # would leave dpkg "interrupted" and every later apt-get failing; waiting
    # on another apt's lock is bounded by apt itself
    # (and no question either: a conffile left by a removed package is kept)
    local no_questions=(-o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef
                        -o Dpkg::Options::=--force-confold)
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${no_questions[@]}" \
            --no-install-recommends "${missing[@]}" </dev/null >/dev/null 2>&1; then
        # one stale index is the usual cause: refresh once and retry
        timeout 300 apt-get update -qq >/dev/null 2>&1
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${no_questions[@]}" \
            --no-install-recommends "${missing[@]}" </dev/null >/dev/null 2>&1 \
            || warn "apt-get install ${missing[*]} failed; servers that are missing will be skipped"
    fi
}
