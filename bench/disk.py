#!/usr/bin/python3
"""Disk bytes per stored fingerprint of a filter at full load, after a full compaction.

Reserves one filter (`--capacity`, `--bucket-size`), inserts distinct items through pipelined
CF.INSERT batches until `--load` of its slots hold a fingerprint or the filter is full (EXPANSION
0: more than half of a round of inserts found no room), stops the server (SIGTERM: memtables flushed), runs `cuckood --compact` (a
full RocksDB compaction: every page's merge operands folded into one value, dead data dropped)
and reports the data directory's size at each step, per stored fingerprint and per slot.
Writes docs/benchmarks/disk.md unless --no-docs. Usage:

    bench/disk.py [--capacity 16000000] [--bucket-sizes 2,4,8] [--max-iterations 20] [--load 0.98]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
from cuckood_testlib import CuckoodProcess, RawClient, binary, encode  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def du_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def info(c, key):
    reply = c.call("CF.INFO", key).split(b"\r\n")
    out = {}
    for i, line in enumerate(reply):
        if line.startswith(b"+") and i + 1 < len(reply) and reply[i + 1].startswith(b":"):
            out[line[1:].decode()] = int(reply[i + 1][1:])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--capacity", type=int, default=16_000_000)
    ap.add_argument("--bucket-sizes", default="2,4,8", help="one filter per bucket size")
    ap.add_argument("--max-iterations", type=int, default=20,
                    help="CF.RESERVE MAXITERATIONS (kick-outs per insert; RedisBloom's default 20)")
    ap.add_argument("--load", type=float, default=0.98, help="stop at this share of the slots")
    ap.add_argument("--batch", type=int, default=1000, help="items per CF.INSERT")
    ap.add_argument("--window", type=int, default=16, help="CF.INSERT commands per pipeline")
    ap.add_argument("--no-docs", action="store_true")
    args = ap.parse_args()
    results = [measure(args, int(b)) for b in args.bucket_sizes.split(",")]
    if not args.no_docs:
        write_md(os.path.join(HERE, "..", "docs", "benchmarks", "disk.md"), results, sys.argv[1:])


def measure(args, bucket_size):
    with tempfile.TemporaryDirectory(prefix="cuckood-disk-") as d:
        data = os.path.join(d, "data")
        srv = CuckoodProcess(data)
        srv.start()
        c = RawClient(srv.port, timeout=300)
        # EXPANSION 0: the filter never grows; an item that finds no room is refused (-1).
        r = c.call("CF.RESERVE", "full", args.capacity, "BUCKETSIZE", bucket_size,
                   "MAXITERATIONS", args.max_iterations, "EXPANSION", 0)
        assert r == b"+OK\r\n", r
        first = info(c, "full")
        slots = first["Number of buckets"] * bucket_size
        target = int(slots * args.load)
        stored, n, t0 = 0, 0, time.monotonic()
        stop_reason = "reached --load"
        while stored < target:
            cmds = []
            for _ in range(args.window):
                k = min(args.batch, target - stored - len(cmds) * args.batch)
                if k <= 0:
                    break
                cmds.append(["CF.INSERT", "full", "ITEMS"] + [b"d%d" % (n + i) for i in range(k)])
                n += k
            c.send_raw(b"".join(encode(x) for x in cmds))
            refused = sum(c.read_reply().count(b":-1\r\n") for _ in cmds)
            stored = info(c, "full")["Number of items inserted"]
            if refused > sum(len(x) - 3 for x in cmds) // 2:
                stop_reason = "full: more than half of the last inserts found no room"
                break
        load_s = time.monotonic() - t0
        final = info(c, "full")
        c.close()
        stored = final["Number of items inserted"]
        srv.stop()
        after_stop = du_bytes(data)
        t1 = time.monotonic()
        out = subprocess.run([binary(), "--compact", "--dir", data], capture_output=True,
                             text=True, timeout=3600)
        compact_s = time.monotonic() - t1
        assert out.returncode == 0, out.stdout + out.stderr
        after_compact = du_bytes(data)
        check = subprocess.run([binary(), "--check", "--dir", data], capture_output=True, text=True,
                               timeout=3600)
        assert check.returncode == 0, check.stdout + check.stderr
    page_bytes = first["Size"]
    res = {
        "capacity": args.capacity, "bucket_size": bucket_size, "slots": slots,
        "max_iterations": args.max_iterations,
        "stored": stored, "load": stored / slots, "filter_bytes": page_bytes,
        "after_stop": after_stop, "after_compact": after_compact,
        "per_fp_stop": after_stop / stored, "per_fp": after_compact / stored,
        "per_slot": after_compact / slots, "load_s": load_s, "compact_s": compact_s,
        "stop_reason": stop_reason,
    }
    for k, v in res.items():
        print("%s: %s" % (k, v))
    return res


def write_md(path, results, argv):
    cmd = "bench/disk.py" + ("" if not argv else " " + " ".join(argv))
    L = ["# Disk usage at full load", "",
         "Written by `%s` on %s UTC. One filter per row, `CF.RESERVE full <capacity> BUCKETSIZE <b> "
         "MAXITERATIONS %d EXPANSION 0`, filled with distinct items through pipelined `CF.INSERT` until it is full "
         "(more than half of a round of inserts found no room) or holds `--load` of its slots; "
         "then a clean stop and `cuckood --compact` (RocksDB's full compaction)."
         % (cmd, time.strftime("%Y-%m-%d %H:%M", time.gmtime()), results[0]["max_iterations"]), "",
         "| bucket size | slots | fingerprints stored | load | after a clean stop | after `--compact` | **bytes per fingerprint** | bytes per slot |",
         "|---|---|---|---|---|---|---|---|"]
    for r in results:
        L.append("| %d | %s | %s | %.1f%% | %s B (%.2f B/fp) | %s B | **%.3f** | %.3f |"
                 % (r["bucket_size"], f"{r['slots']:,}", f"{r['stored']:,}", 100 * r["load"],
                    f"{r['after_stop']:,}", r["per_fp_stop"], f"{r['after_compact']:,}", r["per_fp"],
                    r["per_slot"]))
    L += ["", "A compacted filter is one RocksDB value per 2 KiB page of buckets (1 byte per slot); "
          "what remains above that per slot is the SST files' keys, index and bloom filter blocks "
          "and the metadata. Per fingerprint it is that divided by the load the filter reached: "
          "with 2 slots per bucket a cuckoo filter fills to about 88% before inserts find no room, "
          "with 4 to about 94%, with 8 to about 97%. More slots per bucket cost false positives: "
          "with 8-bit fingerprints the error rate is about 2 × bucket size / 256. Before compaction "
          "the page changes are still separate merge operands (one per written page per command) "
          "in the SST files.", ""]
    with open(path, "w") as f:
        f.write("\n".join(L))
    print("wrote", path)


if __name__ == "__main__":
    main()
