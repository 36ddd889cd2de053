"""targets.py -- the issue's targets and the workload rows they are judged
on: one rule and one row order shared by report.py (one run) and
across_runs.py (many runs), so the two can never judge or list differently.

cowd >= 1.10 x the best peer in replies per server-CPU-second, throughput
no lower than the best peer's (required where the client is the limit;
checked on every row, which is stricter), and a p99 no worse than the
lowest of the peers that served replies (httperf, workload a, reports
none).  On a wrk row (b-f), cowd failing a larger share of its requests
than a peer that served (by more than 10 in a million) misses every
target of the row.  A ratio is printed to two decimals, or to as many
more as it takes to show a miss that two would round up to the target
(0.998 is not 1.00),
so that every mark agrees with the number beside it (every table that
prints a ratio against a target goes through shown_ratio or shown_kind).
"""

TARGET_EFFICIENCY = 1.10
TARGET_THROUGHPUT = 1.00
PEER_EXCLUDE = ("cowd", "cowd+log")

# Rows are listed by workload, then in this order of their labels.
ROW_LABELS = ["f12k-sweep", "f2k", "f12k", "f64k", "f2k-close", "mix", "f12k+idle",
              "no-host-400"]


def row_rank(key):
    """(workload, label) -> sort key; labels not listed come last, by name."""
    wl, label = key
    return (wl, ROW_LABELS.index(label) if label in ROW_LABELS else len(ROW_LABELS), label)


def best_peer(per_server, key):
    """-> (server, value) with the highest value of key among the peers."""
    peers = [(s, m.get(key)) for s, m in per_server.items()
             if s not in PEER_EXCLUDE and m.get(key)]
    if not peers:
        return None, None
    return max(peers, key=lambda p: p[1])


def shown_ratio(value, target):
    """value as printed beside a mark against target."""
    digits = 2
    while digits < 6 and value < target and float(f"{value:.{digits}f}") >= target:
        digits += 1
    return f"{value:.{digits}f}"


def cowd_short(per):
    """-> True if cowd has fewer runs with a result on this row than some
    peer (it failed to start, died, or served nothing in the others)."""
    c = per.get("cowd", {})
    most = max((m.get("reps") or 0 for s, m in per.items() if s not in PEER_EXCLUDE), default=0)
    return (c.get("reps") or 0) < most


def error_share(m):
    """errors / (replies + errors) of one server's runs on a row, None if
    either is unknown (the sweep, workload a, has its errors by design past
    saturation and is judged at its error-free rates instead) or nothing
    was tried."""
    replies, errors = m.get("replies"), m.get("errors")
    if replies is None or errors is None or replies + errors <= 0:
        return None
    return errors / (replies + errors)


ERROR_SHARE_SLACK = 1e-5    # 10 failed requests in a million: a client's hiccup


def cowd_erred(per):
    """-> (cowd's error share, the lowest peer's, that peer) when cowd
    failed a larger share of its requests on this row than some peer that
    served replies, by more than ERROR_SHARE_SLACK (a faster server that
    drops requests has not met a target), else None."""
    mine = error_share(per.get("cowd", {}))
    if not mine:
        return None
    peers = [(error_share(m), s) for s, m in per.items()
             if s not in PEER_EXCLUDE and m.get("rps") and error_share(m) is not None]
    if not peers:
        return None
    low, peer = min(peers)
    return (mine, low, peer) if mine > low + ERROR_SHARE_SLACK else None


def absent_peers(per):
    """-> the peers with no replies on this row: the row compares cowd
    with the others only."""
    return sorted(s for s, m in per.items() if s not in PEER_EXCLUDE and not m.get("rps"))


def shown_at_most(value, target):
    """value as printed beside a mark against a target it must not exceed
    (p99 over the lowest peer's: 1.004 is not 1.00)."""
    digits = 2
    while digits < 6 and value > target and float(f"{value:.{digits}f}") <= target:
        digits += 1
    return f"{value:.{digits}f}"


def shown_kind(kind, value):
    """a ratio of target kind 'efficiency', 'throughput' or 'p99', printed
    so that a miss never reads as the target."""
    if kind == "p99":
        return shown_at_most(value, 1.0)
    return shown_ratio(value, TARGET_EFFICIENCY if kind == "efficiency" else TARGET_THROUGHPUT)


def check_row(per):
    """per: server -> metrics with reps, per_cpu_s, rps and lat_p99 (any
    may be missing).  -> dict target -> (ok, ratio, details), ok and ratio
    None if no peer has a figure; the p99 ratio is cowd's p99 over the
    lowest peer's.  'efficiency' and 'throughput' details are (ratio as
    shown, best peer), 'p99' details are (cowd p99, lowest peer p99, that
    peer).  Where a peer has a figure and cowd none, or cowd has results
    from fewer runs than a peer, or a larger share of failed requests than
    a peer (cowd_erred), the target is missed: a failure of cowd is never
    "not measured"."""
    c = per.get("cowd", {})
    short = cowd_short(per) or cowd_erred(per) is not None
    out = {}
    for name, key, target in (("efficiency", "per_cpu_s", TARGET_EFFICIENCY),
                              ("throughput", "rps", TARGET_THROUGHPUT)):
        peer, value = best_peer(per, key)
        if not value or (c.get("rps") and c.get(key) is None):
            # no peer's figure, or cowd served but its CPU was not measured
            out[name] = (None, None, ("–", peer))
            continue
        r = (c.get(key) or 0) / value
        out[name] = (r >= target and not short, r, (shown_ratio(r, target), peer))
    peer_p99 = [(m["lat_p99"], s) for s, m in per.items()
                if s not in PEER_EXCLUDE and m.get("rps") and m.get("lat_p99") is not None]
    if not peer_p99:
        out["p99"] = (None, None, None)
    elif c.get("rps") and c.get("lat_p99") is not None:
        best_p99, peer = min(peer_p99)
        out["p99"] = (c["lat_p99"] <= best_p99 and not short,
                      c["lat_p99"] / best_p99 if best_p99 else None,
                      (c["lat_p99"], best_p99, peer))
    else:
        best_p99, peer = min(peer_p99)
        out["p99"] = (False, None, (float("nan"), best_p99, peer))
    return out
