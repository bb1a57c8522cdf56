"""Replication: replicas fed by the primary's WAL converge to byte-identical filters, resume
after restarts, get a full sync when the WAL is gone, survive kill -9, and WAIT counts them."""
import random
import socket
import threading
import time

import pytest
from cuckood_nodes import info, sequence, snapshot, wait_for

redis = pytest.importorskip("redis")


def replica_of(primary):
    return "127.0.0.1 %d" % primary.port


def converged(primary, *replicas, timeout=30):
    p = primary.client()

    def same():
        s = sequence(p)
        return all(sequence(r.client()) == s for r in replicas) and s
    return wait_for(same, timeout, "replicas to reach the primary's sequence")


def link_up(replica, timeout=20):
    wait_for(lambda: info(replica.client(), "replication").get("master_link_status") == "up",
             timeout, "the replication link")


def workload(c, rng, rounds=40):
    """A mixed CF and keyspace workload over two databases."""
    c.execute_command("CF.RESERVE", "big", 20000, "BUCKETSIZE", 4, "EXPANSION", 2)
    c.execute_command("CF.RESERVE", "small", 64, "BUCKETSIZE", 1, "MAXITERATIONS", 5,
                      "EXPANSION", 1)
    for r in range(rounds):
        items = ["i%d" % rng.randrange(100000) for _ in range(50)]
        c.execute_command("CF.INSERT", "big", "ITEMS", *items)
        c.execute_command("CF.ADD", "auto%d" % (r % 5), "x%d" % r)
        try:
            c.execute_command("CF.ADD", "small", "s%d" % r)
        except redis.ResponseError:
            pass  # the small filter fills up
        c.execute_command("CF.DEL", "big", items[0])
        c.execute_command("SET", "str%d" % r, "v%d" % r)
        if r % 7 == 0:
            c.execute_command("EXPIRE", "str%d" % r, 1000 + r)
        if r % 11 == 0:
            c.execute_command("DEL", "str%d" % r)
    c.execute_command("CF.COMPACT", "big")
    c.execute_command("RENAME", "auto1", "renamed")
    c.execute_command("CF.ADD", "renamed", "after-rename")
    c.execute_command("PEXPIRE", "auto2", 5000000)
    # LOADCHUNK: a copy of "small" under another name.
    it = 0
    chunks = []
    while True:
        it, data = c.execute_command("CF.SCANDUMP", "small", it)
        if it == 0:
            break
        chunks.append((it, data))
    for it, data in chunks:
        c.execute_command("CF.LOADCHUNK", "copy", it, data)
    c.execute_command("SELECT", 1)
    c.execute_command("CF.ADD", "db1", "a")
    c.execute_command("SET", "gone", "1")
    c.execute_command("FLUSHDB")
    c.execute_command("CF.INSERT", "db1b", "ITEMS", "p", "q")
    c.execute_command("SELECT", 0)


def test_two_replicas_converge_byte_identical(nodes):
    primary = nodes.start("p")
    r1 = nodes.start("r1", "--replicaof", replica_of(primary))
    r2 = nodes.start("r2", "--replicaof", replica_of(primary))
    link_up(r1)
    link_up(r2)
    workload(primary.client(), random.Random(1))
    converged(primary, r1, r2)
    want = snapshot(primary.client(), dbs=(0, 1))
    assert len(want[0]) > 40
    assert snapshot(r1.client(), dbs=(0, 1)) == want
    assert snapshot(r2.client(), dbs=(0, 1)) == want
    # WAIT counts both replicas once they have the last write.
    c = primary.client()
    c.execute_command("CF.ADD", "big", "waited")
    assert c.execute_command("WAIT", 2, 2000) == 2
    assert r1.client().execute_command("CF.EXISTS", "big", "waited") == 1
    # The primary lists them as Sentinel reads them.
    inf = info(c, "replication")
    assert inf["role"] == "master" and inf["connected_slaves"] == "2"
    ports = sorted(int(inf["slave%d" % i].split("port=")[1].split(",")[0]) for i in range(2))
    assert ports == sorted([r1.port, r2.port])
    assert "state=online" in inf["slave0"]
    rinf = info(r1.client())
    assert rinf["role"] == "slave" and rinf["master_port"] == str(primary.port)
    assert int(rinf["sequence"]) == sequence(c) and len(rinf["run_id"]) == 40


def test_replica_is_read_only_and_role_replies(nodes):
    primary = nodes.start("p")
    r = nodes.start("r", "--replicaof", replica_of(primary))
    link_up(r)
    rc = r.client()
    with pytest.raises(redis.ResponseError, match="^You can't write against a read only replica"):
        rc.execute_command("CF.ADD", "k", "a")
    with pytest.raises(redis.ResponseError, match="READONLY|read only"):
        rc.execute_command("SET", "k", "a")
    role = rc.execute_command("ROLE")
    assert role[0] == b"slave" and role[2] == primary.port and role[3] == b"connected"
    prole = primary.client().execute_command("ROLE")
    assert prole[0] == b"master" and prole[2][0][1] == str(r.port).encode()
    with pytest.raises(redis.ResponseError, match="WAIT cannot be used with replica"):
        rc.execute_command("WAIT", 1, 10)


def test_cached_reads_on_a_replica_follow_applied_batches(nodes):
    primary = nodes.start("p")
    r = nodes.start("r", "--replicaof", replica_of(primary))
    link_up(r)
    p, rc = primary.client(), r.client()
    p.execute_command("CF.RESERVE", "c", 1000)
    p.execute_command("SET", "s", "one")
    converged(primary, r)
    for i in range(30):
        # Read on the replica (filling its cache), change on the primary, read again.
        assert rc.execute_command("CF.EXISTS", "c", "it%d" % i) == 0
        assert rc.execute_command("GET", "s") == (b"one" if i == 0 else b"v%d" % (i - 1))
        p.execute_command("CF.ADD", "c", "it%d" % i)
        p.execute_command("SET", "s", "v%d" % i)
        converged(primary, r)
        assert rc.execute_command("CF.EXISTS", "c", "it%d" % i) == 1
        assert rc.execute_command("GET", "s") == b"v%d" % i
    p.execute_command("DEL", "c")
    converged(primary, r)
    assert rc.execute_command("EXISTS", "c") == 0


def test_long_chain_reads_on_a_replica_follow_applied_batches(nodes):
    # A chain of 200 sub-filters is read through its index on the replica, which the batches it
    # applies must drop: each count equals the primary's after every change.
    primary = nodes.start("p", "--cf-max-expansions", "65535")
    r = nodes.start("r", "--replicaof", replica_of(primary), "--cf-max-expansions", "65535")
    link_up(r)
    p, rc = primary.client(), r.client()
    p.execute_command("CF.RESERVE", "chain", 2, "BUCKETSIZE", 1, "EXPANSION", 1)
    p.execute_command("CF.INSERT", "chain", "ITEMS", *["g%d" % i for i in range(400)])
    probe = ["g%d" % i for i in range(0, 400, 9)] + ["new%d" % i for i in range(20)]
    for i in range(20):
        converged(primary, r)
        want = [p.execute_command("CF.COUNT", "chain", x) for x in probe]
        assert [rc.execute_command("CF.COUNT", "chain", x) for x in probe] == want
        if i % 4 == 3:
            p.execute_command("CF.DEL", "chain", "g%d" % (i * 9))
        else:
            p.execute_command("CF.ADD", "chain", "new%d" % i)
    assert int(info(rc, "rocksdb")["chain_index_builds"]) > 1


def test_replica_restart_resumes_and_empty_replica_full_syncs_under_writes(nodes):
    primary = nodes.start("p")
    p = primary.client()
    stop = threading.Event()
    acked = []

    def writer():
        c = primary.client()
        n = 0
        while not stop.is_set():
            c.execute_command("CF.ADD", "w", "item%d" % n)
            acked.append(n)
            n += 1

    p.execute_command("CF.RESERVE", "w", 200000)
    t = threading.Thread(target=writer)
    t.start()
    try:
        time.sleep(0.3)
        r = nodes.start("r", "--replicaof", replica_of(primary))  # empty: full sync
        link_up(r)
        time.sleep(0.3)
        r.proc.stop()
        time.sleep(0.3)
        r.proc.start()  # resumes from its own sequence
        link_up(r)
        time.sleep(0.3)
    finally:
        stop.set()
        t.join()
    converged(primary, r)
    assert snapshot(r.client()) == snapshot(p)
    log = primary.proc.read_log()
    assert log.count("gets a full sync") == 1, log
    assert "continues from sequence" in log


def test_wal_retention_exceeded_forces_full_sync(nodes):
    primary = nodes.start("p", "--repl-backlog-ttl", "0")
    r = nodes.start("r", "--replicaof", replica_of(primary))
    link_up(r)
    p = primary.client()
    p.execute_command("CF.ADD", "k", "before")
    converged(primary, r)
    r.proc.stop()
    for i in range(200):
        p.execute_command("CF.ADD", "k", "while-down-%d" % i)
    p.execute_command("SAVE")  # flushes: the WAL files that held those writes are deleted
    p.execute_command("CF.ADD", "k", "after-save")
    p.execute_command("SAVE")
    r.proc.start()
    link_up(r)
    converged(primary, r)
    assert snapshot(r.client()) == snapshot(p)
    assert primary.proc.read_log().count("gets a full sync") == 2


def test_kill9_of_replica_and_primary_during_writes(nodes):
    primary = nodes.start("p", "--appendfsync", "always")
    r = nodes.start("r", "--replicaof", replica_of(primary))
    link_up(r)
    p = primary.client()
    p.execute_command("CF.RESERVE", "k", 100000)
    acked = []
    stop = threading.Event()

    def writer():
        c = primary.client()
        n = 0
        while not stop.is_set():
            try:
                c.execute_command("CF.INSERT", "k", "ITEMS", "a%d" % n, "b%d" % n)
                acked.append(n)
            except (redis.ConnectionError, redis.TimeoutError, OSError):
                time.sleep(0.05)
                try:
                    c = primary.client()
                except OSError:
                    pass
            n += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        time.sleep(0.4)
        r.proc.kill9()
        time.sleep(0.2)
        r.proc.start()
        time.sleep(0.4)
        primary.proc.kill9()
        time.sleep(0.2)
        primary.proc.start()
        time.sleep(0.4)
    finally:
        stop.set()
        t.join()
    link_up(r)
    converged(primary, r)
    pc = primary.client()
    for n in acked[::25]:  # appendfsync always: every acknowledged insert survived the kill
        assert pc.execute_command("CF.EXISTS", "k", "a%d" % n) == 1
    assert snapshot(r.client()) == snapshot(pc)
    for node in (primary, r):
        node.proc.stop()
        rc, out = nodes.check(node)
        assert rc == 0, out


def test_promotion_and_old_primary_becomes_replica(nodes):
    primary = nodes.start("p")
    r1 = nodes.start("r1", "--replicaof", replica_of(primary))
    r2 = nodes.start("r2", "--replicaof", replica_of(primary))
    link_up(r1)
    link_up(r2)
    p = primary.client()
    p.execute_command("CF.INSERT", "k", "ITEMS", "a", "b", "c")
    converged(primary, r1, r2)
    # r1 becomes the primary at once, keeping what it applied; r2 and the old primary follow it.
    assert r1.client().execute_command("REPLICAOF", "NO", "ONE") in (True, b"OK")
    n1 = r1.client()
    assert info(n1, "replication")["role"] == "master"
    n1.execute_command("CF.ADD", "k", "on-new-primary")
    assert r2.client().execute_command("REPLICAOF", "127.0.0.1", r1.port) in (True, b"OK")
    assert p.execute_command("SLAVEOF", "127.0.0.1", r1.port) in (True, b"OK")
    link_up(r2)
    link_up(primary)
    converged(r1, r2, primary)
    want = snapshot(n1)
    assert snapshot(r2.client()) == want and snapshot(p) == want
    assert p.execute_command("CF.EXISTS", "k", "on-new-primary") == 1
    raw = r2.client()
    raw.set_response_callback("REPLICAOF", lambda r, **kw: r)
    assert raw.execute_command("REPLICAOF", "127.0.0.1", r1.port) == \
        b"OK Already connected to specified master"
    # r2 continued its history (it held a prefix of r1's): no second full sync for it.
    assert r1.proc.read_log().count("gets a full sync") == 0
    # Versions stay unique after promotion: a new filter on the new primary is a new version.
    n1.execute_command("CF.RESERVE", "fresh", 100)
    converged(r1, r2)
    assert r2.client().execute_command("CF.EXISTS", "fresh", "x") == 0


def send_line(sock, line):
    sock.sendall(line)


def read_line(sock):
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(1)
        if not chunk:
            break
        data += chunk
    return data


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def test_handshake_needs_auth_and_a_known_protocol(nodes):
    primary = nodes.start("p", "--requirepass", "secret")
    with socket.create_connection(("127.0.0.1", primary.port), timeout=5) as s:
        s.sendall(resp("REPLSYNC", 1, "?", 0))
        assert read_line(s).startswith(b"-NOAUTH")
        s.sendall(resp("AUTH", "secret"))
        assert read_line(s) == b"+OK\r\n"
        s.sendall(resp("REPLSYNC", "x", "?", 0))
        assert read_line(s).startswith(b"-ERR REPLSYNC")
        s.sendall(resp("REPLSYNC", 99, "?", 0))
        assert b"protocol version 99 is not supported" in read_line(s)
    # A replica with the right masterauth replicates.
    primary.password = "secret"
    primary.client().execute_command("CF.ADD", "k", "a")
    r = nodes.start("r", "--replicaof", replica_of(primary), "--masterauth", "secret")
    link_up(r)
    converged(primary, r)
    assert r.client().execute_command("CF.EXISTS", "k", "a") == 1


class FakePrimary:
    """Accepts one replica and answers its handshake with the given stream bytes."""

    def __init__(self, stream):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.stream = stream
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                buf = b""
                while b"REPLSYNC" not in buf:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    buf += chunk
                    if b"REPLCONF" in buf and not buf.endswith(b"+OK"):
                        conn.sendall(b"+OK\r\n" * buf.count(b"REPLCONF"))
                        buf = buf.replace(b"REPLCONF", b"")
                time.sleep(0.05)
                conn.sendall(self.stream)
                time.sleep(0.2)

    def close(self):
        self.sock.close()


@pytest.mark.parametrize("stream", [
    b"+CONTINUE %s 0\r\n+BATCH 1 30\r\nnot a write batch at all......\r\n" % (b"a" * 40),
    b"+GARBAGE\r\n",
    b"+FULLSYNC %s 5\r\n+FILE CURRENT 100\r\nshort" % (b"b" * 40),
    b"+FULLSYNC %s 5\r\n+FILE ../evil 3\r\nabc+CRC 00000000\r\n" % (b"c" * 40),
    b"+FULLSYNC %s 5\r\n+FILE MANIFEST-000001 3\r\nabc+CRC 12345678\r\n+ENDFILES 5\r\n" % (b"d" * 40),
])
def test_bad_stream_is_refused_and_nothing_is_applied(nodes, stream):
    fake = FakePrimary(stream)
    try:
        r = nodes.start("r")
        c = r.client()
        c.execute_command("CF.INSERT", "mine", "ITEMS", "a", "b")
        before = snapshot(c)
        c.execute_command("REPLICAOF", "127.0.0.1", fake.port)
        time.sleep(1.5)
        c.execute_command("REPLICAOF", "NO", "ONE")
        assert snapshot(c) == before
        assert c.execute_command("PING") is True
        assert c.execute_command("CF.EXISTS", "mine", "a") == 1
    finally:
        fake.close()
    r.proc.stop()
    rc, out = nodes.check(r)
    assert rc == 0, out


def test_a_replica_that_stops_reading_never_holds_up_the_primary(nodes):
    import signal
    primary = nodes.start("p", "--repl-timeout", "2")
    r = nodes.start("r", "--replicaof", replica_of(primary))
    link_up(r)
    p = primary.client()
    p.execute_command("CF.RESERVE", "k", 200000)
    r.proc.proc.send_signal(signal.SIGSTOP)  # the replica stops reading
    try:
        # Far more than socket buffers hold: the primary's clients are answered all along, and
        # the stalled replica is dropped once the replication timeout passes.
        for i in range(300):
            p.execute_command("CF.INSERT", "k", "ITEMS", *["x%d-%d" % (i, j) for j in range(100)])
        wait_for(lambda: info(p, "replication")["connected_slaves"] == "0", 30,
                 "the primary to drop the stalled replica")
    finally:
        r.proc.proc.send_signal(signal.SIGCONT)
    link_up(r, timeout=40)
    converged(primary, r)
    assert snapshot(r.client()) == snapshot(p)
