#!/usr/bin/env python3
"""Long chains of sub-filters: insert and lookup cost per item as one filter grows.

    bench/chain.py [--sizes 1,64,4096,65535] [--probe 200] [--out docs/benchmarks/chain.md]

One filter, `CF.RESERVE chain 2 BUCKETSIZE 1 EXPANSION 1` (each sub-filter holds two
fingerprints, so every two items append one), on a fresh cuckood with cf-max-expansions 65535.
The filter is grown with CF.INSERT batches; at each size of the chain a probe measures, per item:
  - insert: CF.INSERT of --probe new items (which also grows the chain a little),
  - lookup, present: CF.MEXISTS of --probe items inserted earlier, spread over the chain,
  - lookup, absent: CF.MEXISTS of --probe items never inserted (every sub-filter is checked).
Each figure is the wall time of the command and the server's CPU time (from /proc), per item.
The table ends with the ratio of the cost at the largest size to the cost at 64 sub-filters.
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


def num_filters(c):
    info = [x.decode() if isinstance(x, (bytes, bytearray)) else x for x in c.call("CF.INFO", "chain")]
    return int(info[info.index("Number of filters") + 1])


def measure(c, pid, *cmd):
    t0, c0 = time.perf_counter(), server_cpu(pid)
    reply = c.call(*cmd)
    return reply, time.perf_counter() - t0, server_cpu(pid) - c0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,64,4096,65535")
    ap.add_argument("--probe", type=int, default=200)
    ap.add_argument("--batch", type=int, default=2000, help="items per CF.INSERT while growing")
    ap.add_argument("--cuckood", default=os.path.join(bench.REPO, "build", "server", "cuckood"))
    ap.add_argument("--out", help="also write the table to this Markdown file")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    tmp = tempfile.mkdtemp(prefix="cuckood-chain-")
    srv = bench.Server("cuckood", lambda port: [args.cuckood, "--bind", bench.HOST, "--port", str(port),
                                                 "--dir", os.path.join(tmp, "data"),
                                                 "--cf-max-expansions", "65535"],
                       os.path.join(tmp, "data"), os.path.join(tmp, "cuckood.log"))
    rows = []
    try:
        srv.start()
        c = srv.client()
        c.call("CF.RESERVE", "chain", "2", "BUCKETSIZE", "1", "EXPANSION", "1")
        added = 0
        inserted = []
        t_start = time.monotonic()
        for size in sizes:
            # Grow to just below the size; the insert probe then takes it past it.
            while True:
                nf = num_filters(c)
                need = 2 * (size - nf) - args.probe  # (about two items a sub-filter)
                if nf + args.probe // 4 >= size or need <= 0:
                    break
                n = min(args.batch, max(1, need))
                batch = ["g%d" % (added + i) for i in range(n)]
                c.call("CF.INSERT", "chain", "ITEMS", *batch)
                inserted += batch
                added += n
            before = num_filters(c)
            items = ["p%d" % (added + i) for i in range(args.probe)]
            _, ins_wall, ins_cpu = measure(c, srv.proc.pid, "CF.INSERT", "chain", "ITEMS", *items)
            added += args.probe
            inserted += items
            present = inserted[::max(1, len(inserted) // args.probe)][:args.probe]
            reply, hit_wall, hit_cpu = measure(c, srv.proc.pid, "CF.MEXISTS", "chain", *present)
            if any(x != 1 for x in reply):
                raise bench.BenchError("an inserted item is not found")
            absent = ["never-%d" % i for i in range(args.probe)]
            _, miss_wall, miss_cpu = measure(c, srv.proc.pid, "CF.MEXISTS", "chain", *absent)
            row = dict(size=before, after=num_filters(c),
                       insert=ins_wall / args.probe, insert_cpu=ins_cpu / args.probe,
                       hit=hit_wall / len(present), hit_cpu=hit_cpu / len(present),
                       miss=miss_wall / args.probe, miss_cpu=miss_cpu / args.probe)
            rows.append(row)
            bench.log("%6d sub-filters: insert %8.1f us (cpu %8.1f), present %8.1f us (cpu %8.1f), "
                      "absent %8.1f us (cpu %8.1f) per item" % (
                          row["size"], row["insert"] * 1e6, row["insert_cpu"] * 1e6, row["hit"] * 1e6,
                          row["hit_cpu"] * 1e6, row["miss"] * 1e6, row["miss_cpu"] * 1e6))
        elapsed = time.monotonic() - t_start
        c.close()
    finally:
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    lines = ["| sub-filters | insert µs/item (server CPU) | lookup present µs/item (CPU) | "
             "lookup absent µs/item (CPU) |", "|---|---|---|---|"]
    for r in rows:
        lines.append("| %d | %.1f (%.1f) | %.1f (%.1f) | %.1f (%.1f) |" % (
            r["size"], r["insert"] * 1e6, r["insert_cpu"] * 1e6, r["hit"] * 1e6, r["hit_cpu"] * 1e6,
            r["miss"] * 1e6, r["miss_cpu"] * 1e6))
    at64 = next((r for r in rows if r["size"] >= 64), None)
    if at64 is not None and rows[-1] is not at64:
        last = rows[-1]
        lines.append("")
        lines.append("Cost at %d sub-filters / cost at %d (wall): insert %.1f×, lookup present %.1f×, "
                     "absent %.1f× (target: ≤ 1.5×)." % (
                         last["size"], at64["size"], last["insert"] / at64["insert"],
                         last["hit"] / at64["hit"], last["miss"] / at64["miss"]))
    lines.append("")
    lines.append("%d items inserted in %.1f s in all." % (added, elapsed))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write("# Long chains of sub-filters\n\nGenerated by `bench/chain.py --sizes %s --probe %d` "
                    "on %s.\n\n" % (args.sizes, args.probe, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
