"""The network fuzzer (netfuzz.py) against the suite's server, for
COWD_NETFUZZ_SECONDS (default 20) with small limits, so that timeouts, the
connection cap, the file cache's evictions and parking are all reached."""

import os
import random
import shutil
import urllib.parse

import netfuzz
from cowdtest import BIG_SIZE, SLOW, TestFailure, check, test

SECONDS = float(os.environ.get("COWD_NETFUZZ_SECONDS", "20"))
ARGS = ["--threads", "8", "--keepalive-timeout", "2", "--header-timeout", "2", "--body-timeout", "2",
        "--send-timeout", "3", "--cache-entries", "6", "--cache-size", "200k", "--cache-validate", "0",
        "--max-body-discard", "64k", "--max-connections", "64"]


def files_on_disk(top):
    """URL path -> bytes of the readable regular files under top, as they
    are now (earlier tests change some behind Root.files' back)."""
    files = {}
    for d, _, names in os.walk(top):
        for name in names:
            p = os.path.join(d, name)
            if os.path.islink(p) or not os.path.isfile(p) or os.path.getsize(p) > 1 << 20:
                continue
            try:
                with open(p, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            files["/" + urllib.parse.quote(os.path.relpath(p, top))] = data
    return files


@test("fuzz: %g s of generated and mutated requests from 12 connections at once: every reply framed and "
      "right, no 500, others served in time, no socket left" % SECONDS, args=ARGS)
def _(srv):
    root = srv.root
    files = files_on_disk(root.path)
    root.write("fuzz/changing.bin", b"c" * 20000)
    others = ["/dir/", "/dir", "/noindex/", "/docs", "/link-out.txt", "/link-out-dir/", "/fifo"]
    files["/big.bin"] = root.big_block        # its first MiB: enough for the ranges asked
    site = netfuzz.Site(files, others=others, ranged={"/big.bin": BIG_SIZE},
                        changing=("/fuzz/changing.bin", os.path.join(root.path, "fuzz", "changing.bin")),
                        health="/hello.txt")
    workers = srv.children()
    base = netfuzz.sockets_of(workers)
    seed = random.SystemRandom().randrange(1 << 30)
    try:
        stats = netfuzz.run(srv.port, site, SECONDS, seed, clients=12, slow=SLOW)
    finally:
        shutil.rmtree(os.path.join(root.path, "fuzz"), ignore_errors=True)
        root.files.pop("fuzz/changing.bin", None)
    if stats.failures:
        raise TestFailure("seed %d (tests/integration/netfuzz.py): %s; %s" %
                          (seed, " | ".join(stats.failures[:5]), stats.summary()))
    why = srv.health()
    check(why is None, "seed %d: %s" % (seed, why))
    left = netfuzz.settled_sockets(workers, base, 6 * SLOW)
    check(left <= base, "seed %d: the worker holds %d sockets, %d before the fuzzing" % (seed, left, base))
