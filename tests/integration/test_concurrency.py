"""Many connections at once: no lost updates, no errors, and reads that never go backwards."""
import random
import subprocess
import threading
import time

import pytest
from cuckood_testlib import RawClient, binary, encode, run_threads


def items_inserted(c, key):
    reply = c.call("CF.INFO", key)
    marker = b"+Number of items inserted\r\n:"
    start = reply.index(marker) + len(marker)
    return int(reply[start:reply.index(b"\r\n", start)])


def test_eight_writers_on_one_key(server):
    k = "conc:one"
    setup = RawClient(server.port)
    # small enough that the filter grows several times while the writers race
    assert setup.call("CF.RESERVE", k, "1000") == b"+OK\r\n"

    def writer(t):
        c = RawClient(server.port)
        for i in range(500):
            assert c.call("CF.ADD", k, "t%d-i%d" % (t, i)) == b":1\r\n"
        c.close()

    run_threads([(writer, t) for t in range(8)])
    assert items_inserted(setup, k) == 4000
    all_items = ["t%d-i%d" % (t, i) for t in range(8) for i in range(500)]
    setup.send_raw(b"".join(encode(["CF.EXISTS", k, x]) for x in all_items))
    assert [setup.read_reply() for _ in all_items] == [b":1\r\n"] * 4000
    assert b"+Number of filters\r\n:1\r\n" not in setup.call("CF.INFO", k)
    setup.close()


def test_readers_never_error_and_see_every_acknowledged_write(server):
    k = "conc:rw"
    setup = RawClient(server.port)
    setup.call("CF.RESERVE", k, "512", "EXPANSION", "2")
    acked = []  # items whose CF.ADD reply has arrived
    lock = threading.Lock()
    done = threading.Event()
    reads = [0]

    def writer(t):
        c = RawClient(server.port)
        try:
            for i in range(1000):
                item = "w%d-%d" % (t, i)
                assert c.call("CF.ADD", k, item) == b":1\r\n"
                with lock:
                    acked.append(item)
        finally:
            c.close()

    def reader(seed):
        rnd = random.Random(seed)
        c = RawClient(server.port)
        last_count = 0
        try:
            while not done.is_set():
                with lock:
                    sample = rnd.sample(acked, min(len(acked), 5))
                if sample:
                    # acknowledged before this read started: must be found
                    assert c.call("CF.EXISTS", k, sample[0]) == b":1\r\n", sample[0]
                    reply = c.call("CF.MEXISTS", k, *sample)
                    assert reply == b"*%d\r\n" % len(sample) + b":1\r\n" * len(sample)
                assert c.call("CF.EXISTS", k, "never-added-%d" % rnd.random()) in (
                    b":0\r\n", b":1\r\n")
                count = items_inserted(c, k)  # only adds happen: never goes down
                assert count >= last_count
                last_count = count
                reply = c.call("CF.SCANDUMP", k, "0")
                assert reply.startswith(b"*2\r\n:1\r\n$38\r\n") or reply == (
                    b"*2\r\n:0\r\n$-1\r\n")
                reads[0] += 1
        finally:
            c.close()

    errors = []

    def guarded(fn, arg):
        try:
            fn(arg)
        except BaseException as e:  # noqa: B902
            errors.append(e)

    readers = [threading.Thread(target=guarded, args=(reader, s)) for s in range(4)]
    writers = [threading.Thread(target=guarded, args=(writer, t)) for t in range(4)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join(120)
    done.set()
    for t in readers:
        t.join(120)
    if errors:
        raise errors[0]
    assert reads[0] > 50
    assert items_inserted(setup, k) == 4000
    setup.close()


def test_mixed_writers_on_different_keys(server):
    def worker(t):
        c = RawClient(server.port)
        k = "conc:mixed:%d" % t
        assert c.call("CF.RESERVE", k, "4096") == b"+OK\r\n"
        for i in range(300):
            assert c.call("CF.ADD", k, "i%d" % i) == b":1\r\n"
            if i % 3 == 2:
                assert c.call("CF.DEL", k, "i%d" % (i - 1)) == b":1\r\n"
            if i % 10 == 0:
                assert c.call("CF.ADDNX", k, "i%d" % i) == b":0\r\n"
        c.call("SET", "conc:mixed:str:%d" % t, "v%d" % t)
        reply = c.call("CF.INFO", k)
        assert b"+Number of items inserted\r\n:200\r\n" in reply
        assert b"+Number of items deleted\r\n:100\r\n" in reply
        kept = ["i%d" % i for i in range(300) if i % 3 != 1]
        c.send_raw(b"".join(encode(["CF.EXISTS", k, x]) for x in kept))
        assert [c.read_reply() for _ in kept] == [b":1\r\n"] * len(kept)
        c.close()

    run_threads([(worker, t) for t in range(8)])
    c = RawClient(server.port)
    for t in range(8):
        assert c.call("GET", "conc:mixed:str:%d" % t) == b"$2\r\nv%d\r\n" % t
    c.close()


def test_concurrent_addnx_of_one_item_succeeds_exactly_once(server):
    results = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def worker(t):
        c = RawClient(server.port)
        mine = []
        for n in range(40):
            barrier.wait()
            mine.append((n, c.call("CF.ADDNX", "conc:nx:%d" % n, "the-item")))
        with lock:
            results.extend(mine)
        c.close()

    run_threads([(worker, t) for t in range(8)])
    for n in range(40):
        replies = sorted(r for m, r in results if m == n)
        assert replies == [b":0\r\n"] * 7 + [b":1\r\n"], n
    c = RawClient(server.port)
    assert c.call("CF.COUNT", "conc:nx:0", "the-item") == b":1\r\n"
    c.close()


def test_concurrent_reserve_and_auto_create(server):
    barrier = threading.Barrier(8)
    results = []
    lock = threading.Lock()

    def worker(t):
        c = RawClient(server.port)
        for n in range(30):
            barrier.wait()
            r1 = c.call("CF.RESERVE", "conc:res:%d" % n, "100")
            r2 = c.call("CF.ADD", "conc:auto:%d" % n, "t%d" % t)  # 8 racing auto-creations
            with lock:
                results.append((n, r1, r2))
        c.close()

    run_threads([(worker, t) for t in range(8)])
    c = RawClient(server.port)
    for n in range(30):
        reserves = sorted(r1 for m, r1, _ in results if m == n)
        assert reserves == [b"+OK\r\n"] + [b"-ERR item exists\r\n"] * 7
        assert all(r2 == b":1\r\n" for m, _, r2 in results if m == n)
        # no auto-creation overwrote another one's filter
        assert items_inserted(c, "conc:auto:%d" % n) == 8
        reply = c.call("CF.MEXISTS", "conc:auto:%d" % n, *["t%d" % t for t in range(8)])
        assert reply == b"*8\r\n" + b":1\r\n" * 8
    c.close()


def test_concurrent_transactions_and_pipelines(server):
    k = "conc:tx"

    def tx_worker(t):
        c = RawClient(server.port)
        for rnd in range(20):
            cmds = [["MULTI"]] + [["CF.ADD", k, "tx%d-%d-%d" % (t, rnd, i)] for i in range(10)]
            cmds.append(["EXEC"])
            c.send_raw(b"".join(encode(x) for x in cmds))
            replies = [c.read_reply() for _ in cmds]
            assert replies[-1] == b"*10\r\n" + b":1\r\n" * 10
        c.close()

    def pipe_worker(t):
        c = RawClient(server.port)
        for rnd in range(20):
            cmds = [["CF.ADD", k, "p%d-%d-%d" % (t, rnd, i)] for i in range(10)]
            c.send_raw(b"".join(encode(x) for x in cmds))
            assert [c.read_reply() for _ in cmds] == [b":1\r\n"] * 10
        c.close()

    run_threads([(tx_worker, t) for t in range(4)] + [(pipe_worker, t) for t in range(4)])
    c = RawClient(server.port)
    assert items_inserted(c, k) == 8 * 20 * 10
    c.close()


@pytest.mark.parametrize("workers", ["1", "4"])
def test_connection_storm(fresh_server, workers):
    srv = fresh_server("--workers", workers)

    def worker(t):
        for i in range(25):
            c = RawClient(srv.port)
            assert c.call("CF.ADD", "storm", "t%d-%d" % (t, i)) == b":1\r\n"
            c.close()

    run_threads([(worker, t) for t in range(8)])
    c = RawClient(srv.port)
    assert items_inserted(c, "storm") == 200
    clients = c.call("CLIENT", "LIST")
    assert clients.count(b"id=") <= 3  # the closed connections are gone
    c.close()


def test_random_concurrent_operations_keep_the_database_consistent(fresh_server):
    srv = fresh_server()
    keys = ["chaos:%d" % i for i in range(4)]
    allowed_errors = {
        b"-ERR item exists\r\n", b"-ERR not found\r\n", b"-Not found\r\n",
        b"-Cuckoo filter was not found\r\n", b"-ERR no such key\r\n",
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        b"-Maximum expansions reached\r\n", b"-Invalid header\r\n", b"-Couldn't load chunk!\r\n",
    }
    seen = set()

    def worker(seed):
        rnd = random.Random(seed)
        c = RawClient(srv.port)
        deadline = time.time() + 2.0
        while time.time() < deadline:
            k, k2 = rnd.choice(keys), rnd.choice(keys)
            item = "i%d" % rnd.randrange(200)
            op = rnd.randrange(14)
            cmd = [
                ["CF.ADD", k, item], ["CF.ADDNX", k, item], ["CF.DEL", k, item],
                ["CF.INSERT", k, "CAPACITY", "64", "ITEMS", item, item + "x", item + "y"],
                ["CF.EXISTS", k, item], ["CF.MEXISTS", k, item, "zz"], ["CF.COUNT", k, item],
                ["CF.RESERVE", k, "32", "EXPANSION", "2"], ["DEL", k], ["RENAME", k, k2],
                ["EXPIRE", k, "100"], ["CF.COMPACT", k], ["CF.INFO", k], ["CF.SCANDUMP", k, "0"],
            ][op]
            reply = c.call(*cmd)
            if reply.startswith(b"-"):
                assert reply in allowed_errors, (cmd, reply)
                seen.add(reply)
            if op == 13 and reply.startswith(b"*2\r\n:1\r\n"):
                # copy the header into a fresh key: exercises LOADCHUNK concurrently
                hdr = reply[reply.index(b"$38\r\n") + 5:][:38]
                r2 = c.call("CF.LOADCHUNK", "chaos:copy:%d" % seed, "1", hdr)
                assert r2 in (b"+OK\r\n", b"-ERR item exists\r\n"), r2
        c.close()

    run_threads([(worker, s) for s in range(8)])
    c = RawClient(srv.port)
    for k in keys:
        if c.call("TYPE", k) == b"+MBbloomCF\r\n":
            assert c.call("CF.INFO", k).startswith(b"*16\r\n")
            assert c.call("CF.COMPACT", k) == b"+OK\r\n"
    c.close()
    assert srv.stop() == 0
    out = subprocess.run([binary(), "--check", "--dir", srv.data_dir], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and " 0 errors" in out.stdout + out.stderr, out.stdout + out.stderr


def test_a_burst_of_new_connections_is_served_while_others_keep_the_server_busy(fresh_server):
    """Connections that arrive together while the io threads are busy are all taken at once: a
    new client waits for one turn of the busy ones, not for one turn per client queued before
    it (the last clients of a burst used to get their first reply only when the others were
    done). Measured in the busy clients' own progress, not in time."""
    srv = fresh_server("--workers", "2")
    k = "conc:burst"
    setup = RawClient(srv.port)
    assert setup.call("CF.RESERVE", k, "4000000") == b"+OK\r\n"
    rng = random.Random(7)
    pipeline = b"".join(
        encode(["CF.INSERT", k, "ITEMS"] + ["%012d" % rng.randrange(10 ** 12) for _ in range(100)])
        for _ in range(16))
    done = [0]
    stop = threading.Event()

    def busy():
        c = RawClient(srv.port)
        while not stop.is_set():
            c.send_raw(pipeline)
            for _ in range(16):
                assert c.read_reply().startswith(b"*100\r\n")
            done[0] += 1
        c.close()

    threads = [threading.Thread(target=busy) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 60
        while done[0] < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert done[0] >= 8, "the busy clients made no progress"
        before = done[0]
        burst = [RawClient(srv.port) for _ in range(60)]
        for c in burst:
            c.send_raw(encode(["PING"]))
        for c in burst:
            assert c.read_reply() == b"+PONG\r\n"
        during = done[0] - before
        for c in burst:
            c.close()
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    # one turn of the busy clients is 4 pipelines; one turn per new client would be ~60 turns
    assert during <= 24, "the busy clients completed %d pipelines while the burst waited" % during
    setup.close()
