"""Real clients: curl against the demo site, and a short wrk run."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from cowdtest import SLOW, SRCDIR, TestSkip, check, eq, open_fds, settled_fds, tcp_sockets, test


def demo_index():
    with open(os.path.join(SRCDIR, "conf", "www", "index.html"), "rb") as f:
        return f.read()


def curl(args, timeout=20):
    if shutil.which("curl") is None:
        raise TestSkip("curl not installed")
    p = subprocess.run(["curl", "-s", "-S", "--max-time", "10"] + args, capture_output=True, timeout=timeout)
    return p


@test("curl: GET / of the demo site is the index", demo=True)
def _(srv):
    p = curl(["-o", "-", "-w", "\n%{http_code}", "http://127.0.0.1:%d/" % srv.port])
    eq(p.returncode, 0, "curl exit status (%s)" % p.stderr.decode(errors="replace"))
    body, _, code = p.stdout.rpartition(b"\n")
    eq(code, b"200", "status")
    eq(body, demo_index(), "body")


@test("curl: --http1.1 -r 0-3 gives 206", demo=True)
def _(srv):
    p = curl(["--http1.1", "-r", "0-3", "-D", "-", "-o", "/dev/null", "http://127.0.0.1:%d/" % srv.port])
    eq(p.returncode, 0, "curl exit status (%s)" % p.stderr.decode(errors="replace"))
    head = p.stdout.decode("latin-1")
    check(head.startswith("HTTP/1.1 206 Partial Content\r\n"), "status line: %r" % head[:60])
    size = len(demo_index())
    check("\r\nContent-Range: bytes 0-3/%d\r\n" % size in head, "Content-Range in %r" % head)
    p = curl(["--http1.1", "-r", "0-3", "http://127.0.0.1:%d/" % srv.port])
    eq(p.stdout, demo_index()[:4], "body")


@test("curl: several URLs reuse one connection", demo=True)
def _(srv):
    base = "http://127.0.0.1:%d" % srv.port
    p = curl(["-v", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null",
              base + "/", base + "/style.css", base + "/favicon.ico"])
    eq(p.returncode, 0, "curl exit status")
    err = p.stderr.decode(errors="replace")
    check(len(re.findall(r"Re-?using (existing )?connection", err, re.I)) >= 2,
          "connection not reused: %s" % err[-800:])


@test("wrk: 2 s against a small file: no socket errors, no non-2xx", args=["--threads", "64"])
def _(srv):
    if shutil.which("wrk") is None:
        raise TestSkip("wrk not installed")
    p = subprocess.run(["wrk", "-t2", "-c32", "-d2s", "http://127.0.0.1:%d/hello.txt" % srv.port],
                       capture_output=True, timeout=30)
    out = p.stdout.decode(errors="replace")
    eq(p.returncode, 0, "wrk exit status: %s" % p.stderr.decode(errors="replace"))
    m = re.search(r"^\s*(\d+) requests in", out, re.M)
    check(m and int(m.group(1)) > 100, "too few requests: %s" % out)
    se = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    check(se is None or all(int(x) == 0 for x in se.groups()), "socket errors: %s" % out)
    n2 = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    check(n2 is None or int(n2.group(1)) == 0, "non-2xx responses: %s" % out)
    srv.assert_alive()


def report_in(out):
    """Runs scripts/bench/report.py on the run directory OUT and returns the
    results.md it writes."""
    p = subprocess.run(["python3", os.path.join(SRCDIR, "scripts", "bench", "report.py"), out],
                       capture_output=True, timeout=30)
    eq(p.returncode, 0, "report.py exit status: %s" % p.stderr.decode(errors="replace"))
    with open(os.path.join(out, "results.md")) as f:
        return f.read()


def bench_report(rows):
    """Runs scripts/bench/report.py on wrk rows (server, label, replies/s,
    server CPU s, p99 ms[, round][, {workload, errors, note, bytes (per
    reply), duration}]; 10 s runs of workload b without errors unless the
    dict says otherwise, a server's rows of one label being its
    repetitions, each in a round of its own unless one is given) and
    returns its results.md."""
    import tempfile
    with tempfile.TemporaryDirectory() as out:
        with open(os.path.join(out, "runs.csv"), "w") as f:
            f.write("server,workload,label,rep,replies,duration_s,rps,errors,err_detail,"
                    "lat_avg_ms,lat_p99_ms,cpu_s,rss_kb,note,client_cpu_s,"
                    "steal_server_pct,steal_client_pct,bytes_per_reply\n")
            for i, row in enumerate(rows):
                extra = row[-1] if isinstance(row[-1], dict) else {}
                row = row[:-1] if extra else row
                server, label, rps, cpu_s, p99 = row[:5]
                rep = row[5] if len(row) > 5 else i
                duration = extra.get("duration", 10)
                f.write("%s,%s,%s,%d,%d,%s,%d,%d,,0.5,%s,%s,1000,%s,10,,,%s\n"
                        % (server, extra.get("workload", "b"), label, rep, rps * duration,
                           duration, rps, extra.get("errors", 0), "" if p99 is None else p99,
                           cpu_s, extra.get("note", ""), extra.get("bytes", "")))
        return report_in(out)


@test("bench report: the targets table names every missed target")
def _(srv):
    md = bench_report([
        # f2k: efficiency 1.25 x, throughput 1.10 x, but p99 above nginx's
        ("cowd", "f2k", 110000, 8.8, 0.90), ("nginx", "f2k", 100000, 10.0, 0.80),
        # f12k: efficiency 1.05 x (a miss), throughput and p99 fine
        ("cowd", "f12k", 80000, 9.5, 0.70), ("lighttpd", "f12k", 80000, 10.0, 0.75),
    ])
    check("| b: f2k | ✓ 1.25 | ✓ 1.10 | ✗ 0.90 vs 0.80 (nginx) |" in md, "f2k row in %r" % md)
    check("| b: f12k | ✗ 1.05 | ✓ 1.00 | ✓ 0.70 vs 0.75 (lighttpd) |" in md, "f12k row in %r" % md)
    check("Missed in this run: b (f2k): p99; b (f12k): efficiency." in md, "verdict in %r" % md)
    md = bench_report([("cowd", "f2k", 100000, 9.0, 0.5), ("nginx", "f2k", 100000, 10.0, 0.6)])
    check("Every target met in this run." in md, "verdict in %r" % md)


@test("bench report: a ratio just under its target is a miss, printed so it shows")
def _(srv):
    md = bench_report([
        # efficiency 998,000 / 9.098 / 100,000 = 1.097 and throughput 0.998: two decimals
        # would print both as the target itself
        ("cowd", "f2k", 99800, 9.098, 0.5), ("nginx", "f2k", 100000, 10.0, 0.6),
    ])
    check("| b: f2k | ✗ 1.097 | ✗ 0.998 | ✓ 0.50 vs 0.60 (nginx) |" in md, "f2k row in %r" % md)
    check("Missed in this run: b (f2k): efficiency; b (f2k): throughput." in md,
          "verdict in %r" % md)


@test("bench report: with an even number of runs, replies per CPU-second is the median of the runs'")
def _(srv):
    # cowd's four runs: 130,000 and 100,000 replies per CPU-second, twice each
    # (1,000,000 replies in each); the median is 115,000 (1.15 x nginx's
    # 100,000), where 1000 / the median CPU per 1,000 replies gave 113,043
    rows = []
    for rep, cpu in enumerate((1e6 / 130000, 10.0, 1e6 / 130000, 10.0)):
        rows.append(("cowd", "f2k", 100000, "%.9f" % cpu, 0.5, rep))
        rows.append(("nginx", "f2k", 100000, 10.0, 0.6, rep))
    md = bench_report(rows)
    check("| b: f2k | ✓ 1.15 | ✓ 1.00 | ✓ 0.50 vs 0.60 (nginx) |" in md, "f2k row in %r" % md)


# A row where cowd had no result (not started, died, served nothing) was
# "not measured" and never a miss, so such a run could still say "Every
# target met"; and a peer that served nothing (lighttpd in (e) at its
# descriptor cap) dropped out of the comparison without a word.
@test("bench report: cowd without a result, or with fewer runs than a peer, misses; an absent peer is named")
def _(srv):
    md = bench_report([
        ("cowd", "f2k", 120000, 8.0, 0.5), ("cowd", "f2k", 120000, 8.0, 0.5),
        ("nginx", "f2k", 100000, 10.0, 0.6), ("nginx", "f2k", 100000, 10.0, 0.6),
        ("nginx", "f2k", 100000, 10.0, 0.6),
        ("nginx", "f12k", 80000, 10.0, 0.6),
    ])
    check("| b: f12k | ✗ 0.00 | ✗ 0.00 | ✗ none vs 0.60 (nginx) |" in md, "f12k row in %r" % md)
    check("Missed in this run: b (f2k): efficiency; b (f2k): throughput; b (f2k): p99; "
          "b (f12k): efficiency; b (f12k): throughput; b (f12k): p99." in md, "verdict in %r" % md)
    check("- ⚠ b (f2k): cowd has a result from 2 runs, fewer than a peer" in md, "caveat in %r" % md)
    md = bench_report([("cowd", "f2k", 100000, 9.0, 0.5), ("nginx", "f2k", 100000, 10.0, 0.6),
                       ("lighttpd", "f2k", 0, 0.1, 0.0)])
    check("- ⚠ b (f2k): no replies from lighttpd: compared with the other peers only" in md,
          "absent peer in %r" % md)
    check("Every target met in this run against the peers that served (⚠ above)." in md,
          "verdict in %r" % md)


# A run in which the server died had its CPU read from a dead process tree
# (0, so a negative difference) and still counted; an (e) run in which a
# server dropped idle connections was judged as if it had held them all.
@test("bench report: runs where the server died or dropped idle connections are not counted")
def _(srv):
    died = {"note": "server died during run"}
    held = {"workload": "e", "note": "idle served=100/100; alive after=100"}
    md = bench_report([
        ("cowd", "f2k", 120000, 8.0, 0.5), ("cowd", "f2k", 120000, 8.0, 0.5),
        ("cowd", "f2k", 300000, -5.0, 0.1, died),
        ("nginx", "f2k", 100000, 10.0, 0.6), ("nginx", "f2k", 100000, 10.0, 0.6),
        ("nginx", "f2k", 100000, 10.0, 0.6),
        ("cowd", "f12k+idle", 100000, 8.0, 1.0, held), ("cowd", "f12k+idle", 100000, 8.0, 1.0, held),
        ("cowd", "f12k+idle", 100000, 8.0, 1.0, held),
        ("nginx", "f12k+idle", 90000, 10.0, 1.1, held),
        ("nginx", "f12k+idle", 200000, 5.0, 0.2,
         {"workload": "e", "note": "idle served=100/100; alive after=60"}),
        ("nginx", "f12k+idle", 200000, 5.0, 0.2,
         {"workload": "e", "note": "idle served=90/100; alive after=90"}),
        ("lighttpd", "f12k+idle", 300000, 5.0, 0.2, {"workload": "e", "note": "idle served=100/100"}),
        ("h2o", "f12k+idle", 300000, 5.0, 0.2,
         {"workload": "e", "note": "idle served=100/100; alive after=unknown"}),
    ])
    # the dead run (its CPU time negative, 300,000 replies/s) is in no figure
    check("| b: f2k | ✗ 1.50; runs: cowd 150,000–150,000, nginx 100,000–100,000 | "
          "✗ 1.20; runs: cowd 120,000–120,000, nginx 100,000–100,000 | ✗ 0.50 vs 0.60 (nginx)"
          in md, "f2k row in %r" % md)
    check("- ⚠ b (f2k): cowd has a result from 2 runs, fewer than a peer" in md, "short in %r" % md)
    check("- ⚠ b (f2k): 1 run(s) of cowd not counted (server died during the run)" in md,
          "died in %r" % md)
    # nginx's only counted run: 90,000/s at 10 s CPU; lighttpd and h2o: none
    check("| e: f12k+idle | ✓ 1.39 | ✓ 1.11 | ✓ 1.00 vs 1.10 (nginx) |" in md, "e row in %r" % md)
    check("- ⚠ e (f12k+idle): 2 run(s) of nginx not counted (idle connections closed during "
          "the run; not every idle connection was served)" in md, "nginx in %r" % md)
    check("- ⚠ e (f12k+idle): 1 run(s) of lighttpd not counted (idle connections not counted "
          "after the run)" in md, "lighttpd in %r" % md)
    check("- ⚠ e (f12k+idle): no replies from h2o, lighttpd: compared with the other peers only"
          in md, "absent in %r" % md)


# Errors were summed and shown but never judged: a cowd that dropped
# requests could meet every target.
@test("bench report: cowd failing a larger share of requests than a peer misses the row")
def _(srv):
    md = bench_report([("cowd", "f2k", 120000, 8.0, 0.5, {"errors": 60}),
                       ("nginx", "f2k", 100000, 10.0, 0.6)])
    check("| b: f2k | ✗ 1.50 | ✗ 1.20 | ✗ 0.50 vs 0.60 (nginx) |" in md, "f2k row in %r" % md)
    check("- ⚠ b (f2k): cowd failed 0.005 % of its requests (60 errors), nginx 0 %: every "
          "target of the row counts as missed" in md, "caveat in %r" % md)
    md = bench_report([("cowd", "f2k", 120000, 8.0, 0.5, {"errors": 60}),
                       ("nginx", "f2k", 100000, 10.0, 0.6, {"errors": 600})])
    check("Every target met in this run." in md, "verdict in %r" % md)
    # 10 in 1.2 million: within the slack of a client's hiccups
    md = bench_report([("cowd", "f2k", 120000, 8.0, 0.5, {"errors": 10}),
                       ("nginx", "f2k", 100000, 10.0, 0.6)])
    check("Every target met in this run." in md, "verdict with 10 errors in %r" % md)


@test("bench report: a peer that failed to start, and replies smaller than a peer's, are named")
def _(srv):
    md = bench_report([
        ("cowd", "f2k", 120000, 8.0, 0.5, {"bytes": 2000}),
        ("nginx", "f2k", 100000, 10.0, 0.6, {"bytes": 2300}),
        ("lighttpd", "-", 0, 0, None, {"duration": 0, "note": "start failed"}),
        ("cowd", "f12k", 120000, 8.0, 0.5, {"bytes": 12750}),
        ("nginx", "f12k", 100000, 10.0, 0.6, {"bytes": 12800}),
        ("cowd", "no-host-400", 120000, 8.0, 0.5, {"workload": "f", "bytes": 100}),
        ("nginx", "no-host-400", 100000, 10.0, 0.6, {"workload": "f", "bytes": 300}),
    ])
    check("- ⚠ b (f2k): lighttpd failed to start 1 time(s) for this workload "
          "(raw/lighttpd-b-start-failure.log)" in md, "start failure in %r" % md)
    check("- ⚠ b (f2k): cowd's replies averaged 2,000 bytes, nginx's 2,300 (13.0 % less to "
          "send): not quite the same work" in md, "bytes in %r" % md)
    check("b (f12k): cowd's replies" not in md, "0.4 %% smaller flagged: %r" % md)
    check("f (no-host-400): cowd's replies" not in md, "(f)'s own 400 pages flagged: %r" % md)
    check("| nginx | 100,000 | 0 | 2,300 |" in md, "bytes column in %r" % md)


@test("bench: the sweep counts replies that are not 2xx, and socket timeouts, as errors")
def _(srv):
    import tempfile
    script = r'''
BENCH_DIR=%s; . "$BENCH_DIR/common.sh"; . "$BENCH_DIR/workloads.sh"
parse_httperf "$1"
''' % os.path.join(SRCDIR, "scripts", "bench")
    with tempfile.TemporaryDirectory() as out:
        path = os.path.join(out, "run.httperf")
        with open(path, "w") as f:
            f.write("Total: connections 1000 requests 5000 replies 4990 test-duration 1.000 s\n"
                    "Connection rate: 1000.0 conn/s (1.0 ms/conn, <=10 concurrent connections)\n"
                    "Reply time [ms]: response 0.5 transfer 0.1\n"
                    "Reply status: 1xx=0 2xx=4900 3xx=0 4xx=30 5xx=60\n"
                    "Errors: total 12 client-timo 1 socket-timo 2 connrefused 3 connreset 4\n"
                    "Errors: fd-unavail 1 addrunavail 0 ftab-full 0 other 1\n")
        p = subprocess.run(["bash", "-c", script, "bash", path], capture_output=True, timeout=30)
        eq(p.returncode, 0, "exit status: %s" % p.stderr.decode(errors="replace"))
        # errors 12 + 90 not 2xx; other: 1 + socket-timo 2 + 90
        eq(p.stdout.decode(), "1000,4900,1.000,4900.0,1000.0,0.6,102,1,3,4,1,93\n", "parsed")


@test("bench report: a missed target shows both servers' run-to-run ranges")
def _(srv):
    md = bench_report([
        ("cowd", "f2k", 90000, 10.0, 1.0), ("cowd", "f2k", 110000, 10.0, 1.2),
        ("cowd", "f2k", 100000, 10.0, 1.1),
        ("nginx", "f2k", 95000, 10.0, 0.9), ("nginx", "f2k", 120000, 10.0, 1.3),
        ("nginx", "f2k", 105000, 10.0, 1.0),
    ])
    check("| b: f2k | ✗ 0.95; runs: cowd 90,000–110,000, nginx 95,000–120,000 | "
          "✗ 0.95; runs: cowd 90,000–110,000, nginx 95,000–120,000 | "
          "✗ 1.10 vs 1.00 (nginx); runs: cowd 1.00–1.20, nginx 0.90–1.30 |" in md,
          "f2k row in %r" % md)


@test("bench report: round-by-round ratios pair cowd with each peer within a round")
def _(srv):
    md = bench_report([
        # round 1: the machine fast for both; round 2: slow for both
        ("cowd", "f12k", 100000, 8.0, 1.0, 1), ("lighttpd", "f12k", 90000, 10.0, 1.0, 1),
        ("cowd", "f12k", 50000, 9.0, 1.0, 2), ("lighttpd", "f12k", 55000, 9.0, 1.0, 2),
        ("cowd", "f12k", 80000, 8.0, 1.0, 3), ("lighttpd", "f12k", 80000, 10.0, 1.0, 3),
        ("nginx", "f12k", 40000, 10.0, 1.0, 1),        # one round only: no pairs to show
    ])
    # efficiency per round 1.39, 0.91, 1.25; throughput 1.11, 0.91, 1.00
    check("| b: f12k | lighttpd | 1.25 (0.91–1.39) | 2 of 3 | 1.00 (0.91–1.11) | 2 of 3 |" in md,
          "lighttpd row in %r" % md)
    check("| b: f12k | nginx |" not in md, "a peer with one round is listed: %r" % md)
    tbl = md.index("## Round by round")
    check(md.index("## Targets") < tbl, "round table after the targets table: %r" % md)


# sweep-runs.csv's columns, as scripts/bench/workloads.sh writes them
SWEEP_RUNS_HEADER = ("server,rate,conns,replies,duration_s,rps,conn_rate,reply_ms,errors,"
                     "client_timo,connrefused,connreset,fd_unavail,other_err,cpu_s,rep,"
                     "steal_server_pct,steal_client_pct\n")


def across_runs(runs, sweeps=None):
    """Runs scripts/bench/across_runs.py on run directories made from runs,
    a list of summary rows (server, label, replies/s, replies per CPU-s,
    p99 ms) per run, or None for a directory without a summary.csv, and
    from sweeps, if given, one dict per run of server -> [(rate, errors)
    per sweep step] for its sweep.csv; returns (exit status, stdout, stderr)."""
    import tempfile
    with tempfile.TemporaryDirectory() as top:
        dirs = []
        for i, rows in enumerate(runs):
            d = os.path.join(top, "run%d" % i)
            os.mkdir(d)
            dirs.append(d)
            if rows is None:
                continue
            with open(os.path.join(d, "summary.csv"), "w") as f:
                f.write("workload,label,server,rps,errors,lat_avg_ms,lat_p99_ms,"
                        "cpu_s_per_1k,replies_per_cpu_s,note\n")
                for server, label, rps, per_cpu_s, p99 in rows:
                    wl = "a" if label == "f12k-sweep" else "b"
                    f.write("%s,%s,%s,%s,0,1.0,%s,,%s,\n"
                            % (wl, label, server, rps, "" if p99 is None else p99, per_cpu_s))
            if sweeps is not None:
                with open(os.path.join(d, "sweep.csv"), "w") as f:
                    f.write("server,rate,errors\n")
                    for server, steps in sweeps[i].items():
                        for rate, errors in steps:
                            f.write("%s,%d,%d\n" % (server, rate, errors))
        p = subprocess.run(["python3", os.path.join(SRCDIR, "scripts", "bench", "across_runs.py")]
                           + dirs, capture_output=True, timeout=30)
        return p.returncode, p.stdout.decode(), p.stderr.decode()


@test("bench report: steal time per table row and over all runs, where recorded")
def _(srv):
    import tempfile
    with tempfile.TemporaryDirectory() as out:
        with open(os.path.join(out, "runs.csv"), "w") as f:
            f.write("server,workload,label,rep,replies,duration_s,rps,errors,err_detail,"
                    "lat_avg_ms,lat_p99_ms,cpu_s,rss_kb,note,client_cpu_s,"
                    "steal_server_pct,steal_client_pct\n")
            for server, rep, ss, sc in (("cowd", 1, "0.5", "0.2"), ("cowd", 2, "6.5", "0.4"),
                                        ("cowd", 3, "1.5", "0.3"), ("nginx", 1, "", "")):
                f.write("%s,b,f2k,%d,1000000,10,100000,0,,0.5,1.0,9,1000,,9,%s,%s\n"
                        % (server, rep, ss, sc))
        with open(os.path.join(out, "sweep-runs.csv"), "w") as f:
            f.write(SWEEP_RUNS_HEADER)
            f.write("cowd,1000,5000,25000,5,5000,1000,0.1,0,0,0,0,0,0,0.5,1,9.0,5.0\n")
            f.write("cowd,2000,10000,50000,5,10000,2000,0.1,0,0,0,0,0,0,0.9,1,2.0,0.1\n")
        md = report_in(out)
        # the medians of cowd's three runs; nginx recorded none
        check(re.search(r"^\| cowd \| .*\| 1\.5 / 0\.3 \| [^|]+\| 3 \|", md, re.M),
              "cowd row in %r" % md)
        check(re.search(r"^\| nginx \| .*\| – \| [^|]+\| 1 \|", md, re.M), "nginx row in %r" % md)
        # over the 3 wrk runs that have it and the sweep's two
        check("the server's CPU median 2.0 %, highest 9.0 %, 2 of 5 runs at 5 % or more; "
              "the client's CPU median 0.3 %, highest 5.0 %, 1 of 5 runs at 5 % or more." in md,
              "steal line in %r" % md)
        rc = subprocess.run(["python3", os.path.join(SRCDIR, "scripts", "bench", "across_runs.py"), out],
                            capture_output=True, timeout=30)
        text = rc.stdout.decode()
        eq(rc.returncode, 0, "across_runs exit status: %s" % rc.stderr.decode(errors="replace"))
        check("| %s | 2.0 / 9.0 / 2 of 5 | 0.3 / 5.0 / 1 of 5 |" % out in text,
              "across_runs steal row in %r" % text)


@test("bench report: (a)'s efficiency counts every error-free sweep run at the common rates")
def _(srv):
    import tempfile
    # At a rate every server serves, each run gives the offered replies/s,
    # so the step's median run is an arbitrary one: here cowd's (the one
    # sweep.csv keeps) costs as much as nginx's, while over all of its
    # runs cowd costs less.  nginx's run with errors is left out.
    steps = {"cowd": [(1000, 0.5, 0), (2000, 1.0, 0), (3000, 1.0, 9)],
             "nginx": [(1000, 0.5, 0), (2000, 1.0, 0), (3000, 1.5, 0)]}
    runs = {"cowd": [(1000, 0.5, 0), (1000, 0.25, 0), (1000, 0.25, 0),
                     (2000, 1.0, 0), (2000, 0.5, 0), (2000, 0.5, 0), (3000, 1.0, 9)],
            "nginx": [(1000, 0.5, 0), (1000, 0.5, 0), (1000, 0.5, 0), (1000, 9.0, 4),
                      (2000, 1.0, 0), (2000, 1.0, 0), (2000, 1.0, 0), (3000, 1.5, 0)]}

    def row(server, rate, cpu, errors, rep=None):
        replies = rate * 25 - errors * 5
        return ("%s,%d,%d,%d,5,%.1f,%d,0.1,%d,0,0,0,%d,0,%.2f"
                % (server, rate, rate * 5, replies, replies / 5, rate, errors, errors, cpu)
                + ("" if rep is None else ",%d,0.1,0.1" % rep) + "\n")

    with tempfile.TemporaryDirectory() as out:
        with open(os.path.join(out, "sweep.csv"), "w") as f:
            f.write(SWEEP_RUNS_HEADER.split(",rep,")[0] + "\n")
            for server, rs in steps.items():
                f.writelines(row(server, *r) for r in rs)
        md = report_in(out)
        # without sweep-runs.csv: the step medians, 50,000 replies a CPU-second each
        check("| a: f12k, 5 req/conn, peak | ✗ 1.00 |" in md, "targets row in %r" % md)
        check("counting each step's median run." in md, "what is counted in %r" % md)
        with open(os.path.join(out, "sweep-runs.csv"), "w") as f:
            f.write(SWEEP_RUNS_HEADER)
            for server, rs in runs.items():
                f.writelines(row(server, *r, rep=i + 1) for i, r in enumerate(rs))
        md = report_in(out)
        # cowd 225,000 replies in 3.0 CPU-s, nginx the same in 4.5
        check("| a: f12k, 5 req/conn, peak | ✓ 1.50 |" in md, "targets row in %r" % md)
        check("1000, 2000 conn/s (equal work for all), counting every run without errors at "
              "those rates (cowd 6, nginx 6 runs)." in md, "what is counted in %r" % md)
        # a peer without a clean run there: every server is counted from
        # its step medians, as the report says, not cowd alone from its runs
        with open(os.path.join(out, "sweep-runs.csv"), "w") as f:
            f.write(SWEEP_RUNS_HEADER)
            f.writelines(row("cowd", *r, rep=i + 1) for i, r in enumerate(runs["cowd"]))
        md = report_in(out)
        check("| a: f12k, 5 req/conn, peak | ✗ 1.00 |" in md, "targets row in %r" % md)
        check("counting each step's median run." in md, "what is counted in %r" % md)


@test("bench: the idle-connection helper ends its connections with resets, leaving no TIME_WAIT",
      args=["--keepalive-timeout", "30"])
def _(srv):
    import signal
    import time
    if not os.path.exists("/proc/net/tcp"):
        raise TestSkip("no /proc/net/tcp")
    # /hello.txt once first, so that the file cache's descriptor for it is
    # in the baseline
    srv.get("/hello.txt")
    base_fds = settled_fds(srv)
    # anything left from an earlier client on the same port number is not counted
    earlier = set(lp for lp, _, _ in tcp_sockets(srv.port, local=False))
    p = subprocess.Popen(["python3", os.path.join(SRCDIR, "scripts", "bench", "idle_conns.py"),
                          str(srv.port), "20", "/hello.txt", "20", "10"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready = p.stdout.readline().decode()
        check(ready.startswith("READY opened=20 ok=20 failed=0 "), "helper's READY line: %r" % ready)
        held = open_fds(srv) - base_fds
        check(held >= 20, "20 idle connections hold only %d descriptors in the worker" % held)
        p.send_signal(signal.SIGUSR1)
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    eq(p.returncode, 0, "helper's exit status (%s)" % err.decode(errors="replace"))
    check("ALIVE alive=20 of=20" in out.decode(), "helper's ALIVE line in %r" % out.decode())
    # a FIN close leaves each client socket in FIN_WAIT1/2, CLOSING or
    # TIME_WAIT (states 04, 05, 0B, 06) for up to a minute; a reset, none
    time.sleep(0.5)
    left = sorted(s for s in tcp_sockets(srv.port, local=False)
                  if s[0] not in earlier and s[2] in ("04", "05", "06", "0B"))
    eq(left, [], "client sockets the helper left closing or in TIME_WAIT")
    # and the server let go of the reset connections (parked ones too)
    deadline = time.time() + 5
    while open_fds(srv) > base_fds and time.time() < deadline:
        time.sleep(0.1)
    eq(open_fds(srv) - base_fds, 0, "descriptors the worker still holds after the 20 resets")
    srv.assert_alive()


@test("bench: steal time read from /proc/stat between two readings")
def _(srv):
    if not os.path.exists("/proc/stat"):
        raise TestSkip("no /proc/stat")
    script = ('BENCH_DIR=%s; . "$BENCH_DIR/common.sh"; a=$(cpu_ticks 0); '
              'echo "ticks=$a"; echo "pct=$(steal_pct "100 10" "300 60")"; '
              'echo "none=$(steal_pct "" "$a")"; echo "same=$(steal_pct "$a" "$a")"'
              % os.path.join(SRCDIR, "scripts", "bench"))
    p = subprocess.run(["bash", "-c", script], capture_output=True, timeout=30)
    out = p.stdout.decode()
    eq(p.returncode, 0, "exit status: %s" % p.stderr.decode(errors="replace"))
    check(re.search(r"^ticks=\d+ \d+$", out, re.M), "cpu_ticks output in %r" % out)
    check("pct=25.0\n" in out, "50 of 200 ticks stolen in %r" % out)
    check("none=\n" in out and "same=\n" in out, "unknown steal not empty in %r" % out)


@test("bench: stop_pid signals only its own live children, never a process that took a dead one's PID")
def _(srv):
    # a process that is not the shell's child stands for one that reused the
    # PID of a server that died and was reaped during the sweep
    other = subprocess.Popen(["sleep", "60"])
    try:
        script = ('BENCH_DIR=%s; . "$BENCH_DIR/common.sh"; stop_pid %d 1; '
                  'sleep 30 & own=$!; stop_pid $own 1; kill -0 $own 2>/dev/null && echo own-alive; '
                  'echo done' % (os.path.join(SRCDIR, "scripts", "bench"), other.pid))
        p = subprocess.run(["bash", "-c", script], capture_output=True, timeout=30)
        eq(p.returncode, 0, "exit status: %s" % p.stderr.decode(errors="replace"))
        eq(p.stdout.decode(), "done\n", "the shell's own child stopped")
        eq(other.poll(), None, "a process that is not the shell's child was signalled")
    finally:
        other.kill()
        other.wait()


@test("bench ab: a build that does not serve is stopped before ab exits, not left running")
def _(srv):
    for tool in ("wrk", "curl", "taskset"):
        if shutil.which(tool) is None:
            raise TestSkip("%s not installed" % tool)
    with tempfile.TemporaryDirectory() as tmp:
        pid_file = os.path.join(tmp, "pid")
        fake = os.path.join(tmp, "fake-cowd")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\necho $$ > %s\nexec sleep 60\n" % pid_file)
        os.chmod(fake, 0o755)
        p = subprocess.run([os.path.join(SRCDIR, "scripts", "bench", "ab"), "--rounds", "1",
                            "--files", "2048", fake, fake], capture_output=True, timeout=60)
        check(p.returncode != 0, "ab succeeded with a build that serves nothing")
        check(b"did not serve" in p.stderr, "ab's error: %r" % p.stderr[-300:])
        with open(pid_file) as f:
            pid = int(f.read())
        deadline = time.time() + 2
        while os.path.exists("/proc/%d" % pid) and time.time() < deadline:
            time.sleep(0.05)
        left = os.path.exists("/proc/%d" % pid)
        if left:
            os.kill(pid, signal.SIGKILL)
        check(not left, "the server ab started was still running after ab exited")


@test("bench: a run with a pinned CPU stolen is run again, the least-stolen attempt kept")
def _(srv):
    import csv
    import tempfile
    # wrk_once's rule alone: wrk_measure is replaced by attempts whose steal
    # (the larger of the two CPUs') is given, one per call
    script = r'''
BENCH_DIR=%s; . "$BENCH_DIR/common.sh"; . "$BENCH_DIR/workloads.sh"
OUT=$1; init_results
log() { :; }
wrk_measure() {
    if [ "${STEALS[$i]}" = died ]; then
        WRK_STEAL= WRK_ROW="$1,$2,$3,$4,0,0,0,0,,,,,,server died"
        return 1
    fi
    WRK_STEAL=${STEALS[$i]}
    WRK_ROW="$1,$2,$3,$4,1000,10,100.0,0,connect=0,0.1,0.2,1.00,100,$NOTE,1.00,${STEALS[$i]},0.5"
    i=$((i + 1))
}
STEAL_REDO=5 STEAL_REDO_MAX=2
STEALS=(7.0 3.0 6.0); i=0 NOTE= wrk_once cowd c f2k-close 1 /f2k
STEALS=(8.0 6.0 7.0 1.0); i=0 NOTE=idle wrk_once nginx b f2k 1 /f2k
STEALS=(4.9); i=0 NOTE= wrk_once h2o b f2k 1 /f2k
STEALS=("" 1.0); i=0 NOTE= wrk_once lighttpd b f2k 1 /f2k
STEALS=(9.0 1.0); i=0 NOTE= STEAL_REDO_MAX=0 wrk_once cowd b f2k 2 /f2k
STEALS=(6.0 died); i=0 NOTE= wrk_once nginx b f2k 2 /f2k || echo "failed as it should"
''' % os.path.join(SRCDIR, "scripts", "bench")
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run(["bash", "-c", script, "bash", out], capture_output=True, timeout=30)
        eq(p.returncode, 0, "exit status: %s" % p.stderr.decode(errors="replace"))
        eq(p.stdout.decode(), "failed as it should\n", "a failed repeat fails the run")
        with open(os.path.join(out, "runs.csv"), newline="") as f:
            kept = [(r["server"], r["rep"], r["steal_server_pct"], r["note"]) for r in csv.DictReader(f)]
        eq(kept, [("cowd", "1", "3.0", "best of 2 attempts (steal)"),   # 3.0: no third
                  # two repeats at most (the fourth attempt, 1.0, never ran),
                  # and the least stolen of the three kept, not the last
                  ("nginx", "1", "6.0", "idle; best of 3 attempts (steal)"),
                  ("h2o", "1", "4.9", ""),           # under the threshold
                  ("lighttpd", "1", "", ""),         # steal unknown: not judged
                  ("cowd", "2", "9.0", ""),          # repeats off
                  ("nginx", "2", None, "server died")],  # the repeat failed: its row
           "rows kept")
        with open(os.path.join(out, "runs-disturbed.csv"), newline="") as f:
            aside = [(r["server"], r["steal_server_pct"]) for r in csv.DictReader(f)]
        eq(aside, [("cowd", "7.0"), ("nginx", "8.0"), ("nginx", "7.0"), ("nginx", "6.0")],
           "attempts set aside")
        with open(os.path.join(out, "env.txt"), "w") as f:
            f.write("mode=full\nsteal_redo=b-f: the rule\n")
        md = report_in(out)
        check("Runs disturbed by steal (b-f: the rule): 4 attempts set aside (cowd 1, nginx 3); "
              "2 of 6 rows are the best of two or more attempts (noted in runs.csv)." in md,
              "redo line in %r" % md)


@test("bench across runs: counts the runs meeting each target, by the report's rule")
def _(srv):
    rc, out, err = across_runs([
        # every target met; cowd+log is never a peer
        [("cowd", "f2k", 110000, 125000, 0.5), ("nginx", "f2k", 100000, 100000, 0.6),
         ("cowd+log", "f2k", 200000, 200000, 0.1),
         ("cowd", "f12k-sweep", 30000, 33000, None), ("h2o", "f12k-sweep", 29000, 30000, None)],
        # every target missed
        [("cowd", "f2k", 90000, 105000, 0.7), ("nginx", "f2k", 100000, 100000, 0.6),
         ("cowd", "f12k-sweep", 27000, 31000, None), ("h2o", "f12k-sweep", 30000, 30000, None)],
        None,
    ])
    eq(rc, 0, "exit status: %s" % err)
    check("run2: no summary.csv, skipped" in err, "skip message in %r" % err)
    check("# The targets across 2 runs" in out, "heading in %r" % out)
    check("| b: f2k | efficiency | 1 of 2 | 1.15 | 1.05–1.25 |" in out, "efficiency row in %r" % out)
    check("| b: f2k | throughput | 1 of 2 | 1.00 | 0.90–1.10 |" in out, "throughput row in %r" % out)
    check("| b: f2k | p99 | 1 of 2 | 1.00 | 0.83–1.17 |" in out, "p99 row in %r" % out)
    check("| a: f12k-sweep | throughput | 1 of 2 | 0.97 | 0.90–1.03 |" in out, "a row in %r" % out)
    check("| a: f12k-sweep | p99 |" not in out, "a has no p99: %r" % out)
    check(out.index("| a: f12k-sweep | efficiency") < out.index("| b: f2k | efficiency"),
          "row order in %r" % out)
    check("Runs meeting every target: 1 of 2." in out, "verdict in %r" % out)
    # each target met in 1 of 2 runs: two rows of a kind expected in 1/4 of runs
    check("| efficiency | 2 | 1 of 2 | 0.250 | 4 |" in out, "efficiency chance in %r" % out)
    check("| throughput | 2 | 1 of 2 | 0.250 | 4 |" in out, "throughput chance in %r" % out)
    check("| p99 | 1 | 1 of 2 | 0.500 | 2 |" in out, "p99 chance in %r" % out)
    check("| all | 5 | 1 of 2 | 0.031 | 32 |" in out, "all-targets chance in %r" % out)
    rc, out, err = across_runs([None])
    eq(rc, 2, "exit status with no usable run: %s" % err)


@test("bench across runs: a run without cowd's figure misses, and a median under its target shows it")
def _(srv):
    rc, out, err = across_runs([
        [("cowd", "f2k", 100000, 109900, 0.5), ("nginx", "f2k", 100000, 100000, 0.6)],
        [("cowd", "f2k", 100000, 109800, 0.5), ("nginx", "f2k", 100000, 100000, 0.6)],
        [("cowd", "f2k", 100000, 109900, 0.5), ("nginx", "f2k", 100000, 100000, 0.6)],
        [("cowd", "f12k", 100000, 120000, 0.5), ("nginx", "f2k", 100000, 100000, 0.6)],
    ])
    eq(rc, 0, "exit status: %s" % err)
    # a median of 1.0985 (1.099 and 1.098 in the middle) at two decimals reads as the target
    check("| b: f2k | efficiency | 0 of 4 | 1.099 | 0.00–1.099 |" in out, "efficiency row in %r" % out)
    check("| b: f2k | throughput | 3 of 4 | 1.00 | 0.00–1.00 |" in out, "throughput row in %r" % out)
    check("Runs meeting every target: 0 of 4." in out, "verdict in %r" % out)


@test("bench across runs: throughput against each peer alone, and which peer was best")
def _(srv):
    rc, out, err = across_runs([
        [("cowd", "f2k", 100000, 100000, 0.5), ("nginx", "f2k", 90000, 90000, 0.6),
         ("lighttpd", "f2k", 105000, 90000, 0.6), ("cowd+log", "f2k", 200000, 200000, 0.1)],
        [("cowd", "f2k", 100000, 100000, 0.5), ("nginx", "f2k", 110000, 90000, 0.6),
         ("lighttpd", "f2k", 80000, 90000, 0.6)],
    ])
    eq(rc, 0, "exit status: %s" % err)
    check("## Throughput against each peer alone" in out, "heading in %r" % out)
    # lighttpd: 0.95 and 1.25, best in run 0; nginx: 1.11 and 0.91, best in run 1
    check("| b: f2k | lighttpd | 1 of 2 | 1.10 | 0.95–1.25 | 1 |" in out, "lighttpd row in %r" % out)
    check("| b: f2k | nginx | 1 of 2 | 1.01 | 0.91–1.11 | 1 |" in out, "nginx row in %r" % out)
    check("| b: f2k | cowd+log |" not in out, "cowd+log listed as a peer: %r" % out)
    # efficiency met in both runs though throughput never was
    check("| efficiency | 1 | 2 of 2 | 1.000 | 1 |" in out, "efficiency chance in %r" % out)
    check("| throughput | 1 | 0 of 2 | 0.000 | never |" in out, "throughput chance in %r" % out)
    check("| all | 3 | 0 of 2 | 0.000 | never |" in out, "all-targets chance in %r" % out)


@test("bench across runs: (a)'s highest rate before the first errors, cowd against the best peer")
def _(srv):
    # per run: server -> [(rate, errors) per step]
    sweeps = [
        {"cowd": [(1000, 0), (2000, 0), (3000, 5)], "h2o": [(1000, 0), (2000, 7), (3000, 0)]},
        {"cowd": [(1000, 0), (2000, 0)], "nginx": [(1000, 0), (2000, 0)], "cowd+log": [(1000, 0), (2000, 0)]},
        {"cowd": [(1000, 3), (2000, 0)], "lighttpd": [(1000, 0), (2000, 9)]},
    ]
    rc, out, err = across_runs([[(server, "f12k-sweep", 1000, 1000, None) for server in steps]
                                for steps in sweeps], sweeps)
    eq(rc, 0, "exit status: %s" % err)
    check("## (a): the highest rate served before the first errors" in out, "heading in %r" % out)
    # h2o's clean step at 3000 after errors at 2000 does not count
    check("/run0 | 2000 | 1000 (h2o) | highest |" in out, "run0 row in %r" % out)
    check("/run1 | 2000 | 2000 (nginx) | tied |" in out, "run1 row in %r" % out)
    check("/run2 | – | 1000 (lighttpd) | behind |" in out, "run2 row in %r" % out)
    check("cowd highest in 1 of 3 runs, tied in 1, behind in 1." in out, "count in %r" % out)


@test("bench across runs: (a)'s replies per CPU-second with and without errors, per server")
def _(srv):
    import tempfile
    with tempfile.TemporaryDirectory() as top:
        dirs = []
        # per run: (server, replies, cpu_s, errors) per sweep run; run1 has no sweep
        for i, sweep in enumerate([
                [("cowd", 30000, 1.0, 0), ("cowd", 30000, 0.5, 0), ("cowd", 40000, 2.0, 9),
                 ("h2o", 20000, 1.0, 0), ("h2o", 50000, 2.0, 4), ("cowd+log", 1, 1.0, 0),
                 ("nginx", 20000, 1.0, 0), ("nginx", 9, "", 3)],
                None]):
            d = os.path.join(top, "run%d" % i)
            os.mkdir(d)
            dirs.append(d)
            with open(os.path.join(d, "summary.csv"), "w") as f:
                f.write("workload,label,server,rps,errors,lat_avg_ms,lat_p99_ms,"
                        "cpu_s_per_1k,replies_per_cpu_s,note\n"
                        "b,f2k,cowd,100,0,1.0,1.0,,100,\nb,f2k,nginx,100,0,1.0,1.0,,100,\n")
            if sweep is None:
                continue
            with open(os.path.join(d, "sweep-runs.csv"), "w") as f:
                f.write(SWEEP_RUNS_HEADER)
                for server, replies, cpu, errors in sweep:
                    f.write("%s,1000,0,%d,5,0,0,0.1,%d,0,0,0,%d,0,%s,1,0.0,0.0\n"
                            % (server, replies, errors, errors, cpu))
        p = subprocess.run(["python3", os.path.join(SRCDIR, "scripts", "bench", "across_runs.py")]
                           + dirs, capture_output=True, timeout=30)
        out = p.stdout.decode()
        eq(p.returncode, 0, "exit status: %s" % p.stderr.decode(errors="replace"))
        check("## (a): replies per CPU-second, sweep runs without errors / with errors" in out,
              "heading in %r" % out)
        # cowd 60k/1.5 s clean, 40k/2 s with errors; h2o 20k and 25k; nginx's
        # run with errors has no CPU time; cowd+log is not a peer; run1 has no sweep
        check("| cowd | h2o | nginx |" in out, "columns in %r" % out)
        check("/run0 | 40.0 / 20.0 | 20.0 / 25.0 | 20.0 / – |" in out, "run0 row in %r" % out)
        check("/run1 |" not in out.split("replies per CPU-second, sweep")[1], "run1 listed: %r" % out)
        check("Runs in which a reply cost more with errors than without: "
              "cowd 1 of 1, h2o 0 of 1, nginx 0 of 0." in out, "count in %r" % out)


def readme_across_runs_table():
    """The README's "last ten full runs" command and the table under it:
    (argv with its globs expanded as a shell would, [(runs met, median,
    range), ...] in row order, the README's "(N of M)" count of runs that
    met every target)."""
    import glob
    import shlex
    with open(os.path.join(SRCDIR, "README"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    at = [i for i, l in enumerate(lines) if l.startswith("    scripts/bench/across_runs.py ")]
    eq(len(at), 1, "README lines giving the across-runs command")
    argv = []
    for word in shlex.split(lines[at[0]].strip()):
        hits = sorted(glob.glob(word, root_dir=SRCDIR)) if any(c in word for c in "*?[") else [word]
        check(hits, "README's %r matches no run directory" % word)
        argv += hits
    rows, i = [], at[0] + 1
    while i < len(lines) and not lines[i].startswith("|"):
        i += 1
    for l in lines[i + 2:]:
        if not l.startswith("|"):
            break
        cells = [c.strip().strip("*") for c in l.strip("|").split("|")]
        rows.append((cells[-3], cells[-2], cells[-1].replace("-", "–")))
    m = re.search(r"met every target \((\d+ of \d+)\)", "\n".join(lines[i:]))
    check(m is not None, "README gives how many runs met every target")
    return argv, rows, m.group(1)


@test("README: the across-runs table is what the command above it prints")
def _(srv):
    argv, readme_rows, readme_all = readme_across_runs_table()
    p = subprocess.run(["python3"] + argv, cwd=SRCDIR, capture_output=True, timeout=60)
    eq(p.returncode, 0, "exit status of %s: %s" % (" ".join(argv), p.stderr.decode()))
    out = p.stdout.decode()
    first = out[:out.index("\n## ")]     # the first table only
    tool_rows = [tuple(c.strip() for c in l.strip("|").split("|"))[-3:]
                 for l in first.split("\n") if l.startswith("| ") and not l.startswith("| workload")]
    eq(len(readme_rows), len(tool_rows), "rows in the README's table")
    for n, (readme, tool) in enumerate(zip(readme_rows, tool_rows)):
        eq(readme, tool, "row %d of the README's table (runs met, median, range)" % (n + 1))
    m = re.search(r"Runs meeting every target: (\d+ of \d+)\.", out)
    eq(readme_all, m.group(1), "runs meeting every target")
    with open(os.path.join(SRCDIR, "README"), encoding="utf-8") as f:
        readme = " ".join(f.read().split())
    said = re.search(r"highest in (\d+) of runs \d+-\d+(?: and \d+-\d+)?, tied in (\d+) and behind in (\d+)",
                     readme)
    check(said is not None, "README counts the runs in which cowd's error-free rate was highest")
    m = re.search(r"cowd highest in (\d+) of \d+ runs, tied in (\d+), behind in (\d+)\.", out)
    eq(said.groups(), m.groups(), "(a): runs in which cowd's error-free rate was highest, tied, behind")


def paired_report(rounds):
    """Runs scripts/bench/paired_report.py on paired.csv lines (row, peer,
    ratio, server CPU busy %) and returns (exit status, paired.md)."""
    import tempfile
    with tempfile.TemporaryDirectory() as out:
        with open(os.path.join(out, "paired.csv"), "w") as f:
            f.write("row,peer,round,first,cowd_rps,peer_rps,ratio,cowd_errors,peer_errors,"
                    "server_cpu_busy_pct,client_cpu_busy_pct,steal_server_pct,steal_client_pct\n")
            for i, (row, peer, ratio, busy) in enumerate(rounds):
                if ratio is None:       # the peer gave no reply of the kind counted
                    f.write("%s,%s,%d,cowd,1000.0,0.0,,0,6000,%.1f,99.0,1.0,2.0\n"
                            % (row, peer, i + 1, busy))
                else:
                    f.write("%s,%s,%d,cowd,%.1f,1000.0,%.4f,0,0,%.1f,99.0,1.0,2.0\n"
                            % (row, peer, i + 1, 1000 * ratio, ratio, busy))
        p = subprocess.run(["python3", os.path.join(SRCDIR, "scripts", "bench", "paired_report.py"), out],
                           capture_output=True, timeout=30)
        md = ""
        if os.path.exists(os.path.join(out, "paired.md")):
            with open(os.path.join(out, "paired.md")) as f:
                md = f.read()
        return p.returncode, md


@test("bench paired report: medians per row and peer, server-bound rounds left out, A/A apart")
def _(srv):
    rc, md = paired_report([
        ("c", "nginx", 0.98, 50), ("c", "nginx", 1.02, 55), ("c", "nginx", 0.99, 52),
        ("c", "nginx", 1.50, 95),           # server CPU full: counted, not used
        ("c", "h2o", 1.05, 50), ("c", "h2o", 1.04, 50),
        ("c", "cowd", 0.97, 45), ("c", "cowd", 0.96, 45),     # the A/A check
        ("f64k", "lighttpd", 1.10, 80),
        ("f", "h2o", None, 60), ("f", "h2o", None, 60),
    ])
    eq(rc, 0, "exit status")
    check("| c | nginx | 4 | 1 of 3 | 0.990 | 0.980–1.020 | 54 % | 1.0 / 2.0 | 1 | 0 / 0 |" in md,
          "c/nginx row in %r" % md)
    check("| c | h2o | 2 | 2 of 2 | 1.045 | 1.040–1.050 |" in md, "c/h2o row in %r" % md)
    check("| c | cowd | 2 | 0 of 2 | 0.965 |" in md, "A/A row in %r" % md)
    # the lowest median of the real peers, not the second cowd's
    check("* c: 0.990 against nginx (behind)" in md, "c summary in %r" % md)
    check("* f64k: 1.100 against lighttpd (level or ahead)" in md, "f64k summary in %r" % md)
    check("| f | h2o | 2 | 0 of 0 | – | – | 60 % | 1.0 / 2.0 | 0 | 0 / 12000 |" in md, "f/h2o row in %r" % md)
    check("* f: h2o gave no reply this row counts in any round" in md, "f/h2o note in %r" % md)


@test("bench paired: a real A/A run (cowd against a second cowd) writes its rounds and table")
def _(srv):
    import tempfile
    for tool in ("wrk", "taskset", "curl"):
        if shutil.which(tool) is None:
            raise TestSkip("%s not installed" % tool)
    if (os.cpu_count() or 1) < 2:
        raise TestSkip("paired runs need 2 CPUs")
    from cowdtest import COWD
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([os.path.join(SRCDIR, "scripts", "bench", "paired"), "--no-install",
                            "--cowd", COWD, "--peers", "cowd", "--rows", "c,f", "--rounds", "2",
                            "--secs", "1", "--out", out], capture_output=True, timeout=180)
        err = p.stderr.decode(errors="replace")
        eq(p.returncode, 0, "exit status: %s" % err[-2000:])
        import csv
        with open(os.path.join(out, "paired.csv"), newline="") as f:
            rounds = list(csv.DictReader(f))
        eq([(r["row"], r["round"], r["first"]) for r in rounds],
           [("c", "1", "cowd"), ("c", "2", "cowd"), ("f", "1", "cowd"), ("f", "2", "cowd")],
           "rounds recorded")
        for r in rounds:
            check(float(r["cowd_rps"]) > 100 and float(r["peer_rps"]) > 100,
                  "replies/s on both sides of %r" % r)
            eq((r["cowd_errors"], r["peer_errors"]), ("0", "0"), "errors in %r" % r)
            # the same server on both sides: far from 1 would mean the two
            # wrk did not share the client CPU
            ratio = float(r["ratio"])
            check(0.5 < ratio < 2.0, "A/A ratio %r" % ratio)
            check(0 <= float(r["server_cpu_busy_pct"]) <= 100, "server CPU busy in %r" % r)
        with open(os.path.join(out, "paired.md")) as f:
            md = f.read()
        check("| c | cowd | 2 |" in md and "| f | cowd | 2 |" in md, "table rows in %r" % md)


def fetch_pth_sources(tmp, files):
    """The private deb-src configuration scripts/fetch-pth would use on a
    system whose apt directory holds files ({relative path: text})."""
    apt = os.path.join(tmp, "apt-%d" % len(os.listdir(tmp)))
    os.makedirs(os.path.join(apt, "sources.list.d"))
    for rel, text in files.items():
        with open(os.path.join(apt, rel), "w") as f:
            f.write(text)
    p = subprocess.run([os.path.join(SRCDIR, "scripts", "fetch-pth"), "--print-sources"],
                       env=dict(os.environ, FETCH_PTH_APT_DIR=apt, TMPDIR=tmp),
                       capture_output=True, text=True, timeout=30)
    eq(p.returncode, 0, "fetch-pth --print-sources exit status (%s)" % p.stderr)
    return p.stdout


# `scripts/fuzz --help` ran the fuzzer with -max_total_time=--help, which
# libFuzzer reads as 0: no time limit.  `scripts/build --help` configured a
# build in a directory named --help.
@test("scripts: every script answers --help with its usage, exit 0, and does nothing else")
def _(srv):
    top = os.path.join(SRCDIR, "scripts")
    names = sorted(n for n in os.listdir(top)
                   if os.path.isfile(os.path.join(top, n)) and os.access(os.path.join(top, n), os.X_OK))
    names += ["bench/run", "bench/paired"]
    check(len(names) > 12, "scripts found: %r" % names)
    for name in names:
        cwd = tempfile.mkdtemp(prefix="cowd-help-")
        try:
            p = subprocess.run([os.path.join(top, name), "--help"], cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20)
            first = p.stdout.decode(errors="replace").lstrip("# ").split("\n")[0]
            eq(p.returncode, 0, "exit status of %s --help (stderr %r)" % (name, p.stderr[-200:]))
            check(first.startswith(os.path.basename(name)), "%s --help begins %r" % (name, first))
            eq(os.listdir(cwd), [], "files %s --help left in its directory" % name)
        finally:
            shutil.rmtree(cwd, ignore_errors=True)
    p = subprocess.run([os.path.join(top, "fuzz"), "ten"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=20)
    eq(p.returncode, 2, "exit status of scripts/fuzz ten")
    check(b"whole number" in p.stderr, "scripts/fuzz ten says: %r" % p.stderr)


# The private apt-get update ran the system's update hooks (apt.conf.d):
# PackageKit, appstream and update-notifier then acted as if the system's
# own lists had been refreshed.  Its other settings (proxies) must stay.
@test("fetch-pth: the private apt configuration keeps the system's settings but not its update hooks")
def _(srv):
    if shutil.which("apt-config") is None:
        raise TestSkip("no apt here")
    with tempfile.TemporaryDirectory() as tmp:
        apt = os.path.join(tmp, "apt")
        os.makedirs(os.path.join(apt, "apt.conf.d"))
        os.makedirs(os.path.join(apt, "sources.list.d"))
        with open(os.path.join(apt, "apt.conf.d", "50hooks"), "w") as f:
            f.write('APT::Update::Post-Invoke-Success { "touch %s/ran"; };\n'
                    'APT::Update::Post-Invoke { "touch %s/ran"; };\n'
                    'APT::Update::Pre-Invoke { "touch %s/ran"; };\n'
                    'Acquire::http::Proxy "http://proxy.invalid:3128";\n' % (tmp, tmp, tmp))
        with open(os.path.join(apt, "apt.conf"), "w") as f:     # read after the parts by apt
            f.write('APT::Update::Post-Invoke-Success { "touch %s/ran"; };\n'
                    'Acquire::Retries "7";\n' % tmp)
        p = subprocess.run([os.path.join(SRCDIR, "scripts", "fetch-pth"), "--print-apt-config"],
                           env=dict(os.environ, FETCH_PTH_APT_DIR=apt, TMPDIR=tmp),
                           capture_output=True, text=True, timeout=30)
        eq(p.returncode, 0, "fetch-pth --print-apt-config exit status (%s)" % p.stderr)
        check('Acquire::http::Proxy "http://proxy.invalid:3128";' in p.stdout,
              "the system's proxy lost: %r" % p.stdout)
        check('Acquire::Retries "7";' in p.stdout, "the system's apt.conf lost: %r" % p.stdout)
        check("/ran" not in p.stdout, "update hooks kept: %r" % p.stdout)
        eq(sorted(os.listdir(tmp)), ["apt"], "left behind in TMPDIR")


# Not root, with a sudo that wants a password and has no terminal to ask on
# (a CI job, `scripts/test </dev/null`): every `sudo apt-get update` failed and
# was taken for another apt at work, tried 12 times 10 s apart, then blamed on
# apt.  Now sudo is asked once, first, and its refusal named.
@test("install-deps: a sudo that refuses is named at once, not retried as a busy apt")
def _(srv):
    with tempfile.TemporaryDirectory() as tmp:
        fake = {"id": 'if [ "$1" = -u ]; then echo 1000; else exec /usr/bin/id "$@"; fi',
                "dpkg-query": "exit 1",                              # nothing installed
                "sudo": 'echo "sudo: a password is required" >&2; exit 1',
                "apt-get": "touch %s/apt-get-ran; exit 0" % tmp}
        for name, body in fake.items():
            with open(os.path.join(tmp, name), "w") as f:
                f.write("#!/bin/sh\n" + body + "\n")
            os.chmod(os.path.join(tmp, name), 0o755)
        t0 = time.time()
        p = subprocess.run([os.path.join(SRCDIR, "scripts", "install-deps"), "--test"],
                           env=dict(os.environ, PATH=tmp + os.pathsep + os.environ["PATH"]),
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        eq(p.returncode, 1, "exit status (stderr %r)" % p.stderr)
        check("sudo refused" in p.stderr, "install-deps names sudo: %r" % p.stderr)
        check(time.time() - t0 < 10, "took %.1f s" % (time.time() - t0))
        check(not os.path.exists(os.path.join(tmp, "apt-get-ran")), "apt-get ran without root")


# A hang-up (an ssh session dropped during the download) killed fetch-pth
# without its EXIT trap: dash runs that trap on exit and the signals it
# traps, and it trapped INT and TERM only, so the private apt directory
# ($TMPDIR/cowd-pth.*) was left behind.
@test("fetch-pth: a hang-up during the download removes the private apt directory")
def _(srv):
    with tempfile.TemporaryDirectory() as tmp:
        bin_dir = os.path.join(tmp, "bin")
        work = os.path.join(tmp, "work")
        os.makedirs(bin_dir)
        os.makedirs(work)
        started = os.path.join(tmp, "apt-get-started")
        with open(os.path.join(bin_dir, "apt-get"), "w") as f:     # the download, held
            f.write("#!/bin/sh\ntouch %s\nexec sleep 30\n" % started)
        os.chmod(os.path.join(bin_dir, "apt-get"), 0o755)
        p = subprocess.Popen([os.path.join(SRCDIR, "scripts", "fetch-pth"), os.path.join(tmp, "pth.tar.gz")],
                             env=dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"],
                                      TMPDIR=work, PTH_TARBALL=""),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        try:
            deadline = time.time() + 10 * SLOW
            while not os.path.exists(started) and p.poll() is None and time.time() < deadline:
                time.sleep(0.05)
            check(os.path.exists(started), "fetch-pth ran apt-get (exit %s, stderr %r)"
                  % (p.poll(), p.stderr.read() if p.poll() is not None else ""))
            eq(len(os.listdir(work)), 1, "fetch-pth's private directory while it downloads")
            os.killpg(p.pid, signal.SIGHUP)     # as a terminal's hang-up reaches its foreground group
            p.wait(10 * SLOW)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            p.stderr.close()
        eq(p.returncode, 129, "fetch-pth's exit status on a hang-up")
        eq(os.listdir(work), [], "left behind in TMPDIR after the hang-up")


@test("fetch-pth: the private apt sources name no suite of a system source twice")
def _(srv):
    # Before: a system source of Debian bookworm in one-line form got its
    # deb-src twin plus a bookworm stanza of its own for the same source.
    # apt 2.6 warns of a source configured twice, and refuses the pair
    # ("Conflicting values set for option Signed-By") when the system's entry
    # names another keyring: no Pth, no build.  A one-line entry with options
    # in brackets gave a stanza whose URI was the options.
    if not os.path.exists("/usr/share/keyrings/debian-archive-keyring.gpg"):
        raise TestSkip("no Debian archive keyring: fetch-pth adds no bookworm source here")
    with tempfile.TemporaryDirectory() as tmp:
        out = fetch_pth_sources(tmp, {"sources.list": "deb http://deb.debian.org/debian/ bookworm main\n"})
        eq(out.count("bookworm"), 1, "bookworm sources in %r" % out)
        check("deb-src http://deb.debian.org/debian/ bookworm main" in out, "the twin in %r" % out)
        # options in brackets are not the URI
        out = fetch_pth_sources(tmp, {"sources.list": "deb [signed-by=/etc/apt/keyrings/debian.gpg] "
                                                      "http://deb.debian.org/debian bookworm main\n"})
        eq(out.count("bookworm"), 1, "bookworm sources in %r" % out)
        check("URIs: [" not in out, "options taken for a URI in %r" % out)
        out = fetch_pth_sources(tmp, {"sources.list": "deb [ arch=amd64 ] http://deb.debian.org/debian trixie main\n"})
        check("URIs: http://deb.debian.org/debian\nSuites: bookworm" in out, "bookworm added in %r" % out)
        # a Debian system on a later release gets bookworm's source added
        trixie = ("Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: main\n"
                  "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
        out = fetch_pth_sources(tmp, {"sources.list.d/debian.sources": trixie})
        check("Suites: trixie" in out and "Suites: bookworm" in out, "trixie and bookworm in %r" % out)
        # deb822 with bookworm already: nothing added
        out = fetch_pth_sources(tmp, {"sources.list.d/debian.sources": trixie.replace("trixie", "bookworm bookworm-updates")})
        eq(out.count("Suites: "), 1, "stanzas in %r" % out)
        # not a Debian mirror: twins only
        out = fetch_pth_sources(tmp, {"sources.list": "deb http://archive.ubuntu.com/ubuntu jammy main\n"})
        eq(out.strip().splitlines()[1:], ["deb-src http://archive.ubuntu.com/ubuntu jammy main"], "sources")
