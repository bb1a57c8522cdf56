"""adaptive-io-threads (server/io_balance.h): while the io threads wait for CPUs that other
processes keep busy and sleep every few commands, connections gather on fewer io threads; a
pipelined load with a core to spare spreads them again. Clients see nothing of it but the speed:
every reply right and in order, nothing lost, subscribers still served; with the setting off
every thread stays in use."""
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

from cuckood_testlib import RawClient, encode, raw_info

REDIS_BENCHMARK = shutil.which("redis-benchmark")
pytestmark = pytest.mark.skipif(REDIS_BENCHMARK is None, reason="redis-benchmark is not installed")

KEYS = 50


def in_use(port):
    return int(raw_info(port, "server")["cuckood_io_threads_in_use"])


def wait_for(predicate, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


class Load:
    """Processes started by a test, stopped (by pid) when it ends."""

    def __init__(self):
        self.procs = []

    def spin(self, n):
        # Busy loops on every core: the io threads must wait for a CPU.
        for _ in range(n):
            self.procs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))

    def benchmark(self, port, *args):
        self.procs.append(subprocess.Popen(
            [REDIS_BENCHMARK, "-p", str(port), "-n", "100000000", "-r", str(KEYS), "-q"] +
            list(args) + ["CF.ADD", "mk:__rand_int__", "__rand_int__"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def stop(self):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
        self.procs = []


@pytest.fixture
def load():
    procs = Load()
    yield procs
    procs.stop()


def reserve(port):
    c = RawClient(port)
    for i in range(KEYS):
        key = "mk:%012d" % i
        assert c.call("CF.RESERVE", key, "200000") == b"+OK\r\n"
    c.close()


class Checker(threading.Thread):
    """One client writing items one command at a time, with now and then a pipeline of a write,
    a count of it and an ECHO: every reply must be right and in order."""

    def __init__(self, port, name):
        super().__init__()
        self.port, self.name = port, name
        self.stop_flag = threading.Event()
        self.problems, self.added = [], []

    def run(self):
        c = RawClient(self.port)
        assert c.call("CLIENT", "SETNAME", self.name) == b"+OK\r\n"
        n = 0
        while not self.stop_flag.is_set():
            key = "chk:%d" % (n % 7)
            item = "%s-%d" % (self.name, n)
            if n % 5:
                reply = c.call("CF.ADD", key, item)
                if reply != b":1\r\n":
                    self.problems.append((item, reply))
            else:
                c.send_raw(encode(["CF.ADD", key, item]) + encode(["CF.COUNT", key, item]) +
                           encode(["ECHO", item]))
                replies = [c.read_reply() for _ in range(3)]
                if replies[0] != b":1\r\n" or replies[1] == b":0\r\n" or \
                        replies[2] != b"$%d\r\n%s\r\n" % (len(item), item.encode()):
                    self.problems.append((item, replies))
            self.added.append((key, item))
            n += 1
        c.close()


def check_all_found(port, added):
    c = RawClient(port)
    by_key = {}
    for key, item in added:
        by_key.setdefault(key, []).append(item)
    for key, items in by_key.items():
        for i in range(0, len(items), 500):
            part = items[i:i + 500]
            reply = c.call("CF.MEXISTS", key, *part)
            assert reply == b"*%d\r\n" % len(part) + b":1\r\n" * len(part), key
    c.close()


def test_connections_gather_while_the_cores_are_contended_and_spread_again(fresh_server, load):
    srv = fresh_server("--workers", "2")
    reserve(srv.port)
    assert in_use(srv.port) == 2
    # A subscriber (it never moves) and a client that stays idle meanwhile.
    sub = RawClient(srv.port)
    assert sub.call("SUBSCRIBE", "news").startswith(b"*3\r\n")
    idle = RawClient(srv.port)
    assert idle.call("PING") == b"+PONG\r\n"
    moves_before = int(raw_info(srv.port, "stats")["client_moves"])

    checkers = [Checker(srv.port, "c%d" % i) for i in range(2)]
    for t in checkers:
        t.start()
    try:
        load.spin(max(2, os.cpu_count() or 2))
        load.benchmark(srv.port, "-c", "8", "-P", "1")
        assert wait_for(lambda: in_use(srv.port) == 1, 20), raw_info(srv.port, "server")
        time.sleep(1)  # (the connections move at their next read)
        assert in_use(srv.port) == 1
        assert int(raw_info(srv.port, "stats")["client_moves"]) > moves_before
    finally:
        load.stop()
        for t in checkers:
            t.stop_flag.set()
        for t in checkers:
            t.join()
    for t in checkers:
        assert t.problems == []
        assert len(t.added) > 100
    assert int(raw_info(srv.port, "server")["cuckood_io_threads_changes"]) >= 1
    check_all_found(srv.port, [a for t in checkers for a in t.added])
    # The subscriber and the idle client are served wherever they are.
    pub = RawClient(srv.port)
    assert pub.call("PUBLISH", "news", "hello") == b":1\r\n"
    assert sub.read_reply() == b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
    assert idle.call("ECHO", "still") == b"$5\r\nstill\r\n"
    for c in (pub, sub, idle):
        c.close()
    # Nothing acknowledged is lost across a restart.
    srv.stop()
    srv.start()
    check_all_found(srv.port, [a for t in checkers for a in t.added])


def idle_cores():
    """The machine's idle CPU so far, in core-seconds (/proc/stat: idle + iowait)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return (int(fields[4]) + int(fields[5])) / os.sysconf("SC_CLK_TCK")


def client_list(port):
    c = RawClient(port)
    reply = c.call("CLIENT", "LIST")
    c.close()
    return reply.split(b"\r\n", 1)[1].decode()


def benchmark_threads(port):
    """The io threads (CLIENT LIST io-thread) of the connections running CF.ADD at -P 16 now."""
    threads = set()
    for line in client_list(port).splitlines():
        fields = dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
        if fields.get("cmd") == "cf.add" and not fields.get("name"):
            threads.add(fields.get("io-thread"))
    return threads


def test_a_pipelined_load_with_a_core_to_spare_takes_a_thread_back(fresh_server, load):
    srv = fresh_server("--workers", "2")
    reserve(srv.port)
    load.spin(max(2, os.cpu_count() or 2))
    load.benchmark(srv.port, "-c", "8", "-P", "1")
    assert wait_for(lambda: in_use(srv.port) == 1, 20), raw_info(srv.port, "server")
    load.stop()
    # A pipelined client needs little CPU of its own: the one thread in use is busy while a core
    # is idle, and a second thread is taken in; the connections spread over both.
    checker = Checker(srv.port, "p")
    checker.start()
    moves = int(raw_info(srv.port, "stats")["client_moves"])
    load.benchmark(srv.port, "-c", "20", "-P", "16")
    idle0, t0 = idle_cores(), time.time()
    try:
        grew = wait_for(lambda: in_use(srv.port) == 2, 20)
        spare = (idle_cores() - idle0) / (time.time() - t0)
        if not grew and spare < 0.6:
            pytest.skip("this host had no idle core beside the load (%.2f cores idle)" % spare)
        assert grew, "%.2f cores idle: %s" % (spare, raw_info(srv.port, "server"))
        # (the benchmark's connections were accepted by both threads in turn: those of the second
        # move to it at their next read, or land on it if it was in use again before they came)
        assert wait_for(lambda: benchmark_threads(srv.port) == {"0", "1"}, 5), \
            (in_use(srv.port), raw_info(srv.port, "stats")["client_moves"], moves,
             client_list(srv.port))
        time.sleep(0.3)
    finally:
        load.stop()
        checker.stop_flag.set()
        checker.join()
    assert checker.problems == []
    check_all_found(srv.port, checker.added)


def test_with_the_setting_off_every_thread_stays_in_use(fresh_server, load):
    srv = fresh_server("--workers", "2", "--adaptive-io-threads", "no")
    reserve(srv.port)
    c = RawClient(srv.port)
    load.spin(max(2, os.cpu_count() or 2))
    load.benchmark(srv.port, "-c", "8", "-P", "1")
    time.sleep(2)
    info = raw_info(srv.port, "server")
    assert info["cuckood_io_threads_in_use"] == "2"
    assert info["cuckood_io_threads_changes"] == "0"
    # Switched on at run time, the same load gathers the connections.
    assert c.call("CONFIG", "SET", "adaptive-io-threads", "yes") == b"+OK\r\n"
    assert wait_for(lambda: in_use(srv.port) == 1, 20), raw_info(srv.port, "server")
    # And off again: every thread is in use at once.
    assert c.call("CONFIG", "SET", "adaptive-io-threads", "no") == b"+OK\r\n"
    assert wait_for(lambda: in_use(srv.port) == 2, 2)
    assert c.call("CONFIG", "GET", "adaptive-io-threads") == \
        b"*2\r\n$19\r\nadaptive-io-threads\r\n$2\r\nno\r\n"
    c.close()
