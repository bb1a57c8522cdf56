#!/usr/bin/python3
"""Replication figures (standard library only): how far a replica trails its primary under
redis-benchmark load, and how long a full sync of a large database takes.

    bench/replication.py lag [--requests N] [--pipeline P]
    bench/replication.py fullsync [--gib G]

lag: a primary and a replica (fresh directories, free loopback ports); redis-benchmark runs
CF.ADD with random items on one reserved filter (-c 50 -P 16) while this script samples both
servers' INFO sequence every 10 ms. It prints the lag in sequence numbers (primary minus replica
at the same moment) and in milliseconds (from when the primary reached a sequence until the
replica did), as p50 / p99 / max.

fullsync: fills a primary with one filter of about G GiB of pages (CF.RESERVE, random CF.ADDs
until nearly every page is written, then an offline full compaction so that whole pages are on
disk), starts an empty replica and times it from its start until its link is up at the
primary's sequence.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.environ.get("CUCKOOD_BIN") or os.path.join(REPO, "build", "server", "cuckood")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.f = self.s.makefile("rb")

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.read()

    def read(self):
        line = self.f.readline()
        t, rest = line[:1], line[1:-2]
        if t in (b"+", b"-"):
            return rest
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            return data[:-2]
        if t == b"*":
            return [self.read() for _ in range(int(rest))]
        raise RuntimeError("bad reply %r" % line)

    def info(self, section):
        out = {}
        for line in self.call("INFO", section).decode().split("\r\n"):
            if ":" in line:
                k, v = line.split(":", 1)
                out[k] = v
        return out


def start(dir_, port, *extra):
    log = open(dir_ + ".log", "ab")
    p = subprocess.Popen([BIN, "--port", str(port), "--dir", dir_] + list(extra), stdout=log,
                         stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("cuckood did not start")


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))] if v else 0


def lag(args, tmp):
    pp, rp = free_port(), free_port()
    procs = [start(os.path.join(tmp, "p"), pp)]
    procs.append(start(os.path.join(tmp, "r"), rp, "--replicaof", "127.0.0.1 %d" % pp))
    try:
        p, r = Conn(pp), Conn(rp)
        p.call("CF.RESERVE", "bench", 4000000)
        while r.info("replication").get("master_link_status") != "up":
            time.sleep(0.05)
        bench = subprocess.Popen(["redis-benchmark", "-p", str(pp), "-c", "50", "-P",
                                  str(args.pipeline), "-n", str(args.requests), "-r", "4000000",
                                  "-q", "CF.ADD", "bench", "__rand_int__"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        samples = []  # (t, primary seq, replica seq)
        while bench.poll() is None:
            t = time.time()
            ps = int(p.info("replication")["sequence"])
            rs = int(r.info("replication")["sequence"])
            samples.append((t, ps, rs))
            time.sleep(0.01)
        out = bench.stdout.read().decode(errors="replace").strip().split("\r")[-1]
        while int(r.info("replication")["sequence"]) < int(p.info("replication")["sequence"]):
            samples.append((time.time(), int(p.info("replication")["sequence"]),
                            int(r.info("replication")["sequence"])))
            time.sleep(0.01)
        seq_lag = [ps - rs for _, ps, rs in samples]
        ms_lag = []
        j = 0
        for t, ps, _ in samples:  # when did the replica reach what the primary had at t?
            while j < len(samples) and samples[j][2] < ps:
                j += 1
            if j < len(samples):
                ms_lag.append(max(0.0, (samples[j][0] - t) * 1000))
        print("redis-benchmark: %s" % out.strip())
        print("samples: %d over %.1f s" % (len(samples), samples[-1][0] - samples[0][0]))
        print("lag in sequence numbers: p50 %d, p99 %d, max %d" %
              (pct(seq_lag, 0.5), pct(seq_lag, 0.99), max(seq_lag)))
        print("lag in milliseconds (10 ms sampling): p50 %.0f, p99 %.0f, max %.0f" %
              (pct(ms_lag, 0.5), pct(ms_lag, 0.99), max(ms_lag)))
    finally:
        for pr in procs:
            pr.terminate()
            pr.wait()


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def fullsync(args, tmp):
    pp, rp = free_port(), free_port()
    pdir = os.path.join(tmp, "p")
    procs = [start(pdir, pp)]
    try:
        p = Conn(pp)
        target = int(args.gib * (1 << 30))
        # 2-byte buckets: capacity 2^k items = 2^k bytes of pages; random items touch nearly
        # every page after a few times as many adds as pages.
        cap = 1 << max(20, (target - 1).bit_length())
        p.call("CF.RESERVE", "big", cap, "EXPANSION", 1)
        adds = max(100000, 5 * cap // 2048)
        t0 = time.time()
        subprocess.run(["redis-benchmark", "-p", str(pp), "-c", "50", "-P", "64", "-n",
                        str(adds), "-r", "1000000000", "-q", "CF.ADD", "big", "__rand_int__"],
                       stdout=subprocess.DEVNULL, check=True)
        try:
            p.call("SHUTDOWN")  # (no reply: the connection closes)
        except (RuntimeError, OSError):
            pass
        procs[0].wait()
        # Full compaction folds each page's changes into one value: the database then holds
        # whole pages, as a long-lived one does.
        subprocess.run([BIN, "--compact", "--dir", pdir], check=True, stdout=subprocess.DEVNULL)
        procs[0] = start(pdir, pp)
        p = Conn(pp)
        size = du(pdir)
        print("primary: %.2f GiB on disk after %d CF.ADDs and a full compaction (%.0f s)" %
              (size / (1 << 30), adds, time.time() - t0))
        seq = int(p.info("replication")["sequence"])
        t1 = time.time()
        procs.append(start(os.path.join(tmp, "r"), rp, "--replicaof", "127.0.0.1 %d" % pp))
        r = Conn(rp)
        while True:
            try:
                rinf = r.info("replication")
            except OSError:
                r = Conn(rp)
                continue
            if rinf.get("master_link_status") == "up" and int(rinf["sequence"]) >= seq:
                break
            time.sleep(0.05)
        took = time.time() - t1
        print("full sync of %.2f GiB (sequence %d): %.1f s from the replica's start to its link "
              "up at the primary's sequence (%.0f MiB/s)" %
              (size / (1 << 30), seq, took, size / (1 << 20) / took))
    finally:
        for pr in procs:
            if pr.poll() is None:
                pr.terminate()
                pr.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("mode", choices=["lag", "fullsync"])
    ap.add_argument("--requests", type=int, default=2000000)
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--gib", type=float, default=1.0)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cuckood-repl-bench-")
    try:
        (lag if args.mode == "lag" else fullsync)(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
