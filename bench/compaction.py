#!/usr/bin/python3
"""Measures CF.COMPACT on a filter of several sub-filters, and what it costs other clients.

Fills a filter that has grown through several sub-filters, deletes most of its items, then runs
CF.COMPACT while four other connections send CF.EXISTS in a loop and record their latencies.
Prints the compaction time, the pages written, the peak RSS, and the other clients' p50/p99/max
latency during the compaction against a quiet baseline. Usage:

    bench/compaction.py [--base 100000] [--items 700000] [--keep 0.3]
"""
import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
from cuckood_testlib import CuckoodProcess, RawClient, encode  # noqa: E402


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def pipeline(c, cmds):
    c.send_raw(b"".join(encode(x) for x in cmds))
    return [c.read_reply() for _ in cmds]


def latencies(port, stop, out):
    c = RawClient(port)
    rnd = random.Random(len(out))
    while not stop.is_set():
        t = time.perf_counter()
        c.call("CF.EXISTS", "probe", "p%d" % rnd.randrange(10000))
        out.append((time.perf_counter() - t) * 1e6)
    c.close()


def measure(port, seconds=None, until=None):
    stop = threading.Event()
    samples = [[] for _ in range(4)]
    threads = [threading.Thread(target=latencies, args=(port, stop, s)) for s in samples]
    for t in threads:
        t.start()
    if until is not None:
        until()
    else:
        time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    flat = sorted(x for s in samples for x in s)
    pick = lambda q: flat[min(len(flat) - 1, int(q * len(flat)))]
    return {"n": len(flat), "p50": pick(0.5), "p99": pick(0.99), "max": flat[-1]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", type=int, default=100000, help="capacity of sub-filter 0")
    ap.add_argument("--items", type=int, default=700000)
    ap.add_argument("--keep", type=float, default=0.3, help="share of items not deleted")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cuckood-compact-") as d:
        srv = CuckoodProcess(os.path.join(d, "data"), extra_args=["--workers", "2"])
        srv.start()
        c = RawClient(srv.port)
        c.call("CF.RESERVE", "big", args.base, "EXPANSION", "2")
        c.call("CF.RESERVE", "probe", 100000)
        pipeline(c, [["CF.INSERT", "probe", "ITEMS"] + ["p%d" % i for i in range(j, j + 1000)]
                     for j in range(0, 10000, 1000)])
        t0 = time.time()
        for j in range(0, args.items, 100000):
            pipeline(c, [["CF.INSERT", "big", "ITEMS"] + ["i%d" % i for i in range(k, k + 1000)]
                         for k in range(j, min(j + 100000, args.items), 1000)])
        fill_s = time.time() - t0
        info = c.call("CF.INFO", "big")
        # Delete without triggering the automatic compaction's whole walk: CF.COMPACT does it.
        deleted = int(args.items * (1 - args.keep))
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "-1")
        for j in range(0, deleted, 10000):
            pipeline(c, [["CF.DEL", "big", "i%d" % i] for i in range(j, min(j + 10000, deleted))])
        before = c.call("CF.INFO", "big")
        quiet = measure(srv.port, seconds=3)
        result = {}

        def compact():
            cc = RawClient(srv.port, timeout=3600)
            t = time.time()
            result["reply"] = cc.call("CF.COMPACT", "big")
            result["seconds"] = time.time() - t
            cc.close()

        busy = measure(srv.port, until=compact)
        after = c.call("CF.INFO", "big")
        filters = lambda raw: raw.split(b"\r\n")[6].decode()
        print("fill: %d items in %.1f s (%.0f items/s)" % (args.items, fill_s, args.items / fill_s))
        print("sub-filters before/after CF.COMPACT: %s -> %s" % (filters(before), filters(after)))
        print("CF.COMPACT: %r in %.2f s" % (result["reply"], result["seconds"]))
        print("server peak RSS: %d MiB" % (rss_kib(srv.proc.pid) // 1024))
        for name, m in (("quiet", quiet), ("during CF.COMPACT", busy)):
            print("other clients %-18s n=%-7d p50=%.0f us p99=%.0f us max=%.0f us" %
                  (name, m["n"], m["p50"], m["p99"], m["max"]))
        c.close()
        srv.stop()
        del info


if __name__ == "__main__":
    main()
