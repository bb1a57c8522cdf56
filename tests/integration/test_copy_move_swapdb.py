"""COPY, MOVE and SWAPDB: replies and errors compared byte for byte with a real redis-server for
string keys; filters copied (equal SCANDUMP, independent afterwards, large ones too) and moved;
SWAPDB swaps databases across a restart and on a replica; WATCH sees all three; cluster mode
refuses them as Redis does."""
import shutil

import pytest
from cuckood_nodes import info, sequence, wait_for
from cuckood_testlib import RawClient, free_port, start_real_redis


@pytest.fixture(scope="module")
def real_redis_port():
    proc, port, d = start_real_redis("real-redis-copy-")
    yield port
    proc.terminate()
    proc.wait(10)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def raw(server):
    c = RawClient(server.port)
    c.call("FLUSHALL")
    yield c
    c.call("FLUSHALL")
    c.close()


def scandump(c, key):
    """Every SCANDUMP chunk of a filter, as raw replies."""
    out = []
    it = b"0"
    while True:
        reply = c.call("CF.SCANDUMP", key, it)
        # *2\r\n:<next>\r\n$<n>\r\n<data>\r\n
        head, rest = reply.split(b"\r\n", 1)
        nxt = rest.split(b"\r\n", 1)[0][1:]
        if nxt == b"0":
            return out
        out.append(reply)
        it = nxt


GENERIC = [
    ("SET", "a", "1"),
    ("SET", "t", "v", "EX", "1000"),
    ("COPY", "a", "a"),
    ("COPY", "missing", "missing"),
    ("COPY", "a", "a", "DB", "99"),
    ("COPY", "a", "b", "DB", "99"),
    ("COPY", "a", "b", "DB", "16"),
    ("COPY", "a", "b", "DB", "-1"),
    ("COPY", "a", "b", "DB", "x"),
    ("COPY", "a", "b", "DB", "01"),
    ("COPY", "a", "b", "DB", "+1"),
    ("COPY", "a", "b", "DB", " 1"),
    ("COPY", "a", "b", "DB", "99999999999"),
    ("COPY", "a", "b", "DB", "-3000000000"),
    ("COPY", "a", "b", "DB", "99999999999999999999"),
    ("COPY", "a", "b", "DB", "99", "FOO"),
    ("COPY", "a", "b", "FOO", "DB", "99"),
    ("COPY", "a", "b", "DB"),
    ("COPY", "a", "b", "FOO"),
    ("COPY", "a", "b", "DB", "x", "REPLACE"),
    ("COPY", "a", "b", "REPLACE", "REPLACE", "FOO"),
    ("COPY", "a"),
    ("COPY",),
    ("COPY", "missing", "b"),
    ("COPY", "missing", "b", "DB", "99"),
    ("COPY", "a", "b"),
    ("GET", "b"),
    ("SET", "a", "2"),
    ("COPY", "a", "b"),
    ("GET", "b"),
    ("COPY", "a", "b", "REPLACE"),
    ("GET", "b"),
    ("COPY", "a", "b", "replace", "REPLACE"),
    ("COPY", "a", "a", "DB", "1"),
    ("COPY", "a", "b", "DB", "0", "DB", "2"),
    ("COPY", "t", "t2"),
    ("TTL", "t2"),
    ("COPY", "t", "t3", "db", "3"),
    ("SELECT", "3"),
    ("TTL", "t3"),
    ("GET", "t3"),
    ("SELECT", "2"),
    ("GET", "b"),
    ("SELECT", "1"),
    ("GET", "a"),
    ("SELECT", "0"),
    ("MOVE", "a", "0"),
    ("MOVE", "missing", "0"),
    ("MOVE", "a", "16"),
    ("MOVE", "a", "-1"),
    ("MOVE", "a", "x"),
    ("MOVE", "a", "1.0"),
    ("MOVE", "a", "99999999999"),
    ("MOVE", "a", "99999999999999999999"),
    ("MOVE", "a"),
    ("MOVE", "a", "1", "2"),
    ("MOVE", "missing", "1"),
    ("MOVE", "a", "1"),  # db 1 holds a
    ("EXISTS", "a"),
    ("MOVE", "b", "5"),
    ("EXISTS", "b"),
    ("SELECT", "5"),
    ("GET", "b"),
    ("MOVE", "b", "0"),
    ("GET", "b"),
    ("SELECT", "0"),
    ("GET", "b"),
    ("MOVE", "t", "4"),
    ("SELECT", "4"),
    ("TTL", "t"),
    ("SELECT", "0"),
    ("SWAPDB", "0", "16"),
    ("SWAPDB", "16", "0"),
    ("SWAPDB", "-1", "0"),
    ("SWAPDB", "x", "1"),
    ("SWAPDB", "0", "x"),
    ("SWAPDB", "x", "y"),
    ("SWAPDB", "+1", "0"),
    ("SWAPDB", "0", "-0"),
    ("SWAPDB", "1.5", "0"),
    ("SWAPDB", "0", "99999999999"),
    ("SWAPDB", "99999999999", "0"),
    ("SWAPDB", "0"),
    ("SWAPDB", "0", "1", "2"),
    ("SWAPDB", "0", "0"),
    ("GET", "b"),
    ("SWAPDB", "0", "1"),
    ("GET", "b"),
    ("GET", "a"),
    ("DBSIZE",),
    ("SELECT", "1"),
    ("GET", "b"),
    ("DBSIZE",),
    ("SWAPDB", "1", "0"),
    ("GET", "b"),
    ("SELECT", "0"),
    ("GET", "b"),
    # Inside MULTI: the commands after SWAPDB see the swapped databases.
    ("MULTI",),
    ("SET", "mx", "1"),
    ("SWAPDB", "0", "1"),
    ("GET", "mx"),
    ("SWAPDB", "0", "1"),
    ("GET", "mx"),
    ("COPY", "mx", "my", "DB", "3"),
    ("MOVE", "mx", "4"),
    ("COPY", "mx", "mx"),
    ("SWAPDB", "0", "x"),
    ("EXEC",),
    ("SELECT", "3"),
    ("GET", "my"),
    ("SELECT", "4"),
    ("GET", "mx"),
    ("SELECT", "0"),
]


def test_generic_replies_match_redis(raw, real_redis_port):
    real = RawClient(real_redis_port)
    real.call("FLUSHALL")
    try:
        for cmd in GENERIC:
            assert raw.call(*cmd) == real.call(*cmd), cmd
        for cmd in (("COMMAND", "INFO", "COPY", "MOVE", "SWAPDB"),
                    ("COMMAND", "GETKEYS", "COPY", "a", "b", "DB", "1"),
                    ("COMMAND", "GETKEYS", "MOVE", "a", "1")):
            assert raw.call(*cmd) == real.call(*cmd), cmd
        raw.call("HELLO", "3")
        real.call("HELLO", "3")
        for name in ("COPY", "MOVE", "SWAPDB"):
            assert raw.call("COMMAND", "DOCS", name) == real.call("COMMAND", "DOCS", name), name
    finally:
        real.call("FLUSHALL")
        real.close()


def test_copy_of_a_filter_is_equal_and_independent(raw):
    assert raw.call("CF.RESERVE", "f", "1000", "BUCKETSIZE", "4", "EXPANSION", "2") == b"+OK\r\n"
    items = ["item%d" % i for i in range(3000)]  # past the first sub-filter
    for i in range(0, len(items), 500):
        raw.call("CF.INSERT", "f", "ITEMS", *items[i:i + 500])
    raw.call("PEXPIRE", "f", "100000000")
    assert raw.call("COPY", "f", "g") == b":1\r\n"
    assert scandump(raw, "g") == scandump(raw, "f")
    assert raw.call("CF.INFO", "g") == raw.call("CF.INFO", "f")
    assert raw.call("TYPE", "g") == b"+MBbloomCF\r\n"
    assert int(raw.call("PTTL", "g")[1:]) > 99000000
    reply = raw.call("CF.MEXISTS", "g", *items[:200])
    assert reply == b"*200\r\n" + b":1\r\n" * 200
    # Independent afterwards, both ways.
    before_f = scandump(raw, "f")
    raw.call("CF.ADD", "g", "only-in-g")
    assert raw.call("CF.EXISTS", "f", "only-in-g") == b":0\r\n"
    assert scandump(raw, "f") == before_f
    raw.call("CF.DEL", "f", "item0")
    assert raw.call("CF.EXISTS", "g", "item0") == b":1\r\n"
    # Not over an existing key without REPLACE; over it with.
    raw.call("SET", "s", "v")
    assert raw.call("COPY", "f", "s") == b":0\r\n"
    assert raw.call("TYPE", "s") == b"+string\r\n"
    assert raw.call("COPY", "f", "s", "REPLACE") == b":1\r\n"
    assert scandump(raw, "s") == scandump(raw, "f")
    assert raw.call("COPY", "s", "g", "REPLACE") == b":1\r\n"
    assert raw.call("CF.EXISTS", "g", "only-in-g") == b":0\r\n"
    # A renamed filter copies too; to another database.
    assert raw.call("RENAME", "f", "renamed") == b"+OK\r\n"
    assert raw.call("COPY", "renamed", "other", "DB", "7") == b":1\r\n"
    dump = scandump(raw, "renamed")
    raw.call("SELECT", "7")
    assert scandump(raw, "other") == dump
    assert raw.call("CF.EXISTS", "other", "item1") == b":1\r\n"
    assert raw.call("COPY", "other", "renamed", "DB", "0") == b":0\r\n"
    assert raw.call("COPY", "other", "renamed", "DB", "0", "REPLACE") == b":1\r\n"
    raw.call("SELECT", "0")
    assert scandump(raw, "renamed") == dump


def test_copy_of_a_large_filter(raw):
    # 32 MiB of buckets, most pages holding a fingerprint: the copy is written in several
    # batches.
    assert raw.call("CF.RESERVE", "big", "20000000", "BUCKETSIZE", "4") == b"+OK\r\n"
    items = ["b%d" % i for i in range(30000)]
    for i in range(0, len(items), 1000):
        raw.call("CF.INSERT", "big", "ITEMS", *items[i:i + 1000])
    assert raw.call("COPY", "big", "big2", "DB", "2") == b":1\r\n"
    raw.call("SELECT", "2")
    assert raw.call("CF.MEXISTS", "big2", *items[:1000]) == b"*1000\r\n" + b":1\r\n" * 1000
    info_copy = raw.call("CF.INFO", "big2")
    d2 = raw.call("DUMP", "big2")
    raw.call("SELECT", "0")
    assert raw.call("CF.INFO", "big") == info_copy
    assert raw.call("DUMP", "big") == d2


def test_move_of_a_filter(raw):
    raw.call("CF.RESERVE", "mf", "500")
    raw.call("CF.INSERT", "mf", "ITEMS", *["m%d" % i for i in range(300)])
    dump = scandump(raw, "mf")
    raw.call("SELECT", "3")
    raw.call("SET", "mf", "taken")
    raw.call("SELECT", "0")
    assert raw.call("MOVE", "mf", "3") == b":0\r\n"
    assert raw.call("EXISTS", "mf") == b":1\r\n"
    raw.call("SELECT", "3")
    raw.call("DEL", "mf")
    raw.call("SELECT", "0")
    assert raw.call("MOVE", "mf", "3") == b":1\r\n"
    assert raw.call("EXISTS", "mf") == b":0\r\n"
    raw.call("SELECT", "3")
    assert scandump(raw, "mf") == dump
    assert raw.call("CF.EXISTS", "mf", "m7") == b":1\r\n"
    assert raw.call("CF.ADD", "mf", "later") == b":1\r\n"


def test_watch_sees_copy_move_and_swapdb(server):
    w = RawClient(server.port)
    o = RawClient(server.port)
    try:
        o.call("FLUSHALL")

        def aborted_by(db, key, *cmd):
            w.call("SELECT", str(db))
            w.call("WATCH", key)
            w.call("MULTI")
            w.call("PING")
            o.call(*cmd)
            return w.call("EXEC") == b"*-1\r\n"

        o.call("SET", "src", "v")
        # COPY touches the destination (in its database), not the source.
        assert aborted_by(0, "dst", "COPY", "src", "dst")
        assert not aborted_by(0, "src", "COPY", "src", "dst2")
        assert aborted_by(4, "dst", "COPY", "src", "dst", "DB", "4")
        assert not aborted_by(0, "dst", "COPY", "src", "dst")  # exists: :0
        # MOVE touches the key in both databases.
        assert aborted_by(0, "src", "MOVE", "src", "5")
        o.call("SET", "src", "v")
        assert aborted_by(6, "src", "MOVE", "src", "6")
        # SWAPDB touches keys watched in either database that exist in either.
        assert aborted_by(6, "src", "SWAPDB", "6", "8")
        assert aborted_by(8, "src", "SWAPDB", "6", "8")
        assert not aborted_by(8, "nowhere", "SWAPDB", "6", "8")
        assert not aborted_by(9, "src", "SWAPDB", "6", "8")
        o.call("FLUSHALL")  # (SWAPDB ran four times above: every database is back in place)
    finally:
        w.close()
        o.close()


def test_swapdb_survives_a_restart(fresh_server):
    srv = fresh_server()
    c = RawClient(srv.port)
    c.call("SET", "k", "zero")
    c.call("CF.ADD", "f", "in-zero")
    c.call("SELECT", "1")
    c.call("SET", "k", "one")
    assert c.call("SWAPDB", "0", "1") == b"+OK\r\n"
    assert c.call("GET", "k") == b"$4\r\nzero\r\n"  # db 1 now holds what db 0 held
    assert c.call("CF.EXISTS", "f", "in-zero") == b":1\r\n"
    c.call("SELECT", "0")
    assert c.call("GET", "k") == b"$3\r\none\r\n"
    assert c.call("SWAPDB", "1", "2") == b"+OK\r\n"
    c.call("SET", "new-in-0", "x")
    c.close()
    srv.restart()
    c = RawClient(srv.port)
    assert c.call("GET", "k") == b"$3\r\none\r\n"
    assert c.call("GET", "new-in-0") == b"$1\r\nx\r\n"
    c.call("SELECT", "2")
    assert c.call("GET", "k") == b"$4\r\nzero\r\n"
    assert c.call("CF.EXISTS", "f", "in-zero") == b":1\r\n"
    assert c.call("CF.ADD", "f", "after") == b":1\r\n"
    c.call("SELECT", "1")
    assert c.call("DBSIZE") == b":0\r\n"
    keyspace = c.call("INFO", "keyspace")
    assert b"db0:keys=2," in keyspace and b"db2:keys=2," in keyspace
    assert b"db1:" not in keyspace
    # DEBUG RELOAD keeps the map too.
    c.call("SELECT", "2")
    assert c.call("DEBUG", "RELOAD") == b"+OK\r\n"
    assert c.call("GET", "k") == b"$4\r\nzero\r\n"
    # FLUSHDB empties the database SELECTed, wherever it is stored.
    assert c.call("FLUSHDB") == b"+OK\r\n"
    assert c.call("DBSIZE") == b":0\r\n"
    c.call("SELECT", "0")
    assert c.call("GET", "k") == b"$3\r\none\r\n"
    c.close()


def test_swapdb_reaches_a_replica(nodes):
    primary = nodes.start("p")
    replica = nodes.start("r", "--replicaof", "127.0.0.1 %d" % primary.port)
    wait_for(lambda: info(replica.client(), "replication").get("master_link_status") == "up",
             20, "the replication link")
    p = primary.client()
    p.set("k", "zero")
    p.execute_command("CF.ADD", "f", "x")
    p.execute_command("SWAPDB", "0", "3")
    p.set("after", "swap")  # written to db 0, which is namespace 3 now
    p3 = primary.client(db=3)
    assert p3.execute_command("COPY", "f", "g", "DB", "5") == 1
    assert p3.execute_command("MOVE", "k", "6") == 1
    s = sequence(p)
    wait_for(lambda: sequence(replica.client()) == s, 30, "the replica to catch up")
    r0 = replica.client(db=0)
    r3 = replica.client(db=3)
    assert r0.get("k") is None
    assert r0.get("after") == b"swap"
    assert r3.get("k") is None
    assert replica.client(db=6).get("k") == b"zero"
    assert r3.execute_command("CF.EXISTS", "f", "x") == 1
    assert replica.client(db=5).execute_command("CF.EXISTS", "g", "x") == 1
    assert r3.execute_command("DBSIZE") == 1
    # A replica refuses writes: SWAPDB too.
    c = RawClient(replica.port)
    assert c.call("SWAPDB", "0", "1").startswith(b"-READONLY")
    c.close()
    # The replica restarts with the map (its own copy of the record).
    replica.proc.restart()
    wait_for(lambda: info(replica.client(), "replication").get("master_link_status") == "up",
             20, "the replication link")
    assert replica.client(db=6).get("k") == b"zero"
    assert replica.client(db=0).get("after") == b"swap"
    # The offline checker finds the primary's copies and moves consistent.
    primary.proc.stop()
    code, out = nodes.check(primary)
    assert code == 0, out


def test_cluster_mode_refuses_move_swapdb_and_copy_to_another_db(fresh_server):
    node = fresh_server("--cluster-enabled", "yes")
    c = RawClient(node.port)
    me = "A" * 40
    assert c.call("CLUSTERX", "SETNODEID", me) == b"+OK\r\n"
    assert c.call("CLUSTERX", "SETNODES", "%s 127.0.0.1 %d master - 0-16383\n" % (me, node.port),
                  "1") == b"+OK\r\n"
    c.call("SET", "{t}a", "v")
    assert c.call("SWAPDB", "0", "1") == b"-ERR SWAPDB is not allowed in cluster mode\r\n"
    assert c.call("MOVE", "{t}a", "1") == b"-ERR MOVE is not allowed in cluster mode\r\n"
    assert c.call("COPY", "{t}a", "{t}b", "DB", "1") == \
        b"-ERR Copying to another database is not allowed in cluster mode\r\n"
    assert c.call("COPY", "{t}a", "{t}b", "DB", "0") == b":1\r\n"
    assert c.call("COPY", "{t}a", "{t}c") == b":1\r\n"
    assert c.call("COPY", "{t}a", "other").startswith(b"-CROSSSLOT")
    c.close()
