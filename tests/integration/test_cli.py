"""The command line: --help, --version, bad flags and values (one clear
line, non-zero exit), IPv4 and IPv6 listen addresses, several listeners."""
import errno
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from cowdtest import (COWD, OPTIONAL_FLAGS, SRCDIR, Server, TestFailure, TestSkip, build_has, check,
                      eq, free_port, preloaded_faults, read_to_eof, test)


def run_cowd(*args):
    p = subprocess.run([COWD] + list(args), capture_output=True, text=True, timeout=10)
    return p.returncode, p.stdout, p.stderr


def get_when_listening(host, port, host_header, what):
    """GET /hello.txt with Connection: close from a cowd that is still
    starting: connects (retrying for up to 10 s) and reads to end of stream."""
    deadline = time.time() + 10
    while True:
        try:
            c = socket.create_connection((host, port), timeout=2)
            break
        except OSError:
            if time.time() > deadline:
                raise TestFailure("%s not served" % what)
            time.sleep(0.05)
    c.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: " + host_header +
              b"\r\nConnection: close\r\n\r\n")
    data = read_to_eof(c, 4096)
    c.close()
    return data


@test("cli: --help lists every flag and exits 0")
def _(srv):
    rc, out, err = run_cowd("--help")
    eq(rc, 0, "exit status")
    flags = ["--listen", "--root", "--threads", "--foreground", "--index", "--listing", "--listing-max",
             "--max-uri", "--max-header-size", "--max-headers", "--keepalive-timeout",
             "--header-timeout", "--workers", "--access-log", "--cache-size", "--sendfile-min",
             "--sendfile-chunk", "--notsent-lowat", "--max-connections", "--version"]
    if SRCDIR:
        # every long option the parser knows (its table in config.c), not a list kept by hand
        with open(os.path.join(SRCDIR, "src", "config.c"), encoding="utf-8") as f:
            table = re.findall(r'^\s*\{ "([a-z][a-z0-9-]+)",\s+(?:no|required|optional)_argument', f.read(), re.M)
        check(len(table) > 30, "long options found in config.c: %r" % table)
        flags += ["--" + name for name in table]
    for flag in sorted(set(flags)):
        check(re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(flag), out), "--help mentions %s" % flag)


@test("cli: every flag in --help is in the man page and the README")
def _(srv):
    if not SRCDIR:
        raise TestSkip("COWD_SRCDIR not set")
    rc, out, err = run_cowd("--help")
    flags = sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", out)))
    check(len(flags) > 30, "flags found in --help: %r" % flags)
    # the source of the page; the build makes src/cowd.8 from it (paths filled in)
    with open(os.path.join(SRCDIR, "src", "cowd.8.in")) as f:
        man = f.read().replace("\\-", "-").replace("\\fB", "").replace("\\fR", "")
    with open(os.path.join(SRCDIR, "README")) as f:
        readme = f.read()
    missing = [(fl, where) for fl in flags for where, text in (("man page", man), ("README", readme))
               if not re.search(re.escape(fl) + r"(?![a-z0-9-])", text)]
    eq(missing, [], "flags of --help missing from the documentation")


@test("cli: the built man page names the directories the binary was built with")
def _(srv):
    page = os.path.join(os.path.dirname(COWD), "cowd.8")
    if not os.path.isfile(page):
        raise TestSkip("no built man page beside $COWD (%s)" % page)
    with open(page) as f:
        man = f.read()
    left = re.findall(r"@[a-z_]+@", man)
    eq(left, [], "placeholders of cowd.8.in left in the built page")
    files = man.split(".SH FILES", 1)[-1].split(".SH ", 1)[0]
    mime = re.search(r"^\.I (/\S*/mime\.types)$", files, re.M)
    check(mime is not None, "FILES names mime.types by an absolute path: %r" % files)
    with open(COWD, "rb") as f:
        image = f.read()
    check(mime.group(1).encode() in image,
          "the binary's default --mime-types is %s, as the man page says" % mime.group(1))


@test("cli: --version names the version, the Pth backend and the park")
def _(srv):
    rc, out, err = run_cowd("--version")
    eq(rc, 0, "exit status")
    check(out.startswith("cowd ") and re.search(r"\b(epoll|libevent|select) backend\b", out),
          "version line names the backend: %r" % out)
    check(re.search(r"\b(epoll|poll) park\b", out), "version line names the park: %r" % out)
    # scripts/test says which build each variant must be
    for what in ("backend", "park"):
        want = os.environ.get("COWD_EXPECT_" + what.upper())
        if want:
            check(re.search(r"\b%s %s\b" % (re.escape(want), what), out),
                  "this variant's binary has the %s %s: %r" % (want, what, out))
    # every optional feature (all), or none (the minimal variant): a
    # feature dropped by mistake would otherwise only skip its tests
    want = os.environ.get("COWD_EXPECT_FEATURES")
    if want:
        check(want in ("all", "none"), "COWD_EXPECT_FEATURES is all or none, not %r" % want)
        has = [flag for flag in OPTIONAL_FLAGS if build_has(flag)]
        eq(has, list(OPTIONAL_FLAGS) if want == "all" else [],
           "optional features in this variant's binary (COWD_EXPECT_FEATURES=%s)" % want)
    if os.environ.get("COWD_EXPECT_ASAN"):
        with open(COWD, "rb") as f:
            check(b"__asan_init" in f.read(), "this variant's binary is built with AddressSanitizer")


@test("cli: a feature left out of this build (--enable-minimal) is refused at start-up, naming it")
def _(srv):
    rc, out, err = run_cowd("--help")
    for flag in OPTIONAL_FLAGS:
        line = [ln for ln in out.splitlines() if ln.strip().startswith(flag + " ")]
        eq(len(line), 1, "--help lines for %s" % flag)
        eq("(not in this build)" in line[0], not build_has(flag),
           "--help marks %s as left out of this build: %r" % (flag, line[0]))
    left_out = [f for f in OPTIONAL_FLAGS if not build_has(f)]
    if not left_out:
        raise TestSkip("nothing is left out of this build (the minimal variant checks the refusals)")
    for flag in left_out:
        port = free_port()
        rc, out, err = run_cowd(flag, *OPTIONAL_FLAGS[flag], "--listen", "127.0.0.1:%d" % port,
                                "--root", srv.root.path, "--foreground")
        eq(rc, 1, "exit status with %s" % flag)
        lines = err.strip().splitlines()
        eq(len(lines), 1, "lines on stderr with %s" % flag)
        check(flag in lines[0] and "this build has no" in lines[0],
              "%s: message names the flag and says why: %r" % (flag, lines[0]))
        with socket.socket() as s:
            check(s.connect_ex(("127.0.0.1", port)) != 0, "%s: nothing listens on the port" % flag)


@test("cli: the default or minimal build is the size the README gives (stripped, gcc, x86-64)")
def _(srv):
    built = [build_has(f) for f in OPTIONAL_FLAGS]
    if not any(built):
        which, pattern = "minimal", r"`--enable-minimal` builds a (\d+) KB \(stripped"
    elif all(built):
        which, pattern = "default", r"The default build is (\d+) KB"
    else:
        raise TestSkip("neither the default nor the --enable-minimal feature set")
    if platform.machine() != "x86_64" or shutil.which("strip") is None:
        raise TestSkip("the README's figures are for x86-64, stripped with strip(1)")
    with open(COWD, "rb") as f:
        image = f.read()
    if b"libasan" in image or b"clang version" in image:
        raise TestSkip("a sanitizer or clang build; the README's figures are gcc's plain build")
    with open(os.path.join(SRCDIR, "README"), encoding="utf-8") as f:
        m = re.search(pattern, f.read())
    check(m is not None, "README states the %s build's size" % which)
    stated = int(m.group(1)) * 1000
    with tempfile.TemporaryDirectory() as d:
        stripped = os.path.join(d, "cowd")
        subprocess.run(["strip", "-o", stripped, COWD], check=True, timeout=30)
        size = os.path.getsize(stripped)
    check(0.9 * stated <= size <= 1.1 * stated,
          "stripped %s cowd is %d bytes; the README says %d KB" % (which, size, stated // 1000))


# A directory given as --mime-types was reported as "File too large" (its
# ftell is huge), which sent the user looking for the wrong thing.
@test("cli: --mime-types naming a directory says it is a directory")
def _(srv):
    d = tempfile.mkdtemp(prefix="cowd-mimedir-", dir=srv.root.tmp)
    rc, out, err = run_cowd("--mime-types", d, "--listen", "127.0.0.1:%d" % free_port(), "--root", srv.root_dir)
    check(rc != 0, "exit status 0 with a directory as --mime-types")
    check(d in err and "Is a directory" in err, "the error names the directory and why: %r" % err[-300:])


# Two mappings per handler stack (the stack, its guard page): past
# vm.max_map_count the stacks lost their guard pages with a warning and the
# worker then failed to start a thread with ENOMEM ("cannot start the cache
# sweep thread: Cannot allocate memory"), the master giving up after it.
@test("cli: --threads needing more memory mappings than vm.max_map_count is refused at start, naming it")
def _(srv):
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            max_maps = int(f.read())
    except OSError:
        raise TestSkip("no /proc/sys/vm/max_map_count here")
    threads = (max_maps - 1024) // 2 + 1
    if threads > 100000:
        raise TestSkip("vm.max_map_count %d allows more than --threads' cap" % max_maps)
    p = subprocess.Popen([COWD, "--listen", "127.0.0.1:%d" % free_port(), "--root", srv.root_dir,
                          "--foreground", "--threads", str(threads)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.terminate()
        out, err = p.communicate(timeout=20)
        raise TestFailure("--threads %d (vm.max_map_count %d) still running after 10 s: %r"
                          % (threads, max_maps, err[-600:]))
    check(p.returncode != 0, "exit status 0 with --threads %d" % threads)
    check("--threads %d" % threads in err and "vm.max_map_count (%d)" % max_maps in err
          and "lower --threads to %d or less" % (threads - 1) in err,
          "the error names --threads, the limit and the most it allows: %r" % err[-600:])
    check(re.search(r"worker \d+ started", err) is None, "refused before any worker started: %r" % err[-600:])


@test("cli: a bad flag or value prints one line naming it and exits non-zero")
def _(srv):
    cases = [
        (["--no-such-flag"], "--no-such-flag"),
        (["--threads", "0"], "--threads"),
        (["--threads", "abc"], "--threads"),
        (["--threads"], "--threads"),
        (["--listen", "nonsense"], "nonsense"),
        (["--listen", "127.0.0.1:99999"], "99999"),
        # IPv6 without brackets was split at its last colon and served
        (["--listen", "::1:%d" % free_port(), "--root", srv.root_dir], "[ADDR]:PORT"),
        (["--listen", ":::%d" % free_port(), "--root", srv.root_dir], "[ADDR]:PORT"),
        # inet_aton's forms went to getaddrinfo, which took them as numbers:
        # 0177.0.0.1 (octal) served on 127.0.0.1, 127.1 too
        (["--listen", "0177.0.0.1:%d" % free_port(), "--root", srv.root_dir], "0177.0.0.1"),
        (["--listen", "127.1:%d" % free_port(), "--root", srv.root_dir], "127.1"),
        (["--listen", "0x7f000001:%d" % free_port(), "--root", srv.root_dir], "0x7f000001"),
        (["--max-header-size", "12q"], "--max-header-size"),
        (["--log-level", "loud"], "--log-level"),
        (["--index", "a/b"], "--index"),
        (["--index", "."], "--index"),
        (["--index", ".."], "--index"),
        (["--index", "i" * 256], "--index"),
        (["--sendfile-chunk", "100"], "--sendfile-chunk"),
        (["--notsent-lowat", "-1"], "--notsent-lowat"),
        (["extra-argument"], "extra-argument"),
    ]
    for args, named in cases:
        rc, out, err = run_cowd(*args)
        check(rc != 0, "%s: non-zero exit (got %d)" % (args, rc))
        lines = [l for l in err.splitlines() if l.strip()]
        eq(len(lines), 1, "%s: one line on stderr (%r)" % (args, err))
        check(named in lines[0], "%s: the line names %s: %r" % (args, named, lines[0]))


# An empty value was taken as given: --root '' served the working directory
# (/ under systemd, say, with an unset variable in the unit), --chroot ''
# chrooted there, and the log and pid file flags failed naming the directory.
@test("cli: an empty value for any flag is refused, naming the flag")
def _(srv):
    for flag in ("--root", "--chroot", "--mime-types", "--error-log", "--pid-file", "--user", "--group",
                 "--listen", "--index", "--threads", "--log-format"):
        port = free_port()
        rc, out, err = run_cowd("--listen", "127.0.0.1:%d" % port, "--root", srv.root_dir, flag, "")
        check(rc != 0, "%s '': non-zero exit (got %d)" % (flag, rc))
        lines = [l for l in err.splitlines() if l.strip()]
        eq(len(lines), 1, "%s '': one line on stderr (%r)" % (flag, err))
        check(flag in lines[0] and "empty" in lines[0], "%s '': the line names it and says why: %r"
              % (flag, lines[0]))


# Started as another user than root, a --user or --group that does not exist
# was reported as needing root; run as root, the same said "no such user".
@test("cli: a --user or --group that does not exist is said so, also when not started as root")
def _(srv):
    def as_nobody():
        if os.geteuid() == 0:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
    for flag, name, want in (("--user", "no-such-user-cowd", "no such user"),
                             ("--group", "no-such-group-cowd", "no such group")):
        p = subprocess.run([COWD, "--listen", "127.0.0.1:%d" % free_port(), "--root", "/", flag, name],
                           capture_output=True, text=True, timeout=10, preexec_fn=as_nobody)
        eq(p.returncode, 1, "%s %s: exit status" % (flag, name))
        check("%s %s: %s" % (flag, name, want) in p.stderr, "%s %s: %r" % (flag, name, p.stderr[-300:]))


# A user or group lookup that failed (a directory service down) was
# reported as "no such user": getpwnam/getgrnam give NULL for both, errno
# tells them apart.
@test("cli: a --user or --group lookup that fails says why, not that there is no such user")
def _(srv):
    for flag, name, what in (("--user", "cowd-u", "user"), ("--group", "cowd-g", "group")):
        want = "%s %s: cannot look up the %s: Input/output error" % (flag, name, what)
        with preloaded_faults(srv.root.tmp, FAULT_LOOKUP_NAME=name, FAULT_LOOKUP_ERRNO=str(errno.EIO)):
            p = subprocess.run([COWD, "--listen", "127.0.0.1:%d" % free_port(), "--root", "/", flag, name],
                               capture_output=True, text=True, timeout=10)
        eq(p.returncode, 1, "%s: exit status" % flag)
        check(want in p.stderr, "%s: %r" % (flag, p.stderr[-300:]))


# getopt's '?' was reported as "unknown option" naming argv[optind - 1]: in a
# group of short options that is the argument before it ("-zq" after
# "--root www" named 'www'), and a flag given a value it does not take or an
# ambiguous prefix were called unknown.
@test("cli: a bad option is named as written, and a value it does not take or an ambiguous prefix is said so")
def _(srv):
    for args, want in ((["-zh"], "unknown option '-z'"),
                       (["--root", srv.root_dir, "-zq"], "unknown option '-z'"),
                       (["--no-such-flag"], "unknown option '--no-such-flag'"),
                       (["--foreground", "-zq"], "unknown option '-z'"),
                       (["--daemon=1"], "option '--daemon' takes no value"),
                       (["--help=x"], "option '--help' takes no value"),
                       (["--max", "5"], "option '--max' is ambiguous")):
        rc, out, err = run_cowd(*args)
        eq(rc, 1, "%s: exit status" % args)
        lines = [l for l in err.splitlines() if l.strip()]
        eq(len(lines), 1, "%s: one line on stderr (%r)" % (args, err))
        check(want in lines[0], "%s: %r, not %r" % (args, lines[0], want))


@test("cli: --listen [::1]:PORT serves over IPv6")
def _(srv):
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
        port = s.getsockname()[1]
        s.close()
    except OSError:
        raise TestSkip("no IPv6 loopback here")
    p = subprocess.Popen([COWD, "--listen", "[::1]:%d" % port, "--root", srv.root_dir,
                          "--user", "root"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        data = get_when_listening("::1", port, b"[::1]", "[::1]:%d" % port)
        check(data.startswith(b"HTTP/1.1 200 OK\r\n"), "200 over IPv6: %r" % data[:60])
        check(data.endswith(b"Hello, world!\n"), "body over IPv6")
    finally:
        p.terminate()
        p.wait(timeout=15)


@test("cli: two --listen addresses are both served")
def _(srv):
    p1, p2 = free_port(), free_port()
    p = subprocess.Popen([COWD, "--listen", "127.0.0.1:%d" % p1, "--listen", "127.0.0.1:%d" % p2,
                          "--root", srv.root_dir, "--user", "root"],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        for port in (p1, p2):
            data = get_when_listening("127.0.0.1", port, b"t", "port %d" % port)
            check(data.startswith(b"HTTP/1.1 200 OK\r\n"), "200 on port %d" % port)
    finally:
        p.terminate()
        p.wait(timeout=15)


@test("cli: --listen PORT and --listen :PORT listen on every IPv4 address")
def _(srv):
    for form in ("%d", ":%d"):
        port = free_port()
        p = subprocess.Popen([COWD, "--listen", form % port, "--root", srv.root_dir, "--user", "root"],
                             stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        try:
            data = get_when_listening("127.0.0.1", port, b"t", "--listen " + form % port)
            check(data.startswith(b"HTTP/1.1 200 OK\r\n"), "200 with --listen %s" % (form % port))
        finally:
            p.terminate()
            err = p.communicate(timeout=15)[1].decode(errors="replace")
        check("on http://0.0.0.0:%d/ " % port in err, "--listen %s: the log names 0.0.0.0: %r"
              % (form % port, err))


# An address given twice failed at the second bind with "Address already in
# use", as if another server held it.
@test("cli: an address given to --listen twice is refused, naming both forms")
def _(srv):
    port = free_port()
    for first, again in (("127.0.0.1:%d", "127.0.0.1:%d"), ("*:%d", "%d"), ("[::1]:%d", "[0:0::1]:%d")):
        a, b = first % port, again % port
        rc, out, err = run_cowd("--listen", a, "--listen", b, "--root", srv.root_dir, "--foreground")
        eq(rc, 1, "exit status with --listen %s --listen %s" % (a, b))
        check("is already given (by --listen %s)" % a in err and "'%s' for --listen" % b in err,
              "message for --listen %s --listen %s: %r" % (a, b, err))
        check("Address already in use" not in err, "got as far as binding: %r" % err)
    # an address inside an every-address one of the same port: cannot be bound
    # too, unless with --reuseport
    for first, again in (("%d", "127.0.0.1:%d"), ("[::1]:%d", "[::]:%d")):
        a, b = first % port, again % port
        rc, out, err = run_cowd("--listen", a, "--listen", b, "--root", srv.root_dir, "--foreground")
        eq(rc, 1, "exit status with --listen %s --listen %s" % (a, b))
        check("'%s' for --listen: %s overlaps --listen %s" % (b, b, a) in err,
              "message for --listen %s --listen %s: %r" % (a, b, err))
    # allowed (the missing root stops the start after the check): with
    # --reuseport, which binds both; port 0, a new free port each time; two
    # families (IPv6 sockets are IPv6 only)
    for args in (["%d" % port, "127.0.0.1:%d" % port, "--reuseport"], ["127.0.0.1:0", "127.0.0.1:0"],
                 ["*:%d" % port, "[::1]:%d" % port], ["[::]:%d" % port, "0.0.0.0:%d" % port]):
        argv = ["--listen", args[0], "--listen", args[1]] + args[2:]
        rc, out, err = run_cowd(*argv, "--root", "/nonexistent/root", "--foreground")
        eq(rc, 1, "exit status with %s and a missing root" % " ".join(argv))
        check("document root /nonexistent/root" in err and "for --listen" not in err,
              "%s: refused for another reason: %r" % (" ".join(argv), err))


def in_private_hosts(hosts, argv):
    """argv run with the file hosts bind-mounted on /etc/hosts, in a mount
    namespace of its own (so the rest of the system keeps its /etc/hosts)."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind "$0" /etc/hosts && exec "$@"', hosts] + list(argv)


@test("cli: --listen HOST:PORT serves every address the name resolves to")
def _(srv):
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        raise TestSkip("no IPv6 loopback here")
    for _attempt in range(20):          # a port free on both loopbacks
        port = free_port()
        try:
            with socket.socket(socket.AF_INET6) as s:
                s.bind(("::1", port))
            break
        except OSError:
            continue
    else:
        raise TestSkip("no port free on both 127.0.0.1 and ::1")
    probe = ("import socket, sys; print(' '.join(sorted({a[4][0] for a in socket.getaddrinfo("
             "'localhost', int(sys.argv[1]), type=socket.SOCK_STREAM)})))")
    with tempfile.TemporaryDirectory() as d:
        # ::1 first, as on many systems: the first address alone is not enough
        hosts = os.path.join(d, "hosts")
        with open(hosts, "w") as f:
            f.write("::1 localhost\n127.0.0.1 localhost\n")
        wrap = lambda argv: in_private_hosts(hosts, argv)
        try:
            p = subprocess.run(wrap([sys.executable, "-c", probe, str(port)]),
                               capture_output=True, text=True, timeout=10)
            ok = p.returncode == 0
        except OSError:
            ok = False
        if ok:
            resolved = p.stdout.split()
        else:                           # no mount namespace: the system's own /etc/hosts
            wrap = list
            resolved = sorted({a[4][0] for a in socket.getaddrinfo("localhost", port,
                                                                    type=socket.SOCK_STREAM)})
        if resolved != ["127.0.0.1", "::1"]:
            raise TestSkip("localhost resolves to %r here, not to both 127.0.0.1 and ::1 "
                           "(and no private /etc/hosts: unshare/mount not permitted)" % resolved)
        p = subprocess.Popen(wrap([COWD, "--listen", "localhost:%d" % port, "--root", srv.root_dir,
                                   "--user", "root"]),
                             stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        try:
            for host, header in (("::1", b"[::1]"), ("127.0.0.1", b"127.0.0.1")):
                data = get_when_listening(host, port, header, "%s port %d" % (host, port))
                check(data.startswith(b"HTTP/1.1 200 OK\r\n"), "200 from %s: %r" % (host, data[:60]))
        finally:
            p.terminate()
            err = p.communicate(timeout=15)[1].decode(errors="replace")
    for where in ("[::1]:%d" % port, "127.0.0.1:%d" % port):
        check("on http://%s/ " % where in err, "the log names %s: %r" % (where, err))


@test("cli: the bundled demo site is served by default", demo=True)
def _(srv):
    r = srv.get("/")
    eq(r.status_line, "HTTP/1.1 200 OK", "status")
    check(b"cowd" in r.body, "demo index page")
    eq(r.get("Content-Type"), "text/html", "type")
