#!/usr/bin/env python3
"""report.py OUT [SERVERS] -- turn the suite's raw rows into tables and plot data.

Reads  OUT/runs.csv (wrk runs, workloads b-f), OUT/sweep.csv (httperf steps,
workload a) and OUT/env.txt. Writes
  OUT/results.md     markdown report (also printed to stdout)
  OUT/summary.csv    one row per workload/label/server (medians over reps)
  OUT/sweep-S.dat    per server: rate replies/s reply_ms errors (gnuplot)
  OUT/bars.dat       replies/s per label (rows) and server (columns)
  OUT/bars-eff.dat   replies per server-CPU-second, same layout
  OUT/plotvars.gp    which servers/columns exist, loaded by plot.gp

Repeated runs are reduced with the median of each metric separately;
errors are summed. "Best peer" is the best of the servers other than
cowd (and cowd+log) for that row's metric.
"""
import csv
import os
import re
import statistics
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steal import SIDES, STEAL_NOTABLE, steal_summary, steal_values  # noqa: E402
from targets import (PEER_EXCLUDE, TARGET_EFFICIENCY, TARGET_THROUGHPUT,  # noqa: E402
                     absent_peers, best_peer, check_row, cowd_erred, cowd_short, row_rank,
                     shown_kind)

OUT = sys.argv[1]
ORDER = (sys.argv[2].split(",") if len(sys.argv) > 2 else
         ["cowd", "nginx", "lighttpd", "h2o"])
if "cowd+log" not in ORDER:
    ORDER.append("cowd+log")

WL_TITLES = {
    "a": "(a) CoW paper test: 12,500-byte file, 5 requests per connection, httperf rate sweep",
    "b": "(b) keep-alive, wrk closed loop",
    "c": "(c) one connection per request (wrk, `Connection: close`), 2 KB",
    "d": "(d) WebSTONE mix: 500 B 35 %, 5 KB 50 %, 50 KB 14 %, 5 MB 1 % (keep-alive)",
    "e": "(e) 12.5 KB keep-alive while idle keep-alive connections are held open",
    "f": "(f) refused requests: HTTP/1.1 without Host, each answered 400 and closed (wrk)",
}
STARVED_PCT = 60  # closed-loop server below this CPU share: throughput suspect


def fnum(x, default=None):
    try:
        return float(x)
    except (TypeError, ValueError):
        return default


def fmt(x, digits=0):
    if x is None:
        return "–"
    if digits == 0:
        return f"{x:,.0f}"
    return f"{x:,.{digits}f}"


def ratio(a, b, kind=None):
    """a / b; against a target (kind 'efficiency' or 'throughput') printed
    so that a miss never reads as the target"""
    if a is None or not b:
        return "–"
    return shown_kind(kind, a / b) if kind else f"{a / b:.2f}"


def server_rank(s):
    return ORDER.index(s) if s in ORDER else len(ORDER)


def read_csv(name):
    path = os.path.join(OUT, name)
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def median(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def set_aside_reason(r):
    """Why a run's figures cannot be judged, or None if they can: the server
    died during it (its CPU time is then that of a dead process tree, read
    as 0, so replies per CPU-second would come out at any value), its CPU
    time is negative, or, in (e), it did not hold every idle connection
    from before wrk started to after wrk ended (it did less work than the
    workload asks).  Such a run counts as not made, like a failed one."""
    note = r.get("note") or ""
    if "server died" in note:
        return "server died during the run"
    cpu = fnum(r.get("cpu_s"))
    if cpu is not None and cpu < 0:
        return "negative CPU time"
    served = re.search(r"idle served=(\d+)/(\d+)", note)
    if served and int(served.group(1)) < int(served.group(2)):
        return "not every idle connection was served"
    alive = re.search(r"alive after=(\S+)", note)
    if served and (alive is None or not alive.group(1).isdigit()):
        return "idle connections not counted after the run"
    if served and alive and int(alive.group(1)) < int(served.group(1)):
        return "idle connections closed during the run"
    return None


def summarize_runs(rows):
    """-> dict (workload, label) -> dict server -> metrics.  Runs with no
    duration (failed) or set aside (set_aside_reason) are not counted in
    'reps' nor in any figure; 'set_aside' lists the reasons of the latter."""
    groups = {}
    for r in rows:
        groups.setdefault((r["workload"], r["label"], r["server"]), []).append(r)
    out = {}
    for (wl, label, server), rs in groups.items():
        ran = [r for r in rs if fnum(r["duration_s"], 0) > 0]
        aside = [set_aside_reason(r) for r in ran]
        good = [r for r, why in zip(ran, aside) if why is None]
        notes = sorted({r["note"] for r in rs if r.get("note")})
        m = {"reps": len(good), "note": "; ".join(notes),
             "set_aside": sorted(why for why in aside if why)}
        if good:
            m["rps"] = median([fnum(r["rps"]) for r in good])
            m["rps_min"] = min(fnum(r["rps"], 0) for r in good)
            m["rps_max"] = max(fnum(r["rps"], 0) for r in good)
            m["errors"] = sum(int(fnum(r["errors"], 0)) for r in good)
            m["replies"] = sum(int(fnum(r["replies"], 0)) for r in good)
            m["lat_avg"] = median([fnum(r["lat_avg_ms"]) for r in good])
            m["lat_p99"] = median([fnum(r["lat_p99_ms"]) for r in good])
            p99s = [fnum(r["lat_p99_ms"]) for r in good if fnum(r["lat_p99_ms"]) is not None]
            if p99s:
                m["lat_p99_min"], m["lat_p99_max"] = min(p99s), max(p99s)
            cpk = [fnum(r["cpu_s"]) * 1000 / fnum(r["replies"])
                   for r in good if fnum(r["replies"], 0) > 0 and fnum(r["cpu_s"]) is not None]
            # the median of the runs' own replies per CPU-second (with an
            # even count, 1000 / the median CPU per reply is the harmonic
            # mean of the middle two, below their median), and the CPU per
            # 1,000 replies shown beside it its inverse, so the two agree
            m["per_cpu_s"] = median([1000 / c for c in cpk if c > 0])
            m["cpu_per_1k"] = 1000 / m["per_cpu_s"] if m["per_cpu_s"] else median(cpk)
            if cpk and min(cpk) > 0:
                m["per_cpu_s_min"], m["per_cpu_s_max"] = 1000 / max(cpk), 1000 / min(cpk)
            m["bytes_per_reply"] = median([fnum(r.get("bytes_per_reply")) for r in good])
            m["rss_mib"] = median([fnum(r["rss_kb"], 0) / 1024 for r in good])
            m["cpu_pct"] = median([100 * fnum(r["cpu_s"], 0) / fnum(r["duration_s"])
                                   for r in good])
            m["client_pct"] = median([100 * fnum(r.get("client_cpu_s"), 0) / fnum(r["duration_s"])
                                      for r in good if r.get("client_cpu_s")])
            for side in SIDES:
                m["steal_" + side] = median(steal_values(good, side))
            details = [r["err_detail"] for r in good if int(fnum(r["errors"], 0)) > 0]
            if details:
                m["note"] = "; ".join(filter(None, [m["note"], details[0]]))
        out.setdefault((wl, label), {})[server] = m
    return out


def steal_cell(m):
    """'server / client' median steal % of a table row, or – if not recorded."""
    if m.get("steal_server") is None and m.get("steal_client") is None:
        return "–"
    return f"{fmt(m.get('steal_server'), 1)} / {fmt(m.get('steal_client'), 1)}"


def steal_line(run_rows, sweep_runs):
    """One sentence on the steal time recorded over every measured run (wrk
    and httperf), or None when the runs did not record it."""
    parts = [f"the {side}'s CPU median {med:.1f} %, highest {top:.1f} %, "
             f"{over} of {n} runs at {STEAL_NOTABLE:g} % or more"
             for side, (med, top, over, n) in steal_summary(run_rows + sweep_runs).items()]
    if not parts:
        return None
    return ("Steal time (the hypervisor running another guest in a pinned CPU's turn; "
            "/proc/stat, per run): " + "; ".join(parts) + ".")


def summarize_sweep(rows, runs=()):
    """rows: sweep.csv (one median run per server and step); runs:
    sweep-runs.csv (every run).  -> dict server -> {'steps': [...], summary
    metrics}"""
    by = {}
    for r in rows:
        by.setdefault(r["server"], []).append(r)
    out = {}
    for server, rs in by.items():
        steps = sorted(rs, key=lambda r: int(r["rate"]))
        peak = max(steps, key=lambda r: fnum(r["rps"], 0))
        clean = [r for r in steps if int(r["errors"]) == 0]
        replies = sum(int(r["replies"]) for r in steps)
        cpu = sum(fnum(r["cpu_s"], 0) for r in steps)
        first_err = next((r for r in steps if int(r["errors"]) > 0), None)
        err_kinds = ""
        if first_err:
            kinds = [(k, int(first_err[k])) for k in
                     ("client_timo", "connrefused", "connreset", "fd_unavail", "other_err")]
            err_kinds = " ".join(f"{k}={v}" for k, v in kinds if v)
        client_limited = [r for r in steps if int(r["errors"]) == 0 and
                          fnum(r["conn_rate"], 0) < 0.95 * int(r["rate"])]
        out[server] = {
            "steps": steps,
            "rps": fnum(peak["rps"]),
            "peak_rate": int(peak["rate"]),
            "lat_avg": fnum(peak["reply_ms"]),
            "max_clean_rate": int(clean[-1]["rate"]) if clean else None,
            "clean_ms": fnum(clean[-1]["reply_ms"]) if clean else None,
            "errors": sum(int(r["errors"]) for r in steps),
            "first_err_rate": int(first_err["rate"]) if first_err else None,
            "err_kinds": err_kinds,
            "cpu_per_1k": cpu * 1000 / replies if replies else None,
            "per_cpu_s": replies / cpu if cpu else None,
            "client_limited": [int(r["rate"]) for r in client_limited],
        }
    # Efficiency at equal offered load: over the rates that every server
    # served without errors.  Past a server's saturation point CPU per
    # reply measures the overload (and httperf's own, client-side
    # fd_unavail failure) as much as the server, and the servers reach
    # different rates, so the all-steps figure compares unequal work.
    # At those rates every run serves the offered load, so the step's
    # median run by replies/s is an arbitrary one of its runs; the CPU
    # figures take every error-free run there (from sweep-runs.csv), which
    # uses all the measurements instead of a third of them.
    common = None
    for m in out.values():
        clean = {int(r["rate"]) for r in m["steps"] if int(r["errors"]) == 0}
        common = clean if common is None else common & clean
    common = sorted(common or [])
    clean_runs = {server: [r for r in runs if r["server"] == server and int(r["rate"]) in common
                           and int(r["errors"]) == 0 and fnum(r["cpu_s"]) is not None]
                  for server in out}
    # one count for every server: if one has no clean run there (no
    # sweep-runs.csv, say), all are counted from their step medians
    from_runs = all(clean_runs.values())
    for server, m in out.items():
        m["common_runs"] = len(clean_runs[server]) if from_runs else 0
        rs = (clean_runs[server] if from_runs
              else [r for r in m["steps"] if int(r["rate"]) in common])
        replies = sum(int(r["replies"]) for r in rs)
        cpu = sum(fnum(r["cpu_s"], 0) for r in rs)
        m["all_per_cpu_s"] = m["per_cpu_s"]
        m["common_rates"] = common
        m["common_per_cpu_s"] = replies / cpu if cpu and replies else None
        if common:
            m["per_cpu_s"] = m["common_per_cpu_s"]
            m["cpu_per_1k"] = cpu * 1000 / replies if replies else None
    return out


def ratio_line(per_server):
    c = per_server.get("cowd")
    bs, bv = best_peer(per_server, "rps")
    es, ev = best_peer(per_server, "per_cpu_s")
    if not c or not c.get("rps"):
        return ("cowd / best peer: cowd not measured"
                + (f" (best peer: {bs} {fmt(bv)} replies/s, {es} {fmt(ev)} replies per CPU-s)" if bs else ""))
    return (f"cowd / best peer: throughput **{ratio(c.get('rps'), bv, 'throughput')}** (best: {bs}), "
            f"replies per server-CPU-second **{ratio(c.get('per_cpu_s'), ev, 'efficiency')}** (best: {es})")


BYTES_TOLERANCE = 0.03   # replies this much smaller than a peer's: flagged


def smaller_replies(wl, per):
    """-> (cowd's bytes per reply, peer, the peer's) when cowd's replies on
    this row average more than BYTES_TOLERANCE fewer bytes (headers and
    bodies, as wrk read them) than those of the best peer on throughput or
    efficiency: the same files, so a gap means shorter headers or a
    different share of the mix's files, and cowd did less work.  None
    otherwise, and for (f), whose 400 pages are each server's own."""
    mine = per.get("cowd", {}).get("bytes_per_reply")
    if wl == "f" or not mine:
        return None
    for key in ("rps", "per_cpu_s"):
        peer, _ = best_peer(per, key)
        theirs = per.get(peer, {}).get("bytes_per_reply") if peer else None
        if theirs and mine < (1 - BYTES_TOLERANCE) * theirs:
            return mine, peer, theirs
    return None


def start_failures_of(rows):
    """-> dict workload -> server -> failed starts (start_for's rows)."""
    out = {}
    for r in rows:
        if r["label"] == "-" and "start failed" in (r.get("note") or ""):
            per = out.setdefault(r["workload"], {})
            per[r["server"]] = per.get(r["server"], 0) + 1
    return out


# The targets, checked row by row with targets.check_row.
def targets_table(headline, start_failures):
    rows = ["## Targets", "",
            f"Efficiency >= {TARGET_EFFICIENCY:.2f} x the best peer, throughput >= "
            f"{TARGET_THROUGHPUT:.2f} x, p99 no higher than the lowest peer p99 "
            "(peers with replies); ✓ met, ✗ missed, – not measured.", "",
            "| workload | efficiency | throughput | p99 ms (cowd vs lowest peer) |",
            "|---|---|---|---|"]
    missed = []
    caveats = []

    def mark(ok):
        return "–" if ok is None else ("✓" if ok else "✗")

    def cell(ok, shown, peer, key, digits):
        # a miss shows both servers' lowest-highest runs: on this shared
        # machine a gap smaller than that spread is as likely noise
        text = f"{mark(ok)} {shown}"
        if ok is False and peer:
            ms = [("cowd", c), (peer, per.get(peer, {}))]
            if all(m.get("reps", 1) > 1 and m.get(key + "_min") is not None for _, m in ms):
                text += "; runs: " + ", ".join(
                    f"{s} {fmt(m[key + '_min'], digits)}–{fmt(m[key + '_max'], digits)}"
                    for s, m in ms)
        return text

    for wl, label, per in headline:
        c = per.get("cowd", {})
        verdict = check_row(per)
        eff_ok, _, (eff, es) = verdict["efficiency"]
        thr_ok, _, (thr, bs) = verdict["throughput"]
        eff_text = cell(eff_ok, eff, es, "per_cpu_s", 0)
        thr_text = cell(thr_ok, thr, bs, "rps", 0)
        p99_ok, _, p99_details = verdict["p99"]
        p99_text = "–"
        if p99_ok is not None:
            cowd_p99, best_p99, ps = p99_details
            shown = "none" if cowd_p99 != cowd_p99 else f"{cowd_p99:.2f}"   # NaN: no result
            p99_text = cell(p99_ok, f"{shown} vs {best_p99:.2f} ({ps})",
                            ps, "lat_p99", 2)
        for name, ok in (("efficiency", eff_ok), ("throughput", thr_ok), ("p99", p99_ok)):
            if ok is False:
                missed.append(f"{wl} ({label}): {name}")
        if cowd_short(per):
            caveats.append(f"{wl} ({label}): cowd has a result from {c.get('reps', 0)} runs, "
                           "fewer than a peer: every target of the row counts as missed")
        erred = cowd_erred(per)
        if erred:
            mine, low, peer = erred
            caveats.append(f"{wl} ({label}): cowd failed {100 * mine:.3g} % of its requests "
                           f"({c.get('errors')} errors), {peer} {100 * low:.3g} %: every target "
                           "of the row counts as missed")
        for s in sorted(per, key=server_rank):
            aside = per[s].get("set_aside")
            if aside:
                caveats.append(f"{wl} ({label}): {len(aside)} run(s) of {s} not counted ("
                               + "; ".join(sorted(set(aside))) + ")")
        for s, n in sorted(start_failures.get(wl, {}).items(), key=lambda i: server_rank(i[0])):
            caveats.append(f"{wl} ({label}): {s} failed to start {n} time(s) for this "
                           f"workload (raw/{s}-{wl}-start-failure.log)")
        absent = absent_peers(per)
        if absent:
            caveats.append(f"{wl} ({label}): no replies from {', '.join(absent)}: "
                           "compared with the other peers only")
        smaller = smaller_replies(wl, per)
        if smaller:
            mine, peer, theirs = smaller
            caveats.append(f"{wl} ({label}): cowd's replies averaged {mine:,.0f} bytes, "
                           f"{peer}'s {theirs:,.0f} ({100 * (1 - mine / theirs):.1f} % less "
                           "to send): not quite the same work")
        rows.append(f"| {wl}: {label} | {eff_text} | "
                    f"{thr_text} | {p99_text} |")
    rows.append("")
    for text in caveats:
        rows.append(f"- ⚠ {text}")
    if caveats:
        rows.append("")
    if missed or not headline:
        rows.append("Missed in this run: " + "; ".join(missed) + ".")
    elif caveats:
        rows.append("Every target met in this run against the peers that served (⚠ above).")
    else:
        rows.append("Every target met in this run.")
    rows.append("")
    return rows


# Round by round: each round of b-f runs every server once, back to back
# (order rotated), so cowd / peer within one round compares runs made
# about a minute apart, not the best of each server's runs wherever they
# fell.  Informational: the targets table above judges the medians over
# all runs, as the issue asks.
def paired_rounds(rows):
    """-> dict (workload, label) -> peer -> {'eff': [...], 'thr': [...]}:
    cowd / peer per round (rep) in which both served replies."""
    by = {}
    for r in rows:
        # the same per-run figures summarize_runs takes medians of
        replies, cpu, rps = fnum(r["replies"], 0), fnum(r["cpu_s"], 0), fnum(r["rps"], 0)
        if (replies > 0 and cpu > 0 and rps > 0 and fnum(r["duration_s"], 0) > 0
                and set_aside_reason(r) is None):
            by.setdefault((r["workload"], r["label"]), {}).setdefault(
                r["server"], {})[r["rep"]] = (rps, replies / cpu)
    out = {}
    for key, per in by.items():
        cowd = per.get("cowd")
        if not cowd:
            continue
        for peer, runs in per.items():
            if peer in PEER_EXCLUDE:
                continue
            reps = sorted(set(cowd) & set(runs))
            if len(reps) < 2:
                continue
            out.setdefault(key, {})[peer] = {
                "thr": [cowd[k][0] / runs[k][0] for k in reps],
                "eff": [cowd[k][1] / runs[k][1] for k in reps],
            }
    return out


def rounds_table(paired, headline):
    rows = []
    for wl, label, _ in headline:
        for peer in sorted(paired.get((wl, label), {}), key=server_rank):
            p = paired[(wl, label)][peer]
            cells = []
            for key, target in (("eff", TARGET_EFFICIENCY), ("thr", TARGET_THROUGHPUT)):
                v = p[key]
                kind = "efficiency" if key == "eff" else "throughput"
                cells.append(f"{shown_kind(kind, statistics.median(v))} "
                             f"({shown_kind(kind, min(v))}–{shown_kind(kind, max(v))}) | "
                             f"{sum(x >= target for x in v)} of {len(v)}")
            rows.append(f"| {wl}: {label} | {peer} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    return ["## Round by round: cowd / each peer", "",
            "Each round runs every server once, back to back (order rotated), so the "
            "ratio within a round compares runs made about a minute apart; the spread "
            "left is the machine's noise within a round. Median over the rounds (lowest–highest), and the rounds in which "
            f"cowd met the target against that peer (efficiency >= {TARGET_EFFICIENCY:.2f}, "
            f"throughput >= {TARGET_THROUGHPUT:.2f}). For reading the targets table, "
            "not a second verdict: a miss with cowd ahead in most rounds is noise, one "
            "with cowd behind in most rounds is a real gap.", "",
            "| workload | peer | efficiency per round | rounds met | "
            "throughput per round | rounds met |",
            "|---|---|---:|---:|---:|---:|"] + rows + [""]


def redo_line(rule, run_rows, set_aside):
    """One sentence on the runs run again for steal (wrk_once in
    workloads.sh): the rule, the attempts set aside per server, and the kept
    rows that were still disturbed after the last attempt.  None when the
    rule was off."""
    if not rule:
        return None
    per_server = {}
    for r in set_aside:
        per_server[r["server"]] = per_server.get(r["server"], 0) + 1
    kept_redone = [r for r in run_rows if "attempts (steal)" in (r.get("note") or "")]
    aside = ", ".join(f"{s} {n}" for s, n in sorted(per_server.items())) or "none"
    return (f"Runs disturbed by steal ({rule}): {len(set_aside)} attempts set aside "
            f"({aside}); {len(kept_redone)} of {len(run_rows)} rows are the best of two or "
            f"more attempts (noted in runs.csv).")


def main():
    run_rows = read_csv("runs.csv")
    runs = summarize_runs(run_rows)
    sweep_runs = read_csv("sweep-runs.csv")
    sweep = summarize_sweep(read_csv("sweep.csv"), sweep_runs)
    env = {}
    if os.path.exists(os.path.join(OUT, "env.txt")):
        for line in open(os.path.join(OUT, "env.txt")):
            k, _, v = line.rstrip("\n").partition("=")
            env.setdefault(k, v)

    md = ["# cowd benchmark results", ""]
    md.append(f"Mode **{env.get('mode', '?')}**, {env.get('date', '')}; {env.get('host', '')}.")
    md.append(f"Pinning: {env.get('pinning', '?')}. wrk {env.get('wrk', '?')}; "
              f"sweep: {env.get('sweep', '?')}; RLIMIT_NOFILE {env.get('rlimit_nofile', '?')}; "
              f"CPU busy with other work just before the runs {env.get('busy_before', '?')} %; "
              f"load average at start {env.get('loadavg_start', '?')}, at end "
              f"{env.get('loadavg_end', '?')} (other work on the machine skews results).")
    if env.get("cowd") and "version.cowd" in env:
        md.append(f"- cowd settings: {env['cowd']}")
        if env.get("cowd_binary"):
            md.append(f"- cowd binary (copied before the runs): {env['cowd_binary']}")
    for k, v in env.items():
        if k.startswith("version."):
            md.append(f"- {k[8:]}: {v}")
    if env.get("note"):
        md.append(f"- note: {env['note']}")
    md.append("")
    md.append("Columns: replies/s = successful replies per second (httperf: 2xx; wrk: status "
              "below 400; with several runs: the median, then the range in parentheses); errors = all "
              "client-seen errors; latency from the load generator (httperf: average "
              "reply time, no p99); CPU = server process tree utime+stime from /proc; "
              "server CPU % = that CPU time over the run's duration, client CPU % the "
              "same for wrk (a closed-loop run with the server well under 100 % means it "
              "was starved by other work on its core, or, if the client is near 100 %, "
              "that the client was the limit); ratios compare cowd with the best peer "
              "(nginx, lighttpd, h2o) on each metric. Replies per CPU-second is the "
              "figure least disturbed by other load on the machine. Steal % = the "
              "share of a pinned CPU's time the hypervisor gave to other guests during "
              "the run (from /proc/stat; – where not recorded): work no process in "
              "this machine can see, which slows whichever server it lands on.")
    steal = steal_line(run_rows, sweep_runs)
    if steal:
        md += ["", steal]
    redo = redo_line(env.get("steal_redo"), run_rows, read_csv("runs-disturbed.csv"))
    if redo:
        md += ["", redo]
    md.append("")

    summary_rows = []
    headline = []

    # ---- (a) --------------------------------------------------------------
    if sweep:
        md += [f"## {WL_TITLES['a']}", ""]
        md.append("| server | peak replies/s | at rate (conn/s) | avg reply ms at peak | "
                  "max error-free rate | reply ms there | errors (sweep) | first errors | "
                  "CPU s / 1k replies | replies / CPU s | replies / CPU s, all steps |")
        md.append("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")
        for s in sorted(sweep, key=server_rank):
            m = sweep[s]
            fe = (f"at {m['first_err_rate']}: {m['err_kinds']}" if m["first_err_rate"] else "none")
            md.append(f"| {s} | {fmt(m['rps'])} | {m['peak_rate']} | {fmt(m['lat_avg'], 2)} | "
                      f"{m['max_clean_rate'] or '–'} | {fmt(m['clean_ms'], 2)} | {m['errors']} | {fe} | "
                      f"{fmt(m['cpu_per_1k'], 3)} | {fmt(m['per_cpu_s'])} | "
                      f"{fmt(m['all_per_cpu_s'])} |")
            summary_rows.append(("a", "f12k-sweep", s, m))
        common = next(iter(sweep.values()))["common_rates"]
        allc = {s: {"per_cpu_s": m["all_per_cpu_s"]} for s, m in sweep.items()}
        es, ev = best_peer(allc, "per_cpu_s")
        md += ["", ratio_line(sweep), ""]
        if common:
            counted = (f"every run without errors at those rates ("
                       + ", ".join(f"{s} {sweep[s]['common_runs']}"
                                   for s in sorted(sweep, key=server_rank)) + " runs)"
                       if all(m["common_runs"] for m in sweep.values()) else "each step's median run")
            md.append(f"CPU figures (and the efficiency ratio) cover the offered rates every "
                      f"server served without errors (step medians): "
                      f"{', '.join(map(str, common))} conn/s (equal work for all), counting "
                      f"{counted}. Over all of each server's steps (their median runs), overload "
                      f"included, cowd / best peer is "
                      f"{ratio(allc.get('cowd', {}).get('per_cpu_s'), ev, 'efficiency')} (best: {es}).")
        else:
            md.append("No offered rate was served without errors by every server: CPU "
                      "figures cover all of each server's steps.")
        md.append("")
        headline.append(("a", "f12k, 5 req/conn, peak", sweep))
        # per-step tables, like the paper's Tables 1 and 2
        rates = sorted({int(r["rate"]) for m in sweep.values() for r in m["steps"]})
        servers = sorted(sweep, key=server_rank)
        # every run of a step (--full: 3), to show the spread behind the median
        spread = {}
        for r in sweep_runs:
            spread.setdefault((r["server"], int(r["rate"])), []).append(fnum(r["rps"], 0))
        multi = any(len(v) > 1 for v in spread.values())
        for title, key, digits in (("replies/s", "rps", 0), ("average reply time (ms)", "reply_ms", 2),
                                   ("errors", "errors", 0)):
            if key == "rps" and multi:
                title = "replies/s of the step's median run (lowest–highest run)"
            md.append(f"Per step, {title}:")
            md.append("")
            md.append("| offered conn/s | ideal replies/s | " + " | ".join(servers) + " |")
            md.append("|---:|---:|" + "---:|" * len(servers))
            for rate in rates:
                cells = []
                for s in servers:
                    r = next((r for r in sweep[s]["steps"] if int(r["rate"]) == rate), None)
                    cell = fmt(fnum(r[key]), digits) if r else "–"
                    step_runs = spread.get((s, rate), [])
                    if r and key == "rps" and len(step_runs) > 1 and min(step_runs) < max(step_runs):
                        cell += f" ({fmt(min(step_runs))}–{fmt(max(step_runs))})"
                    cells.append(cell)
                md.append(f"| {rate} | {rate * 5:,} | " + " | ".join(cells) + " |")
            md.append("")
        lim = {s: m["client_limited"] for s, m in sweep.items() if m["client_limited"]}
        if lim:
            md.append("Steps where httperf fell below 95 % of the offered connection rate "
                      "without errors (client-limited, or client starved by other work): "
                      + "; ".join(f"{s}: {v}" for s, v in lim.items()) + ".")
            md.append("")
        md.append("httperf's select() loop caps it at ~1,020 open connections (FD_SETSIZE): "
                  "once a server falls behind, backlog grows and the first errors are "
                  "usually `fd_unavail` (client side), the overload signal of this sweep.")
        md.append("")

    # ---- (b)..(f) -----------------------------------------------------------
    for wl in "bcdef":
        labels = [k for k in runs if k[0] == wl]
        if not labels:
            continue
        md += [f"## {WL_TITLES[wl]}", ""]
        for key in sorted(labels, key=row_rank):
            per = runs[key]
            label = key[1]
            if label == "-":  # start_for() records a failed start this way
                md.append("Failed to start for this workload: " + ", ".join(
                    f"{s} ({m['note']})" for s, m in sorted(per.items())) +
                    f" -- see raw/<server>-{wl}-start-failure.log.")
                md.append("")
                continue
            md.append(f"**{label}**")
            md.append("")
            md.append("| server | replies/s | errors | bytes / reply | latency avg ms | "
                      "latency p99 ms | CPU s / 1k replies | replies / CPU s | server CPU % | "
                      "client CPU % | steal % (server / client CPU) | RSS MiB | runs | note |")
            md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
            for s in sorted(per, key=server_rank):
                m = per[s]
                rps = fmt(m.get("rps"))
                if m["reps"] > 1:
                    rps += f" ({fmt(m['rps_min'])}–{fmt(m['rps_max'])})"
                md.append(f"| {s} | {rps} | {m.get('errors', '–')} | "
                          f"{fmt(m.get('bytes_per_reply'))} | {fmt(m.get('lat_avg'), 2)} | {fmt(m.get('lat_p99'), 2)} | "
                          f"{fmt(m.get('cpu_per_1k'), 3)} | {fmt(m.get('per_cpu_s'))} | "
                          f"{fmt(m.get('cpu_pct'))} | {fmt(m.get('client_pct'))} | "
                          f"{steal_cell(m)} | "
                          f"{fmt(m.get('rss_mib'), 1)} | {m['reps']} | {m['note']} |")
                summary_rows.append((wl, label, s, m))
            md += ["", ratio_line(per), ""]
            if "cowd+log" in per and "cowd" in per:
                c, l = per["cowd"], per["cowd+log"]
                md.append(f"Logging cost (cowd --access-log vs off): throughput "
                          f"{ratio(l.get('rps'), c.get('rps'))}x, CPU per reply "
                          f"{ratio(l.get('cpu_per_1k'), c.get('cpu_per_1k'))}x.")
                md.append("")
            headline.append((wl, label, per))

    # ---- headline -------------------------------------------------------------
    head = ["## Summary: cowd / best peer", "",
            "| workload | best peer replies/s | cowd replies/s | throughput ratio | "
            "best peer replies/CPU-s | cowd replies/CPU-s | efficiency ratio | "
            "server CPU % (cowd / best peer) |",
            "|---|---|---:|---:|---|---:|---:|---|"]
    starved = False
    for wl, label, per in headline:
        bs, bv = best_peer(per, "rps")
        es, ev = best_peer(per, "per_cpu_s")
        c = per.get("cowd", {})
        cpu = "–"
        if wl != "a":
            cc, bc = c.get("cpu_pct"), per.get(bs, {}).get("cpu_pct") if bs else None
            cpu = f"{fmt(cc)} / {fmt(bc)}"
            if any(x is not None and x < STARVED_PCT for x in (cc, bc)):
                cpu += " ⚠"
                starved = True
        head.append(f"| {wl}: {label} | {bs or '–'} {fmt(bv)} | {fmt(c.get('rps'))} | "
                    f"{ratio(c.get('rps'), bv, 'throughput')} | {es or '–'} {fmt(ev)} | "
                    f"{fmt(c.get('per_cpu_s'))} | {ratio(c.get('per_cpu_s'), ev, 'efficiency')} | {cpu} |")
    head.append("")
    if starved:
        head.append(f"⚠ = a closed-loop wrk run in which the server used less than "
                    f"{STARVED_PCT} % of its core: it was starved by other work on the "
                    "machine (or the client was the limit), so its replies/s understate it; "
                    "compare replies per CPU-second, or rerun on a quiet machine.")
        head.append("")
    head += targets_table(headline, start_failures_of(run_rows))
    head += rounds_table(paired_rounds(run_rows), headline)
    insert_at = next(i for i, line in enumerate(md) if line.startswith("## ")) if any(
        line.startswith("## ") for line in md) else len(md)
    md[insert_at:insert_at] = head

    text = "\n".join(md) + "\n"
    with open(os.path.join(OUT, "results.md"), "w") as f:
        f.write(text)
    sys.stdout.write(text)

    # ---- machine-readable summary and plot data ------------------------------
    with open(os.path.join(OUT, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "label", "server", "rps", "errors", "lat_avg_ms",
                    "lat_p99_ms", "cpu_s_per_1k", "replies_per_cpu_s", "note", "reps",
                    "replies", "bytes_per_reply"])
        for wl, label, s, m in summary_rows:
            w.writerow([wl, label, s, m.get("rps"), m.get("errors"), m.get("lat_avg"),
                        m.get("lat_p99"), m.get("cpu_per_1k"), m.get("per_cpu_s"),
                        m.get("note", "") or m.get("err_kinds", ""), m.get("reps", ""),
                        m.get("replies"), m.get("bytes_per_reply")])

    sweep_servers = sorted(sweep, key=server_rank)
    for s in sweep_servers:
        with open(os.path.join(OUT, f"sweep-{s}.dat"), "w") as f:
            f.write("# rate_conn_per_s replies_per_s reply_ms errors\n")
            for r in sweep[s]["steps"]:
                f.write(f"{r['rate']} {r['rps']} {max(fnum(r['reply_ms'], 0), 0.05)} {r['errors']}\n")

    bar_labels = [(wl, label) for wl, label, _ in headline if wl != "a" and label != "-"]
    bar_servers = sorted({s for (wl, label) in bar_labels for s in runs[(wl, label)]},
                         key=server_rank)
    for name, key in (("bars.dat", "rps"), ("bars-eff.dat", "per_cpu_s")):
        with open(os.path.join(OUT, name), "w") as f:
            f.write("# workload " + " ".join(bar_servers) + "\n")
            for wl, label in bar_labels:
                vals = []
                for s in bar_servers:
                    v = runs[(wl, label)].get(s, {}).get(key)
                    vals.append(f"{v:.1f}" if v else "?")
                f.write(f"{wl}:{label} " + " ".join(vals) + "\n")

    with open(os.path.join(OUT, "plotvars.gp"), "w") as f:
        f.write(f"sweep_servers = '{' '.join(sweep_servers)}'\n")
        f.write(f"bar_servers = '{' '.join(bar_servers)}'\n")
        f.write(f"have_bars = {1 if bar_labels else 0}\n")
        f.write(f"mode = '{env.get('mode', '')}'\n")


if __name__ == "__main__":
    main()
