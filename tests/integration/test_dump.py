"""DUMP / RESTORE / RESTORE-ASKING over a socket: filters and strings move between keys byte for
byte (SCANDUMP, INFO, DUMP), with TTLs, REPLACE, damaged payloads and the server's size limits.

The payload bytes themselves are checked against Redis 7.0 + RedisBloom in the goldens
(tests/goldens/cf-dump.jsonl) and in tests/core/rdb_test.cc."""
import struct
import time

import pytest
import redis
from cuckood_testlib import RawClient


@pytest.fixture
def r(server):
    c = redis.Redis(port=server.port)
    yield c
    c.close()


def scandump(r, key):
    chunks, it = [], 0
    while True:
        it, data = r.execute_command("CF.SCANDUMP", key, it)
        if it == 0:
            return chunks
        chunks.append((it, data))


def info(r, key):
    return r.execute_command("CF.INFO", key)


def fill(r, key, n, prefix="item"):
    for start in range(0, n, 500):
        r.execute_command("CF.INSERT", key, "ITEMS",
                          *["%s%d" % (prefix, i) for i in range(start, min(n, start + 500))])


CRC_POLY = 0x95AC9329AC4BC9B5


def crc64(data):
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ CRC_POLY if crc & 1 else crc >> 1
    return crc


def refooter(body, version=10):
    body = body + struct.pack("<H", version)
    return body + struct.pack("<Q", crc64(body))


def test_filter_round_trip_through_several_sub_filters(r):
    r.execute_command("CF.RESERVE", "dp:src", 64, "BUCKETSIZE", 3, "MAXITERATIONS", 7,
                      "EXPANSION", 2)
    fill(r, "dp:src", 400)
    r.execute_command("CF.DEL", "dp:src", "item3")
    payload = r.dump("dp:src")
    assert payload[:1] == b"\x07"
    assert r.restore("dp:copy", 0, payload)
    assert r.type("dp:copy") == b"MBbloomCF"
    assert info(r, "dp:copy") == info(r, "dp:src")
    assert scandump(r, "dp:copy") == scandump(r, "dp:src")
    assert r.dump("dp:copy") == payload
    assert r.execute_command("CF.EXISTS", "dp:copy", "item10") == 1
    # The copy is a filter of its own: writes to it leave the source alone.
    r.execute_command("CF.ADD", "dp:copy", "only-in-copy")
    assert r.execute_command("CF.EXISTS", "dp:src", "only-in-copy") == 0
    assert r.dump("dp:src") == payload


def test_restore_refuses_an_existing_key_unless_replace(r):
    r.execute_command("CF.RESERVE", "dp:a", 100)
    r.execute_command("CF.ADD", "dp:a", "x")
    r.execute_command("CF.RESERVE", "dp:b", 1000, "BUCKETSIZE", 4)
    fill(r, "dp:b", 50, "b")
    pa, pb = r.dump("dp:a"), r.dump("dp:b")
    with pytest.raises(redis.ResponseError, match="^BUSYKEY Target key name already exists.$"):
        r.restore("dp:a", 0, pb)
    assert r.dump("dp:a") == pa
    assert r.restore("dp:a", 0, pb, replace=True)
    # A new version: nothing of the old filter shows through.
    assert r.dump("dp:a") == pb
    assert scandump(r, "dp:a") == scandump(r, "dp:b")
    assert r.execute_command("CF.EXISTS", "dp:a", "x") == 0
    # A string over a filter and a filter over a string.
    r.set("dp:s", "text")
    assert r.restore("dp:a", 0, r.dump("dp:s"), replace=True)
    assert r.get("dp:a") == b"text"
    assert r.restore("dp:s", 0, pb, replace=True)
    assert r.type("dp:s") == b"MBbloomCF"


def test_restore_ttl_absttl_and_already_expired(r):
    r.set("dp:t", "v")
    p = r.dump("dp:t")
    assert r.restore("dp:t1", 100000, p)
    assert 99000 < r.pttl("dp:t1") <= 100000
    at = int(time.time() * 1000) + 50000
    assert r.restore("dp:t2", at, p, absttl=True)
    assert r.execute_command("PEXPIRETIME", "dp:t2") == at
    # An expiry in the past: OK, nothing created; with REPLACE the old key is gone.
    assert r.restore("dp:t3", 1, p, absttl=True)
    assert r.exists("dp:t3") == 0
    r.execute_command("CF.RESERVE", "dp:t4", 100)
    fp = r.dump("dp:t4")
    assert r.restore("dp:t4", 1, fp, absttl=True, replace=True)
    assert r.exists("dp:t4") == 0
    assert r.restore("dp:t5", 60000, fp, idletime=10)
    assert 0 < r.pttl("dp:t5") <= 60000
    assert r.restore("dp:t6", 0, fp, frequency=200)
    assert r.ttl("dp:t6") == -1


def test_damaged_payloads_write_nothing(r):
    r.execute_command("CF.RESERVE", "dp:d", 4096, "BUCKETSIZE", 2)
    fill(r, "dp:d", 3000)
    p = r.dump("dp:d")
    body = p[:-10]
    bad = bytearray(p)
    bad[len(p) // 2] ^= 0x40
    with pytest.raises(redis.ResponseError, match="^DUMP payload version or checksum are wrong$"):
        r.restore("dp:d1", 0, bytes(bad))
    with pytest.raises(redis.ResponseError, match="^DUMP payload version or checksum are wrong$"):
        r.restore("dp:d1", 0, refooter(body, 11))
    # A valid checksum over damaged contents: the LZF data of the sub-filter is cut short.
    assert b"\xc3" in body
    with pytest.raises(redis.ResponseError, match="^Bad data format$"):
        r.restore("dp:d1", 0, refooter(body[:-40] + b"\x00"))
    # A valid checksum over a truncated value; and over a value cut anywhere.
    for cut in range(1, len(body) - 12, max(1, len(body) // 50)):
        with pytest.raises(redis.ResponseError, match="^Bad data format$"):
            r.restore("dp:d1", 0, refooter(body[:cut]))
    assert r.exists("dp:d1") == 0
    # REPLACE with a damaged payload keeps the old key.
    with pytest.raises(redis.ResponseError, match="^Bad data format$"):
        r.restore("dp:d", 0, refooter(body[:-40] + b"\x00"), replace=True)
    assert r.dump("dp:d") == p


def test_large_filter_round_trip(r):
    # 2^19 buckets of 2: a 1 MiB sub-filter (many pages, LZF streamed past its flush size), then
    # a second one of 2 MiB after growth.
    r.execute_command("CF.RESERVE", "dp:big", 1 << 20, "BUCKETSIZE", 2, "EXPANSION", 2)
    fill(r, "dp:big", 20000)
    p = r.dump("dp:big")
    assert r.restore("dp:big2", 0, p)
    assert info(r, "dp:big2") == info(r, "dp:big")
    assert r.dump("dp:big2") == p
    assert r.execute_command("CF.MEXISTS", "dp:big2", "item0", "item19999", "nope") == [1, 1, 0]


def test_dump_of_missing_key_and_resp3(server, r):
    assert r.dump("dp:none") is None
    c = RawClient(server.port)
    try:
        c.call("HELLO", "3")
        assert c.call("DUMP", "dp:none") == b"_\r\n"
        c.call("SET", "dp:r3", "12")
        assert c.call("DUMP", "dp:r3") == b"$13\r\n\x00\xc0\x0c\n\x00<*\xf8Q\\\x04\xbc\xd5\r\n"
    finally:
        c.close()


def test_restore_asking_and_inside_multi(r):
    r.set("dp:m", "multi value")
    p = r.dump("dp:m")
    assert r.execute_command("RESTORE-ASKING", "dp:m1", 0, p) == b"OK"
    assert r.get("dp:m1") == b"multi value"
    pipe = r.pipeline(transaction=True)
    pipe.restore("dp:m2", 0, p)
    pipe.get("dp:m2")
    assert pipe.execute() == [b"OK", b"multi value"]


def test_restored_filter_survives_a_restart(fresh_server):
    s = fresh_server()
    c = redis.Redis(port=s.port)
    c.execute_command("CF.RESERVE", "dp:p", 2000, "BUCKETSIZE", 4)
    fill(c, "dp:p", 1500)
    p = c.dump("dp:p")
    c.restore("dp:p2", 0, p)
    c.close()
    s.restart()
    c = redis.Redis(port=s.port)
    assert c.dump("dp:p2") == p
    c.close()


def test_size_limits(server, fresh_server):
    s = fresh_server("--proto-max-bulk-len", "1mb", "--cf-max-filter-bytes", "1048576")
    c = redis.Redis(port=s.port)
    big = redis.Redis(port=server.port)
    # A filter this server may hold (1 MiB), then one of 2 MiB made on another server.
    c.execute_command("CF.RESERVE", "dp:l", 1 << 20, "BUCKETSIZE", 1)
    fill(c, "dp:l", 100)
    assert c.restore("dp:l2", 0, c.dump("dp:l"))
    big.execute_command("CF.RESERVE", "dp:l3", 2 << 20, "BUCKETSIZE", 1)
    fill(big, "dp:l3", 100)
    payload = big.dump("dp:l3")
    big.close()
    assert len(payload) < (1 << 20)
    with pytest.raises(redis.ResponseError, match="^Bad data format$"):
        c.restore("dp:l3", 0, payload)
    assert c.exists("dp:l3") == 0
    c.close()
    # A payload past proto-max-bulk-len is refused by the protocol layer, as Redis refuses it.
    raw = RawClient(s.port)
    try:
        raw.send_raw(b"*4\r\n$7\r\nRESTORE\r\n$4\r\ndp:x\r\n$1\r\n0\r\n$%d\r\n" % (2 << 20))
        reply = raw.read_reply()
        assert reply.startswith(b"-ERR Protocol error")
    finally:
        raw.close()


def test_dump_of_a_renamed_filter_and_of_an_expiring_key(r):
    r.execute_command("CF.RESERVE", "dp:rn", 500, "BUCKETSIZE", 2)
    fill(r, "dp:rn", 300)
    payload = r.dump("dp:rn")
    r.rename("dp:rn", "dp:rn2")  # the pages stay under the old name
    assert r.dump("dp:rn2") == payload
    assert r.dump("dp:rn") is None
    # DUMP carries no TTL: the restored key has none unless RESTORE gives one.
    r.pexpire("dp:rn2", 100000)
    assert r.dump("dp:rn2") == payload
    assert r.restore("dp:rn3", 0, payload)
    assert r.ttl("dp:rn3") == -1
