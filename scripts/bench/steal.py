"""steal.py -- steal time of measured runs: one summary shared by report.py
(one run) and across_runs.py (many runs), so both count it the same way.

Each runs.csv and sweep-runs.csv row written since run 40 carries
steal_server_pct and steal_client_pct: the share of the server's and the
client's pinned CPU that the hypervisor gave to other guests during that
run (scripts/bench/README.md, "Steal %").  Older rows have neither.
"""
import statistics

STEAL_NOTABLE = 5.0   # % of a CPU's time stolen in a run worth counting out loud
SIDES = ("server", "client")


def steal_values(rows, side):
    """The steal % of SIDE's CPU in every row that recorded one."""
    out = []
    for r in rows:
        try:
            out.append(float(r.get(f"steal_{side}_pct")))
        except (TypeError, ValueError):
            pass
    return out


def steal_summary(rows):
    """-> {side: (median, highest, runs at STEAL_NOTABLE or more, runs)} for
    each side with any recorded value; {} when no row recorded steal."""
    out = {}
    for side in SIDES:
        v = steal_values(rows, side)
        if v:
            out[side] = (statistics.median(v), max(v), sum(x >= STEAL_NOTABLE for x in v), len(v))
    return out
