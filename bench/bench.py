#!/usr/bin/python3
"""Benchmark harness of cuckood (standard library only).

Default mode: starts cuckood and Debian's redis-server side by side (fresh temporary data
directories, free loopback ports), fills both, and runs redis-benchmark against each, alternating
which server goes first from round to round. Writes docs/benchmarks/results.md and results.png and
keeps every raw redis-benchmark CSV in bench/out/<run>/.

--scale mode: bulk-loads a very large filter into cuckood alone and writes docs/benchmarks/scale.md.

Run it through bench/run (which installs gnuplot when it is missing). `bench/run --help` lists
the options. The process exits non-zero only on errors, never because a target was missed.
"""

import argparse
import csv
import ctypes
import datetime
import hashlib
import io
import json
import multiprocessing
import os
import platform
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "127.0.0.1"          # loopback only, always
KEYSPACE = 4_000_000        # -r of redis-benchmark and capacity of the benchmark filter
BATCH = 100                 # items per CF.MEXISTS / CF.INSERT / MGET / MSET in the batch tests
FILL_LIMIT = 0.75           # reset a server before a write test would push it past this fill
MANY_KEYS = 1000            # the many-keys tests: filters mk:<12 digits> (Redis: key:<12 digits>)
MANY_CAPACITY = 100_000     # capacity of each of those filters
MANY_PREFILL = 100          # items in each of them after a reset (every tenth of the -r range)


class BenchError(Exception):
    """An error of the run (not a missed target)."""


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# RESP

def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, int):
            a = b"%d" % a
        elif isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RespError(Exception):
    pass


def parse_reply(buf, pos):
    """Parses one RESP2 reply of buf at pos. Returns (value, new_pos) or None if incomplete.
    Error replies are returned as RespError instances (not raised)."""
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        return None
    t = buf[pos:pos + 1]
    line = bytes(buf[pos + 1:nl])
    pos = nl + 2
    if t == b"+":
        return line.decode(), pos
    if t == b"-":
        return RespError(line.decode(errors="replace")), pos
    if t == b":":
        return int(line), pos
    if t == b"$":
        n = int(line)
        if n < 0:
            return None, pos
        if len(buf) < pos + n + 2:
            return None
        return bytes(buf[pos:pos + n]), pos + n + 2
    if t == b"*":
        n = int(line)
        if n < 0:
            return None, pos
        items = []
        for _ in range(n):
            r = parse_reply(buf, pos)
            if r is None:
                return None
            items.append(r[0])
            pos = r[1]
        return items, pos
    raise BenchError(f"unexpected RESP type byte {t!r}")


class Client:
    """A tiny blocking RESP2 client."""

    def __init__(self, port, timeout=30.0):
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def _read_reply(self):
        while True:
            r = parse_reply(self.buf, 0)
            if r is not None:
                del self.buf[:r[1]]
                return r[0]
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise BenchError("server closed the connection")
            self.buf += chunk

    def call(self, *args):
        self.sock.sendall(encode(*args))
        r = self._read_reply()
        if isinstance(r, RespError):
            raise BenchError(f"{args[0]}: {r}")
        return r

    def send_raw(self, data):
        self.sock.sendall(data)

    def read_replies(self, n):
        return [self._read_reply() for _ in range(n)]


def info_field(client, section, field):
    text = client.call("INFO", section).decode()
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return None


# --------------------------------------------------------------------------------------------
# Pipelined bulk loading

def insert_batch_bytes(key, start, count, stride=1):
    """CF.INSERT key ITEMS <count items>, item i being the 12-digit decimal of start+i*stride
    (the format of redis-benchmark's __rand_int__)."""
    kb = key.encode()
    head = b"*%d\r\n$9\r\nCF.INSERT\r\n$%d\r\n%s\r\n$5\r\nITEMS\r\n" % (count + 3, len(kb), kb)
    items = (b"$12\r\n%012d\r\n" * count) % tuple(range(start, start + count * stride, stride))
    return head + items


def mset_batch_bytes(start, count, stride=1):
    """MSET key:<12 digits> v ... for count keys."""
    head = b"*%d\r\n$4\r\nMSET\r\n" % (2 * count + 1)
    body = (b"$16\r\nkey:%012d\r\n$1\r\nv\r\n" * count) % tuple(range(start, start + count * stride, stride))
    return head + body


def pipelined_load(port, batches, expected, check, window=64, on_reply=None):
    """Sends the byte strings of the iterable `batches` (one command each) over one connection,
    keeping up to `window` commands in flight, and reads the replies in a second thread.
    `expected` is the usual reply (compared byte for byte: fast path); any other reply is parsed
    and given to check(reply), which returns the number of failed items (or raises).
    on_reply(), if given, is called after each reply. Returns (commands, failures)."""
    sock = socket.create_connection((HOST, port), timeout=600)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    slots = threading.Semaphore(window)
    done = threading.Event()
    state = {"replies": 0, "failures": 0, "error": None, "sent": 0}

    def reader():
        buf = bytearray()
        pos = 0
        el = len(expected)
        try:
            while not (done.is_set() and state["replies"] >= state["sent"]):
                if not select.select([sock], [], [], 0.05)[0]:
                    continue
                chunk = sock.recv(1 << 22)
                if not chunk:
                    raise BenchError("server closed the connection during the load")
                buf += chunk
                while True:
                    if buf[pos:pos + el] == expected:
                        pos += el
                    else:
                        r = parse_reply(buf, pos)
                        if r is None:
                            break
                        pos = r[1]
                        state["failures"] += check(r[0])
                    state["replies"] += 1
                    slots.release()
                    if on_reply:
                        on_reply()
                if pos > (1 << 22):
                    del buf[:pos]
                    pos = 0
        except BaseException as e:  # noqa: BLE001 - reported by the writer
            state["error"] = e
            for _ in range(window):
                slots.release()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    pending = []

    def flush():
        if pending:
            state["sent"] += len(pending)
            sock.sendall(b"".join(pending))
            pending.clear()

    try:
        for b in batches:
            if not slots.acquire(blocking=False):
                flush()
                slots.acquire()
            if state["error"]:
                break
            pending.append(b)
            if len(pending) >= 8:
                flush()
        if not state["error"]:
            flush()
    finally:
        done.set()
        t.join(timeout=900)
        sock.close()
    if state["error"]:
        raise BenchError(f"pipelined load failed: {state['error']}")
    if t.is_alive():
        raise BenchError("pipelined load: replies missing")
    return state["sent"], state["failures"]


def check_insert_reply(r):
    if isinstance(r, RespError):
        raise BenchError(f"CF.INSERT failed: {r}")
    if not isinstance(r, list):
        raise BenchError(f"unexpected CF.INSERT reply {r!r}")
    return sum(1 for x in r if x != 1)


def check_ok_reply(r):
    if r != "OK":
        raise BenchError(f"unexpected reply {r!r}")
    return 0


# --------------------------------------------------------------------------------------------
# Servers


def _pdeathsig():
    """In the child: die with SIGTERM when the harness dies (Linux)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)
    except OSError:
        pass


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Server:
    """One server process (cuckood or redis-server) with its own temporary data directory."""

    all = []

    def __init__(self, name, argv_fn, data_dir, log_path):
        self.name = name
        self.argv_fn = argv_fn       # port -> argv
        self.data_dir = data_dir
        self.log_path = log_path
        self.proc = None
        self.port = None
        Server.all.append(self)

    def start(self, port=None, tries=5):
        last = None
        for _ in range(tries):
            p = port or free_port()
            t0 = time.monotonic()
            self._spawn(p)
            try:
                self.wait_ready(timeout=60)
                self.port = p
                return time.monotonic() - t0
            except BenchError as e:
                last = e
                self.stop()
                if port:
                    break
        raise BenchError(f"{self.name} did not start: {last}\n{self.log_tail()}")

    def _spawn(self, port):
        os.makedirs(self.data_dir, exist_ok=True)
        logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv_fn(port), stdout=logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, preexec_fn=_pdeathsig, cwd=self.data_dir)
        logf.close()
        self.port = port
        pf = os.environ.get("CUCKOOD_BENCH_PIDFILE")
        if pf:
            with open(pf, "a") as f:
                f.write(f"{self.proc.pid}\n")

    def wait_ready(self, timeout=60.0, poll=0.002):
        """Waits until PING answers and the answering process is ours (another engineer's
        server could hold the port). Returns the time.monotonic() of the first PONG."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise BenchError(f"{self.name} exited with status {self.proc.returncode}")
            try:
                c = Client(self.port, timeout=5)
            except OSError:
                time.sleep(poll)
                continue
            try:
                if c.call("PING") != "PONG":
                    raise BenchError("PING did not answer PONG")
                pong_at = time.monotonic()
                pid = info_field(c, "server", "process_id")
                if pid is None or int(pid) != self.proc.pid:
                    raise BenchError(f"port {self.port} answered by pid {pid}, not ours ({self.proc.pid})")
                return pong_at
            except (OSError, BenchError) as e:
                if isinstance(e, BenchError) and "not ours" in str(e):
                    raise
                time.sleep(poll)
            finally:
                c.close()
        raise BenchError(f"{self.name} not ready after {timeout}s")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self):
        if not self.alive():
            raise BenchError(f"{self.name} died (status {self.proc.returncode})\n{self.log_tail()}")

    def client(self):
        return Client(self.port)

    def stop(self, timeout=120):
        """SIGTERM, then SIGKILL after `timeout`. Returns the seconds to exit."""
        if self.proc is None or self.proc.poll() is not None:
            return 0.0
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return time.monotonic() - t0

    def vm_status(self):
        out = {}
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    k, _, v = line.partition(":")
                    if k in ("VmHWM", "VmRSS"):
                        out[k] = int(v.split()[0]) * 1024
        except OSError:
            pass
        return out

    def log_tail(self, n=20):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


def stop_all():
    for s in Server.all:
        try:
            s.stop(timeout=30)
        except Exception:  # noqa: BLE001
            pass


# --------------------------------------------------------------------------------------------
# redis-benchmark

CSV_FIELDS = ["rps", "avg_latency_ms", "min_latency_ms", "p50_latency_ms", "p95_latency_ms",
              "p99_latency_ms", "max_latency_ms"]


def redis_benchmark(args, port, cmd, requests, pipeline, keyspace, raw_path):
    argv = [args.redis_benchmark, "-h", HOST, "-p", str(port), "-c", str(args.clients),
            "-n", str(requests), "-P", str(pipeline), "-r", str(keyspace), "--csv"]
    if args.bench_threads > 1:
        argv += ["--threads", str(args.bench_threads)]
    argv += cmd
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                       timeout=3600)
    out = p.stdout.decode(errors="replace")
    err = p.stderr.decode(errors="replace")
    with open(raw_path, "w") as f:
        f.write(out)
    if p.returncode != 0 or "Error from server" in out + err:
        raise BenchError(f"redis-benchmark failed (status {p.returncode}) on port {port}: "
                         f"{' '.join(argv[:16])} ...\n{err.strip()[-2000:]}")
    rows = list(csv.DictReader(io.StringIO(out)))
    if len(rows) != 1 or any(k not in rows[0] for k in CSV_FIELDS):
        raise BenchError(f"cannot parse redis-benchmark CSV output:\n{out}")
    return {k: float(rows[0][k]) for k in CSV_FIELDS}


# --------------------------------------------------------------------------------------------
# Machine information

def sh(argv):
    try:
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30,
                              stdin=subprocess.DEVNULL).stdout.decode(errors="replace").strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def machine_info(args, cuckood_bin):
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    with open(cuckood_bin, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()[:16]
    head = sh(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    dirty = sh(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"])
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "kernel": platform.release(),
        "loadavg_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "cuckood": f"{sh([cuckood_bin, '--version'])} (git {head}{' + uncommitted changes' if dirty else ''}, "
                   f"binary sha256 {sha}…)",
        "redis-server": sh([args.redis_server, "--version"]),
        "redis-benchmark": sh([args.redis_benchmark, "--version"]),
        "python": platform.python_version(),
    }


# --------------------------------------------------------------------------------------------
# The comparison benchmark

def rand_items(n, prefix=""):
    return [f"{prefix}__rand_int__"] * n


def mset_args(n):
    out = []
    for _ in range(n):
        out += ["key:__rand_int__", "v"]
    return out


# name, label, cuckood command, redis command, items per request, mutates, targets by P
TESTS = [
    dict(id="exists", label="CF.EXISTS", redis_label="GET",
         cuckood=["CF.EXISTS", "bench", "__rand_int__"], redis=["GET", "key:__rand_int__"],
         items=1, writes=False, targets={1: ("ratio", 1.0), 16: ("ratio", 0.9)}),
    dict(id="add", label="CF.ADD", redis_label="SET",
         cuckood=["CF.ADD", "bench", "__rand_int__"], redis=["SET", "key:__rand_int__", "v"],
         items=1, writes=True, targets={1: ("ratio", 1.0), 16: ("ratio", 1.0)}),
    dict(id="mexists", label=f"CF.MEXISTS ×{BATCH}", redis_label=f"MGET ×{BATCH}",
         cuckood=["CF.MEXISTS", "bench"] + rand_items(BATCH), redis=["MGET"] + rand_items(BATCH, "key:"),
         items=BATCH, writes=False, targets={1: ("items", 3_000_000), 16: ("items", 3_000_000)}),
    dict(id="insert", label=f"CF.INSERT ×{BATCH}", redis_label=f"MSET ×{BATCH}",
         cuckood=["CF.INSERT", "bench", "ITEMS"] + rand_items(BATCH), redis=["MSET"] + mset_args(BATCH),
         items=BATCH, writes=True, targets={1: ("items", 1_000_000), 16: ("items", 1_000_000)}),
]


# The many-keys tests: a random key and a random item per command, over 1,000 filters (Redis:
# 1,000 string keys), -r 1000.
TESTS += [
    dict(id="exists-keys", label=f"CF.EXISTS, {MANY_KEYS:,} keys", redis_label=f"GET, {MANY_KEYS:,} keys",
         cuckood=["CF.EXISTS", "mk:__rand_int__", "__rand_int__"], redis=["GET", "key:__rand_int__"],
         items=1, writes=False, dataset="keys", keyspace=MANY_KEYS, p99=False,
         targets={1: ("ratio", 1.0), 16: ("ratio", 1.0)}),
    dict(id="add-keys", label=f"CF.ADD, {MANY_KEYS:,} keys", redis_label=f"SET, {MANY_KEYS:,} keys",
         cuckood=["CF.ADD", "mk:__rand_int__", "__rand_int__"], redis=["SET", "key:__rand_int__", "v"],
         items=1, writes=True, dataset="keys", keyspace=MANY_KEYS, p99=False,
         targets={1: ("ratio", 1.0), 16: ("ratio", 1.0)}),
]


def many_keys():
    return ["mk:%012d" % i for i in range(MANY_KEYS)]


class Side:
    """One benchmarked server and the fill state of its data set."""

    def __init__(self, name, server, reset_fns):
        self.name = name
        self.server = server
        self.reset_fns = reset_fns  # data set ("one", "keys") -> fill function
        self.dataset = None
        self.added = None   # items written by benchmarks since the last reset; None = not filled

    def reset(self, prefill, dataset):
        t0 = time.monotonic()
        self.reset_fns[dataset](self.server, prefill)
        self.dataset = dataset
        self.added = 0
        return time.monotonic() - t0


def call_once(server, *args):
    """One command on a connection of its own."""
    c = server.client()
    try:
        return c.call(*args)
    finally:
        c.close()


def reset_cuckood(server, prefill):
    c = server.client()
    try:
        c.call("DEL", "bench", *many_keys())
        c.call("CF.RESERVE", "bench", KEYSPACE)
    finally:
        c.close()
    stride = max(1, KEYSPACE // max(prefill, 1))
    batches = (insert_batch_bytes("bench", i * stride, min(1000, prefill - i), stride)
               for i in range(0, prefill, 1000))
    _, failures = pipelined_load(server.port, batches, b"*1000\r\n" + b":1\r\n" * 1000, check_insert_reply)
    if failures:
        raise BenchError(f"prefill: {failures} items did not fit into the filter")


def reset_redis(server, prefill):
    call_once(server, "FLUSHALL")
    stride = max(1, KEYSPACE // max(prefill, 1))
    batches = (mset_batch_bytes(i * stride, min(1000, prefill - i), stride) for i in range(0, prefill, 1000))
    pipelined_load(server.port, batches, b"+OK\r\n", check_ok_reply)


def reset_cuckood_keys(server, prefill):
    """1,000 filters of capacity 100,000, each with every tenth number of the -r range."""
    call_once(server, "DEL", "bench", *many_keys())
    reserves = (encode("CF.RESERVE", k, MANY_CAPACITY) for k in many_keys())
    pipelined_load(server.port, reserves, b"+OK\r\n", check_ok_reply)
    stride = MANY_KEYS // MANY_PREFILL
    batches = (insert_batch_bytes(k, 0, MANY_PREFILL, stride) for k in many_keys())
    _, failures = pipelined_load(server.port, batches, b"*%d\r\n" % MANY_PREFILL + b":1\r\n" * MANY_PREFILL,
                                 check_insert_reply)
    if failures:
        raise BenchError(f"prefill of the many-keys filters: {failures} items did not fit")


def reset_redis_keys(server, prefill):
    """The 1,000 string keys the many-keys tests read and write."""
    call_once(server, "FLUSHALL")
    pipelined_load(server.port, [mset_batch_bytes(0, MANY_KEYS)], b"+OK\r\n", check_ok_reply)


def fmt_int(x):
    return f"{x:,.0f}"


def fmt_items(x):
    """1.23M / 45.6k / 789: three significant digits."""
    if x >= 1e6:
        return f"{x / 1e6:.3g}M"
    if x >= 1e3:
        return f"{x / 1e3:.3g}k"
    return f"{x:.3g}"


def fmt_ratio(x):
    return f"{x:.2f}" if x >= 0.1 else f"{x:.3f}"


REPORT_ARGS = ("rounds", "requests", "batch_requests", "prefill", "clients", "pipelines", "tests", "workers",
               "bench_threads", "quick")


def save_run(out_dir, args, info, elapsed, command):
    with open(os.path.join(out_dir, "run.json"), "w") as f:
        json.dump({"args": {k: getattr(args, k) for k in REPORT_ARGS}, "info": info, "elapsed": elapsed,
                   "command": command}, f, indent=2)


def load_run(run_dir, args):
    """Reads run.json and all.csv of an earlier comparison run (for --report-from)."""
    try:
        with open(os.path.join(run_dir, "run.json")) as f:
            run = json.load(f)
        with open(os.path.join(run_dir, "all.csv"), newline="") as f:
            raw = list(csv.DictReader(f))
    except (OSError, ValueError) as e:
        raise BenchError(f"cannot read the run in {run_dir}: {e}")
    for k, v in run["args"].items():
        setattr(args, k, v)
    results = []
    for r in raw:
        x = {k: float(r[k]) for k in CSV_FIELDS + ["items_per_s"]}
        x.update(round=int(r["round"]), server=r["server"], first=r["first"] == "True", test=r["test"],
                 P=int(r["P"]), requests=int(r["requests"]))
        results.append(x)
    tests = [t for t in TESTS if not args.tests or t["id"] in args.tests]
    return summarize(tests, args, results), results, run["elapsed"], run["info"], run["command"]


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def run_compare(args, out_dir, cuckood_bin, info):
    tmp = tempfile.mkdtemp(prefix="cuckood-bench-", dir=args.tmp_dir)
    log(f"data dirs under {tmp}, raw output in {out_dir}")
    ck = Server("cuckood", lambda port: [cuckood_bin, "--bind", HOST, "--port", str(port),
                                          "--dir", os.path.join(tmp, "cuckood"),
                                          "--appendfsync", "everysec", "--workers", str(args.workers)],
                os.path.join(tmp, "cuckood"), os.path.join(out_dir, "cuckood.log"))
    rd = Server("redis", lambda port: [args.redis_server, "--bind", HOST, "--port", str(port),
                                        "--dir", os.path.join(tmp, "redis"), "--appendonly", "yes",
                                        "--appendfsync", "everysec", "--save", "", "--daemonize", "no",
                                        "--protected-mode", "yes", "--logfile", ""],
                os.path.join(tmp, "redis"), os.path.join(out_dir, "redis.log"))
    try:
        ck.start()
        rd.start()
        log(f"cuckood pid {ck.proc.pid} on port {ck.port}; redis-server pid {rd.proc.pid} on port {rd.port}")
        sides = {"cuckood": Side("cuckood", ck, {"one": reset_cuckood, "keys": reset_cuckood_keys}),
                 "redis": Side("redis", rd, {"one": reset_redis, "keys": reset_redis_keys})}
        tests = [t for t in TESTS if not args.tests or t["id"] in args.tests]
        results = []   # one dict per redis-benchmark run
        t_start = time.monotonic()
        for rnd in range(1, args.rounds + 1):
            order = ["cuckood", "redis"] if rnd % 2 == 1 else ["redis", "cuckood"]
            log(f"round {rnd}/{args.rounds}: {order[0]} first")
            for t in tests:
                for name in order:  # every test starts from the same freshly filled state
                    sides[name].added = None
                for P in args.pipelines:
                    n = args.requests if t["items"] == 1 else args.batch_requests
                    adds = n * t["items"] if t["writes"] else 0
                    for name in order:
                        side = sides[name]
                        # A write measurement starts from the fresh fill too (not from what the
                        # test's other pipeline depth wrote: 400,000 more random items can grow the
                        # filter a sub-filter, and the row would then measure a chain).
                        dataset = t.get("dataset", "one")
                        if (side.added is None or side.dataset != dataset or (adds > 0 and side.added > 0)
                                or args.prefill + side.added + adds > FILL_LIMIT * KEYSPACE):
                            dt = side.reset(args.prefill, dataset)
                            if dataset == "one":
                                log(f"  {name}: reset + prefill of {args.prefill:,} items in {dt:.1f}s")
                            else:
                                log(f"  {name}: reset + {MANY_KEYS:,} keys in {dt:.1f}s")
                        cmd = t["cuckood"] if name == "cuckood" else t["redis"]
                        raw = os.path.join(out_dir, f"r{rnd}-{name}-{t['id']}-P{P}.csv")
                        r = redis_benchmark(args, side.server.port, cmd, n, P, t.get("keyspace", KEYSPACE), raw)
                        side.server.check_alive()
                        side.added += adds
                        r.update(round=rnd, server=name, test=t["id"], P=P, requests=n,
                                 items_per_s=r["rps"] * t["items"], first=(name == order[0]))
                        results.append(r)
                        log(f"  {name:8s} {t['label'] if name == 'cuckood' else t['redis_label']:14s} "
                            f"-P {P:<2d}: {r['rps']:>11,.0f} rps  p50 {r['p50_latency_ms']:.3f} "
                            f"p99 {r['p99_latency_ms']:.3f} ms")
        elapsed = time.monotonic() - t_start
    finally:
        ck.stop()
        rd.stop()
        if not args.keep_data:
            shutil.rmtree(tmp, ignore_errors=True)
    info["loadavg_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with open(os.path.join(out_dir, "all.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["round", "server", "first", "test", "P", "requests"] + CSV_FIELDS
                           + ["items_per_s"])
        w.writeheader()
        for r in results:
            w.writerow(r)
    return summarize(tests, args, results), results, elapsed


def summarize(tests, args, results):
    rows = []
    for t in tests:
        for P in args.pipelines:
            by = {s: [r for r in results if r["server"] == s and r["test"] == t["id"] and r["P"] == P]
                  for s in ("cuckood", "redis")}
            rounds = sorted({r["round"] for r in by["cuckood"]} & {r["round"] for r in by["redis"]})
            ratios = []
            for rnd in rounds:
                c = next(r for r in by["cuckood"] if r["round"] == rnd)
                d = next(r for r in by["redis"] if r["round"] == rnd)
                ratios.append(c["rps"] / d["rps"])
            row = dict(test=t, P=P, ratios=ratios, ratio=median(ratios))
            for s in ("cuckood", "redis"):
                for k in ("rps", "p50_latency_ms", "p99_latency_ms", "items_per_s"):
                    row[f"{s}_{k}"] = median([r[k] for r in by[s]])
            kind, value = t["targets"][P]
            checks = []
            if kind == "ratio":
                checks.append((f"ratio ≥ {value:g}", row["ratio"] >= value,
                               fmt_ratio(row["ratio"])))
            else:
                checks.append((f"≥ {fmt_items(value)} items/s", row["cuckood_items_per_s"] >= value,
                               f"{fmt_items(row['cuckood_items_per_s'])} items/s"))
            if P == 1 and t["items"] == 1 and t.get("p99", True):
                checks.append(("p99 ≤ Redis", row["cuckood_p99_latency_ms"] <= row["redis_p99_latency_ms"],
                               f"p99 {row['cuckood_p99_latency_ms']:.3f} vs {row['redis_p99_latency_ms']:.3f} ms"))
            row["checks"] = checks
            rows.append(row)
    return rows


def write_results_md(path, args, info, rows, results, elapsed, out_dir, command, chain_md=None):
    L = []
    L.append("# cuckood vs Redis: benchmark results")
    L.append("")
    if args.quick:
        L.append("**Quick smoke run** (`--quick`): few requests and one round; the numbers are indicative only.")
        L.append("")
    L.append(f"Generated by `bench/run` on {info['date']}. How to run it and what the rows mean: "
             "[README.md](README.md).")
    L.append("")
    L.append("Command:")
    L.append("")
    L.append("```sh")
    L.append(command)
    L.append("```")
    L.append("")
    L.append("## Results")
    L.append("")
    L.append(f"Medians over {args.rounds} round(s); ratio = cuckood rps / Redis rps, computed per round "
             "and then the median taken. Latencies in ms (redis-benchmark, per request).")
    L.append("")
    L.append("| test (cuckood vs Redis) | P | cuckood rps | redis rps | ratio (median) | cuckood p50 / p99 | "
             "redis p50 / p99 | target | met? |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        t = row["test"]
        crps = fmt_int(row["cuckood_rps"])
        rrps = fmt_int(row["redis_rps"])
        if t["items"] > 1:
            crps += f" ({fmt_items(row['cuckood_items_per_s'])} items/s)"
            rrps += f" ({fmt_items(row['redis_items_per_s'])} keys/s)"
        target = ", ".join(c[0] for c in row["checks"])
        missed = [c for c in row["checks"] if not c[1]]
        met = "met" if not missed else "**not met** (" + "; ".join(c[2] for c in missed) + ")"
        L.append(f"| {t['label']} vs {t['redis_label']} | {row['P']} | {crps} | {rrps} | {fmt_ratio(row['ratio'])} | "
                 f"{row['cuckood_p50_latency_ms']:.3f} / {row['cuckood_p99_latency_ms']:.3f} | "
                 f"{row['redis_p50_latency_ms']:.3f} / {row['redis_p99_latency_ms']:.3f} | {target} | {met} |")
    L.append("")
    n_checks = sum(len(r["checks"]) for r in rows)
    n_met = sum(1 for r in rows for c in r["checks"] if c[1])
    L.append(f"**{n_met} of {n_checks} targets met.**")
    L.append("")
    L.append("![ratios](results.png)")
    L.append("")
    if chain_md is None and os.path.exists(os.path.join(out_dir, "chain.md")):
        with open(os.path.join(out_dir, "chain.md")) as f:
            chain_md = f.read()
    if chain_md:
        L.append("## Long chains")
        L.append("")
        L.append("`bench/chain.py` (run once, after the rounds): five filters `CF.RESERVE chain 2 BUCKETSIZE 1 "
                 "EXPANSION 1` grown alike to 1, 64, 4,096 and 65,535 sub-filters (two fingerprints each), with "
                 "`cf-max-expansions 65535`; per item: `CF.INSERT` of 200 new items (the median of one "
                 "insert into each filter), `CF.MEXISTS` of 200 stored and of 200 absent items (the "
                 "medians of five runs on each filter).")
        L.append("")
        L.append(chain_md.rstrip("\n"))
        L.append("")
    L.append("## Per round")
    L.append("")
    L.append("| round | first | test | P | cuckood rps | redis rps | ratio | cuckood p99 | redis p99 |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for rnd in sorted({r["round"] for r in results}):
        for row in rows:
            t = row["test"]
            c = [r for r in results if r["round"] == rnd and r["server"] == "cuckood" and r["test"] == t["id"]
                 and r["P"] == row["P"]]
            d = [r for r in results if r["round"] == rnd and r["server"] == "redis" and r["test"] == t["id"]
                 and r["P"] == row["P"]]
            if not c or not d:
                continue
            c, d = c[0], d[0]
            L.append(f"| {rnd} | {'cuckood' if c['first'] else 'redis'} | {t['label']} | {row['P']} | "
                     f"{fmt_int(c['rps'])} | {fmt_int(d['rps'])} | {fmt_ratio(c['rps'] / d['rps'])} | "
                     f"{c['p99_latency_ms']:.3f} | {d['p99_latency_ms']:.3f} |")
    L.append("")
    L.append("## Setup")
    L.append("")
    L.append(f"- cuckood: `--appendfsync everysec --workers {args.workers}`"
             f"{' (0 = one I/O thread per core)' if args.workers == 0 else ''}, fresh data directory.")
    L.append("- redis-server: `--appendonly yes --appendfsync everysec --save ''`, fresh directory.")
    L.append(f"- redis-benchmark: `-c {args.clients} -r {KEYSPACE} --csv`, `-P` {', '.join(map(str, args.pipelines))}, "
             f"{args.requests:,} requests per single-item test and {args.batch_requests:,} per "
             f"{BATCH}-item test"
             f"{f', --threads {args.bench_threads}' if args.bench_threads > 1 else ''}.")
    L.append(f"- Data: `CF.RESERVE bench {KEYSPACE}` and {args.prefill:,} items inserted by pipelined "
             f"`CF.INSERT` batches of 1000; Redis gets `MSET` of the same {args.prefill:,} keys "
             f"(`key:<12 digits>`, value `v`), so about {args.prefill / KEYSPACE:.0%} of the random "
             f"lookups hit on both. Both servers are emptied and re-filled before every test, and before "
             f"each pipeline depth of a write test, so every measurement starts from that state.")
    L.append(f"- Many keys (the `{MANY_KEYS:,} keys` rows): `CF.RESERVE mk:<12 digits> {MANY_CAPACITY}` for "
             f"{MANY_KEYS:,} keys, each with {MANY_PREFILL} items (every tenth number of the range); Redis gets "
             f"the {MANY_KEYS:,} keys `key:<12 digits>`; redis-benchmark runs with `-r {MANY_KEYS}`, a random "
             f"key and item per command. Refilled like the rows above.")
    L.append(f"- Rounds alternate which server goes first; within a round each test runs on both "
             f"servers back to back. Wall time of the measurements: {elapsed:.0f} s.")
    L.append(f"- Raw redis-benchmark CSV of every run: `{os.path.relpath(out_dir, REPO)}/` (not committed).")
    L.append("")
    L.append("## Machine")
    L.append("")
    for k in ("date", "nproc", "cpu", "memory", "kernel", "loadavg_start", "loadavg_end", "cuckood",
              "redis-server", "redis-benchmark", "python"):
        L.append(f"- {k}: {info.get(k, '?')}")
    L.append("")
    L.append("The machine is shared (other builds run on the same cores), so single numbers are noisy; "
             "compare ratios measured in the same run.")
    L.append("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def gnuplot_terminal():
    out = sh(["gnuplot", "-e", "set terminal"])
    return "pngcairo" if re.search(r"^\s*pngcairo\s", out, re.M) else "png"


def write_plot(png_path, rows, out_dir):
    ratios = [r["ratio"] for r in rows] + [v for r in rows for k, v in [r["test"]["targets"][r["P"]]] if k == "ratio"]
    ymax1 = max([1.2] + [x * 1.15 for x in ratios if x == x])
    items = [r["cuckood_items_per_s"] / 1e6 for r in rows if r["test"]["targets"][r["P"]][0] == "items"]
    items += [v / 1e6 for r in rows for k, v in [r["test"]["targets"][r["P"]]] if k == "items"]
    ymax2 = max([1.0] + [x * 1.15 for x in items if x == x])
    if not shutil.which("gnuplot"):
        raise BenchError("gnuplot is missing (bench/run installs gnuplot-nox; or pass --no-plot)")
    dat = os.path.join(out_dir, "ratios.dat")
    dat2 = os.path.join(out_dir, "items.dat")
    with open(dat, "w") as f:
        f.write("# idx label ratio target\n")
        for i, row in enumerate(rows):
            kind, value = row["test"]["targets"][row["P"]]
            target = value if kind == "ratio" else "NaN"
            label = f"{row['test']['label'].replace('×', 'x')} P{row['P']}"
            f.write(f'{i} "{label}" {row["ratio"]:.4f} {target} "{fmt_ratio(row["ratio"])}"\n')
    with open(dat2, "w") as f:
        f.write("# idx label items_per_s_millions target_millions\n")
        i = 0
        for row in rows:
            kind, value = row["test"]["targets"][row["P"]]
            if kind != "items":
                continue
            label = f"{row['test']['label'].replace('×', 'x')} P{row['P']}"
            f.write(f'{i} "{label}" {row["cuckood_items_per_s"] / 1e6:.6f} {value / 1e6:.4f} '
                    f'"{fmt_items(row["cuckood_items_per_s"])}"\n')
            i += 1
    term = gnuplot_terminal()
    font = "font 'DejaVu Sans,10'" if term == "pngcairo" else ""
    script = f"""
set terminal {term} size 1200,520 {font}
set output '{png_path}'
set multiplot layout 1,2 title 'cuckood vs Redis 7 (median over rounds)'
set style fill solid 0.6 border -1
set boxwidth 0.6
set grid ytics
set xtics rotate by 30 right nomirror
set key top right
set bmargin 7
set title 'throughput ratio cuckood / Redis (x100 rows: vs MGET/MSET x100)'
set ylabel 'ratio'
set yrange [0:{ymax1:.3f}]
set xrange [-0.6:*]
plot '{dat}' using 1:3:xtic(2) with boxes lc rgb '#4682b4' title 'ratio', \\
     '{dat}' using 1:3:5 with labels offset 0,0.7 notitle, \\
     '{dat}' using ($1-0.4):4:(0.8):(0) with vectors nohead lw 3 lc rgb '#d62728' title 'target'
""" + (f"""set title 'batch tests: cuckood items/s (absolute targets)'
set ylabel 'million items/s'
set yrange [0:{ymax2:.3f}]
plot '{dat2}' using 1:3:xtic(2) with boxes lc rgb '#2ca02c' title 'items/s', \\
     '{dat2}' using 1:3:5 with labels offset 0,0.7 notitle, \\
     '{dat2}' using ($1-0.4):4:(0.8):(0) with vectors nohead lw 3 lc rgb '#d62728' title 'target'
""" if any(r["test"]["targets"][r["P"]][0] == "items" for r in rows) else "") + """unset multiplot
"""
    gp = os.path.join(out_dir, "results.gp")
    with open(gp, "w") as f:
        f.write(script)
    p = subprocess.run(["gnuplot", gp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise BenchError(f"gnuplot failed:\n{p.stdout.decode(errors='replace')}")


def print_summary(rows):
    print()
    print(f"{'test':22s} {'P':>2s} {'cuckood rps':>12s} {'redis rps':>12s} {'ratio':>6s} "
          f"{'ck p99':>7s} {'rd p99':>7s}  targets")
    for row in rows:
        t = row["test"]
        targets = "; ".join(f"{c[0]}: {'met' if c[1] else 'NOT MET'} ({c[2]})" for c in row["checks"])
        print(f"{t['label']:22s} {row['P']:>2d} {row['cuckood_rps']:>12,.0f} {row['redis_rps']:>12,.0f} "
              f"{row['ratio']:>6.2f} {row['cuckood_p99_latency_ms']:>7.3f} {row['redis_p99_latency_ms']:>7.3f}  "
              f"{targets}")
    print()


# --------------------------------------------------------------------------------------------
# Scale mode

def _scale_worker(port, key, start_batch, n_batches, step, batch_items, total, window, conn, counter):
    try:
        def on_reply():
            counter.value += 1

        def gen():
            for b in range(start_batch, n_batches, step):
                s = b * batch_items
                yield insert_batch_bytes(key, s, min(batch_items, total - s))
        expected = b"*%d\r\n" % batch_items + b":1\r\n" * batch_items
        cmds, failures = pipelined_load(port, gen(), expected, check_insert_reply, window=window,
                                        on_reply=on_reply)
        conn.send(("ok", cmds, failures))
    except BaseException as e:  # noqa: BLE001
        conn.send(("error", repr(e), 0))
    finally:
        conn.close()


def du_bytes(path):
    out = sh(["du", "-sb", path])
    try:
        return int(out.split()[0])
    except (ValueError, IndexError):
        return -1


def cf_info(client, key):
    r = client.call("CF.INFO", key)
    return {r[i].decode() if isinstance(r[i], bytes) else r[i]: r[i + 1] for i in range(0, len(r), 2)}


def fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:,.1f} {unit}" if unit != "B" else f"{n:,} B"
        n /= 1024


def run_scale(args, out_dir, cuckood_bin, info, command):
    tmp = tempfile.mkdtemp(prefix="cuckood-scale-", dir=args.tmp_dir)
    data = os.path.join(tmp, "cuckood")
    log(f"scale run: {args.scale_items:,} items, data dir {data}")
    ck = Server("cuckood", lambda port: [cuckood_bin, "--bind", HOST, "--port", str(port), "--dir", data,
                                          "--appendfsync", "everysec", "--workers", str(args.workers)],
                data, os.path.join(out_dir, "cuckood.log"))
    m = {}
    try:
        ck.start()
        log(f"cuckood pid {ck.proc.pid} on port {ck.port}")
        c = ck.client()
        t0 = time.monotonic()
        c.call("CF.RESERVE", "big", args.scale_capacity)
        m["reserve_s"] = time.monotonic() - t0
        c.close()

        # Bulk load: `scale_conns` processes, each with one connection and `window` CF.INSERT
        # commands of `batch` items in flight.
        N, B = args.scale_items, args.scale_batch
        n_batches = (N + B - 1) // B
        log(f"loading with {args.scale_conns} connection(s), CF.INSERT batches of {B}, "
            f"{args.scale_window} in flight each")
        ctx = multiprocessing.get_context("fork")
        procs = []
        t0 = time.monotonic()
        counters = []
        for j in range(args.scale_conns):
            a, b = ctx.Pipe(duplex=False)
            counter = ctx.Value("q", 0, lock=False)   # batches answered (one writer: the worker)
            p = ctx.Process(target=_scale_worker,
                            args=(ck.port, "big", j, n_batches, args.scale_conns, B, N, args.scale_window, b,
                                  counter), daemon=True)
            p.start()
            b.close()
            procs.append((p, a))
            counters.append(counter)
        # Progress every 15 s: items answered so far, recent rate, estimated time left.
        last_t, last_n = t0, 0
        m["load_progress"] = []     # (seconds since start, items answered, items/s over the interval)
        while not all(a.poll() for _, a in procs):
            time.sleep(0.2)
            now = time.monotonic()
            if now - last_t >= 15:
                n = min(N, sum(c.value for c in counters) * B)
                rate = (n - last_n) / (now - last_t)
                eta = (N - n) / rate if rate > 0 else float("inf")
                left = f"{eta:.0f} s" if eta < 120 else f"{eta / 60:.0f} min" if eta < 7200 else f"{eta / 3600:.1f} h"
                log(f"  {n:,} / {N:,} items ({n / N:.0%}), {rate:,.0f} items/s, ~{left} left")
                m["load_progress"].append((round(now - t0, 1), n, round(rate)))
                last_t, last_n = now, n
                ck.check_alive()
        failures = 0
        for p, a in procs:
            try:
                st, x, fails = a.recv()
            except EOFError:
                st, x, fails = "error", f"worker exited with status {p.exitcode}", 0
            p.join()
            if st != "ok":
                raise BenchError(f"load worker failed: {x}")
            failures += fails
        m["load_s"] = time.monotonic() - t0
        m["load_rate"] = N / m["load_s"]
        m["load_failures"] = failures
        ck.check_alive()
        log(f"loaded {N:,} items in {m['load_s']:.1f}s = {m['load_rate']:,.0f} items/s ({failures} failed)")
        c = ck.client()
        m["cf_info"] = cf_info(c, "big")
        c.close()

        # Lookups: half of the random items were inserted.
        keyspace = 2 * N
        m["exists"] = {}
        for P in args.pipelines:
            raw = os.path.join(out_dir, f"scale-exists-P{P}.csv")
            r = redis_benchmark(args, ck.port, ["CF.EXISTS", "big", "__rand_int__"], args.requests, P,
                                keyspace, raw)
            m["exists"][P] = r
            log(f"CF.EXISTS -P {P}: {r['rps']:,.0f} rps, p50 {r['p50_latency_ms']:.3f} p99 "
                f"{r['p99_latency_ms']:.3f} ms")
        ck.check_alive()
        m["vm"] = ck.vm_status()
        m["du_loaded"] = du_bytes(data)
        c = ck.client()
        t0 = time.monotonic()
        c.call("SAVE")
        m["save_s"] = time.monotonic() - t0
        c.close()
        m["du_saved"] = du_bytes(data)
        log(f"peak RSS {fmt_bytes(m['vm'].get('VmHWM', -1))}, du after SAVE {fmt_bytes(m['du_saved'])}")

        # Restart: SIGTERM, start again on the same port and directory, time to first PONG.
        port = ck.port
        m["shutdown_s"] = ck.stop(timeout=600)
        m["du_stopped"] = du_bytes(data)
        t0 = time.monotonic()
        ck._spawn(port)
        m["restart_s"] = ck.wait_ready(timeout=600, poll=0.001) - t0
        c = ck.client()
        t1 = time.monotonic()
        c.call("CF.EXISTS", "big", b"%012d" % 0)
        m["first_exists_s"] = time.monotonic() - t1
        info_after = cf_info(c, "big")
        c.close()
        m["items_after_restart"] = info_after.get("Number of items inserted")
        log(f"restart to first PONG {m['restart_s'] * 1000:.0f} ms; items after restart "
            f"{m['items_after_restart']:,}")
        if m["items_after_restart"] != m["cf_info"].get("Number of items inserted"):
            raise BenchError("the item count changed across the restart")
        m["vm_after_restart"] = ck.vm_status()
    finally:
        ck.stop(timeout=600)
        if not args.keep_data:
            shutil.rmtree(tmp, ignore_errors=True)
    info["loadavg_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with open(os.path.join(out_dir, "scale.json"), "w") as f:
        json.dump({"metrics": m, "info": info, "command": command,
                   "args": {k: getattr(args, k) for k in ("scale_items", "scale_capacity", "scale_batch",
                                                          "scale_conns", "scale_window", "clients", "requests")}},
                  f, indent=2, default=str)
    return m


def write_scale_md(path, args, info, m, command):
    N = args.scale_items
    stored = m["cf_info"].get("Number of items inserted", N)
    L = []
    L.append("# cuckood at scale")
    L.append("")
    L.append(f"Generated by `bench/run --scale` on {info['date']}. See [README.md](README.md).")
    L.append("")
    L.append("Command:")
    L.append("")
    L.append("```sh")
    L.append(command)
    L.append("```")
    L.append("")
    L.append("| metric | value |")
    L.append("|---|---|")
    L.append(f"| filter | `CF.RESERVE big {args.scale_capacity}` (answered in {m['reserve_s'] * 1000:.0f} ms); "
             f"CF.INFO size {fmt_bytes(m['cf_info'].get('Size', 0))}, "
             f"{m['cf_info'].get('Number of buckets', 0):,} buckets × {m['cf_info'].get('Bucket size', '?')} |")
    L.append(f"| items loaded | {N:,} (stored: {stored:,}; failed: {m['load_failures']:,}) |")
    L.append(f"| load rate | **{m['load_rate']:,.0f} items/s** ({m['load_s']:.1f} s; pipelined `CF.INSERT` of "
             f"{args.scale_batch} items, {args.scale_conns} connection(s) × {args.scale_window} in flight) |")
    prog = m.get("load_progress") or []
    if len(prog) >= 2:
        L.append("| load rate over time | " + ", ".join(f"{fmt_items(r)}/s at {n / N:.0%}" for _, n, r in prog)
                 + " (items/s over each 15 s interval, and how far the load was by then) |")
    for P, r in sorted(m["exists"].items()):
        L.append(f"| CF.EXISTS -c {args.clients} -P {P} | **{r['rps']:,.0f} rps** "
                 f"(p50 {r['p50_latency_ms']:.3f} ms, p99 {r['p99_latency_ms']:.3f} ms; "
                 f"{args.requests:,} random items over 0..{2 * N - 1}, half of them stored) |")
    L.append(f"| peak RSS (VmHWM) | **{fmt_bytes(m['vm'].get('VmHWM', -1))}** (VmRSS {fmt_bytes(m['vm'].get('VmRSS', -1))}; "
             f"after restart and one lookup: {fmt_bytes(m.get('vm_after_restart', {}).get('VmRSS', -1))}) |")
    L.append(f"| disk after load (before SAVE) | {fmt_bytes(m['du_loaded'])} |")
    L.append(f"| disk after SAVE | **{fmt_bytes(m['du_saved'])} = {m['du_saved'] / max(stored, 1):.2f} bytes per stored "
             f"fingerprint** (SAVE took {m['save_s'] * 1000:.0f} ms) |")
    L.append(f"| disk after clean shutdown | {fmt_bytes(m['du_stopped'])} = {m['du_stopped'] / max(stored, 1):.2f} "
             f"bytes per stored fingerprint |")
    L.append(f"| shutdown (SIGTERM to exit) | {m['shutdown_s'] * 1000:.0f} ms |")
    L.append(f"| restart to first reply | **{m['restart_s'] * 1000:.0f} ms** (exec to the first `PONG`; "
             f"the first `CF.EXISTS` then took {m['first_exists_s'] * 1000:.1f} ms) |")
    L.append(f"| items after restart | {m['items_after_restart']:,} (unchanged) |")
    L.append("")
    L.append("Notes:")
    L.append("")
    size = m["cf_info"].get("Size", 0)
    L.append("- Disk usage is `du -sb` of the RocksDB directory, taken right after `SAVE` (which "
             "flushes the memtable) and again after a clean shutdown; page changes not yet folded "
             "together by RocksDB's background compaction are included (`cuckood --compact` on the "
             "stopped directory folds them; `bench/disk.py` measures full filters that way, see "
             "disk.md). A filter's buckets are stored as uncompressed 2 KiB pages, each created when "
             "first written, so the disk use depends on how many pages the items touched, not only on "
             f"the item count: the whole reserved filter is {fmt_bytes(size)}, "
             f"{size / max(stored, 1):,.2f} bytes per stored item at this fill "
             f"({stored:,} items in a {args.scale_capacity:,}-capacity filter).")
    L.append("- The load is driven by this harness in Python (one process per connection); on a small "
             "machine the client shares the cores with the server, so the load rate is a lower bound.")
    L.append("")
    L.append("## Machine")
    L.append("")
    for k in ("date", "nproc", "cpu", "memory", "kernel", "loadavg_start", "loadavg_end", "cuckood",
              "redis-benchmark", "python"):
        L.append(f"- {k}: {info.get(k, '?')}")
    L.append("")
    with open(path, "w") as f:
        f.write("\n".join(L))


# --------------------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="bench/run", description="cuckood vs Redis benchmark harness (see docs/benchmarks/README.md)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="rounds (servers alternate going first)")
    ap.add_argument("--requests", type=int, default=200_000, help="requests per single-item test")
    ap.add_argument("--batch-requests", type=int, default=None,
                    help=f"requests per {BATCH}-item test (default: requests / 20, at least 1000)")
    ap.add_argument("--prefill", type=int, default=1_000_000, help="items/keys loaded before the tests")
    ap.add_argument("--clients", type=int, default=50, help="redis-benchmark -c")
    ap.add_argument("--pipelines", type=lambda s: [int(x) for x in s.split(",")], default=[1, 16],
                    help="comma-separated redis-benchmark -P values")
    ap.add_argument("--tests", type=lambda s: s.split(","), default=None,
                    help="comma-separated subset of: " + ",".join(t["id"] for t in TESTS))
    ap.add_argument("--quick", action="store_true",
                    help="~1 minute smoke run: 1 round, 20,000 requests, 200,000 prefill")
    ap.add_argument("--workers", type=int, default=0, help="cuckood --workers (0 = one per core)")
    ap.add_argument("--bench-threads", type=int, default=1, help="redis-benchmark --threads (1 = off)")
    ap.add_argument("--cuckood", default=os.path.join(REPO, "build", "server", "cuckood"),
                    help="cuckood binary (run from a private copy in a temporary directory)")
    ap.add_argument("--redis-server", default="/usr/bin/redis-server")
    ap.add_argument("--redis-benchmark", default="/usr/bin/redis-benchmark")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "out"), help="raw output directory")
    ap.add_argument("--docs", default=os.path.join(REPO, "docs", "benchmarks"),
                    help="where results.md/png and scale.md go")
    ap.add_argument("--no-docs", action="store_true", help="write the report only under --out")
    ap.add_argument("--no-plot", action="store_true", help="do not draw results.png")
    ap.add_argument("--no-chain", action="store_true",
                    help="skip the long-chain measurement (bench/chain.py; skipped by --quick too)")
    ap.add_argument("--tmp-dir", default=None, help="parent of the temporary data directories")
    ap.add_argument("--keep-data", action="store_true", help="keep the data directories")
    ap.add_argument("--report-from", metavar="DIR", default=None,
                    help="run nothing: rewrite results.md/png from an earlier run's bench/out/<run> directory")
    sc = ap.add_argument_group("scale mode")
    sc.add_argument("--scale", action="store_true", help="run the scale benchmark instead (long)")
    sc.add_argument("--scale-items", type=int, default=100_000_000, help="items to bulk-load")
    sc.add_argument("--scale-capacity", type=int, default=1_000_000_000, help="CF.RESERVE capacity")
    sc.add_argument("--scale-batch", type=int, default=1000, help="items per CF.INSERT")
    sc.add_argument("--scale-conns", type=int, default=2, help="loading connections (one process each)")
    sc.add_argument("--scale-window", type=int, default=32, help="CF.INSERT commands in flight per connection")
    args = ap.parse_args(argv)
    if args.quick:
        defaults = {"rounds": 1, "requests": 20_000, "prefill": 200_000}
        for k, v in defaults.items():
            if getattr(args, k) == ap.get_default(k):
                setattr(args, k, v)
    if args.batch_requests is None:
        args.batch_requests = max(args.requests // 20, 1000)
    if args.tests:
        bad = [t for t in args.tests if t not in {x["id"] for x in TESTS}]
        if bad:
            ap.error(f"unknown tests {bad}")
    if args.rounds < 1 or args.requests < 1 or args.prefill < 0 or args.scale_items < 1:
        ap.error("counts must be positive")
    if args.prefill > FILL_LIMIT * KEYSPACE:
        ap.error(f"--prefill must be at most {int(FILL_LIMIT * KEYSPACE):,}")
    return args


atexit_dirs = []


def report_from(args):
    run_dir = os.path.abspath(args.report_from)
    rows, results, elapsed, info, command = load_run(run_dir, args)
    docs = run_dir if args.no_docs else args.docs
    os.makedirs(docs, exist_ok=True)
    md = os.path.join(docs, "results.md")
    write_results_md(md, args, info, rows, results, elapsed, run_dir, command)
    if not args.no_plot:
        if not shutil.which("gnuplot"):
            raise BenchError("gnuplot is missing (bench/run installs gnuplot-nox; or pass --no-plot)")
        write_plot(os.path.join(docs, "results.png"), rows, run_dir)
    print_summary(rows)
    log(f"wrote {md} from {run_dir}")
    return 0


def main(argv):
    args = parse_args(argv)
    command = "bench/run" + ("" if not argv else " " + " ".join(argv))
    if args.report_from:
        return report_from(args)
    for exe in (args.cuckood, args.redis_benchmark) + (() if args.scale else (args.redis_server,)):
        if not os.access(exe, os.X_OK):
            raise BenchError(f"{exe} not found or not executable")
    want_plot = not args.scale and not args.no_plot
    if want_plot and not shutil.which("gnuplot"):
        raise BenchError("gnuplot is missing (bench/run installs gnuplot-nox; or pass --no-plot)")

    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = os.path.join(args.out, f"{stamp}-{'scale' if args.scale else 'quick' if args.quick else 'full'}")
    os.makedirs(out_dir, exist_ok=True)
    # Run a private copy of the binary: the build tree may be relinked during a long run.
    bin_dir = tempfile.mkdtemp(prefix="cuckood-bench-bin-", dir=args.tmp_dir)
    atexit_dirs.append(bin_dir)
    cuckood_bin = os.path.join(bin_dir, "cuckood")
    shutil.copy2(args.cuckood, cuckood_bin)
    info = machine_info(args, cuckood_bin)
    docs = out_dir if args.no_docs else args.docs
    os.makedirs(docs, exist_ok=True)
    t0 = time.monotonic()

    if args.scale:
        m = run_scale(args, out_dir, cuckood_bin, info, command)
        path = os.path.join(docs, "scale.md")
        write_scale_md(path, args, info, m, command)
        if docs != out_dir:
            shutil.copy2(path, os.path.join(out_dir, "scale.md"))
        log(f"wrote {path} ({time.monotonic() - t0:.0f} s in all)")
        return 0

    rows, results, elapsed = run_compare(args, out_dir, cuckood_bin, info)
    save_run(out_dir, args, info, elapsed, command)
    chain_md = None
    if not args.no_chain and not args.quick:
        import chain  # (bench/chain.py)
        log("long chains (bench/chain.py)")
        chain_md = chain.markdown(chain.run(cuckood_bin, [1, 64, 4096, 65535]))
        with open(os.path.join(out_dir, "chain.md"), "w") as f:
            f.write(chain_md)
    md = os.path.join(docs, "results.md")
    write_results_md(md, args, info, rows, results, elapsed, out_dir, command, chain_md)
    if want_plot:
        write_plot(os.path.join(docs, "results.png"), rows, out_dir)
    if docs != out_dir:
        shutil.copy2(md, os.path.join(out_dir, "results.md"))
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump([{k: v for k, v in r.items() if k != "test"} | {"test": r["test"]["id"]} for r in rows],
                  f, indent=2)
    print_summary(rows)
    log(f"wrote {md}{' and results.png' if want_plot else ''} ({time.monotonic() - t0:.0f} s in all)")
    return 0


if __name__ == "__main__":
    def _term(signum, _frame):
        log(f"signal {signum}: stopping the servers")
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, _term)
    rc = 1
    try:
        rc = main(sys.argv[1:])
    except BenchError as e:
        log(f"error: {e}")
        rc = 1
    except KeyboardInterrupt:
        log("interrupted")
        rc = 130
    finally:
        stop_all()
        for d in atexit_dirs:
            shutil.rmtree(d, ignore_errors=True)
    sys.exit(rc)
