"""CF.* through redis-py's `r.cf()` client, as an application would use it."""
import time

import pytest
import redis


@pytest.fixture
def r(server):
    c = redis.Redis(port=server.port)
    yield c
    c.close()


@pytest.fixture
def cf(r):
    return r.cf()


def info_dict(info):
    return {"size": info.size, "buckets": info.bucketNum, "filters": info.filterNum,
            "items": info.insertedNum, "deleted": info.deletedNum,
            "bucket_size": info.bucketSize, "expansion": info.expansionRate,
            "max_iterations": info.maxIteration}


def test_create_and_info(cf):
    assert cf.create("py:create", 1000) is True
    assert info_dict(cf.info("py:create")) == {
        "size": 1080, "buckets": 512, "filters": 1, "items": 0, "deleted": 0,
        "bucket_size": 2, "expansion": 1, "max_iterations": 20}


def test_reserve_with_options(cf, r):
    assert cf.create("py:opts", 1000, expansion=3, bucket_size=4, max_iterations=50) is True
    # capacity 1000 / bucket size 4 → 250 → 256 buckets; expansion 3 rounds up to 4
    assert info_dict(cf.info("py:opts")) == {
        "size": 40 + 16 + 256 * 4, "buckets": 256, "filters": 1, "items": 0, "deleted": 0,
        "bucket_size": 4, "expansion": 4, "max_iterations": 50}
    assert r.execute_command("CF.DEBUG", "py:opts") == (
        b"bktsize:4 buckets:256 items:0 deletes:0 filters:1 max_iterations:50 expansion:4")


def test_add_exists_count_delete(cf):
    k = "py:basic"
    assert cf.add(k, "a") == 1
    assert cf.add(k, "a") == 1  # CF.ADD always adds another copy
    assert cf.exists(k, "a") == 1
    assert cf.exists(k, "b") == 0
    assert cf.count(k, "a") == 2
    assert cf.mexists(k, "a", "b", "a") == [1, 0, 1]
    assert cf.delete(k, "a") == 1
    assert cf.count(k, "a") == 1
    assert cf.delete(k, "a") == 1
    assert cf.delete(k, "a") == 0
    assert cf.exists(k, "a") == 0
    info = cf.info(k)
    assert (info.insertedNum, info.deletedNum) == (0, 2)
    # auto-created with the defaults
    assert (info.bucketNum, info.bucketSize, info.maxIteration, info.expansionRate) == (
        512, 2, 20, 1)


def test_addnx(cf):
    k = "py:addnx"
    assert cf.addnx(k, "x") == 1
    assert cf.addnx(k, "x") == 0
    assert cf.count(k, "x") == 1
    assert cf.add(k, "x") == 1
    assert cf.count(k, "x") == 2


def test_binary_and_empty_items(cf):
    k = "py:binary"
    items = [b"", b"\x00", b"\x00\x01\xff", "ünïcödé".encode(), b"\r\n$3\r\n"]
    for item in items:
        assert cf.add(k, item) == 1
    assert cf.mexists(k, *items) == [1] * len(items)
    assert cf.info(k).insertedNum == len(items)


def test_insert(cf):
    k = "py:insert"
    assert cf.insert(k, ["a", "b", "c"]) == [1, 1, 1]
    assert cf.insert(k, ["a"]) == [1]
    assert cf.count(k, "a") == 2
    # capacity applies when the filter is created
    assert cf.insert("py:insert:cap", ["x"], capacity=10000) == [1]
    assert cf.info("py:insert:cap").bucketNum == 8192
    # capacity is ignored for an existing filter
    assert cf.insert("py:insert:cap", ["y"], capacity=100) == [1]
    assert cf.info("py:insert:cap").bucketNum == 8192
    # nocreate
    with pytest.raises(redis.ResponseError, match="^not found$"):
        cf.insert("py:insert:none", ["x"], nocreate=True)
    assert cf.insert(k, ["d"], nocreate=True) == [1]


def test_insertnx(cf):
    k = "py:insertnx"
    assert cf.insertnx(k, ["a", "b", "a"]) == [1, 1, 0]
    assert cf.insertnx(k, ["a", "c"], capacity=500) == [0, 1]
    with pytest.raises(redis.ResponseError, match="^not found$"):
        cf.insertnx("py:insertnx:none", ["x"], nocreate=True)


def test_insert_into_full_non_scaling_filter(cf):
    k = "py:full"
    cf.create(k, 2, bucket_size=1, expansion=0)
    assert cf.insert(k, ["1", "1", "1", "1"]) == [1, 1, -1, -1]
    with pytest.raises(redis.ResponseError, match="^Filter is full$"):
        cf.add(k, "1")


def test_errors_use_redisbloom_texts(cf, r):
    # redis-py drops a leading "ERR " from error texts: "-ERR not found" arrives as "not found"
    cf.create("py:err", 100)
    cases = [
        (lambda: cf.info("py:err:missing"), "not found"),
        (lambda: cf.create("py:err", 100), "item exists"),
        (lambda: cf.create("py:err:2", "abc"), "Bad capacity"),
        (lambda: cf.create("py:err:2", 1), "Capacity must be at least (BucketSize * 2)"),
        (lambda: cf.create("py:err:2", 100, bucket_size=0),
         "BUCKETSIZE: value must be an integer between 1 and 255, inclusive."),
        (lambda: cf.create("py:err:2", 100, max_iterations=0),
         "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive."),
        (lambda: cf.create("py:err:2", 100, expansion=40000),
         "EXPANSION: value must be an integer between 0 and 32768, inclusive."),
        (lambda: cf.delete("py:err:missing", "x"), "Not found"),
        (lambda: cf.scandump("py:err:missing", 0), "not found"),
        (lambda: cf.scandump("py:err", -1), "Invalid position"),
        (lambda: cf.loadchunk("py:err", 0, b"x"), "Invalid position"),
        (lambda: cf.loadchunk("py:err", 1, b"short"), "item exists"),
        (lambda: cf.loadchunk("py:err:new", 1, b"short"), "Invalid header"),
        (lambda: cf.insert("py:err", ["x"], capacity=2),
         "Capacity must be at least (BucketSize * 2)"),
        (lambda: r.execute_command("CF.INSERT", "py:err", "BOGUS", "ITEMS", "x"),
         "Unknown argument received"),
        (lambda: r.execute_command("CF.COMPACT", "py:err:missing"), "Cuckoo filter was not found"),
    ]
    for call, text in cases:
        with pytest.raises(redis.ResponseError) as e:
            call()
        assert str(e.value) == text
    r.set("py:err:string", "v")
    with pytest.raises(redis.ResponseError) as e:
        cf.add("py:err:string", "x")
    assert str(e.value) == "WRONGTYPE Operation against a key holding the wrong kind of value"
    # reads on another type answer 0 rather than WRONGTYPE
    assert cf.exists("py:err:string", "x") == 0
    assert cf.mexists("py:err:string", "x", "y") == [0, 0]


def test_scandump_loadchunk_round_trip(cf):
    src, dst = "py:dump:src", "py:dump:dst"
    cf.create(src, 200, expansion=2)
    items = ["item-%d" % i for i in range(1500)]
    for item in items:
        cf.add(src, item)
    chunks, it = [], 0
    while True:
        it, data = cf.scandump(src, it)
        if it == 0:
            assert data is None
            break
        chunks.append((it, data))
    assert chunks[0][0] == 1 and len(chunks[0][1]) == 38
    assert len(chunks) == 1 + cf.info(src).filterNum
    for it, data in chunks:
        assert cf.loadchunk(dst, it, data) == b"OK"
    assert cf.mexists(dst, *items) == [1] * len(items)
    assert info_dict(cf.info(dst)) == info_dict(cf.info(src))
    # and the copy dumps to the same bytes
    again, it = [], 0
    while True:
        it, data = cf.scandump(dst, it)
        if it == 0:
            break
        again.append((it, data))
    assert again == chunks


def test_pipeline_transaction_with_cf(r, cf):
    k = "py:pipe"
    pipe = r.pipeline(transaction=True)
    pc = pipe.cf()
    pc.create(k, 500)
    pc.add(k, "a")
    pc.addnx(k, "a")
    pc.insert(k, ["b", "c"])
    pc.mexists(k, "a", "b", "zz")
    pc.count(k, "a")
    pc.info(k)
    res = pipe.execute()
    assert res[:6] == [True, 1, 0, [1, 1], [1, 1, 0], 1]
    assert res[6].insertedNum == 3
    # an error inside a transaction comes back in place
    pipe = r.pipeline(transaction=True)
    pipe.cf().create(k, 500)
    pipe.cf().add(k, "d")
    res = pipe.execute(raise_on_error=False)
    assert isinstance(res[0], redis.ResponseError) and str(res[0]) == "item exists"
    assert res[1] == 1


def test_pipeline_without_transaction(r):
    k = "py:pipe:nt"
    pipe = r.pipeline(transaction=False)
    for i in range(200):
        pipe.cf().add(k, "i%d" % i)
    for i in range(200):
        pipe.cf().exists(k, "i%d" % i)
    assert pipe.execute() == [1] * 400


def test_watch_with_redis_py(r, server):
    k = "py:watch"
    r.cf().add(k, "a")
    with r.pipeline() as pipe:
        pipe.watch(k)
        other = redis.Redis(port=server.port)
        other.cf().add(k, "b")
        other.close()
        pipe.multi()
        pipe.cf().add(k, "c")
        with pytest.raises(redis.WatchError):
            pipe.execute()
    assert r.cf().info(k).insertedNum == 2


def test_type_and_scan_iter_by_type(r, cf):
    r.select(0)
    prefix = "py:scan:%d:" % int(time.time() * 1000)
    for i in range(30):
        cf.add(prefix + "cf:%d" % i, "x")
    for i in range(30):
        r.set(prefix + "str:%d" % i, "v")
    cf.create(prefix + "reserved", 100)
    assert r.type(prefix + "cf:0") == b"MBbloomCF"
    assert r.type(prefix + "reserved") == b"MBbloomCF"
    assert r.type(prefix + "str:0") == b"string"
    found = set(r.scan_iter(match=prefix + "*", _type="MBbloomCF", count=7))
    assert found == {(prefix + "cf:%d" % i).encode() for i in range(30)} | {
        (prefix + "reserved").encode()}
    strings = set(r.scan_iter(match=prefix + "*", _type="string"))
    assert strings == {(prefix + "str:%d" % i).encode() for i in range(30)}
    assert set(r.scan_iter(match=prefix + "*", _type="MBbloomcf")) == found  # case-insensitive
    everything = set(r.scan_iter(match=prefix + "*", count=1000))
    assert len(everything) == 61


def test_expire_ttl_persist_on_a_filter(r, cf):
    k = "py:ttl"
    cf.add(k, "x")
    assert r.ttl(k) == -1
    assert r.expire(k, 100) is True
    assert 98 <= r.ttl(k) <= 100
    assert cf.add(k, "y") == 1  # writing a filter keeps its TTL (unlike SET on a string)
    assert 98 <= r.ttl(k) <= 100
    assert r.persist(k) is True
    assert r.ttl(k) == -1
    assert r.persist(k) is False
    assert r.pexpire(k, 200) is True
    time.sleep(0.35)
    assert r.exists(k) == 0
    assert cf.exists(k, "x") == 0
    with pytest.raises(redis.ResponseError, match="^not found$"):
        cf.info(k)
    assert r.ttl(k) == -2
    # a new filter under the expired name starts empty
    assert cf.add(k, "z") == 1
    assert cf.info(k).insertedNum == 1
    assert r.ttl(k) == -1


@pytest.mark.parametrize("how", ["delete", "unlink"])
def test_del_and_unlink_of_a_filter(r, cf, how):
    k = "py:del:" + how
    cf.insert(k, ["a", "b"])
    assert getattr(r, how)(k) == 1
    assert cf.exists(k, "a") == 0
    assert cf.mexists(k, "a", "b") == [0, 0]
    assert r.exists(k) == 0
    assert getattr(r, how)(k) == 0
    # re-created from scratch
    cf.add(k, "c")
    assert cf.exists(k, "a") == 0
    assert cf.info(k).insertedNum == 1


def test_rename_keeps_items(r, cf):
    src, dst = "py:ren:src", "py:ren:dst"
    cf.create(src, 100, bucket_size=4)
    items = ["i%d" % i for i in range(300)]
    cf.insert(src, items)
    before = info_dict(cf.info(src))
    r.expire(src, 500)
    assert r.rename(src, dst) is True
    assert r.exists(src) == 0
    assert cf.mexists(dst, *items) == [1] * 300
    assert info_dict(cf.info(dst)) == before
    assert 490 <= r.ttl(dst) <= 500
    # RENAME over an existing filter replaces it
    cf.add("py:ren:other", "zzz")
    assert r.rename(dst, "py:ren:other") is True
    assert cf.exists("py:ren:other", "zzz") == 0
    assert cf.exists("py:ren:other", "i1") == 1
    assert r.renamenx("py:ren:other", "py:ren:other") is False


def test_disk_usage_of_a_filter(r, cf):
    cf.create("py:disk", 1000)
    empty = r.execute_command("DISK", "USAGE", "py:disk")
    assert isinstance(empty, int) and 0 < empty < 1000  # pages are created lazily
    cf.insert("py:disk", ["i%d" % i for i in range(500)])
    assert isinstance(r.execute_command("DISK", "USAGE", "py:disk"), int)
    assert r.execute_command("DISK", "USAGE", "py:disk:missing") is None
