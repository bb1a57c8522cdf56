#!/usr/bin/python3
"""Cluster-mode figures (needs Debian's python3-redis and redis-benchmark; not run by CI).

    bench/cluster_migrate.py migrate [--mib M] [--filters N]
    bench/cluster_migrate.py routing [--requests R] [--rounds K]

migrate: two cluster-enabled nodes set up by the controller double (tests/lib), N filters of M
MiB each (CF.RESERVE sized so the buckets are M MiB, then random CF.INSERTs until nearly every
page is stored) in slots 0-99 of the first node; CLUSTERX MIGRATE 0-99 to the second, polled
every 10 ms until success, while a writer keeps adding to a small filter in slot 5 through a
plain connection (TRYAGAIN and MOVED counted; --pace S sleeps S seconds between its writes). Prints the source's own account of the
transfer (records, bytes, seconds, MiB/s, records/s and how long writes were forbidden, from
its log), the wall time seen from outside, and the write-forbidden window as the writer saw it
(first to last TRYAGAIN).

routing: one node in cluster mode owning all 16384 slots and one standalone node, the same
binary and options, both started now; redis-benchmark runs CF.ADD (random items) and
CF.EXISTS against each in turn (-P 1 and -P 16), K rounds; prints requests/s and the server's
CPU time per request (utime + stime of /proc/PID/stat: less sensitive than requests/s to
other load on the machine) per round, and the median ratios cluster / standalone. (redis-benchmark --cluster refuses a cluster of one node, "Invalid
cluster: 1 node(s)", so it connects plainly: every command still goes through the cluster
node's routing, slot and owner checked, and is served since the node owns every slot.)
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "lib"))

import redis  # noqa: E402
from redis.crc import key_slot  # noqa: E402

from controller_double import ControllerDouble, parse_cluster_info  # noqa: E402
from cuckood_group import ServerGroup  # noqa: E402

CLUSTER = ["--cluster-enabled", "yes"]
# Bigger than the test defaults: the transfer, not the caches, should be what is measured.
BENCH_ARGS = ["--cache-size", "256mb", "--block-cache-size", "256mb",
              "--write-buffer-size", "64mb"]


def keys_in(slots, count, prefix):
    out, i = [], 0
    slots = list(slots)
    while len(out) < count:
        k = "%s%d" % (prefix, i)
        if key_slot(k.encode()) in slots:
            out.append(k)
        i += 1
    return out


def fill(r, key, mib):
    buckets = mib * (1 << 20) // 2  # bucket size 2, one byte per fingerprint
    r.execute_command("CF.RESERVE", key, buckets * 2)
    # About 8 items a page of 2048 bytes: e^-8 of the pages stay empty (not stored).
    items = buckets * 2 // 2048 * 8
    p = r.pipeline(transaction=False)
    for start in range(0, items, 1000):
        p.execute_command("CF.INSERT", key, "NOCREATE", "ITEMS",
                          *("%s-%d" % (key, j) for j in range(start, min(items, start + 1000))))
        if len(p) >= 20:
            p.execute()
    p.execute()
    return int(dict(zip(*[iter(r.execute_command("CF.INFO", key))] * 2))[b"Size"])


def migrate(args):
    with tempfile.TemporaryDirectory(prefix="cuckood-bench-") as tmp, \
            ServerGroup(tmp, 2, CLUSTER + BENCH_ARGS) as group:
        double = ControllerDouble([("127.0.0.1", n.port) for n in group.nodes])
        try:
            double.create_cluster()
            src, dst = double.shards[0]["master"], double.shards[1]["master"]
            r = redis.Redis(port=group.nodes[0].port, socket_timeout=120)
            total = 0
            t0 = time.monotonic()
            for k in keys_in(range(0, 100), args.filters, "mig"):
                total += fill(r, k, args.mib)
            print("filled %d filters of %d MiB (%.1f MiB in CF.INFO Size) in %.1f s"
                  % (args.filters, args.mib, total / (1 << 20), time.monotonic() - t0))
            hot = next(k for k in keys_in(range(5, 6), 1, "hot"))
            r.execute_command("CF.RESERVE", hot, 1 << 20)
            stop = threading.Event()
            seen = {"ok": 0, "tryagain": [], "moved": 0}

            def writer():
                w = redis.Redis(port=group.nodes[0].port, socket_timeout=30)
                i = 0
                while not stop.is_set():
                    try:
                        w.execute_command("CF.ADD", hot, "w%d" % i)
                        seen["ok"] += 1
                    except redis.ResponseError as e:
                        if str(e).startswith("TRYAGAIN"):
                            seen["tryagain"].append(time.monotonic())
                        elif str(e).startswith("MOVED"):
                            seen["moved"] += 1
                            return
                        else:
                            raise
                    i += 1
                    if args.pace:
                        time.sleep(args.pace)

            t = threading.Thread(target=writer)
            t.start()
            time.sleep(0.2)
            began = time.monotonic()
            assert double.send(src, "CLUSTERX", "MIGRATE", "0-99", dst["id"]) == "OK"
            while True:
                state = parse_cluster_info(r.execute_command("CLUSTER", "INFO").decode())
                if state["migrating_state"].strip() in ("success", "fail"):
                    break
                time.sleep(0.01)
            wall = time.monotonic() - began
            stop.set()
            t.join(30)
            print("state: %s after %.3f s (polled every 10 ms)"
                  % (state["migrating_state"].strip(), wall))
            line = [ln for ln in group.nodes[0].read_log().splitlines()
                    if "slot migration of 0-99" in ln and "succeeded" in ln]
            print("source: %s" % (line[-1].split("succeeded: ", 1)[-1] if line else "(no line)"))
            ta = seen["tryagain"]
            window = (ta[-1] - ta[0]) * 1000 if ta else 0.0
            print("writer: %d acknowledged, %d TRYAGAIN over %.1f ms, then MOVED: %s"
                  % (seen["ok"], len(ta), window, bool(seen["moved"])))
        finally:
            double.close()


def cpu_seconds(pid):
    """User + system CPU time a process has used (/proc/PID/stat, clock ticks)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def benchmark(port, command, requests, pipeline):
    argv = ["redis-benchmark", "-p", str(port), "-c", "50", "-P", str(pipeline),
            "-n", str(requests), "-r", "1000000", "-q"] + command
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600).stdout
    m = re.findall(r"([0-9.]+) requests per second", out.replace("\r", "\n"))
    if not m:
        raise RuntimeError("no figure in %r" % out[-500:])
    return float(m[-1])


def routing(args):
    opts = ["--cf-initial-size", "4000000", "--workers", "2"]
    with tempfile.TemporaryDirectory(prefix="cuckood-bench-") as tmp, \
            ServerGroup(os.path.join(tmp, "c"), 1, CLUSTER + opts) as cl, \
            ServerGroup(os.path.join(tmp, "s"), 1, opts) as st:
        node = cl.nodes[0]
        me = "B" * 40
        r = redis.Redis(port=node.port)
        r.execute_command("CLUSTERX", "SETNODEID", me)
        r.execute_command("CLUSTERX", "SETNODES",
                          "%s 127.0.0.1 %d master - 0-16383\n" % (me, node.port), "1")
        for n in (node, st.nodes[0]):
            print(next(ln.split("] ", 3)[-1] for ln in n.read_log().splitlines()
                       if "ready to accept" in ln))
        results = {}
        for name, cmd in (("CF.ADD", ["CF.ADD", "bench{tag}", "__rand_int__"]),
                          ("CF.EXISTS", ["CF.EXISTS", "bench{tag}", "__rand_int__"])):
            for pipeline in (1, 16):
                label = "%s -P %d" % (name, pipeline)
                for rnd in range(args.rounds):
                    # (the order alternates, so that neither always runs first)
                    order = [node, st.nodes[0]] if rnd % 2 == 0 else [st.nodes[0], node]
                    got = {}
                    for n in order:
                        before = cpu_seconds(n.proc.pid)
                        rate = benchmark(n.port, cmd, args.requests, pipeline)
                        cpu_us = (cpu_seconds(n.proc.pid) - before) / args.requests * 1e6
                        got[n.port] = (rate, cpu_us)
                    (c, c_cpu), (s, s_cpu) = got[node.port], got[st.nodes[0].port]
                    results.setdefault(label, []).append((c, s, c_cpu, s_cpu))
                    print("%-15s round %d: cluster %.0f/s %.2f us CPU/req, standalone %.0f/s "
                          "%.2f us CPU/req, ratio %.3f (CPU %.3f)"
                          % (label, rnd + 1, c, c_cpu, s, s_cpu, c / s, c_cpu / s_cpu),
                          flush=True)
                ratios = [r[0] / r[1] for r in results[label]]
                cpu = [r[2] / r[3] for r in results[label]]
                print("%-15s median CPU per request cluster/standalone: %.3f (%.2f vs %.2f us)"
                      % (label, statistics.median(cpu),
                         statistics.median(r[2] for r in results[label]),
                         statistics.median(r[3] for r in results[label])), flush=True)
                if name == "CF.ADD":  # both really served the adds (no MOVED, no errors)
                    for what, port in (("cluster", node.port), ("standalone", st.nodes[0].port)):
                        info = redis.Redis(port=port).execute_command("CF.INFO", "bench{tag}")
                        inserted = dict(zip(info[::2], info[1::2]))[b"Number of items inserted"]
                        assert inserted > 0, (what, inserted)
                print("%-15s median ratio cluster/standalone: %.3f"
                      % (label, statistics.median(ratios)), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("migrate")
    m.add_argument("--mib", type=int, default=1)
    m.add_argument("--filters", type=int, default=64)
    m.add_argument("--pace", type=float, default=0.0,
                   help="seconds the writer sleeps between writes (0: as fast as it can)")
    rt = sub.add_parser("routing")
    rt.add_argument("--requests", type=int, default=500000)
    rt.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    (migrate if args.what == "migrate" else routing)(args)


if __name__ == "__main__":
    main()
