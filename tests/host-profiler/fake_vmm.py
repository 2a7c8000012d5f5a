#!/usr/bin/env python3
# A fake kvmprof-vmm control socket for tests/host-profiler/run.sh: it
# answers the way a broken or hostile VMM might, so the test can check that
# kvmprof neither crashes nor hangs. Usage: fake_vmm.py SOCKET MODE
#   garbage   one line of binary garbage
#   silent    accepts, reads, never answers
#   long      an endless reply without a newline
#   close     accepts and hangs up at once
#   notok     {"ok":false} to everything
#   badring   a valid status and vcpus, then sample-start with a memfd of
#             rings whose records are garbage (and a second fd to close)
#   old       a valid status and vpmu-stats; exit-stats is an unknown cmd
#             (a VMM older than it)
#   badexits  the same, but exit-stats answers with a hostile reason list
import json, os, socket, sys, time

path, mode = sys.argv[1], sys.argv[2]
try:
    os.unlink(path)
except FileNotFoundError:
    pass
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(4)
srv.settimeout(30)


def bad_ring():
    import random, struct
    data_size = 65536
    nr = 2
    stride = 4096 + data_size
    fd = os.memfd_create("fake-rings")
    os.ftruncate(fd, 4096 + nr * stride)
    hdr = b"KPRING\0\0" + struct.pack("<IIQQII", 1, nr, data_size, stride, 1, 2)
    os.pwrite(fd, hdr, 0)
    rnd = random.Random(7)
    for i in range(nr):
        base = 4096 + i * stride
        junk = bytes(rnd.getrandbits(8) for _ in range(8192))
        # a plausible header first (type SAMPLE, size 64, bad CRC), then noise
        junk = struct.pack("<IIII", 7, 64, 0xdeadbeef, 0) + junk[16:]
        os.pwrite(fd, junk, base + 4096)
        head = 8192 if i == 0 else 1 << 40  # the second ring lies about its head
        os.pwrite(fd, struct.pack("<QQQ", head, 3, 100), base)
    return fd


def serve(c):
    buf = b""
    while True:
        try:
            d = c.recv(4096)
        except OSError:
            return
        if not d:
            return
        buf += d
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if mode == "garbage":
                c.send(b"\x00\xff{garbage]]\n")
            elif mode == "silent":
                pass
            elif mode == "long":
                try:
                    while True:
                        c.send(b"x" * 65536)
                except OSError:
                    return
            elif mode == "notok":
                c.send(b'{"ok":false,"error":"no\\u0007pe\\nnever"}\n')
            elif mode in ("old", "badexits"):
                cmd = json.loads(line).get("cmd")
                if cmd == "status":
                    c.send(json.dumps({"ok": True, "protocol": 1, "state": "running", "pid": os.getpid(),
                                       "vcpus": 1}).encode() + b"\n")
                elif cmd == "vpmu-stats":
                    c.send(b'{"ok":true,"vm_exits":1000}\n')
                elif cmd == "exit-stats" and mode == "badexits":
                    c.send(b'{"ok":true,"reasons":[{"reason":"io\\u001b[2Jout","count":-5,"host_ns":1}],'
                           b'"vcpus":[{}]}\n')
                else:
                    c.send(json.dumps({"ok": False, "error": "unknown cmd '%s': status, vcpus or vpmu-stats"
                                       % cmd}).encode() + b"\n")
            elif mode == "badring":
                req = json.loads(line)
                cmd = req.get("cmd")
                if cmd == "status":
                    c.send(json.dumps({"ok": True, "protocol": 1, "state": "running", "pid": os.getpid(),
                                       "vcpus": 2}).encode() + b"\n")
                elif cmd == "vcpus":
                    c.send(b'{"ok":true,"pid":%d,"vcpus":[{"index":0,"tid":null},{"index":1,"tid":"x"}]}\n'
                           % os.getpid())
                elif cmd == "sample-start":
                    fd = bad_ring()
                    fd2 = os.open("/dev/null", os.O_RDONLY)
                    socket.send_fds(c, [b'{"ok":true,"event":"cpu-clock","period":1000000,"ring_bytes":65536}\n'],
                                    [fd, fd2])
                    os.close(fd)
                    os.close(fd2)
                else:
                    c.send(b'{"ok":true,"samples":0,"lost":3}\n')


c, _ = srv.accept()
if mode == "close":
    c.close()
    time.sleep(1)
    sys.exit(0)
serve(c)
time.sleep(0.5)
