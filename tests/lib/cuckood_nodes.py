"""Several cuckood processes for one test (replication, Sentinel, cluster): each on a free port
with its own directory, small caches and one io thread; conditions are awaited with deadlines;
every process started is stopped by its pid when the fixture ends, and the logs of a failed test
are printed."""
import os
import socket
import subprocess
import time

import pytest
from cuckood_testlib import CuckoodProcess, binary

try:
    import redis
except ImportError:  # pragma: no cover
    redis = None

LEAN = ["--workers", "1", "--cache-size", "4mb", "--block-cache-size", "8mb",
        "--write-buffer-size", "4mb", "--repl-timeout", "10"]


def wait_for(cond, timeout=20.0, what="condition", interval=0.05):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = cond()
            if last:
                return last
        except (OSError, redis.exceptions.RedisError) as e:  # a node restarting
            last = e
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


def info(client, section=None):
    """INFO as the raw text's field:value pairs (strings; redis-py's parsing left out)."""
    client.set_response_callback("INFO", lambda r, **kw: r)
    text = client.execute_command("INFO", section) if section else client.execute_command("INFO")
    if isinstance(text, bytes):
        text = text.decode()
    out = {}
    for line in text.split("\r\n"):
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


def sequence(client):
    return int(info(client, "replication")["sequence"])


class Node:
    def __init__(self, proc):
        self.proc = proc
        self.port = proc.port
        self.password = None

    def client(self, **kw):
        if self.password is not None:
            kw.setdefault("password", self.password)
        return redis.Redis(port=self.port, socket_timeout=10, **kw)

    def __getattr__(self, name):
        return getattr(self.proc, name)


class Nodes:
    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.nodes = []
        self.others = []  # other processes (sentinels): (Popen, log path)

    def start(self, name, *extra, lean=True, data_dir=None):
        data = str(data_dir or self.tmp / name / "data")
        os.makedirs(os.path.dirname(data), exist_ok=True)
        args = (LEAN if lean else []) + list(extra)
        proc = CuckoodProcess(data, extra_args=args)
        proc.start()
        node = Node(proc)
        self.nodes.append(node)
        return node

    def spawn(self, args, log_name):
        log_path = str(self.tmp / log_name)
        log = open(log_path, "ab")
        p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        self.others.append((p, log_path, log))
        return p

    def check(self, node):
        """The offline consistency checker on a stopped node's directory."""
        r = subprocess.run([binary(), "--check", "--dir", node.proc.data_dir],
                           capture_output=True, text=True, timeout=300)
        return r.returncode, r.stdout + r.stderr

    def stop_all(self):
        for n in self.nodes:
            try:
                n.proc.stop()
            except Exception:  # noqa: BLE001  (stopping the rest matters more)
                pass
        for p, _, log in self.others:
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()

    def logs(self):
        out = []
        for n in self.nodes:
            out.append("---- node %d ----\n%s" % (n.port, n.proc.read_log()))
        for _, path, _ in self.others:
            with open(path, "rb") as f:
                out.append("---- %s ----\n%s" % (path, f.read().decode(errors="replace")[-4000:]))
        return "\n".join(out)


def dump_filter(client, key):
    chunks = []
    it = 0
    while True:
        it, data = client.execute_command("CF.SCANDUMP", key, it)
        if it == 0:
            return chunks
        chunks.append((it, data))


def snapshot(client, dbs=(0,)):
    """Everything a client can read of the keyspace: per key its type, value or every SCANDUMP
    chunk, CF.INFO and absolute expiry."""
    out = {}
    for db in dbs:
        client.execute_command("SELECT", db)
        keys = sorted(client.execute_command("KEYS", "*"))
        state = {"dbsize": client.execute_command("DBSIZE")}
        for k in keys:
            t = client.execute_command("TYPE", k)
            entry = {"type": t, "expire": client.execute_command("PEXPIRETIME", k)}
            if t in (b"MBbloomCF", "MBbloomCF"):
                entry["dump"] = dump_filter(client, k)
                entry["info"] = client.execute_command("CF.INFO", k)
            else:
                entry["value"] = client.execute_command("GET", k)
            state[k] = entry
        out[db] = state
    client.execute_command("SELECT", 0)
    return out


@pytest.fixture
def nodes(tmp_path, request):
    n = Nodes(tmp_path)
    try:
        yield n
    finally:
        rep = getattr(request.node, "rep_call", None)
        if rep is not None and rep.failed:
            print(n.logs())
        n.stop_all()


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
