"""MULTI / EXEC / DISCARD / WATCH with CF commands, over raw sockets (exact reply bytes)."""
import shutil
import threading
import time

import pytest
from cuckood_testlib import RawClient, encode, free_port, start_real_redis


@pytest.fixture
def raw(server):
    c = RawClient(server.port)
    yield c
    c.close()


@pytest.fixture
def other(server):
    c = RawClient(server.port)
    yield c
    c.close()


def info_items(raw, key):
    reply = raw.call("CF.INFO", key)
    marker = b"+Number of items inserted\r\n:"
    start = reply.index(marker) + len(marker)
    return int(reply[start:reply.index(b"\r\n", start)])


def test_multi_exec_returns_every_reply(raw):
    k = "tx:basic"
    assert raw.call("MULTI") == b"+OK\r\n"
    queued = [
        ("CF.RESERVE", k, "100"),
        ("CF.ADD", k, "a"),
        ("CF.ADDNX", k, "a"),
        ("CF.EXISTS", k, "a"),
        ("CF.MEXISTS", k, "a", "zzz"),
        ("CF.INSERT", k, "ITEMS", "b", "c"),
        ("CF.INSERTNX", k, "ITEMS", "b", "d"),
        ("CF.COUNT", k, "a"),
        ("CF.DEL", k, "d"),
        ("CF.RESERVE", k, "100"),  # fails at run time; the rest still runs
        ("CF.INFO", k),
    ]
    for cmd in queued:
        assert raw.call(*cmd) == b"+QUEUED\r\n"
    assert raw.call("EXEC") == (
        b"*11\r\n+OK\r\n:1\r\n:0\r\n:1\r\n*2\r\n:1\r\n:0\r\n*2\r\n:1\r\n:1\r\n*2\r\n:0\r\n:1\r\n"
        b":1\r\n:1\r\n-ERR item exists\r\n"
        b"*16\r\n+Size\r\n:184\r\n+Number of buckets\r\n:64\r\n+Number of filters\r\n:1\r\n"
        b"+Number of items inserted\r\n:3\r\n+Number of items deleted\r\n:1\r\n"
        b"+Bucket size\r\n:2\r\n+Expansion rate\r\n:1\r\n+Max iterations\r\n:20\r\n")
    # the connection is out of MULTI again
    assert raw.call("CF.EXISTS", k, "b") == b":1\r\n"
    assert raw.call("EXEC") == b"-ERR EXEC without MULTI\r\n"


def test_multi_exec_in_resp3(raw):
    k = "tx:resp3"
    raw.call("HELLO", "3")
    raw.call("MULTI")
    for cmd in [("CF.ADD", k, "a"), ("CF.EXISTS", k, "a"), ("CF.EXISTS", k, "nope"),
                ("GET", "tx:resp3:missing"), ("CF.INFO", k), ("CF.MEXISTS", k, "a", "nope"),
                ("CF.INSERTNX", k, "ITEMS", "a")]:
        assert raw.call(*cmd) == b"+QUEUED\r\n"
    assert raw.call("EXEC") == (
        b"*7\r\n#t\r\n#t\r\n#f\r\n_\r\n"
        b"%8\r\n+Size\r\n:1080\r\n+Number of buckets\r\n:512\r\n+Number of filters\r\n:1\r\n"
        b"+Number of items inserted\r\n:1\r\n+Number of items deleted\r\n:0\r\n"
        b"+Bucket size\r\n:2\r\n+Expansion rate\r\n:1\r\n+Max iterations\r\n:20\r\n"
        b"*2\r\n#t\r\n#f\r\n*1\r\n:0\r\n")


def test_empty_transaction(raw):
    assert raw.call("MULTI") == b"+OK\r\n"
    assert raw.call("EXEC") == b"*0\r\n"


def test_queuing_errors_abort_exec(raw):
    k = "tx:abort"
    assert raw.call("MULTI") == b"+OK\r\n"
    assert raw.call("CF.ADD", k, "x") == b"+QUEUED\r\n"
    assert raw.call("NOSUCHCOMMAND", "a") == (
        b"-ERR unknown command 'NOSUCHCOMMAND', with args beginning with: 'a' \r\n")
    assert raw.call("CF.ADD", k, "y") == b"+QUEUED\r\n"
    assert raw.call("EXEC") == b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    assert raw.call("EXISTS", k) == b":0\r\n"

    assert raw.call("MULTI") == b"+OK\r\n"
    assert raw.call("CF.ADD", k, "x") == b"+QUEUED\r\n"
    assert raw.call("GET") == b"-ERR wrong number of arguments for 'get' command\r\n"
    assert raw.call("EXEC") == b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    assert raw.call("EXISTS", k) == b":0\r\n"


def test_multi_state_errors(raw):
    assert raw.call("EXEC") == b"-ERR EXEC without MULTI\r\n"
    assert raw.call("DISCARD") == b"-ERR DISCARD without MULTI\r\n"
    assert raw.call("MULTI") == b"+OK\r\n"
    assert raw.call("MULTI") == b"-ERR MULTI calls can not be nested\r\n"
    assert raw.call("WATCH", "tx:x") == b"-ERR WATCH inside MULTI is not allowed\r\n"
    # neither error poisons the transaction
    assert raw.call("PING") == b"+QUEUED\r\n"
    assert raw.call("EXEC") == b"*1\r\n+PONG\r\n"


def test_discard(raw):
    k = "tx:discard"
    assert raw.call("MULTI") == b"+OK\r\n"
    assert raw.call("CF.ADD", k, "x") == b"+QUEUED\r\n"
    assert raw.call("CF.RESERVE", k + ":2", "100") == b"+QUEUED\r\n"
    assert raw.call("DISCARD") == b"+OK\r\n"
    assert raw.call("EXISTS", k, k + ":2") == b":0\r\n"
    assert raw.call("CF.EXISTS", k, "x") == b":0\r\n"
    assert raw.call("EXEC") == b"-ERR EXEC without MULTI\r\n"


def test_watch_then_modify_from_another_connection_aborts(raw, other):
    k = "tx:watch"
    raw.call("CF.ADD", k, "first")
    assert raw.call("WATCH", k) == b"+OK\r\n"
    assert other.call("CF.ADD", k, "second") == b":1\r\n"
    raw.call("MULTI")
    assert raw.call("CF.ADD", k, "third") == b"+QUEUED\r\n"
    assert raw.call("EXEC") == b"*-1\r\n"
    assert info_items(raw, k) == 2  # "third" was never added
    # after a failed EXEC nothing is watched any more
    raw.call("MULTI")
    raw.call("CF.ADD", k, "third")
    assert raw.call("EXEC") == b"*1\r\n:1\r\n"
    assert info_items(raw, k) == 3


def test_watch_abort_is_null_in_resp3(raw, other):
    k = "tx:watch3"
    raw.call("HELLO", "3")
    raw.call("WATCH", k)
    other.call("CF.RESERVE", k, "100")  # creating a watched key counts as a change
    raw.call("MULTI")
    raw.call("CF.ADD", k, "x")
    assert raw.call("EXEC") == b"_\r\n"


@pytest.mark.parametrize("change", [
    ("CF.DEL", "{k}", "item"),
    ("CF.INSERT", "{k}", "ITEMS", "n1", "n2"),
    ("DEL", "{k}"),
    ("EXPIRE", "{k}", "100"),
    ("RENAME", "{k}", "{k}:renamed"),
    ("CF.LOADCHUNK", "{k}", "1", "HDR"),
])
def test_watch_sees_every_kind_of_change(raw, other, change):
    k = "tx:watchkind:%s" % change[0]
    raw.call("DEL", k, k + ":renamed")
    raw.call("CF.ADD", k, "item")
    if change[0] == "CF.LOADCHUNK":
        header = raw.call("CF.SCANDUMP", k, "0")
        header = header[header.index(b"$38\r\n") + 5:][:38]
        raw.call("DEL", k)
    raw.call("WATCH", k)
    args = [a.replace("{k}", k) if a != "HDR" else header for a in change]
    reply = other.call(*args)
    assert not reply.startswith(b"-"), reply
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") == b"*-1\r\n"


def test_watch_without_changes_lets_exec_run(raw, other):
    k = "tx:watch:quiet"
    raw.call("CF.ADD", k, "x")
    raw.call("WATCH", k, "tx:watch:quiet:other")
    # reads from another connection and writes to other keys are not changes of k
    assert other.call("CF.EXISTS", k, "x") == b":1\r\n"
    assert other.call("CF.INFO", k).startswith(b"*16\r\n")
    assert other.call("CF.ADD", "tx:watch:unrelated", "x") == b":1\r\n"
    raw.call("MULTI")
    raw.call("CF.ADD", k, "y")
    assert raw.call("EXEC") == b"*1\r\n:1\r\n"


def test_unwatch(raw, other):
    k = "tx:unwatch"
    raw.call("WATCH", k)
    assert raw.call("UNWATCH") == b"+OK\r\n"
    other.call("CF.ADD", k, "x")
    raw.call("MULTI")
    raw.call("CF.ADD", k, "y")
    assert raw.call("EXEC") == b"*1\r\n:1\r\n"


def test_watch_own_modification_aborts(raw):
    k = "tx:watch:own"
    raw.call("WATCH", k)
    raw.call("CF.ADD", k, "x")
    raw.call("MULTI")
    raw.call("CF.ADD", k, "y")
    assert raw.call("EXEC") == b"*-1\r\n"


def test_discard_clears_watches(raw, other):
    k = "tx:watch:discard"
    raw.call("WATCH", k)
    raw.call("MULTI")
    raw.call("DISCARD")
    other.call("CF.ADD", k, "x")
    raw.call("MULTI")
    raw.call("CF.ADD", k, "y")
    assert raw.call("EXEC") == b"*1\r\n:1\r\n"


def test_exec_is_atomic_against_a_concurrent_writer(server):
    k = "tx:atomic"
    a = RawClient(server.port)
    # room for everything a fast writer adds meanwhile (no "Maximum expansions reached")
    a.call("CF.RESERVE", k, "1000000")
    stop = threading.Event()
    written = [0]
    errors = []

    def writer():
        b = RawClient(server.port)
        i = 0
        try:
            while not stop.is_set():
                batch = [encode(["CF.ADD", k, "b-%d" % (i + j)]) for j in range(50)]
                b.send_raw(b"".join(batch))
                for _ in batch:
                    r = b.read_reply()
                    if r != b":1\r\n":
                        errors.append(r)
                i += 50
                written[0] = i
        finally:
            b.close()

    t = threading.Thread(target=writer)
    t.start()
    try:
        n = 400
        mine = 0
        gaps = []  # writes of the other client that landed between two transactions
        prev_end = None
        for rnd in range(3):
            time.sleep(0.05)
            cmds = [encode(["MULTI"]), encode(["CF.INFO", k])]
            cmds += [encode(["CF.ADD", k, "a-%d-%d" % (rnd, i)]) for i in range(n)]
            cmds += [encode(["CF.INFO", k]), encode(["EXEC"])]
            a.send_raw(b"".join(cmds))
            replies = [a.read_reply() for _ in range(n + 4)]
            assert replies[0] == b"+OK\r\n"
            assert all(r == b"+QUEUED\r\n" for r in replies[1:-1])
            exec_reply = replies[-1]
            assert exec_reply.startswith(b"*%d\r\n" % (n + 2))
            first_info_end = exec_reply.index(b"+Max iterations\r\n")
            parts = exec_reply.split(b"+Number of items inserted\r\n:")
            assert len(parts) == 3
            start_count = int(parts[1].split(b"\r\n")[0])
            end_count = int(parts[2].split(b"\r\n")[0])
            # nothing of the concurrent writer landed between the two INFOs of the transaction
            assert end_count - start_count == n, (rnd, start_count, end_count)
            assert exec_reply[first_info_end:].count(b":1\r\n") >= n
            if prev_end is not None:
                gaps.append(start_count - prev_end)
            prev_end = end_count
            mine += n
    finally:
        stop.set()
        t.join()
    assert errors == []
    assert max(gaps) > 0  # the writer really ran concurrently with the transactions
    assert info_items(a, k) == mine + written[0]
    a.close()


def test_multi_with_select_and_keys_in_other_databases(raw):
    k = "tx:select"
    raw.call("MULTI")
    raw.call("SELECT", "3")
    raw.call("CF.ADD", k, "in-db3")
    raw.call("SELECT", "0")
    raw.call("CF.ADD", k, "in-db0")
    assert raw.call("EXEC") == b"*4\r\n+OK\r\n:1\r\n+OK\r\n:1\r\n"
    assert raw.call("CF.EXISTS", k, "in-db0") == b":1\r\n"
    assert info_items(raw, k) == 1
    raw.call("SELECT", "3")
    assert raw.call("CF.EXISTS", k, "in-db3") == b":1\r\n"
    assert info_items(raw, k) == 1
    raw.call("DEL", k)
    raw.call("SELECT", "0")


# ---------------------------------------------------------------------------------------------
# comparison with a real redis-server for the generic parts


@pytest.fixture(scope="module")
def real_redis_port():
    proc, port, d = start_real_redis("real-redis-tx-")
    yield port
    proc.terminate()
    proc.wait(10)
    shutil.rmtree(d, ignore_errors=True)


SCRIPT = [
    ("a", "SET", "tx:cmp:k", "1"),
    ("a", "WATCH", "tx:cmp:k"),
    ("b", "SET", "tx:cmp:k", "2"),
    ("a", "MULTI"),
    ("a", "GET", "tx:cmp:k"),
    ("a", "EXEC"),
    ("a", "WATCH", "tx:cmp:k", "tx:cmp:missing"),
    ("a", "MULTI"),
    ("a", "SET", "tx:cmp:k", "3"),
    ("a", "GET", "tx:cmp:k"),
    ("a", "EXPIRE", "tx:cmp:k", "nope"),
    ("a", "TTL", "tx:cmp:k"),
    ("a", "EXEC"),
    ("a", "MULTI"),
    ("a", "SET", "tx:cmp:k"),
    ("a", "EXEC"),
    ("a", "MULTI"),
    ("a", "MULTI"),
    ("a", "DISCARD"),
    ("a", "DISCARD"),
    ("a", "WATCH", "tx:cmp:k"),
    ("a", "WATCH"),
    ("a", "UNWATCH", "x"),
    ("b", "DEL", "tx:cmp:k"),
    ("a", "MULTI"),
    ("a", "PING"),
    ("a", "EXEC"),
    ("a", "WATCH", "tx:cmp:k"),
    ("b", "SET", "tx:cmp:k", "again"),
    ("a", "MULTI"),
    ("a", "PING"),
    ("a", "EXEC"),
    ("a", "MULTI"),
    ("a", "QUIT"),
]


def test_transaction_replies_match_real_redis(server, real_redis_port):
    results = []
    for port in (server.port, real_redis_port):
        a, b = RawClient(port), RawClient(port)
        a.call("DEL", "tx:cmp:k", "tx:cmp:missing")
        out = []
        for who, *cmd in SCRIPT:
            out.append((who, tuple(cmd), (a if who == "a" else b).call(*cmd)))
        results.append(out)
        a.close()
        b.close()
    for ours, theirs in zip(*results):
        assert ours == theirs


def _stripe(key, ns=0, stripes=4096):
    """cuckood's lock stripe of a key (FNV-1a over namespace and key, storage/locks.cc)."""
    h = 1469598103934665603
    h = ((h ^ ns) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    for c in key.encode():
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h % stripes


def test_watch_is_not_aborted_by_a_write_to_another_key(raw, other):
    watched = "tx:collide:watched"
    target = _stripe(watched)
    colliding = next("tx:collide:%d" % i for i in range(10 ** 6)
                     if _stripe("tx:collide:%d" % i) == target)
    raw.call("WATCH", watched)
    assert other.call("SET", colliding, "x") == b"+OK\r\n"
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") == b"*1\r\n+PONG\r\n"


@pytest.mark.parametrize("change", [
    pytest.param(("SET", "tx:mod:missing", "v", "NX"), id="set-nx-creates"),
    pytest.param(("SET", "tx:mod:str", "v2", "XX"), id="set-xx-overwrites"),
    pytest.param(("DEL", "tx:mod:missing", "tx:mod:str"), id="del-one-of-two"),
    pytest.param(("PEXPIRE", "tx:mod:ttl", "-1"), id="expire-in-the-past-deletes"),
    pytest.param(("PERSIST", "tx:mod:ttl"), id="persist-removes-ttl"),
    pytest.param(("RENAME", "tx:mod:other", "tx:mod:str"), id="rename-onto-watched"),
    # RedisBloom's commands count as modifying the key they open for writing, even when the
    # item is already there or the filter exists (Redis signals it when the module closes it)
    pytest.param(("CF.ADDNX", "tx:mod:cf", "x"), id="cf-addnx-existing-item"),
    pytest.param(("CF.RESERVE", "tx:mod:cf", "100"), id="cf-reserve-existing"),
])
def test_watch_sees_the_modifications_redis_signals(raw, other, change):
    raw.call("DEL", "tx:mod:missing", "tx:mod:str", "tx:mod:ttl", "tx:mod:other", "tx:mod:cf")
    raw.call("SET", "tx:mod:str", "v")
    raw.call("SET", "tx:mod:ttl", "v", "EX", "100")
    raw.call("SET", "tx:mod:other", "o")
    raw.call("CF.ADD", "tx:mod:cf", "x")
    raw.call("WATCH", "tx:mod:missing", "tx:mod:str", "tx:mod:ttl", "tx:mod:cf")
    other.call(*change)
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") == b"*-1\r\n"


@pytest.mark.parametrize("noop", [
    pytest.param(("DEL", "tx:noop:missing"), id="del-missing"),
    pytest.param(("EXPIRE", "tx:noop:missing", "100"), id="expire-missing"),
    pytest.param(("SET", "tx:noop:str", "other", "NX"), id="set-nx-fails"),
    pytest.param(("PERSIST", "tx:noop:str"), id="persist-without-ttl"),
    pytest.param(("RENAME", "tx:noop:missing", "tx:noop:elsewhere"), id="rename-missing"),
    pytest.param(("RENAME", "tx:noop:str", "tx:noop:str"), id="rename-to-itself"),
    pytest.param(("RENAMENX", "tx:noop:other", "tx:noop:str"), id="renamenx-target-exists"),
    pytest.param(("EXPIRE", "tx:noop:str", "100", "XX"), id="expire-xx-without-ttl"),
    pytest.param(("SET", "tx:noop:str", "v", "BADOPTION"), id="set-syntax-error"),
    pytest.param(("FLUSHDB-IN-EMPTY-DB",), id="flushdb-of-another-db"),
])
def test_watch_is_not_aborted_by_a_write_that_changes_nothing(raw, other, noop):
    raw.call("SET", "tx:noop:str", "v")
    raw.call("SET", "tx:noop:other", "o")
    raw.call("WATCH", "tx:noop:missing", "tx:noop:str")
    if noop[0] == "FLUSHDB-IN-EMPTY-DB":
        other.call("SELECT", "14")
        assert other.call("DBSIZE") == b":0\r\n"
        other.call("FLUSHDB")
    else:
        other.call(*noop)
    raw.call("MULTI")
    raw.call("PING")
    assert raw.call("EXEC") == b"*1\r\n+PONG\r\n"
