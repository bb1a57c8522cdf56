#!/usr/bin/env python3
"""Long chains of sub-filters: insert and lookup cost per item as one filter grows.

    bench/chain.py [--sizes 1,64,4096,65535] [--probe 200] [--copies 5] [--big 140000] [--out FILE]

Filters of one shape, `CF.RESERVE chain 2 BUCKETSIZE 1 EXPANSION 1` (each sub-filter holds two
fingerprints, so every two items append one), on a fresh cuckood with cf-max-expansions 65535:
`chain` and --copies - 1 more (`chain1`, ...) grown the same way, by CF.INSERT batches. At each
size of the chains a probe measures, per item:
  - insert: CF.INSERT of --probe new items into each copy in turn (which also grows it a little;
    an insert changes its chain, so it cannot be run twice on the same one: the copies give it
    the five runs the lookups get),
  - lookup, present: CF.MEXISTS of --probe items inserted earlier into a copy, spread over it,
  - lookup, absent: CF.MEXISTS of --probe items never inserted (every sub-filter is checked).
Each figure is the wall time of the command and the server's CPU time (from /proc), per item:
the median of --copies inserts, and of five runs of each lookup on each copy. Each insert starts
once the server runs no RocksDB flush or compaction (INFO), so that the background work of the
growth before it is not counted in it.
The table ends with the ratio of the cost at the largest size to the cost at 64 sub-filters, and
the time of one CF.INSERT of --big items into a fresh filter of the same shape (it grows to the
65,535 sub-filters RedisBloom allows). bench/run runs this too and puts the table in results.md.
Standard library only; the server is started and stopped here (loopback, a temporary dir).
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (Client, Server, free_port)


def server_cpu(pid):
    """CPU seconds of every thread of the process (schedstat: nanoseconds on CPU)."""
    total = 0
    task_dir = "/proc/%d/task" % pid
    for tid in os.listdir(task_dir):
        try:
            with open(os.path.join(task_dir, tid, "schedstat")) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # (a thread that just ended)
    return total / 1e9


def settle(c, timeout=20.0):
    """Waits until the server runs no RocksDB flush or compaction (the growth before a probe
    writes tens of thousands of pages: their background work would otherwise land on the probe's
    one insert), at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = [bench.info_field(c, "all", f) for f in ("num_running_flushes", "num_running_compactions")]
        if all(v in (None, "0") for v in busy):
            return
        time.sleep(0.05)


def measure(c, pid, *cmd, repeat=1):
    """The reply, and the wall and server CPU seconds of each of `repeat` runs of the command
    (a lookup of 200 items takes a few hundred microseconds: one run is at the mercy of the
    scheduler and RocksDB's background threads)."""
    walls, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), server_cpu(pid)
        reply = c.call(*cmd)
        walls.append(time.perf_counter() - t0)
        cpus.append(server_cpu(pid) - c0)
    return reply, walls, cpus


def median(values):
    return sorted(values)[len(values) // 2]


def run(cuckood, sizes, probe=200, batch=2000, big_items=140_000, copies=5):
    """Grows `copies` filters of one shape through `sizes` (measuring at each) and then times
    one CF.INSERT of big_items items into a fresh filter of the same shape (0 = skip). Returns a
    dict."""
    tmp = tempfile.mkdtemp(prefix="cuckood-chain-")
    srv = bench.Server("cuckood", lambda port: [cuckood, "--bind", bench.HOST, "--port", str(port),
                                                 "--dir", os.path.join(tmp, "data"),
                                                 "--cf-max-expansions", "65535"],
                       os.path.join(tmp, "data"), os.path.join(tmp, "cuckood.log"))
    rows = []
    out = dict(sizes=sizes, probe=probe, rows=rows)
    try:
        srv.start()
        c = srv.client()
        keys = ["chain"] + ["chain%d" % i for i in range(1, max(1, copies))]
        for key in keys:
            c.call("CF.RESERVE", key, "2", "BUCKETSIZE", "1", "EXPANSION", "1")
        added = 0
        inserted = {key: [] for key in keys}
        t_start = time.monotonic()
        for size in sizes:
            # Grow each copy to just below the size; the insert probe then takes it past it.
            for key in keys:
                while True:
                    nf = num_filters_of(c, key)
                    need = 2 * (size - nf) - probe  # (about two items a sub-filter)
                    if nf + probe // 4 >= size or need <= 0:
                        break
                    n = min(batch, max(1, need))
                    items = ["g%d" % (added + i) for i in range(n)]
                    c.call("CF.INSERT", key, "ITEMS", *items)
                    inserted[key] += items
                    added += n
            before = num_filters_of(c, "chain")
            ins_walls, ins_cpus = [], []
            for key in keys:
                settle(c)
                items = ["p%d" % (added + i) for i in range(probe)]
                _, wall, cpu = measure(c, srv.proc.pid, "CF.INSERT", key, "ITEMS", *items)
                ins_walls += wall
                ins_cpus += cpu
                added += probe
                inserted[key] += items
            ins_wall, ins_cpu = median(ins_walls), median(ins_cpus)
            # The lookups: five runs on each copy, the median of them all.
            hit_walls, hit_cpus, miss_walls, miss_cpus = [], [], [], []
            absent = ["never-%d" % i for i in range(probe)]
            for key in keys:
                stored = inserted[key]
                present = stored[::max(1, len(stored) // probe)][:probe]
                reply, wall, cpu = measure(c, srv.proc.pid, "CF.MEXISTS", key, *present, repeat=5)
                if any(x != 1 for x in reply):
                    raise bench.BenchError("an inserted item is not found")
                hit_walls += [w / len(present) for w in wall]
                hit_cpus += [x / len(present) for x in cpu]
                _, wall, cpu = measure(c, srv.proc.pid, "CF.MEXISTS", key, *absent, repeat=5)
                miss_walls += [w / probe for w in wall]
                miss_cpus += [x / probe for x in cpu]
            hit_wall, hit_cpu = median(hit_walls), median(hit_cpus)
            miss_wall, miss_cpu = median(miss_walls), median(miss_cpus)
            row = dict(size=before, after=num_filters_of(c, "chain"),
                       insert=ins_wall / probe, insert_cpu=ins_cpu / probe,
                       hit=hit_wall, hit_cpu=hit_cpu,
                       miss=miss_wall, miss_cpu=miss_cpu)
            rows.append(row)
            bench.log("%6d sub-filters: insert %8.1f us (cpu %8.1f), present %8.1f us (cpu %8.1f), "
                      "absent %8.1f us (cpu %8.1f) per item" % (
                          row["size"], row["insert"] * 1e6, row["insert_cpu"] * 1e6, row["hit"] * 1e6,
                          row["hit_cpu"] * 1e6, row["miss"] * 1e6, row["miss_cpu"] * 1e6))
        out.update(added=added, elapsed=time.monotonic() - t_start)
        if big_items:
            # One command that grows a fresh filter of the same shape to the 65,535 sub-filters
            # RedisBloom allows (two items a sub-filter: the items beyond ~131,000 are refused).
            c.call("CF.RESERVE", "big", "2", "BUCKETSIZE", "1", "EXPANSION", "1")
            c.sock.settimeout(3600)
            t0 = time.perf_counter()
            reply = c.call("CF.INSERT", "big", "ITEMS", *["b%d" % i for i in range(big_items)])
            out.update(big_items=big_items, big_seconds=time.perf_counter() - t0,
                       big_stored=sum(1 for x in reply if x == 1), big_filters=num_filters_of(c, "big"))
            bench.log("one CF.INSERT of %d items: %.1f s, %d stored, %d sub-filters" % (
                big_items, out["big_seconds"], out["big_stored"], out["big_filters"]))
        c.close()
    finally:
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def markdown(out):
    rows = out["rows"]
    lines = ["| sub-filters | insert µs/item (server CPU) | lookup present µs/item (CPU) | "
             "lookup absent µs/item (CPU) |", "|---|---|---|---|"]
    for r in rows:
        lines.append("| %d | %.1f (%.1f) | %.1f (%.1f) | %.1f (%.1f) |" % (
            r["size"], r["insert"] * 1e6, r["insert_cpu"] * 1e6, r["hit"] * 1e6, r["hit_cpu"] * 1e6,
            r["miss"] * 1e6, r["miss_cpu"] * 1e6))
    at64 = next((r for r in rows if r["size"] >= 64), None)
    if at64 is not None and rows[-1] is not at64:
        last = rows[-1]
        ratios = (last["insert"] / at64["insert"], last["hit"] / at64["hit"], last["miss"] / at64["miss"])
        lines.append("")
        lines.append("Cost at %d sub-filters / cost at %d (wall): insert %.1f×, lookup present %.1f×, "
                     "absent %.1f× (target: ≤ 1.5×: %s)." % (
                         last["size"], at64["size"], *ratios,
                         "met" if max(ratios) <= 1.5 else "**not met**"))
    lines.append("")
    lines.append("%d items inserted in %.1f s in all." % (out["added"], out["elapsed"]))
    if "big_seconds" in out:
        lines.append("")
        lines.append("One `CF.INSERT` of %d items into a fresh `CF.RESERVE big 2 BUCKETSIZE 1 EXPANSION 1`: "
                     "**%.1f s** (%d stored, %d sub-filters; target: under 20 s: %s)." % (
                         out["big_items"], out["big_seconds"], out["big_stored"], out["big_filters"],
                         "met" if out["big_seconds"] < 20 else "**not met**"))
    return "\n".join(lines) + "\n"


def num_filters_of(c, key):
    info = [x.decode() if isinstance(x, (bytes, bytearray)) else x for x in c.call("CF.INFO", key)]
    return int(info[info.index("Number of filters") + 1])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,64,4096,65535")
    ap.add_argument("--probe", type=int, default=200)
    ap.add_argument("--copies", type=int, default=5,
                    help="filters grown alike: one insert and five runs of each lookup on each (medians)")
    ap.add_argument("--batch", type=int, default=2000, help="items per CF.INSERT while growing")
    ap.add_argument("--big", type=int, default=140_000,
                    help="items of the one-command insert into a fresh filter (0 = skip it)")
    ap.add_argument("--cuckood", default=os.path.join(bench.REPO, "build", "server", "cuckood"))
    ap.add_argument("--out", help="also write the table to this Markdown file")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    out = run(args.cuckood, sizes, args.probe, args.batch, args.big, args.copies)
    text = markdown(out)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write("# Long chains of sub-filters\n\nGenerated by `bench/chain.py --sizes %s --probe %d "
                    "--copies %d` on %s.\n\n" % (args.sizes, args.probe, args.copies, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
