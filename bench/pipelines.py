#!/usr/bin/env python3
"""Per-connection pipeline latency of pipelined CF.INSERT (standard library only).

Opens --clients connections to a running cuckood, and on each sends --pipeline CF.INSERT
commands of --items random items (12-digit numbers below --keyspace, as redis-benchmark's
__rand_int__) at once, waits until every reply of that pipeline is in, and sends the next one,
--rounds times. Prints the total time and, for the connections that waited longest, the time of
each of their pipelines (from the send to the last reply byte). Used to check whether some
connections are starved (a connection served only at the end shows one pipeline as long as the
whole run).

With --as-redis-benchmark it drives the server as redis-benchmark does: each connection sends
its first pipeline as soon as it is connected (the connections are opened one after another while
the first ones already load the server), and the run ends after --clients x --rounds pipelines
in all, however they are spread over the connections. This is how the slow acceptance of a burst
of connections behind busy ones was found (the last clients got their first reply after ~1 s).

    python3 bench/pipelines.py --port 6379 --key bench
"""
import argparse
import random
import selectors
import socket
import time


def encode(parts):
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6379)
    ap.add_argument("--key", default="bench")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--items", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keyspace", type=int, default=4_000_000)
    ap.add_argument("--show", type=int, default=6, help="connections to list")
    ap.add_argument("--as-redis-benchmark", action="store_true",
                    help="send on each connection as soon as it is open; stop after the total")
    args = ap.parse_args()
    key = args.key.encode()
    header = b"*%d\r\n" % args.items  # each CF.INSERT reply is an array of one result per item

    def pipeline():
        return b"".join(encode([b"CF.INSERT", key, b"ITEMS"] +
                               [b"%012d" % random.randrange(args.keyspace) for _ in range(args.items)])
                        for _ in range(args.pipeline))

    rb = args.as_redis_benchmark
    socks = [] if rb else [socket.create_connection((args.host, args.port)) for _ in range(args.clients)]
    sel = selectors.DefaultSelector()
    started, received, sent = {}, {}, [0] * args.clients
    times = [[] for _ in range(args.clients)]
    total_sent = [0]
    t0 = time.monotonic()

    def send(i):
        data = pipeline()
        started[i] = time.monotonic()
        received[i] = b""
        sent[i] += 1
        total_sent[0] += 1
        socks[i].sendall(data)

    if rb:
        for i in range(args.clients):
            socks.append(socket.create_connection((args.host, args.port)))
            send(i)
            sel.register(socks[i], selectors.EVENT_READ, i)
    else:
        for i, s in enumerate(socks):
            send(i)
            sel.register(s, selectors.EVENT_READ, i)
    remaining = args.clients * args.rounds
    while remaining:
        for k, _ in sel.select():
            i = k.data
            chunk = socks[i].recv(1 << 20)
            if not chunk:
                raise SystemExit(f"connection {i} closed by the server")
            if chunk.startswith(b"-") or b"\r\n-" in chunk:
                raise SystemExit(f"error reply: {chunk[:200]!r}")
            received[i] += chunk
            if received[i].count(header) >= args.pipeline and received[i].endswith(b"\r\n"):
                times[i].append(time.monotonic() - started[i])
                remaining -= 1
                more = total_sent[0] < args.clients * args.rounds if rb else sent[i] < args.rounds
                if more:
                    send(i)
                else:
                    sel.unregister(socks[i])
    total = time.monotonic() - t0
    for s in socks:
        s.close()
    print(f"total {total:.2f} s for {args.clients * args.rounds * args.pipeline * args.items:,} items")
    worst = sorted(range(len(times)), key=lambda i: max(times[i]), reverse=True)[:args.show]
    for i in worst:
        print(f"connection {i:3d}: " + " ".join(f"{t:.3f}" for t in times[i]) + " s")
    if rb:
        counts = sorted(len(t) for t in times)
        print(f"pipelines per connection: fewest {counts[0]}, most {counts[-1]}")
    maxima = sorted(max(t) for t in times)
    print(f"median of the per-connection maxima {maxima[len(maxima) // 2]:.3f} s, "
          f"largest {maxima[-1]:.3f} s")


if __name__ == "__main__":
    main()
