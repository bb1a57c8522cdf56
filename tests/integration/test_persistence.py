"""Durability: what survives SIGTERM, SHUTDOWN and kill -9; how fast a restarted server answers."""
import socket
import subprocess
import threading
import time

from cuckood_testlib import RawClient, binary, encode


def scandump_all(c, key):
    """Every (iterator, chunk) pair of CF.SCANDUMP, from 0 to the terminator."""
    chunks, it = [], 0
    while True:
        reply = c.call("CF.SCANDUMP", key, it)
        head, rest = reply.split(b"\r\n", 1)
        assert head == b"*2", reply[:40]
        nl = rest.index(b"\r\n")
        nxt = int(rest[1:nl])
        body = rest[nl + 2:]
        if nxt == 0:
            assert body == b"$-1\r\n"
            return chunks
        ln_end = body.index(b"\r\n")
        n = int(body[1:ln_end])
        data = body[ln_end + 2:ln_end + 2 + n]
        chunks.append((nxt, data))
        it = nxt


def pipeline(c, cmds):
    c.send_raw(b"".join(encode(cmd) for cmd in cmds))
    return [c.read_reply() for _ in cmds]


def populate(c):
    """Filters of several shapes, strings and TTLs; returns the keys to compare."""
    assert c.call("CF.RESERVE", "p:plain", "1000") == b"+OK\r\n"
    pipeline(c, [("CF.ADD", "p:plain", "item-%d" % i) for i in range(700)])
    # many sub-filters, with deletes
    assert c.call("CF.RESERVE", "p:grown", "64", "BUCKETSIZE", "1", "EXPANSION", "2",
                  "MAXITERATIONS", "5") == b"+OK\r\n"
    pipeline(c, [("CF.ADD", "p:grown", "g-%d" % i) for i in range(1500)])
    pipeline(c, [("CF.DEL", "p:grown", "g-%d" % i) for i in range(0, 1500, 50)])
    # non-scaling, full
    c.call("CF.RESERVE", "p:full", "4", "EXPANSION", "0")
    pipeline(c, [("CF.ADD", "p:full", "f-%d" % i) for i in range(10)])
    # auto-created, and one with a deleted-everything state
    c.call("CF.ADD", "p:auto", "x")
    c.call("CF.ADD", "p:emptied", "x")
    c.call("CF.DEL", "p:emptied", "x")
    c.call("CF.RESERVE", "p:reserved-only", "5000", "BUCKETSIZE", "4")
    # strings and TTLs
    c.call("SET", "p:str", "hello")
    c.call("SET", "p:str-ttl", "v", "EX", "1000")
    c.call("CF.ADD", "p:cf-ttl", "x")
    c.call("EXPIRE", "p:cf-ttl", "2000")
    c.call("SET", "p:gone", "v", "PX", "300")
    c.call("CF.ADD", "p:cf-gone", "x")
    c.call("PEXPIRE", "p:cf-gone", "300")


FILTERS = ["p:plain", "p:grown", "p:full", "p:auto", "p:emptied", "p:reserved-only", "p:cf-ttl"]


def snapshot(c):
    snap = {}
    for k in FILTERS:
        snap[k] = (c.call("CF.INFO", k), c.call("CF.DEBUG", k), scandump_all(c, k),
                   c.call("TYPE", k))
    snap["p:str"] = c.call("GET", "p:str")
    snap["p:str-ttl"] = c.call("GET", "p:str-ttl")
    snap["dbsize"] = c.call("DBSIZE")
    return snap


def ttl(c, key):
    return int(c.call("TTL", key)[1:-2])


def test_restart_keeps_every_key(fresh_server):
    srv = fresh_server()
    c = RawClient(srv.port)
    populate(c)
    time.sleep(0.4)  # p:gone and p:cf-gone expire
    before = snapshot(c)
    assert before["dbsize"] == b":9\r\n"
    assert len(before["p:grown"][2]) > 3  # several sub-filters, several chunks
    assert before["p:emptied"][2] == []  # numItems 0 dumps nothing
    c.close()
    assert srv.stop() == 0
    srv.start()
    c = RawClient(srv.port)
    after = snapshot(c)
    assert after == before
    assert 990 <= ttl(c, "p:str-ttl") <= 1000
    assert 1990 <= ttl(c, "p:cf-ttl") <= 2000
    assert c.call("TTL", "p:str") == b":-1\r\n"
    assert c.call("TTL", "p:plain") == b":-1\r\n"
    assert c.call("EXISTS", "p:gone", "p:cf-gone") == b":0\r\n"
    # every item is still there, and the filters keep working after the restart
    replies = pipeline(c, [("CF.EXISTS", "p:plain", "item-%d" % i) for i in range(700)])
    assert set(replies) == {b":1\r\n"}
    replies = pipeline(c, [("CF.EXISTS", "p:grown", "g-%d" % i) for i in range(1500)
                           if i % 50])
    assert set(replies) == {b":1\r\n"}
    assert c.call("CF.ADD", "p:full", "one-more") == b"-Filter is full\r\n"
    assert c.call("CF.ADD", "p:plain", "new") == b":1\r\n"
    assert c.call("CF.EXISTS", "p:plain", "new") == b":1\r\n"
    c.close()


def test_ttl_keeps_counting_down_across_a_restart(fresh_server):
    srv = fresh_server()
    c = RawClient(srv.port)
    c.call("CF.ADD", "t:cf", "x")
    c.call("PEXPIRE", "t:cf", "2500")
    c.call("SET", "t:s", "v", "PX", "2500")
    c.close()
    srv.stop()
    time.sleep(0.5)
    srv.start()
    c = RawClient(srv.port)
    pttl = int(c.call("PTTL", "t:cf")[1:-2])
    assert 0 < pttl <= 2000  # the deadline is absolute: time spent down counts
    assert 0 < int(c.call("PTTL", "t:s")[1:-2]) <= 2000
    time.sleep(pttl / 1000.0 + 0.3)
    assert c.call("EXISTS", "t:cf", "t:s") == b":0\r\n"
    assert c.call("CF.EXISTS", "t:cf", "x") == b":0\r\n"
    c.close()


def test_databases_are_separate_and_survive_restart(fresh_server):
    srv = fresh_server()
    c = RawClient(srv.port)
    for db in (0, 5, 15):
        assert c.call("SELECT", db) == b"+OK\r\n"
        c.call("SET", "same-name", "value-in-%d" % db)
        c.call("CF.RESERVE", "filter", str(100 * (db + 1)))
        c.call("CF.ADD", "filter", "only-in-%d" % db)
    c.call("SELECT", "5")
    c.call("CF.ADD", "only-db5", "x")

    def check(c):
        for db in (0, 5, 15):
            assert c.call("SELECT", db) == b"+OK\r\n"
            assert c.call("GET", "same-name") == b"$%d\r\nvalue-in-%d\r\n" % (
                len("value-in-%d" % db), db)
            assert c.call("CF.EXISTS", "filter", "only-in-%d" % db) == b":1\r\n"
            others = [d for d in (0, 5, 15) if d != db]
            assert c.call("CF.MEXISTS", "filter", *["only-in-%d" % d for d in others]) == (
                b"*2\r\n:0\r\n:0\r\n")
            info = c.call("CF.INFO", "filter")
            buckets = {0: 64, 5: 512, 15: 1024}[db]
            assert b"+Number of buckets\r\n:%d\r\n" % buckets in info
            assert c.call("DBSIZE") == (b":3\r\n" if db == 5 else b":2\r\n")
            assert c.call("EXISTS", "only-db5") == (b":1\r\n" if db == 5 else b":0\r\n")
        assert c.call("SELECT", "3") == b"+OK\r\n"
        assert c.call("DBSIZE") == b":0\r\n"

    check(c)
    c.close()
    srv.restart()
    c = RawClient(srv.port)
    check(c)
    # FLUSHDB in one database leaves the others alone, across a restart too
    c.call("SELECT", "5")
    assert c.call("FLUSHDB") == b"+OK\r\n"
    c.close()
    srv.restart()
    c = RawClient(srv.port)
    c.call("SELECT", "5")
    assert c.call("DBSIZE") == b":0\r\n"
    c.call("SELECT", "15")
    assert c.call("DBSIZE") == b":2\r\n"
    assert c.call("CF.EXISTS", "filter", "only-in-15") == b":1\r\n"
    c.close()


def test_shutdown_command_exits_cleanly_and_keeps_data(fresh_server):
    srv = fresh_server()  # default appendfsync everysec: a clean shutdown must flush anyway
    c = RawClient(srv.port)
    replies = pipeline(c, [("CF.ADD", "s:cf", "item-%d" % i) for i in range(500)])
    assert set(replies) == {b":1\r\n"}
    c.call("SET", "s:str", "kept")
    bystander = RawClient(srv.port)
    c.send_raw(encode(["SHUTDOWN"]))
    c.sock.settimeout(10)
    assert c.sock.recv(100) == b""  # no reply: the connection just closes
    assert srv.proc.wait(timeout=15) == 0
    bystander.sock.settimeout(5)
    try:
        assert bystander.sock.recv(100) == b""
    except ConnectionResetError:
        pass
    srv.stop()  # closes the log of the exited process
    srv.start()
    c = RawClient(srv.port)
    replies = pipeline(c, [("CF.EXISTS", "s:cf", "item-%d" % i) for i in range(500)])
    assert set(replies) == {b":1\r\n"}
    assert b"+Number of items inserted\r\n:500\r\n" in c.call("CF.INFO", "s:cf")
    assert c.call("GET", "s:str") == b"$4\r\nkept\r\n"
    c.close()
    assert "closed cleanly" in srv.read_log()


def test_sigterm_exits_zero(fresh_server):
    srv = fresh_server()
    c = RawClient(srv.port)
    c.call("CF.ADD", "k", "x")
    assert srv.stop() == 0
    c.close()


def test_kill9_with_appendfsync_always_keeps_every_acknowledged_write(fresh_server):
    srv = fresh_server("--appendfsync", "always")
    conns = [RawClient(srv.port) for _ in range(2)]
    n = 2000
    acked = []
    for start in range(0, n, 100):
        batch = [("CF.ADD", "k9:cf", "item-%d" % i) for i in range(start, start + 100)]
        replies = pipeline(conns[(start // 100) % 2], batch)
        assert set(replies) == {b":1\r\n"}
        acked.extend(b[2] for b in batch)
    assert conns[0].call("SET", "k9:str", "last") == b"+OK\r\n"
    assert conns[1].call("CF.RESERVE", "k9:reserved", "100") == b"+OK\r\n"
    srv.kill9()  # immediately after the last acknowledgement
    srv.start()
    c = RawClient(srv.port)
    replies = pipeline(c, [("CF.EXISTS", "k9:cf", item) for item in acked])
    assert replies.count(b":1\r\n") == n
    assert b"+Number of items inserted\r\n:%d\r\n" % n in c.call("CF.INFO", "k9:cf")
    assert c.call("GET", "k9:str") == b"$4\r\nlast\r\n"
    assert c.call("TYPE", "k9:reserved") == b"+MBbloomCF\r\n"
    c.close()
    for x in conns:
        x.close()


def test_kill9_with_everysec_loses_at_most_about_a_second(fresh_server):
    srv = fresh_server("--appendfsync", "everysec")
    c = RawClient(srv.port)
    replies = pipeline(c, [("CF.ADD", "es:cf", "item-%d" % i) for i in range(1000)])
    assert set(replies) == {b":1\r\n"}
    time.sleep(1.6)
    srv.kill9()
    srv.start()
    c = RawClient(srv.port)
    replies = pipeline(c, [("CF.EXISTS", "es:cf", "item-%d" % i) for i in range(1000)])
    assert set(replies) == {b":1\r\n"}
    c.close()


def test_database_is_consistent_after_kill9(fresh_server):
    srv = fresh_server("--appendfsync", "always")
    c = RawClient(srv.port)
    c.call("CF.RESERVE", "chk:cf", "64", "EXPANSION", "2")
    pipeline(c, [("CF.ADD", "chk:cf", "i%d" % i) for i in range(500)])
    pipeline(c, [("CF.DEL", "chk:cf", "i%d" % i) for i in range(0, 500, 3)])
    c.close()
    srv.kill9()
    out = subprocess.run([binary(), "--check", "--dir", srv.data_dir], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert " 0 errors" in out.stdout + out.stderr


def _time_to_first_reply(srv):
    srv.log = open(srv.log_path, "ab")  # srv.stop() closes it
    start = time.time()
    srv.proc = subprocess.Popen(
        [binary(), "--port", str(srv.port), "--dir", srv.data_dir, "--workers", "2",
         "--loglevel", "notice"] + srv.extra_args,
        stdout=srv.log, stderr=subprocess.STDOUT)
    while True:
        assert srv.proc.poll() is None, srv.read_log()
        try:
            with socket.create_connection(("127.0.0.1", srv.port), timeout=1) as s:
                s.sendall(encode(["CF.EXISTS", "fast:big", "item-7"]))
                s.settimeout(5)
                reply = s.recv(100)
                return time.time() - start, reply
        except (ConnectionRefusedError, ConnectionResetError):
            time.sleep(0.01)
        assert time.time() - start < 20


def test_restart_to_first_reply_is_fast(fresh_server):
    srv = fresh_server()
    c = RawClient(srv.port)
    # a huge (lazily allocated) filter, many small keys and some pages
    c.call("CF.RESERVE", "fast:huge", "1000000000")
    c.call("CF.RESERVE", "fast:big", "100000")
    pipeline(c, [("CF.ADD", "fast:big", "item-%d" % i) for i in range(5000)])
    pipeline(c, [("SET", "fast:s:%d" % i, "v") for i in range(5000)])
    c.close()
    srv.stop()
    elapsed, reply = _time_to_first_reply(srv)
    assert reply == b":1\r\n"
    assert elapsed < 2.0, "first reply after %.2f s" % elapsed


def test_deleted_and_replaced_keys_stay_gone_after_restart_and_kill9(fresh_server):
    srv = fresh_server("--appendfsync", "always")
    c = RawClient(srv.port)
    old_items = ["old-%d" % i for i in range(300)]
    for k in ("g:del", "g:unlink", "g:recreated", "g:to-string", "g:renamed-src", "g:flushed"):
        assert c.call("CF.RESERVE", k, "1000") == b"+OK\r\n"
        assert c.call("CF.INSERT", k, "ITEMS", *old_items) == b"*300\r\n" + b":1\r\n" * 300
    c.call("SET", "g:renamed-dst", "was a string")
    assert c.call("DEL", "g:del") == b":1\r\n"
    assert c.call("UNLINK", "g:unlink") == b":1\r\n"
    # same name, same shape: the old pages must not show through the new filter
    assert c.call("DEL", "g:recreated") == b":1\r\n"
    assert c.call("CF.RESERVE", "g:recreated", "1000") == b"+OK\r\n"
    assert c.call("CF.ADD", "g:recreated", "new") == b":1\r\n"
    assert c.call("SET", "g:to-string", "now a string") == b"+OK\r\n"
    assert c.call("RENAME", "g:renamed-src", "g:renamed-dst") == b"+OK\r\n"
    c.call("SELECT", "2")
    c.call("CF.ADD", "g:flushed", "db2")
    assert c.call("FLUSHDB") == b"+OK\r\n"
    c.call("SELECT", "0")

    def check(c):
        assert c.call("EXISTS", "g:del", "g:unlink", "g:renamed-src") == b":0\r\n"
        replies = pipeline(c, [("CF.EXISTS", "g:recreated", x) for x in old_items])
        assert replies.count(b":1\r\n") <= 3  # false positives only (~1.5% at most)
        assert b"+Number of items inserted\r\n:1\r\n" in c.call("CF.INFO", "g:recreated")
        assert c.call("TYPE", "g:to-string") == b"+string\r\n"
        assert c.call("GET", "g:to-string") == b"$12\r\nnow a string\r\n"
        assert c.call("TYPE", "g:renamed-dst") == b"+MBbloomCF\r\n"
        replies = pipeline(c, [("CF.EXISTS", "g:renamed-dst", x) for x in old_items])
        assert set(replies) == {b":1\r\n"}
        c.call("SELECT", "2")
        assert c.call("DBSIZE") == b":0\r\n"
        c.call("SELECT", "0")
        assert c.call("CF.EXISTS", "g:flushed", "old-1") == b":1\r\n"

    check(c)
    c.close()
    srv.restart()
    c = RawClient(srv.port)
    check(c)
    c.close()
    srv.kill9()
    srv.start()
    c = RawClient(srv.port)
    check(c)
    c.close()


def test_flushall_survives_restart(fresh_server):
    srv = fresh_server()
    c = RawClient(srv.port)
    for db in (0, 1):
        c.call("SELECT", db)
        c.call("CF.ADD", "fa:cf", "x")
        c.call("SET", "fa:s", "v")
    assert c.call("FLUSHALL") == b"+OK\r\n"
    c.call("SELECT", "0")
    c.call("CF.ADD", "fa:after", "x")
    c.close()
    srv.restart()
    c = RawClient(srv.port)
    for db in (0, 1):
        c.call("SELECT", db)
        assert c.call("DBSIZE") == (b":1\r\n" if db == 0 else b":0\r\n")
    c.call("SELECT", "0")
    assert c.call("CF.EXISTS", "fa:after", "x") == b":1\r\n"
    assert c.call("CF.EXISTS", "fa:cf", "x") == b":0\r\n"
    c.close()


def test_kill9_during_concurrent_writes_leaves_a_consistent_database(fresh_server):
    srv = fresh_server("--appendfsync", "always")
    acked = {t: [] for t in range(4)}
    stop = threading.Event()

    def writer(t):
        c = RawClient(srv.port)
        i = 0
        try:
            while not stop.is_set():
                item = "t%d-%d" % (t, i)
                if c.call("CF.ADD", "cw:shared", item) != b":1\r\n":
                    return
                acked[t].append(item)
                i += 1
        except (ConnectionError, OSError):
            pass

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    srv.kill9()  # while the writers are still going
    stop.set()
    for t in threads:
        t.join(30)
    total = sum(len(v) for v in acked.values())
    assert total > 100
    out = subprocess.run([binary(), "--check", "--dir", srv.data_dir], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and " 0 errors" in out.stdout + out.stderr, out.stdout + out.stderr
    srv.start()
    c = RawClient(srv.port)
    items = [x for v in acked.values() for x in v]
    replies = pipeline(c, [("CF.EXISTS", "cw:shared", x) for x in items])
    assert replies.count(b":1\r\n") == len(items)
    reply = c.call("CF.INFO", "cw:shared")
    count = int(reply.split(b"+Number of items inserted\r\n:")[1].split(b"\r\n")[0])
    # every acknowledged add is there; at most one unacknowledged add per writer may be too
    assert total <= count <= total + 4
    c.close()


def test_offline_check_after_rename(fresh_server):
    """RENAME keeps a filter's pages under the name it was created with (an alias records the new
    owner); the offline checker must follow that alias."""
    srv = fresh_server()
    c = RawClient(srv.port)
    c.call("CF.INSERT", "rn:a", "ITEMS", "x", "y", "z")
    assert c.call("RENAME", "rn:a", "rn:b") == b"+OK\r\n"
    c.call("CF.ADD", "rn:c", "x")
    assert c.call("RENAME", "rn:c", "rn:d") == b"+OK\r\n"
    assert c.call("RENAME", "rn:d", "rn:c") == b"+OK\r\n"  # back to its own name
    c.close()
    assert srv.stop() == 0
    out = subprocess.run([binary(), "--check", "--dir", srv.data_dir], capture_output=True,
                         text=True, timeout=60)
    text = out.stdout + out.stderr
    assert out.returncode == 0 and "checked 2 keys (2 filters)" in text and " 0 errors" in text, \
        text
    srv.start()
    c = RawClient(srv.port)
    assert c.call("CF.MEXISTS", "rn:b", "x", "y", "z") == b"*3\r\n:1\r\n:1\r\n:1\r\n"
    assert c.call("CF.EXISTS", "rn:c", "x") == b":1\r\n"
    c.close()


def test_offline_compact_folds_page_changes_and_keeps_every_item(fresh_server):
    """`cuckood --compact`: a full RocksDB compaction of a stopped server's directory. The
    filter answers the same afterwards, the checker is clean, and a running server's directory
    is refused (RocksDB's lock)."""
    srv = fresh_server()
    c = RawClient(srv.port)
    assert c.call("CF.RESERVE", "cmp:f", "200000") == b"+OK\r\n"
    items = [b"i%d" % i for i in range(20000)]
    for i in range(0, len(items), 1000):
        c.call("CF.INSERT", "cmp:f", "ITEMS", *items[i:i + 1000])
    for it in items[:500]:
        assert c.call("CF.DEL", "cmp:f", it) == b":1\r\n"
    info = c.call("CF.INFO", "cmp:f")
    c.close()
    busy = subprocess.run([binary(), "--compact", "--dir", srv.data_dir], capture_output=True,
                          text=True, timeout=60)
    assert busy.returncode != 0 and "lock" in (busy.stdout + busy.stderr).lower()
    assert srv.stop() == 0
    out = subprocess.run([binary(), "--compact", "--dir", srv.data_dir], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    check = subprocess.run([binary(), "--check", "--dir", srv.data_dir], capture_output=True,
                           text=True, timeout=120)
    assert check.returncode == 0 and " 0 errors" in check.stdout, check.stdout + check.stderr
    srv.start()
    c = RawClient(srv.port)
    assert c.call("CF.INFO", "cmp:f") == info
    kept = items[500:]
    assert c.call("CF.MEXISTS", "cmp:f", *kept) == b"*%d\r\n" % len(kept) + b":1\r\n" * len(kept)
    c.close()
