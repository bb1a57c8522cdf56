"""cuckood through redis-py's `r.cf()` API, in RESP2 and RESP3 (every test runs in both).

Expected values are RedisBloom 2.8's (see /work/shared/redisbloom-cf-reference.md): sizes from
next_pow2(capacity / bucket size), RESP3 booleans for ADD/ADDNX/INSERT/EXISTS/MEXISTS/DEL, integers
for INSERTNX and COUNT, CF.INFO as a map in RESP3. redis-py strips the "ERR " prefix of errors.

redis-py gaps worked around here: `r.cf()` has no compact() or debug(), so CF.COMPACT and CF.DEBUG
go through execute_command; insert()/insertnx() send NOCREATE for any nocreate that is not None
(nocreate=False included), so the tests pass nocreate=True or leave it out."""
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from redis.commands.bf.info import CFInfo

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
INFO_NAMES = ["Size", "Number of buckets", "Number of filters", "Number of items inserted",
              "Number of items deleted", "Bucket size", "Expansion rate", "Max iterations"]


def flag(proto, value):
    """What redis-py returns for a RedisBloom yes/no reply: 1/0 in RESP2, True/False in RESP3."""
    return bool(value) if proto == 3 else int(value)


def assert_flags(got, proto, expected):
    """Compares values and exact types (a bool is an int in Python, so check the type too)."""
    want_type = bool if proto == 3 else int
    assert [type(g) for g in got] == [want_type] * len(got), got
    assert list(got) == [flag(proto, e) for e in expected]


def assert_ints(got, expected):
    assert [type(g) for g in got] == [int] * len(got), got
    assert list(got) == expected


def assert_insert(got, proto, expected):
    """CF.INSERT per item: RESP2 1 / -1 (full), RESP3 true / false."""
    if proto == 2:
        assert_ints(got, expected)
    else:
        assert_flags(got, proto, [e == 1 for e in expected])


def info_of(cf, key, proto):
    """CF.INFO through cf.info(): a CFInfo object in RESP2, an ordered dict in RESP3."""
    info = cf.info(key)
    if proto == 2:
        assert isinstance(info, CFInfo)
        values = [info.size, info.bucketNum, info.filterNum, info.insertedNum, info.deletedNum,
                  info.bucketSize, info.expansionRate, info.maxIteration]
    else:
        assert isinstance(info, dict)
        assert list(info.keys()) == [n.encode() for n in INFO_NAMES]  # RedisBloom's order
        values = list(info.values())
    assert all(type(v) is int for v in values), values
    return dict(zip(INFO_NAMES, values))


def info_dict(size, buckets, filters, items, deleted, bucket_size, expansion, max_iterations):
    return dict(zip(INFO_NAMES, [size, buckets, filters, items, deleted, bucket_size, expansion,
                                 max_iterations]))


def debug(r, key):
    return r.execute_command("CF.DEBUG", key)


def raises(text):
    """Context manager: the call must raise exactly redis.ResponseError with this message."""

    class Check:
        def __enter__(self):
            self.ctx = pytest.raises(redis.ResponseError)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            suppressed = self.ctx.__exit__(*exc)
            assert type(self.info.value) is redis.ResponseError
            assert str(self.info.value) == text
            return suppressed

    return Check()


# ---------------------------------------------------------------- reserve / create


def test_reserve_defaults(r, key, proto):
    cf = r.cf()
    assert cf.create(key(), 1000) is True
    assert info_of(cf, key(), proto) == info_dict(1080, 512, 1, 0, 0, 2, 1, 20)
    assert debug(r, key()) == (
        b"bktsize:2 buckets:512 items:0 deletes:0 filters:1 max_iterations:20 expansion:1")
    assert r.type(key()) == b"MBbloomCF"


def test_reserve_with_options(r, key, proto):
    cf = r.cf()
    # 1000 / 4 = 250 -> 256 buckets; expansion 3 is rounded up to 4
    assert cf.create(key("a"), 1000, expansion=3, bucket_size=4, max_iterations=50) is True
    assert info_of(cf, key("a"), proto) == info_dict(40 + 16 + 256 * 4, 256, 1, 0, 0, 4, 4, 50)
    # reserve is an alias of create; 10 / 1 -> 16 buckets, expansion 0 = never grow
    assert cf.reserve(key("b"), 10, bucket_size=1, expansion=0) is True
    assert info_of(cf, key("b"), proto) == info_dict(40 + 16 + 16, 16, 1, 0, 0, 1, 0, 20)
    assert cf.create(key("c"), 64, expansion=30000, max_iterations=65535) is True
    assert debug(r, key("c")) == (
        b"bktsize:2 buckets:32 items:0 deletes:0 filters:1 max_iterations:65535 expansion:32768")


@pytest.mark.parametrize("args,kwargs,message", [
    ((1,), {}, "Capacity must be at least (BucketSize * 2)"),
    ((10,), {"bucket_size": 6}, "Capacity must be at least (BucketSize * 2)"),
    ((-5,), {}, "Capacity must be at least (BucketSize * 2)"),
    (("ten",), {}, "Bad capacity"),
    ((100,), {"bucket_size": 0},
     "BUCKETSIZE: value must be an integer between 1 and 255, inclusive."),
    ((100,), {"bucket_size": 256},
     "BUCKETSIZE: value must be an integer between 1 and 255, inclusive."),
    ((100,), {"bucket_size": "two"}, "Couldn't parse BUCKETSIZE"),
    ((100,), {"max_iterations": 0},
     "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive."),
    ((100,), {"max_iterations": "x"}, "Couldn't parse MAXITERATIONS"),
    ((100,), {"expansion": 32769},
     "EXPANSION: value must be an integer between 0 and 32768, inclusive."),
    ((100,), {"expansion": -1},
     "EXPANSION: value must be an integer between 0 and 32768, inclusive."),
])
def test_reserve_errors(r, key, args, kwargs, message):
    with raises(message):
        r.cf().create(key(), *args, **kwargs)
    assert r.exists(key()) == 0


def test_reserve_existing_keys(r, key):
    cf = r.cf()
    assert cf.create(key("cf"), 100) is True
    with raises("item exists"):
        cf.create(key("cf"), 100)
    r.set(key("str"), "x")
    with raises(WRONGTYPE):
        cf.create(key("str"), 100)


# ---------------------------------------------------------------- add / addnx


def test_add_and_addnx(r, key, proto):
    cf, k = r.cf(), key()
    assert_flags([cf.add(k, "a")], proto, [1])  # auto-creates with the defaults
    assert info_of(cf, k, proto) == info_dict(1080, 512, 1, 1, 0, 2, 1, 20)
    assert_flags([cf.add(k, "a")], proto, [1])  # CF.ADD always adds another copy
    assert_ints([cf.count(k, "a")], [2])
    assert_flags([cf.addnx(k, "a")], proto, [0])
    assert_flags([cf.addnx(k, "b")], proto, [1])
    assert_flags([cf.addnx(k, "b")], proto, [0])
    # binary-safe items, the empty string included
    for item in (b"", b"\x00\xff\r\n", "caf\u00e9".encode()):
        assert_flags([cf.addnx(k, item)], proto, [1])
        assert_flags([cf.exists(k, item)], proto, [1])
    assert info_of(cf, k, proto)["Number of items inserted"] == 6
    r.set(key("str"), "x")
    with raises(WRONGTYPE):
        cf.add(key("str"), "a")
    with raises(WRONGTYPE):
        cf.addnx(key("str"), "a")


def test_add_full_and_max_expansions(r, key, proto):
    cf = r.cf()
    assert cf.create(key("full"), 4, expansion=0) is True
    assert_flags([cf.add(key("full"), i) for i in range(1, 5)], proto, [1, 1, 1, 1])
    with raises("Filter is full"):
        cf.add(key("full"), 5)
    assert cf.create(key("max"), 4) is True
    p = r.pipeline(transaction=False)
    for i in range(124):
        p.cf().add(key("max"), str(i))
    assert_flags(p.execute(), proto, [1] * 124)
    assert info_of(cf, key("max"), proto)["Number of filters"] == 32
    with raises("Maximum expansions reached"):
        cf.add(key("max"), "2048")
    with raises("Maximum expansions reached"):
        cf.addnx(key("max"), "0")  # checked before the item is looked at


# ---------------------------------------------------------------- insert / insertnx


def test_insert(r, key, proto):
    cf = r.cf()
    assert_flags(cf.insert(key("a"), ["x", "y", "z"]), proto, [1, 1, 1])
    assert debug(r, key("a")) == (
        b"bktsize:2 buckets:512 items:3 deletes:0 filters:1 max_iterations:20 expansion:1")
    assert_flags(cf.insert(key("b"), ["x"], capacity=10000), proto, [1])
    assert debug(r, key("b")) == (
        b"bktsize:2 buckets:8192 items:1 deletes:0 filters:1 max_iterations:20 expansion:1")
    # CAPACITY is ignored for an existing key; NOCREATE on an existing key inserts
    assert_flags(cf.insert(key("b"), ["x", "w"], capacity=10, nocreate=True), proto, [1, 1])
    assert_ints([cf.count(key("b"), "x")], [2])
    assert info_of(cf, key("b"), proto)["Number of buckets"] == 8192
    with raises("not found"):
        cf.insert(key("missing"), ["x"], nocreate=True)
    assert r.exists(key("missing")) == 0
    with raises("Capacity must be at least (BucketSize * 2)"):
        cf.insert(key("c"), ["x"], capacity=3)
    with raises("Bad capacity"):
        cf.insert(key("c"), ["x"], capacity="lots")
    with raises("wrong number of arguments for 'cf.insert' command"):
        cf.insert(key("c"), [])


def test_insert_into_full_filter(r, key, proto):
    cf, k = r.cf(), key()
    # redis.io's example: 2 buckets of 1 slot, no growth
    assert cf.create(k, 2, bucket_size=1, expansion=0) is True
    assert_insert(cf.insert(k, ["1", "1", "1", "1"]), proto, [1, 1, -1, -1])
    # INSERTNX stays integer in RESP3 too: 0 = present, -1 = full
    assert_ints(cf.insertnx(k, ["1", "2"]), [0, -1])
    assert info_of(cf, k, proto)["Number of items inserted"] == 2


def test_insertnx(r, key, proto):
    cf = r.cf()
    # duplicates inside one command see the earlier ones; integers in both protocols
    assert_ints(cf.insertnx(key("a"), ["a", "b", "a"]), [1, 1, 0])
    assert_ints(cf.insertnx(key("a"), ["b", "c"]), [0, 1])
    assert_ints(cf.insertnx(key("b"), ["a"], capacity=100), [1])
    assert debug(r, key("b")) == (
        b"bktsize:2 buckets:64 items:1 deletes:0 filters:1 max_iterations:20 expansion:1")
    assert_ints(cf.insertnx(key("b"), ["a", "q"], nocreate=True), [0, 1])
    with raises("not found"):
        cf.insertnx(key("missing"), ["a"], nocreate=True)
    r.set(key("str"), "x")
    with raises(WRONGTYPE):
        cf.insertnx(key("str"), ["a"])


# ---------------------------------------------------------------- exists / mexists / count / delete


def test_exists_and_mexists(r, key, proto):
    cf, k = r.cf(), key()
    cf.insert(k, ["a", "b"])
    assert_flags([cf.exists(k, "a"), cf.exists(k, "nope")], proto, [1, 0])
    assert_flags(cf.mexists(k, "a", "nope", "b"), proto, [1, 0, 1])
    assert_flags([cf.exists(key("missing"), "a")], proto, [0])
    assert_flags(cf.mexists(key("missing"), "a", "b"), proto, [0, 0])
    r.set(key("str"), "x")  # another type answers "no", not WRONGTYPE
    assert_flags([cf.exists(key("str"), "a")], proto, [0])
    assert_flags(cf.mexists(key("str"), "a"), proto, [0])


def test_count(r, key, proto):
    cf, k = r.cf(), key()
    for _ in range(3):
        cf.add(k, "x")
    assert_ints([cf.count(k, "x"), cf.count(k, "y"), cf.count(key("missing"), "x")], [3, 0, 0])
    # both candidate buckets are the same bucket: matches are counted twice
    cf.create(key("tiny"), 4)
    cf.add(key("tiny"), "a")
    assert_ints([cf.count(key("tiny"), "a")], [2])


def test_delete(r, key, proto):
    cf, k = r.cf(), key()
    cf.add(k, "a")
    cf.add(k, "a")
    assert_flags([cf.delete(k, "a")], proto, [1])
    assert_ints([cf.count(k, "a")], [1])
    assert_flags([cf.delete(k, "a"), cf.delete(k, "a")], proto, [1, 0])
    assert_flags([cf.exists(k, "a")], proto, [0])
    info = info_of(cf, k, proto)
    assert (info["Number of items inserted"], info["Number of items deleted"]) == (0, 2)
    with raises("Not found"):
        cf.delete(key("missing"), "a")
    r.set(key("str"), "x")
    with raises("Not found"):
        cf.delete(key("str"), "a")


def test_compact_and_debug_raw(r, key, proto):
    """No cf.compact()/cf.debug() in redis-py: the raw commands through execute_command."""
    cf, k = r.cf(), key()
    assert cf.create(k, 8, max_iterations=50) is True
    assert_insert(cf.insert(k, [str(i) for i in range(100)]), proto, [1] * 100)
    expected = b"bktsize:2 buckets:4 items:100 deletes:0 filters:13 max_iterations:50 expansion:1"
    assert debug(r, k) == expected
    assert r.execute_command("CF.COMPACT", k) == b"OK"
    assert debug(r, k) == expected
    assert_flags(cf.mexists(k, *[str(i) for i in range(100)]), proto, [1] * 100)
    with raises("Cuckoo filter was not found"):
        r.execute_command("CF.COMPACT", key("missing"))
    with raises("not found"):
        r.execute_command("CF.DEBUG", key("missing"))


def test_reference_resp3_sequence(r, key, proto):
    """RedisBloom's test_resp3.py sequence, checked in both protocols."""
    cf, a = r.cf(), key()
    assert cf.create(a, 9, expansion=0) is True
    assert_flags([cf.add(a, 3), cf.add(a, 4), cf.addnx(a, 4), cf.addnx(a, 9)], proto, [1, 1, 0, 1])
    assert_flags(cf.insert(a, [4, 5]), proto, [1, 1])
    assert_ints(cf.insertnx(a, [4, 6]), [0, 1])
    assert_flags([cf.delete(a, 3), cf.delete(a, 3)], proto, [1, 0])
    assert_flags([cf.exists(a, 3), cf.exists(a, 4)], proto, [0, 1])
    assert_flags(cf.mexists(a, 4, 3), proto, [1, 0])
    assert_ints([cf.count(a, 3), cf.count(a, 4)], [0, 2])
    assert info_of(cf, a, proto) == info_dict(64, 4, 1, 5, 1, 2, 0, 20)
    assert_flags([cf.add(a, 7), cf.add(a, 8)], proto, [1, 1])
    assert_insert(cf.insert(a, [11, 4]), proto, [1, -1])
    assert_ints(cf.insertnx(a, [12, 4]), [-1, 0])


# ---------------------------------------------------------------- scandump / loadchunk


def dump(cf, k):
    chunks, it = [], 0
    while True:
        reply = cf.scandump(k, it)
        assert isinstance(reply, list) and len(reply) == 2
        it, data = reply
        assert type(it) is int
        if it == 0:
            assert data is None
            return chunks
        assert type(data) is bytes
        chunks.append((it, data))


def test_scandump_loadchunk_round_trip(r, key, proto):
    cf, src, dst = r.cf(), key("src"), key("dst")
    assert cf.create(src, 100, expansion=2) is True
    items = ["item%d" % i for i in range(500)]
    for i in range(0, 500, 100):
        cf.insert(src, items[i:i + 100])
    cf.delete(src, "item0")
    info = info_of(cf, src, proto)
    assert info["Number of filters"] == 3  # 64, 128 and 256 buckets
    chunks = dump(cf, src)
    # header: numItems, numBuckets, numDeletes, numFilters (u64), bucketSize, maxIter, expansion
    assert chunks[0][0] == 1 and len(chunks[0][1]) == 38
    assert struct.unpack("<QQQQHHH", chunks[0][1]) == (499, 64, 1, 3, 2, 20, 2)
    # one chunk per sub-filter, the iterator is the position after the chunk
    assert [(it, len(data)) for it, data in chunks[1:]] == [
        (1 + 128, 128), (1 + 128 + 256, 256), (1 + 128 + 256 + 512, 512)]
    for it, data in chunks:
        assert cf.loadchunk(dst, it, data) == b"OK"
    assert r.type(dst) == b"MBbloomCF"
    assert info_of(cf, dst, proto) == info
    assert debug(r, dst) == debug(r, src)
    assert_flags(cf.mexists(dst, *items), proto, [0] + [1] * 499)
    assert dump(cf, dst) == chunks
    # the copy is a filter of its own
    assert_flags([cf.add(dst, "new")], proto, [1])
    assert_flags([cf.exists(src, "new")], proto, [0])


def test_scandump_large_filter_in_16mib_chunks(r, key, proto):
    cf, src, dst = r.cf(), key("src"), key("dst")
    assert cf.create(src, 1 << 25, bucket_size=1) is True  # one 32 MiB sub-filter
    assert_flags(cf.insert(src, ["a", "b", "c"]), proto, [1, 1, 1])
    chunks = dump(cf, src)
    assert [(it, len(data)) for it, data in chunks] == [
        (1, 38), (1 + (1 << 24), 1 << 24), (1 + (1 << 25), 1 << 24)]
    assert sum(data.count(0) for _, data in chunks[1:]) == (1 << 25) - 3
    for it, data in chunks:
        assert cf.loadchunk(dst, it, data) == b"OK"
    assert_flags(cf.mexists(dst, "a", "b", "c", "d"), proto, [1, 1, 1, 0])
    assert debug(r, dst) == (
        b"bktsize:1 buckets:33554432 items:3 deletes:0 filters:1 max_iterations:20 expansion:1")
    r.delete(src, dst)


def test_scandump_loadchunk_errors(r, key, proto):
    cf, k = r.cf(), key()
    assert cf.create(k, 62) is True
    assert cf.scandump(k, 0) == [0, None]  # an empty filter cannot be dumped
    cf.add(k, "x")
    header = cf.scandump(k, 0)[1]
    with raises("not found"):
        cf.scandump(key("missing"), 0)
    with raises("Invalid position"):
        cf.scandump(k, -1)
    with raises("item exists"):
        cf.loadchunk(k, 1, header)
    with raises("Invalid header"):
        cf.loadchunk(key("new"), 1, header[:-1])
    with raises("Invalid position"):
        cf.loadchunk(key("new"), 0, b"x")
    with raises("not found"):
        cf.loadchunk(key("new"), 9, b"\x00" * 8)
    with raises("Couldn't create filter!"):
        cf.loadchunk(key("new"), 1, b"\x00" * 38)
    with raises("Couldn't load chunk!"):
        cf.loadchunk(k, 1 << 20, b"\x00" * 8)
    r.set(key("str"), "x")
    with raises(WRONGTYPE):
        cf.scandump(key("str"), 0)
    with raises(WRONGTYPE):
        cf.loadchunk(key("str"), 1, header)
    assert r.exists(key("new")) == 0


# ---------------------------------------------------------------- pipelines


def queue_everything(p, k):
    pc = p.cf()
    pc.create(k, 1000, bucket_size=4)
    pc.add(k, "a")
    pc.addnx(k, "a")
    pc.insert(k, ["b", "c"])
    pc.insertnx(k, ["c", "d"])
    pc.exists(k, "d")
    pc.mexists(k, "a", "zz")
    pc.count(k, "a")
    pc.delete(k, "a")
    pc.info(k)
    pc.create(k, 1000)  # fails: the key exists


def check_everything(results, proto):
    assert results[0] is True
    assert_flags([results[1], results[2]], proto, [1, 0])
    assert_flags(results[3], proto, [1, 1])
    assert_ints(results[4], [0, 1])
    assert_flags([results[5]], proto, [1])
    assert_flags(results[6], proto, [1, 0])
    assert_ints([results[7]], [1])
    assert_flags([results[8]], proto, [1])
    info = results[9]
    if proto == 2:
        assert isinstance(info, CFInfo)
        assert (info.size, info.bucketNum, info.insertedNum, info.deletedNum) == (1080, 256, 3, 1)
    else:
        assert info[b"Size"] == 1080 and info[b"Number of buckets"] == 256
        assert (info[b"Number of items inserted"], info[b"Number of items deleted"]) == (3, 1)
    assert type(results[10]) is redis.ResponseError
    assert "item exists" in str(results[10])


@pytest.mark.parametrize("transaction", [False, True], ids=["plain", "multi"])
def test_pipeline(r, key, proto, transaction):
    p = r.pipeline(transaction=transaction)
    queue_everything(p, key())
    results = p.execute(raise_on_error=False)
    assert len(results) == 11
    check_everything(results, proto)
    # with raise_on_error (the default) the failing command raises, naming the command
    p = r.pipeline(transaction=transaction)
    p.cf().add(key(), "e")
    p.cf().create(key(), 10)
    with pytest.raises(redis.ResponseError) as e:
        p.execute()
    assert type(e.value) is redis.ResponseError
    assert str(e.value).endswith("caused error: item exists")
    assert_flags([r.cf().exists(key(), "e")], proto, [1])  # the command before it ran


def test_transaction_runtime_arity_error(r, key, proto):
    """RedisBloom 2.8 registers no arity: a short CF.ADD is queued and fails inside EXEC while
    the rest of the transaction runs."""
    p = r.pipeline(transaction=True)
    p.cf().add(key(), "a")
    p.execute_command("CF.ADD", key())
    p.cf().exists(key(), "a")
    results = p.execute(raise_on_error=False)
    assert_flags([results[0]], proto, [1])
    assert type(results[1]) is redis.ResponseError
    assert str(results[1]) == "wrong number of arguments for 'cf.add' command"
    assert_flags([results[2]], proto, [1])


def test_watch_cf_key(r, key, address, proto):
    k = key()
    r.cf().add(k, "a")
    other = redis.Redis(host=address[0], port=address[1], protocol=proto)
    with r.pipeline() as p:
        p.watch(k)
        assert_ints([p.cf().count(k, "a")], [1])  # immediate mode while watching
        other.cf().add(k, "b")  # touches the watched key
        p.multi()
        p.cf().add(k, "c")
        with pytest.raises(redis.WatchError):
            p.execute()
    assert_flags([r.cf().exists(k, "c")], proto, [0])
    with r.pipeline() as p:  # untouched: goes through
        p.watch(k)
        p.multi()
        p.cf().add(k, "c")
        assert_flags(p.execute(), proto, [1])
    other.close()


# ---------------------------------------------------------------- threads, scan, response modes


def test_connection_pool_8_threads(address, key, proto):
    pool = redis.ConnectionPool(host=address[0], port=address[1], protocol=proto,
                                max_connections=8, socket_timeout=60)
    client = redis.Redis(connection_pool=pool)
    shared = key("shared")
    assert client.cf().create(shared, 10000) is True
    barrier = threading.Barrier(8)

    def work(n):
        c = redis.Redis(connection_pool=pool)
        cf = c.cf()
        barrier.wait()
        won = []
        for i in range(150):
            # all threads race ADDNX on the same items: at most one may win each (none only
            # when the item is a false positive of the filter)
            if cf.addnx(shared, "item%d" % i):
                won.append(i)
            assert cf.add(shared, "t%d:%d" % (n, i))
        p = c.pipeline(transaction=True)
        for i in range(50):
            p.cf().add(key("own%d" % n), i)
        assert all(p.execute())
        return won

    with ThreadPoolExecutor(max_workers=8) as ex:
        won = [i for items in ex.map(work, range(8)) for i in items]
    assert len(won) == len(set(won)) and len(won) > 140
    info = info_of(client.cf(), shared, proto)
    assert info["Number of items inserted"] == len(won) + 8 * 150
    assert_flags(client.cf().mexists(shared, *["item%d" % i for i in range(150)]), proto,
                 [1] * 150)
    assert_flags(client.cf().mexists(shared, *["t%d:149" % n for n in range(8)]), proto, [1] * 8)
    for n in range(8):
        assert info_of(client.cf(), key("own%d" % n), proto)["Number of items inserted"] == 50
    assert len(pool._available_connections) + len(pool._in_use_connections) <= 8
    pool.disconnect()


def test_scan_iter_type(r, key):
    cf_keys = {key("cf%d" % i).encode() for i in range(7)}
    for k in cf_keys:
        r.cf().create(k, 100)
    r.set(key("string"), "x")
    pattern = key() + ":*"
    assert set(r.scan_iter(match=pattern, _type="MBbloomCF", count=2)) == cf_keys
    assert set(r.scan_iter(match=pattern, _type="string")) == {key("string").encode()}
    assert set(r.scan_iter(match=pattern)) == cf_keys | {key("string").encode()}
    assert {r.type(k) for k in cf_keys} == {b"MBbloomCF"}


@pytest.mark.parametrize("legacy", [True, False], ids=["legacy", "unified"])
def test_info_response_modes(address, key, proto, legacy):
    """decode_responses=True, and redis-py 8's unified responses (legacy_responses=False)."""
    c = redis.Redis(host=address[0], port=address[1], protocol=proto, decode_responses=True,
                    legacy_responses=legacy)
    c.cf().create(key(), 1000, expansion=2)
    c.cf().add(key(), "a")
    info = c.cf().info(key())
    if proto == 3 and legacy:
        assert info == {"Size": 1080, "Number of buckets": 512, "Number of filters": 1,
                        "Number of items inserted": 1, "Number of items deleted": 0,
                        "Bucket size": 2, "Expansion rate": 2, "Max iterations": 20}
    else:
        assert isinstance(info, CFInfo)
        assert vars(info) == {"size": 1080, "bucketNum": 512, "filterNum": 1, "insertedNum": 1,
                              "deletedNum": 0, "bucketSize": 2, "expansionRate": 2,
                              "maxIteration": 20}
    assert c.execute_command("CF.DEBUG", key()) == (
        "bktsize:2 buckets:512 items:1 deletes:0 filters:1 max_iterations:20 expansion:2")
    c.close()


# ---------------------------------------------------------------- error texts


@pytest.mark.parametrize("command,message", [
    (("CF.ADD", "k"), "wrong number of arguments for 'cf.add' command"),
    (("cf.Exists", "k"), "wrong number of arguments for 'cf.exists' command"),
    (("CF.MEXISTS", "k"), "wrong number of arguments for 'cf.mexists' command"),
    (("CF.RESERVE", "k", "10", "BUCKETSIZE"), "wrong number of arguments for 'cf.reserve' command"),
    (("CF.INSERT", "k", "ITEMS"), "wrong number of arguments for 'cf.insert' command"),
    (("CF.INSERT", "k", "FOO", "ITEMS", "a"), "Unknown argument received"),
    (("CF.INSERTNX", "k", "CAPACITY"), "wrong number of arguments for 'cf.insertnx' command"),
    (("CF.COMPACT", "k", "x"), "wrong number of arguments for 'cf.compact' command"),
    (("CF.SCANDUMP", "k", "x"), "Invalid position"),
    (("CF.LOADCHUNK", "k", "x", "y"), "Invalid position"),
    (("CF.INFO", "k"), "not found"),
    (("CF.NOSUCH", "k"), "unknown command 'CF.NOSUCH', with args beginning with: 'k' "),
])
def test_error_texts(r, command, message):
    with raises(message):
        r.execute_command(*command)


def test_large_pipelines(r, key, proto):
    """5000 commands in one write, plain and inside MULTI/EXEC."""
    for transaction in (False, True):
        k = key("tx" if transaction else "plain")
        p = r.pipeline(transaction=transaction)
        p.cf().create(k, 10000)
        for i in range(2500):
            p.cf().add(k, "item%d" % i)
        for i in range(2500):
            p.cf().exists(k, "item%d" % i)  # no false negatives, whatever else is in the filter
        p.cf().info(k)
        results = p.execute()
        assert len(results) == 5002 and results[0] is True
        assert_flags(results[1:5001], proto, [1] * 5000)
        assert isinstance(results[5001], CFInfo if proto == 2 else dict)
        assert info_of(r.cf(), k, proto)["Number of items inserted"] == 2500


def test_binary_key_names(r, key, proto):
    k = key().encode() + b":\xff\x00\r\n"
    assert_flags([r.cf().add(k, b"\x80\x81")], proto, [1])
    assert r.type(k) == b"MBbloomCF"
    assert set(r.scan_iter(match=key() + ":*", _type="MBbloomCF")) == {k}
    assert_flags(r.cf().mexists(k, b"\x80\x81", b"\x80"), proto, [1, 0])
    assert r.delete(k) == 1
    assert r.exists(k) == 0


def test_keyspace_commands_on_filters(r, key, proto):
    cf, a, b = r.cf(), key("a"), key("b")
    cf.add(a, "x")
    assert r.rename(a, b) is True
    assert r.exists(a) == 0 and r.type(b) == b"MBbloomCF"
    assert_flags([cf.exists(b, "x")], proto, [1])
    with raises(WRONGTYPE):
        r.get(b)
    assert r.pexpire(b, 200) is True
    assert 0 < r.pttl(b) <= 200
    assert r.persist(b) is True and r.ttl(b) == -1
    assert r.pexpire(b, 1) is True
    deadline = time.monotonic() + 5
    while r.exists(b) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert r.exists(b) == 0
    assert_flags([cf.exists(b, "x")], proto, [0])
    with raises("not found"):
        cf.info(b)
    cf.add(a, "x")
    assert r.unlink(a) == 1 and r.exists(a) == 0


def test_memory_usage_as_redisbloom(r, proto):
    # RedisBloom's test_cuckoo.py mem_usage: CF.RESERVE cf 1000 -> MEMORY USAGE cf = 1112
    k = "cf"  # a short key name: Redis's sds for it takes 8 bytes
    r.delete(k)
    assert r.cf().create(k, 1000) is True
    try:
        assert r.memory_usage(k) == 1112
        assert r.cf().insert(k, ["foo"], nocreate=True)
        assert r.memory_usage(k) == 1112
    finally:
        r.delete(k)
