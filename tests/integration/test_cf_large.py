"""Large filters: lazy allocation; SCANDUMP / LOADCHUNK of sub-filters above the 16 MiB chunk."""
import time

import pytest
from cuckood_testlib import RawClient, encode

CHUNK = 16 * 1024 * 1024


@pytest.fixture
def raw(server):
    c = RawClient(server.port, timeout=120)
    yield c
    c.close()


def parse_scandump(reply):
    """[next iterator, data or None] from the exact reply bytes of CF.SCANDUMP."""
    head, rest = reply.split(b"\r\n", 1)
    assert head == b"*2"
    nl = rest.index(b"\r\n")
    nxt = int(rest[1:nl])
    body = rest[nl + 2:]
    if body == b"$-1\r\n":
        return nxt, None
    ln_end = body.index(b"\r\n")
    n = int(body[1:ln_end])
    data = body[ln_end + 2:ln_end + 2 + n]
    assert len(data) == n and body[ln_end + 2 + n:] == b"\r\n"
    return nxt, data


def dump(c, key):
    chunks, it = [], 0
    while True:
        nxt, data = parse_scandump(c.call("CF.SCANDUMP", key, it))
        if nxt == 0:
            assert data is None
            return chunks
        chunks.append((nxt, data))
        it = nxt


def info(c, key):
    reply = c.call("CF.INFO", key)
    fields = reply.split(b"\r\n")[1:-1]
    return {fields[i][1:].decode(): int(fields[i + 1][1:]) for i in range(0, len(fields), 2)}


def disk_usage(c, key):
    reply = c.call("DISK", "USAGE", key)
    assert reply.startswith(b":"), reply
    return int(reply[1:-2])


def test_reserve_of_a_billion_is_instant_and_lazy(raw):
    k = "large:billion"
    start = time.time()
    assert raw.call("CF.RESERVE", k, "1000000000") == b"+OK\r\n"
    assert time.time() - start < 1.0
    assert info(raw, k) == {
        "Size": 40 + 16 + 2 * 536870912, "Number of buckets": 536870912,
        "Number of filters": 1, "Number of items inserted": 0, "Number of items deleted": 0,
        "Bucket size": 2, "Expansion rate": 1, "Max iterations": 20}
    empty = disk_usage(raw, k)
    assert 0 < empty < 4096
    for i in range(5):
        assert raw.call("CF.ADD", k, "item-%d" % i) == b":1\r\n"
    assert disk_usage(raw, k) < 64 * 1024  # a few pages, not a GiB
    raw.send_raw(b"".join(encode(["CF.ADD", k, "more-%d" % i]) for i in range(1000)))
    assert {raw.read_reply() for _ in range(1000)} == {b":1\r\n"}
    assert disk_usage(raw, k) < 8 * 1024 * 1024  # at most one page per item
    assert raw.call("CF.MEXISTS", k, "item-0", "item-4", "more-999") == (
        b"*3\r\n:1\r\n:1\r\n:1\r\n")
    assert info(raw, k)["Number of items inserted"] == 1005
    # deleting the key is O(1) too
    start = time.time()
    assert raw.call("DEL", k) == b":1\r\n"
    assert time.time() - start < 1.0


def test_several_huge_filters_at_once(raw):
    start = time.time()
    for i in range(20):
        assert raw.call("CF.RESERVE", "large:many:%d" % i, "1000000000", "BUCKETSIZE", "4",
                        "EXPANSION", "2") == b"+OK\r\n"
        assert raw.call("CF.ADD", "large:many:%d" % i, "x") == b":1\r\n"
    assert time.time() - start < 5.0
    assert raw.call("CF.EXISTS", "large:many:7", "x") == b":1\r\n"
    assert raw.call("DEL", *["large:many:%d" % i for i in range(20)]) == b":20\r\n"


def test_scandump_of_a_32_mib_sub_filter_comes_in_16_mib_chunks(raw):
    src, dst = "large:big", "large:big:copy"
    start = time.time()
    assert raw.call("CF.RESERVE", src, "20000000", "BUCKETSIZE", "2") == b"+OK\r\n"
    assert info(raw, src)["Number of buckets"] == 16777216
    items = ["item-%d" % i for i in range(300)]
    raw.send_raw(b"".join(encode(["CF.ADD", src, x]) for x in items))
    assert {raw.read_reply() for _ in items} == {b":1\r\n"}
    # four copies of one item fill both of its buckets; the next ones open sub-filter 2
    for _ in range(6):
        assert raw.call("CF.ADD", src, "foo") == b":1\r\n"
    before = info(raw, src)
    assert before["Number of filters"] == 2
    assert before["Size"] == 40 + 16 * 2 + 2 * 2 * 16777216

    chunks = dump(raw, src)
    assert [it for it, _ in chunks] == [1, 1 + CHUNK, 1 + 2 * CHUNK, 1 + 3 * CHUNK,
                                        1 + 4 * CHUNK]
    assert len(chunks[0][1]) == 38
    assert [len(d) for _, d in chunks[1:]] == [CHUNK] * 4
    # the header: numItems, numBuckets, numDeletes, numFilters, bucket size, max iter, expansion
    hdr = chunks[0][1]
    assert int.from_bytes(hdr[0:8], "little") == 306
    assert int.from_bytes(hdr[8:16], "little") == 16777216
    assert int.from_bytes(hdr[24:32], "little") == 2
    assert hdr[32:38] == b"\x02\x00\x14\x00\x01\x00"
    # the filled slots are where they should be: 306 fingerprints in total
    nonzero = sum(len(d) - d.count(0) for _, d in chunks[1:])
    assert nonzero == 306

    # an iterator inside a large sub-filter answers from that byte on, up to its end
    nxt, data = parse_scandump(raw.call("CF.SCANDUMP", src, 1 + CHUNK + 100))
    assert nxt == 1 + 2 * CHUNK and data == chunks[2][1][100:]
    nxt, data = parse_scandump(raw.call("CF.SCANDUMP", src, 1 + 4 * CHUNK))
    assert (nxt, data) == (0, None)

    for it, data in chunks:
        assert raw.call("CF.LOADCHUNK", dst, it, data) == b"+OK\r\n"
    assert info(raw, dst) == before
    assert dump(raw, dst) == chunks
    raw.send_raw(b"".join(encode(["CF.EXISTS", dst, x]) for x in items))
    assert {raw.read_reply() for _ in items} == {b":1\r\n"}
    assert raw.call("CF.COUNT", dst, "foo") == b":6\r\n"
    # the copy is a working filter of its own
    assert raw.call("CF.DEL", dst, "foo") == b":1\r\n"
    assert raw.call("CF.COUNT", dst, "foo") == b":5\r\n"
    assert raw.call("CF.COUNT", src, "foo") == b":6\r\n"
    assert raw.call("DEL", src, dst) == b":2\r\n"
    assert time.time() - start < 20


def test_loadchunk_rejects_chunks_that_do_not_fit(raw):
    k = "large:reject"
    raw.call("CF.RESERVE", k, "20000000")
    raw.call("CF.ADD", k, "x")
    # a chunk crossing the end of the sub-filter
    assert raw.call("CF.LOADCHUNK", k, 1 + 2 * CHUNK + 10, b"\x00" * 20) == (
        b"-Couldn't load chunk!\r\n")
    assert raw.call("CF.LOADCHUNK", k, 5, b"\x00" * 10) == b"-Couldn't load chunk!\r\n"
    assert raw.call("CF.LOADCHUNK", k, 0, b"x") == b"-Invalid position\r\n"
    assert raw.call("CF.EXISTS", k, "x") == b":1\r\n"
    raw.call("DEL", k)


def test_disk_usage_counts_pages_that_are_on_disk(fresh_server):
    srv = fresh_server()
    c = RawClient(srv.port)
    for n in range(10):
        c.call("CF.RESERVE", "du:%d" % n, "1000")  # one 1 KiB page each
        c.call("CF.INSERT", "du:%d" % n, "ITEMS", *["i%d" % i for i in range(500)])
    c.close()
    srv.restart()  # the memtable is flushed: the pages now live in an SST file, side by side
    c = RawClient(srv.port)
    usage = [disk_usage(c, "du:%d" % n) for n in range(10)]
    # ~500 random fingerprint bytes each, which do not compress away
    assert min(usage) >= 500, usage
    c.close()
