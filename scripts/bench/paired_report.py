#!/usr/bin/env python3
"""paired_report.py -- the table of scripts/bench/paired's runs.

Usage: paired_report.py OUTDIR

Reads OUTDIR/paired.csv (one line per round: cowd's and one peer's replies/s
measured at the same time, the two wrk processes sharing the client CPU)
and OUTDIR/env.txt, writes OUTDIR/paired.md and prints it.

A round's ratio is cowd's replies over the peer's: above 1.00 a reply cost
the client less against cowd.  It measures the client's cost only while
the server CPU had time to spare, so rounds in which it was BUSY_LIMIT % or
more busy are counted apart and their ratios left out of the median.
"""
import csv
import os
import statistics
import sys

BUSY_LIMIT = 90.0   # server CPU busy share (%) from which a round is server-bound


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def fmt(x, spec="%.3f"):
    return "–" if x is None else spec % x


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize(rows):
    """rows: the CSV lines of one row and peer -> a dict of the table cells."""
    client_bound = [r for r in rows if (num(r["server_cpu_busy_pct"]) or 0.0) < BUSY_LIMIT]
    ratios = [num(r["ratio"]) for r in client_bound if num(r["ratio"]) is not None]
    return {
        "rounds": len(rows),
        "server_bound": len(rows) - len(client_bound),
        "ahead": sum(1 for x in ratios if x >= 1.0),
        "median": median(ratios),
        "low": min(ratios) if ratios else None,
        "high": max(ratios) if ratios else None,
        "n": len(ratios),
        "busy": median(num(r["server_cpu_busy_pct"]) for r in rows),
        "steal_s": median(num(r["steal_server_pct"]) for r in rows),
        "steal_c": median(num(r["steal_client_pct"]) for r in rows),
        "peer_silent": all((num(r["peer_rps"]) or 0.0) == 0.0 for r in rows),
        "errors": (sum(int(r["cowd_errors"] or 0) for r in rows),
                   sum(int(r["peer_errors"] or 0) for r in rows)),
    }


def report(outdir):
    with open(os.path.join(outdir, "paired.csv"), newline="") as f:
        lines = list(csv.DictReader(f))
    env = []
    try:
        with open(os.path.join(outdir, "env.txt")) as f:
            env = [l.rstrip("\n") for l in f if l.strip()]
    except OSError:
        pass
    order, groups = [], {}
    for r in lines:
        key = (r["row"], r["peer"])
        if key not in groups:
            order.append(key)
            groups[key] = []
        groups[key].append(r)

    out = ["# Paired runs: cowd and one peer at the same time", ""]
    out += ["    " + l for l in env] + [""] if env else []
    out += [
        "Each round runs cowd and the peer at once, both on the server CPU, each",
        "driven by its own wrk, the two wrk sharing the client CPU.  Ratio = cowd's",
        "replies / the peer's in the same round: above 1.00 a reply cost the client",
        "less against cowd.  Rounds with the server CPU %d %% busy or more measure" % BUSY_LIMIT,
        "the servers as well as the client: they are counted, not used.",
        "",
        "| row | peer | rounds | cowd ahead | median ratio | lowest–highest | "
        "server CPU busy | steal % (server / client CPU) | server-bound rounds | errors (cowd / peer) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    worst, silent = {}, []
    for key in order:
        s = summarize(groups[key])
        rng = "–" if s["low"] is None else "%.3f–%.3f" % (s["low"], s["high"])
        out.append("| %s | %s | %d | %d of %d | %s | %s | %s %% | %s / %s | %d | %d / %d |" % (
            key[0], key[1], s["rounds"], s["ahead"], s["n"], fmt(s["median"]), rng,
            fmt(s["busy"], "%.0f"), fmt(s["steal_s"], "%.1f"), fmt(s["steal_c"], "%.1f"),
            s["server_bound"], s["errors"][0], s["errors"][1]))
        if s["peer_silent"]:
            silent.append(key)
        if not key[1].startswith("cowd") and s["median"] is not None and (key[0] not in worst or s["median"] < worst[key[0]][0]):
            worst[key[0]] = (s["median"], key[1])
    if worst:
        out += ["", "Against the peer that cost the client least, per row (median ratio;",
                "a peer named cowd or cowd=PATH is a second cowd, left out):", ""]
        for row in dict.fromkeys(k[0] for k in order):
            if row in worst:
                m, peer = worst[row]
                out.append("* %s: %.3f against %s (%s)" % (
                    row, m, peer, "level or ahead" if m >= 1.0 else "behind"))
    for row, peer in silent:
        out.append("* %s: %s gave no reply this row counts in any round (on f, h2o answers "
                   "requests without Host instead of refusing them)" % (row, peer))
    text = "\n".join(out) + "\n"
    with open(os.path.join(outdir, "paired.md"), "w") as f:
        f.write(text)
    return text


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    try:
        sys.stdout.write(report(sys.argv[1]))
    except (OSError, KeyError, csv.Error) as e:
        sys.stderr.write("paired_report.py: cannot read %s: %s\n" % (sys.argv[1], e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
