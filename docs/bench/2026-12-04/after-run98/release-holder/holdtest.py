# holdtest.py COWD PORT: how long a new connection waits for a handler while
# three handlers wait on idle kept-alive clients and the fourth on half a
# request head (--threads 4).  ROOT must hold a 2,048-byte f2k.  Loopback
# only; the server it starts is stopped by its PID.
import socket, subprocess, sys, time, os
cowd, port = sys.argv[1], int(sys.argv[2])
root = os.environ.get("ROOT", "/tmp/nap/root")
p = subprocess.Popen([cowd, "--listen", f"127.0.0.1:{port}", "--root", root, "--foreground", "--threads", "4", "--workers", "1"], stderr=subprocess.DEVNULL)
try:
    for _ in range(50):
        try:
            socket.create_connection(("127.0.0.1", port)).close(); break
        except OSError: time.sleep(0.1)
    time.sleep(1.2)
    req = b"GET /f2k HTTP/1.1\r\nHost: x\r\n\r\n"
    def get(s):
        s.sendall(req); buf = b""
        while len(buf) < 2048 or b"\r\n\r\n" not in buf:
            buf += s.recv(65536)
            if b"\r\n\r\n" in buf:
                h, _, b = buf.partition(b"\r\n\r\n")
                if len(b) >= 2048: break
    holders = []
    for i in range(3):
        s = socket.create_connection(("127.0.0.1", port)); get(s); holders.append(s); time.sleep(0.02)
    slow = socket.create_connection(("127.0.0.1", port)); slow.sendall(b"GET /f2k HTTP/1.1\r\n"); time.sleep(0.1)
    t0 = time.monotonic()
    n = socket.create_connection(("127.0.0.1", port)); get(n)
    print("new connection served after %.0f ms" % ((time.monotonic() - t0) * 1000))
finally:
    p.terminate(); p.wait()
