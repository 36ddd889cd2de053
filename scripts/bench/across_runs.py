#!/usr/bin/env python3
"""across_runs.py RUN_DIR... -- how often each target was met over many full
runs of the suite, from each run's summary.csv.

One run decides little on a shared 2-core machine: the same binary 45 minutes
apart has met every target but one and missed seven (runs 28 and 29).  This
prints, per workload row and target, in how many of the given runs cowd met
it and the median ratio with its lowest-highest, judged by the same rule as
each run's own report (targets.check_row).  A target met in most runs with
a median ratio above the line is noise when it misses; one met in few runs
is a real gap.  Run directories without a summary.csv are skipped with a
message.

Under it, per kind of target (efficiency, throughput, p99) and over all of
them: the runs that met every target of that kind, and the share expected
to if each target were met independently at its rate in the first table
(the product of the rates).  Targets each met in about half the runs make
a run meeting all of them rare without any of them being behind.

A second table splits the throughput target by peer: cowd against each
peer alone, in how many runs it was at least level, its median ratio, and
in how many runs that peer was the best one.  Where the client is the
limit, servers that cost the client the same come out level on average,
and a run's best peer is the luckiest of three noisy medians; a row that
misses against the best peer but is level against each peer alone is that
selection, and one behind a single peer in most runs is a real gap.

A third table gives, for workload (a), the CoW paper's own measure: the
highest offered rate each server served without errors with every lower
step clean too (from sweep.csv's step medians; a clean step after the
first errors is luck, not capacity), and whether cowd's was the highest.
Under it, from sweep-runs.csv, each server's replies per CPU-second over
its sweep runs without errors and over those with errors: (a)'s peak is a
step median past saturation, so what a reply costs there decides it, and
the sweep shows whether a server's cost per reply rises or falls as it is
overloaded.

A last table, for runs that recorded it (from run 40 on), gives the steal
time on the server's and the client's CPU over each run's measured runs:
the share of those virtual CPUs' time the hypervisor gave to other guests,
which no process on the machine can see and which slows whichever server
it lands on.
"""
import csv
import math
import os
from collections import Counter, defaultdict
import statistics
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from steal import SIDES, STEAL_NOTABLE, steal_summary  # noqa: E402
from targets import (PEER_EXCLUDE, TARGET_EFFICIENCY, TARGET_THROUGHPUT, best_peer,  # noqa: E402
                     check_row, row_rank, shown_kind)

def fnum(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def read_run(run_dir):
    """-> dict (workload, label) -> server -> metrics, as report.py had them."""
    rows = {}
    with open(os.path.join(run_dir, "summary.csv"), newline="") as f:
        for r in csv.DictReader(f):
            m = rows.setdefault((r["workload"], r["label"]), {})[r["server"]] = {
                "rps": fnum(r["rps"]),
                "per_cpu_s": fnum(r["replies_per_cpu_s"]),
                "lat_p99": fnum(r["lat_p99_ms"]),
            }
            if fnum(r.get("reps")) is not None:       # (summary.csv before run 111 has none)
                m["reps"] = int(fnum(r["reps"]))
            if fnum(r.get("replies")) is not None:    # (before run 118 none: errors
                m["replies"] = fnum(r["replies"])     #  then go unjudged)
                m["errors"] = fnum(r["errors"])
    return rows


def first_clean_rate(run_dir):
    """-> dict server -> highest sweep rate (conn/s) below its first step
    with errors (None if the first step had errors); {} without sweep.csv."""
    path = os.path.join(run_dir, "sweep.csv")
    if not os.path.exists(path):
        return {}
    steps = defaultdict(list)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            steps[r["server"]].append((int(r["rate"]), int(r["errors"])))
    out = {}
    for server, rs in steps.items():
        out[server] = None
        for rate, errors in sorted(rs):
            if errors > 0:
                break
            out[server] = rate
    return out


def read_rows(run_dir, name):
    """Every row of the run's CSV file name, [] if it has none."""
    path = os.path.join(run_dir, name)
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def measured_runs(run_dir):
    """Every row of the run's runs.csv and sweep-runs.csv (those present)."""
    return read_rows(run_dir, "runs.csv") + read_rows(run_dir, "sweep-runs.csv")


def sweep_cost(run_dir):
    """-> dict server -> (replies per CPU-second over its sweep runs
    without errors, over those with errors), each None without such runs
    (or without their CPU time); {} without sweep-runs.csv."""
    sums = defaultdict(lambda: [[0, 0.0], [0, 0.0]])    # server -> [clean, errors]
    for r in read_rows(run_dir, "sweep-runs.csv"):
        cpu, replies, errors = fnum(r["cpu_s"]), fnum(r["replies"]), fnum(r["errors"])
        if cpu is None or cpu <= 0 or replies is None or errors is None:
            continue
        acc = sums[r["server"]][1 if errors > 0 else 0]
        acc[0] += replies
        acc[1] += cpu
    return {server: tuple(replies / cpu_s if cpu_s > 0 else None for replies, cpu_s in pair)
            for server, pair in sums.items()}


TARGET_KINDS = ("efficiency", "throughput", "p99")


def print_chance(seen, kind_met, all_met, n_runs):
    """Per kind of target and over all of them: how many runs met every
    target of that kind, against how many would if the targets were met
    independently, each at its own rate over these runs.  A target met
    in half the runs, on each of several rows, makes a run meeting all of
    them rare even when no row is behind on average."""
    print("")
    print("## Every target in one run\n")
    print("Runs meeting every target of a kind, and the share expected if each target were "
          "met independently at its rate above (the product of those rates).\n")
    print("| targets | rows | runs met | expected share | about 1 run in |")
    print("|---|---:|---:|---:|---:|")
    groups = [(kind, [k for k in seen if k[1] == kind], kind_met[kind]) for kind in TARGET_KINDS]
    groups.append(("all", list(seen), all_met))
    for name, keys, met in groups:
        if not keys:
            continue
        p = math.prod(sum(ok for ok, _ in seen[k]) / len(seen[k]) for k in keys)
        one_in = f"{1 / p:,.0f}" if p > 0 else "never"
        print(f"| {name} | {len(keys)} | {met} of {n_runs} | {p:.3f} | {one_in} |")


def main(run_dirs):
    runs = []
    for d in run_dirs:
        if not os.path.exists(os.path.join(d, "summary.csv")):
            print(f"across_runs: {d}: no summary.csv, skipped", file=sys.stderr)
            continue
        runs.append((d, read_run(d)))
    if not runs:
        print("across_runs: no run directory with a summary.csv given", file=sys.stderr)
        return 2

    # (row, target) -> list of (ok, ratio) over the runs that measured it
    seen = {}
    all_met = 0
    # target -> runs in which cowd met that target on every row that measured it
    kind_met = Counter()
    for _, rows in runs:
        missed = set()
        for key, per in rows.items():
            for target, (ok, value, _) in check_row(per).items():
                if ok is None:
                    continue
                seen.setdefault((key, target), []).append((ok, value))
                if not ok:
                    missed.add(target)
        all_met += not missed
        for target in TARGET_KINDS:
            kind_met[target] += target not in missed

    print(f"# The targets across {len(runs)} runs\n")
    print("Runs: " + ", ".join(d.rstrip("/") for d, _ in runs) + ".\n")
    print(f"Targets as in each run's report: efficiency >= {TARGET_EFFICIENCY:.2f} x the best "
          f"peer, throughput >= {TARGET_THROUGHPUT:.2f} x, p99 no higher than the lowest "
          "peer p99 (shown as cowd / that p99, so <= 1.00 meets it).\n")
    print("| workload | target | runs met | median ratio | lowest–highest |")
    print("|---|---|---:|---:|---:|")
    order = {kind: i for i, kind in enumerate(TARGET_KINDS)}
    for (key, target) in sorted(seen, key=lambda k: (row_rank(k[0]), order[k[1]])):
        results = seen[(key, target)]
        values = [v for _, v in results if v is not None]
        met = sum(ok for ok, _ in results)
        if not values:          # cowd had no figure in any of them
            print(f"| {key[0]}: {key[1]} | {target} | {met} of {len(results)} | none | – |")
            continue
        print(f"| {key[0]}: {key[1]} | {target} | {met} of {len(results)} | "
              f"{shown_kind(target, statistics.median(values))} | "
              f"{shown_kind(target, min(values))}–{shown_kind(target, max(values))} |")
    print("")
    print(f"Runs meeting every target: {all_met} of {len(runs)}.")
    print_chance(seen, kind_met, all_met, len(runs))

    # row -> peer -> [cowd / peer throughput per run], and how often each peer was best
    against = defaultdict(lambda: defaultdict(list))
    best_count = defaultdict(Counter)
    for _, rows in runs:
        for key, per in rows.items():
            c = per.get("cowd", {}).get("rps")
            if not c:
                continue
            best_count[key][best_peer(per, "rps")[0]] += 1
            for peer, m in per.items():
                if peer not in PEER_EXCLUDE and m.get("rps"):
                    against[key][peer].append(c / m["rps"])
    print("")
    print("## Throughput against each peer alone\n")
    print(f"cowd / that peer's replies/s in each run that measured both; level = at least "
          f"{TARGET_THROUGHPUT:.2f}; best = the runs in which that peer was the best peer.\n")
    print("| workload | peer | runs level | median ratio | lowest–highest | best |")
    print("|---|---|---:|---:|---:|---:|")
    for key in sorted(against, key=row_rank):
        for peer in sorted(against[key]):
            values = against[key][peer]
            level = sum(v >= TARGET_THROUGHPUT for v in values)
            print(f"| {key[0]}: {key[1]} | {peer} | {level} of {len(values)} | "
                  f"{shown_kind('throughput', statistics.median(values))} | "
                  f"{shown_kind('throughput', min(values))}–{shown_kind('throughput', max(values))} | "
                  f"{best_count[key][peer]} |")

    verdicts = Counter()
    lines = []
    for d, _ in runs:
        rates = first_clean_rate(d)
        if "cowd" not in rates:
            continue
        # errors at the first step counts as 0: below any clean rate
        peers = {s: r or 0 for s, r in rates.items() if s not in PEER_EXCLUDE}
        if not peers:
            continue
        best = max(peers.values())
        c = rates["cowd"] or 0
        verdict = "highest" if c > best else "tied" if c == best else "behind"
        verdicts[verdict] += 1
        names = "/".join(sorted(s for s, r in peers.items() if r == best))
        lines.append(f"| {d.rstrip('/')} | {c or '–'} | {best or '–'} ({names}) | {verdict} |")
    if lines:
        print("")
        print("## (a): the highest rate served before the first errors\n")
        print("Offered conn/s of the last step whose median run had no errors, every lower "
              "step clean too (the CoW paper's measure).\n")
        print("| run | cowd | best peer | cowd |")
        print("|---|---:|---:|---|")
        print("\n".join(lines))
        print("")
        print(f"cowd highest in {verdicts['highest']} of {len(lines)} runs, tied in "
              f"{verdicts['tied']}, behind in {verdicts['behind']}.")

    costs = [(d, sweep_cost(d)) for d, _ in runs]
    costs = [(d, c) for d, c in costs if "cowd" in c]
    if costs:
        servers = ["cowd"] + sorted({s for _, c in costs for s in c
                                     if s != "cowd" and s not in PEER_EXCLUDE})
        dearer = Counter()      # server -> runs in which its overloaded replies cost more
        both = Counter()        # server -> runs with both figures
        print("")
        print("## (a): replies per CPU-second, sweep runs without errors / with errors\n")
        print("Thousands of replies per server-CPU-second over each server's sweep runs "
              "that had no errors and over those that had some (overload).\n")
        print("| run | " + " | ".join(servers) + " |")
        print("|---|" + "---:|" * len(servers))
        fmt = lambda v: "–" if v is None else f"{v / 1000:.1f}"
        for d, c in costs:
            cells = []
            for s in servers:
                clean, over = c.get(s, (None, None))
                cells.append(f"{fmt(clean)} / {fmt(over)}")
                if clean is not None and over is not None:
                    both[s] += 1
                    dearer[s] += over < clean
            print(f"| {d.rstrip('/')} | " + " | ".join(cells) + " |")
        print("")
        print("Runs in which a reply cost more with errors than without: " +
              ", ".join(f"{s} {dearer[s]} of {both[s]}" for s in servers) + ".")

    lines = []
    for d, _ in runs:
        st = steal_summary(measured_runs(d))
        if not st:
            continue
        cells = [f"{st[side][0]:.1f} / {st[side][1]:.1f} / {st[side][2]} of {st[side][3]}"
                 if side in st else "–" for side in SIDES]
        lines.append(f"| {d.rstrip('/')} | " + " | ".join(cells) + " |")
    if lines:
        print("")
        print("## Steal time\n")
        print("Per run, over its measured runs: median / highest steal % of the pinned CPU, "
              f"and how many runs had {STEAL_NOTABLE:g} % or more.\n")
        print("| run | server's CPU | client's CPU |")
        print("|---|---:|---:|")
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) > 1 else 2)
    sys.exit(main(sys.argv[1:]))
