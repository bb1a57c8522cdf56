"""Generic key commands over a socket: replies and error texts as Redis 7.0 gives them.

Tests that look at a whole database (SCAN, KEYS, DBSIZE, FLUSHDB) work in database 9 so they do
not see the keys of other tests on the shared server; FLUSHALL gets a server of its own.
"""
import time

import pytest
import redis
from cuckood_testlib import RawClient

ISOLATED_DB = 9


@pytest.fixture
def r(server):
    c = redis.Redis(port=server.port)
    yield c
    c.close()


@pytest.fixture
def rdb(server):
    c = redis.Redis(port=server.port, db=ISOLATED_DB)
    c.flushdb()
    yield c
    c.flushdb()
    c.close()


@pytest.fixture
def raw(server):
    c = RawClient(server.port)
    yield c
    c.close()


def test_del_counts_each_deleted_key_once(r):
    r.set("ks:del:a", "1")
    r.set("ks:del:b", "2")
    assert r.delete("ks:del:a", "ks:del:a", "ks:del:b", "ks:del:missing") == 2
    assert r.exists("ks:del:a", "ks:del:b") == 0


def test_unlink_is_del(r):
    r.set("ks:unlink", "1")
    assert r.unlink("ks:unlink", "ks:unlink:missing") == 1


def test_exists_counts_duplicates(r):
    r.set("ks:exists", "1")
    assert r.exists("ks:exists", "ks:exists", "ks:exists:missing") == 2


def test_type_names(r, raw):
    r.set("ks:type:s", "v")
    raw.call("CF.RESERVE", "ks:type:cf", "100")
    assert raw.call("TYPE", "ks:type:s") == b"+string\r\n"
    assert raw.call("TYPE", "ks:type:cf") == b"+MBbloomCF\r\n"
    assert raw.call("TYPE", "ks:type:missing") == b"+none\r\n"


def test_rename_moves_value_and_ttl(r):
    r.set("ks:ren:src", "v", ex=100)
    assert r.rename("ks:ren:src", "ks:ren:dst")
    assert r.get("ks:ren:dst") == b"v"
    assert r.exists("ks:ren:src") == 0
    assert 0 < r.ttl("ks:ren:dst") <= 100


def test_rename_of_a_filter_keeps_its_items(raw):
    raw.call("CF.ADD", "ks:ren:cf", "item")
    assert raw.call("RENAME", "ks:ren:cf", "ks:ren:cf2") == b"+OK\r\n"
    assert raw.call("CF.EXISTS", "ks:ren:cf2", "item") == b":1\r\n"
    assert raw.call("EXISTS", "ks:ren:cf") == b":0\r\n"


def test_rename_errors(raw):
    assert raw.call("RENAME", "ks:ren:none", "x") == b"-ERR no such key\r\n"
    assert raw.call("RENAMENX", "ks:ren:none", "x") == b"-ERR no such key\r\n"
    assert raw.call("RENAME", "ks:ren:none") == (
        b"-ERR wrong number of arguments for 'rename' command\r\n")


def test_renamenx(raw):
    raw.call("SET", "ks:rnx:a", "1")
    raw.call("SET", "ks:rnx:b", "2")
    assert raw.call("RENAMENX", "ks:rnx:a", "ks:rnx:b") == b":0\r\n"
    assert raw.call("RENAMENX", "ks:rnx:a", "ks:rnx:a") == b":0\r\n"
    assert raw.call("RENAMENX", "ks:rnx:a", "ks:rnx:c") == b":1\r\n"
    assert raw.call("RENAME", "ks:rnx:c", "ks:rnx:c") == b"+OK\r\n"


@pytest.mark.parametrize("args,error", [
    (["NX", "XX"], b"-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"),
    (["NX", "GT"], b"-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"),
    (["GT", "LT"], b"-ERR GT and LT options at the same time are not compatible\r\n"),
    (["FOO"], b"-ERR Unsupported option FOO\r\n"),
])
def test_expire_option_errors(raw, args, error):
    raw.call("SET", "ks:exp:opt", "v")
    assert raw.call("EXPIRE", "ks:exp:opt", "100", *args) == error


def test_expire_time_errors(raw):
    raw.call("SET", "ks:exp:t", "v")
    assert raw.call("EXPIRE", "ks:exp:t", "abc") == (
        b"-ERR value is not an integer or out of range\r\n")
    assert raw.call("EXPIRE", "ks:exp:t", "9223372036854775807") == (
        b"-ERR invalid expire time in 'expire' command\r\n")
    assert raw.call("PEXPIRE", "ks:exp:t", "9223372036854775807") == (
        b"-ERR invalid expire time in 'pexpire' command\r\n")
    assert raw.call("EXPIREAT", "ks:exp:t", "9223372036854775807") == (
        b"-ERR invalid expire time in 'expireat' command\r\n")
    # An option error is reported before a bad time.
    assert raw.call("EXPIRE", "ks:exp:t", "abc", "foo") == b"-ERR Unsupported option foo\r\n"


def test_expire_conditions(raw):
    k = "ks:exp:cond"
    raw.call("SET", k, "v")
    assert raw.call("EXPIRE", k, "100", "XX") == b":0\r\n"  # no TTL yet
    assert raw.call("EXPIRE", k, "100", "GT") == b":0\r\n"  # no TTL = infinite
    assert raw.call("EXPIRE", k, "100", "NX") == b":1\r\n"
    assert raw.call("EXPIRE", k, "200", "NX") == b":0\r\n"
    assert raw.call("EXPIRE", k, "200", "GT") == b":1\r\n"
    assert raw.call("EXPIRE", k, "50", "GT") == b":0\r\n"
    assert raw.call("EXPIRE", k, "50", "LT") == b":1\r\n"
    assert raw.call("EXPIRE", k, "60", "LT") == b":0\r\n"
    assert raw.call("EXPIRE", k, "60", "XX") == b":1\r\n"
    assert raw.call("PERSIST", k) == b":1\r\n"
    assert raw.call("EXPIRE", k, "10", "LT") == b":1\r\n"  # LT beats no TTL
    assert raw.call("EXPIRE", "ks:exp:missing", "10") == b":0\r\n"


def test_expire_in_the_past_deletes(raw):
    for cmd, when in [("EXPIRE", "0"), ("EXPIRE", "-5"), ("PEXPIRE", "0"), ("EXPIREAT", "1"),
                      ("PEXPIREAT", "1")]:
        raw.call("SET", "ks:exp:past", "v")
        assert raw.call(cmd, "ks:exp:past", when) == b":1\r\n", cmd
        assert raw.call("EXISTS", "ks:exp:past") == b":0\r\n", cmd


def test_key_expires(r):
    r.set("ks:exp:short", "v")
    assert r.pexpire("ks:exp:short", 100)
    time.sleep(0.3)
    assert r.exists("ks:exp:short") == 0
    assert r.ttl("ks:exp:short") == -2


def test_ttl_family(raw):
    k = "ks:ttl"
    assert raw.call("TTL", k) == b":-2\r\n"
    assert raw.call("PTTL", k) == b":-2\r\n"
    assert raw.call("EXPIRETIME", k) == b":-2\r\n"
    assert raw.call("PEXPIRETIME", k) == b":-2\r\n"
    raw.call("SET", k, "v")
    assert raw.call("TTL", k) == b":-1\r\n"
    assert raw.call("PEXPIRETIME", k) == b":-1\r\n"
    raw.call("EXPIREAT", k, "99999999999")
    assert raw.call("EXPIRETIME", k) == b":99999999999\r\n"
    assert raw.call("PEXPIRETIME", k) == b":99999999999000\r\n"
    raw.call("EXPIRE", k, "100")
    assert raw.call("TTL", k) == b":100\r\n"
    pttl = int(raw.call("PTTL", k)[1:-2])
    assert 99000 < pttl <= 100000


def test_persist(raw):
    assert raw.call("PERSIST", "ks:persist") == b":0\r\n"
    raw.call("SET", "ks:persist", "v")
    assert raw.call("PERSIST", "ks:persist") == b":0\r\n"
    raw.call("EXPIRE", "ks:persist", "100")
    assert raw.call("PERSIST", "ks:persist") == b":1\r\n"
    assert raw.call("TTL", "ks:persist") == b":-1\r\n"


def test_scan_walks_every_key(rdb):
    names = {("scan:%d" % i).encode() for i in range(250)}
    for n in names:
        rdb.set(n, "v")
    seen = set()
    cursor = 0
    while True:
        cursor, keys = rdb.scan(cursor, count=17)
        seen.update(keys)
        if cursor == 0:
            break
    assert seen == names


def test_scan_match_and_type(rdb):
    rdb.set("scan:s1", "v")
    rdb.set("other", "v")
    rdb.execute_command("CF.RESERVE", "scan:cf", "100")
    assert set(rdb.scan_iter(match="scan:*")) == {b"scan:s1", b"scan:cf"}
    assert set(rdb.scan_iter(_type="string")) == {b"scan:s1", b"other"}
    assert set(rdb.scan_iter(_type="MBbloomCF")) == {b"scan:cf"}


def test_scan_errors(server):
    c = RawClient(server.port)
    assert c.call("SCAN", "abc") == b"-ERR invalid cursor\r\n"
    assert c.call("SCAN", "0x1") == b"-ERR invalid cursor\r\n"
    assert c.call("SCAN", "0", "COUNT", "0") == b"-ERR syntax error\r\n"
    assert c.call("SCAN", "0", "COUNT", "x") == b"-ERR value is not an integer or out of range\r\n"
    assert c.call("SCAN", "0", "MATCH") == b"-ERR syntax error\r\n"
    assert c.call("SCAN", "0", "FOO", "bar") == b"-ERR syntax error\r\n"
    assert c.call("SELECT", str(ISOLATED_DB)) == b"+OK\r\n"
    assert c.call("SCAN", "0", "MATCH", "nothing-matches-this") == b"*2\r\n$1\r\n0\r\n*0\r\n"
    c.close()


def test_keys_dbsize_randomkey_flushdb(rdb, r):
    assert rdb.dbsize() == 0
    assert rdb.randomkey() is None
    rdb.set("k1", "v")
    rdb.set("k2", "v")
    rdb.set("x", "v")
    assert sorted(rdb.keys("k*")) == [b"k1", b"k2"]
    assert rdb.dbsize() == 3
    assert rdb.randomkey() in {b"k1", b"k2", b"x"}
    r.set("ks:db0:survivor", "v")
    assert rdb.flushdb()
    assert rdb.dbsize() == 0
    assert r.get("ks:db0:survivor") == b"v"


def test_flush_options(server):
    c = RawClient(server.port)
    c.call("SELECT", str(ISOLATED_DB))
    assert c.call("FLUSHDB", "ASYNC") == b"+OK\r\n"
    assert c.call("FLUSHDB", "sync") == b"+OK\r\n"
    assert c.call("FLUSHDB", "foo") == b"-ERR syntax error\r\n"
    assert c.call("FLUSHDB", "async", "sync") == b"-ERR syntax error\r\n"
    c.close()


def test_flushall_empties_every_database(fresh_server):
    srv = fresh_server()
    a = redis.Redis(port=srv.port, db=0)
    b = redis.Redis(port=srv.port, db=3)
    a.set("a", "1")
    b.set("b", "1")
    assert a.flushall()
    assert a.dbsize() == 0 and b.dbsize() == 0


def test_flushdb_breaks_watch(rdb, server):
    other = redis.Redis(port=server.port, db=ISOLATED_DB)
    rdb.set("watched", "1")
    with rdb.pipeline() as p:
        p.watch("watched")
        other.flushdb()
        p.multi()
        p.set("watched", "2")
        with pytest.raises(redis.WatchError):
            p.execute()
    other.close()


def test_memory_usage(raw):
    raw.call("SET", "ks:mem:s", "hello")
    assert int(raw.call("MEMORY", "USAGE", "ks:mem:s")[1:-2]) > 5
    raw.call("CF.RESERVE", "ks:mem:cf", "1000")
    # 512 buckets of 2 slots: at least the 1024 bytes RedisBloom would hold.
    assert int(raw.call("MEMORY", "USAGE", "ks:mem:cf")[1:-2]) >= 1024
    assert raw.call("MEMORY", "USAGE", "ks:mem:missing") == b"$-1\r\n"
    assert raw.call("MEMORY", "USAGE", "ks:mem:s", "SAMPLES", "5") != b"-ERR syntax error\r\n"
    assert raw.call("MEMORY", "USAGE", "ks:mem:s", "SAMPLES", "-1") == b"-ERR syntax error\r\n"
    assert raw.call("MEMORY", "USAGE", "ks:mem:s", "FOO") == b"-ERR syntax error\r\n"
    assert raw.call("MEMORY", "FOO") == b"-ERR unknown subcommand 'FOO'. Try MEMORY HELP.\r\n"
    assert raw.call("MEMORY", "USAGE") == (
        b"-ERR wrong number of arguments for 'memory|usage' command\r\n")


def test_memory_usage_resp3_null(server):
    c = RawClient(server.port)
    c.call("HELLO", "3")
    assert c.call("MEMORY", "USAGE", "ks:mem:none") == b"_\r\n"
    c.close()


def test_disk_usage(raw):
    raw.call("CF.ADD", "ks:disk:cf", "x")
    assert raw.call("DISK", "USAGE", "ks:disk:cf").startswith(b":")
    assert raw.call("DISK", "USAGE", "ks:disk:missing") == b"$-1\r\n"
