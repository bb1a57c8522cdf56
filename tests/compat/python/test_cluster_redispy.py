"""cuckood's cluster mode through the pinned redis-py's `RedisCluster` (tests/integration runs
Debian's redis-py 4.3.4 against the same surface), in RESP2 and RESP3: the `cf()` API over 300
keys, hash tags included. scripts/compat.sh starts 3 cluster-enabled nodes, pushes their
topology and names them in CUCKOOD_CLUSTER_NODES ("host:port,host:port,host:port")."""
import os

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot


@pytest.fixture(scope="module")
def nodes():
    value = os.environ.get("CUCKOOD_CLUSTER_NODES", "")
    addrs = [a.rsplit(":", 1) for a in value.split(",") if a]
    assert len(addrs) == 3, "CUCKOOD_CLUSTER_NODES must name the cluster of scripts/compat.sh"
    return [(h, int(p)) for h, p in addrs]


def info(rc, key, *names):
    """CF.INFO fields through cf().info(): a CFInfo in RESP2, a dict in RESP3."""
    value = rc.cf().info(key)
    if isinstance(value, dict):
        return [value[n.encode()] for n in names]
    attrs = {"Size": "size", "Number of buckets": "bucketNum", "Number of filters": "filterNum",
             "Number of items inserted": "insertedNum", "Number of items deleted": "deletedNum"}
    return [getattr(value, attrs[n]) for n in names]


def test_redis_cluster_runs_the_cf_api(nodes, proto):
    rc = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in nodes], protocol=proto,
                      socket_timeout=30)
    try:
        keys = ["pycl:%d:%d" % (proto, i) for i in range(250)] + \
            ["{pycl%d}:%d" % (proto, i) for i in range(50)]
        assert rc.cf().reserve(keys[0], 1000) is True
        for i, k in enumerate(keys):
            assert rc.cf().add(k, "item-%d" % i) in (1, True), k
        assert list(rc.cf().insert(keys[250], ["a", "b"])) in ([1, 1], [True, True])
        assert rc.cf().addnx(keys[251], "item-251") in (0, False)
        assert rc.cf().insertnx(keys[252], ["item-252", "new"]) == [0, 1]
        for i, k in enumerate(keys):
            assert rc.cf().exists(k, "item-%d" % i) in (1, True), k
        assert rc.cf().exists(keys[1], "absent") in (0, False)
        assert rc.cf().mexists(keys[250], "a", "b", "c") in ([1, 1, 0], [True, True, False])
        assert rc.cf().count(keys[250], "a") == 1
        assert rc.cf().delete(keys[250], "a") in (1, True)
        # (CF.DEL counts the item out of "inserted", as RedisBloom does)
        assert info(rc, keys[250], "Number of items inserted", "Number of items deleted") == \
            [2, 1]
        assert info(rc, keys[0], "Size", "Number of buckets", "Number of filters",
                    "Number of items inserted") == [1080, 512, 1, 1]
        # SCANDUMP / LOADCHUNK move a filter to another key (another slot) through the client.
        it, chunks = 0, []
        while True:
            it, data = rc.cf().scandump(keys[0], it)
            if it == 0:
                break
            chunks.append((it, data))
        copy = "pycl:%d:copy" % proto
        for it, data in chunks:
            assert rc.cf().loadchunk(copy, it, data) in ("OK", True, b"OK")
        assert rc.cf().exists(copy, "item-0") in (1, True)
        # Each key lives on the master owning its slot.
        slots = {}
        for entry in redis.Redis(host=nodes[0][0], port=nodes[0][1]).execute_command(
                "CLUSTER", "SLOTS"):
            for s in range(entry[0], entry[1] + 1):
                slots[s] = entry[2][1]
        assert len(slots) == 16384
        used = set()
        for k in keys:
            port = slots[key_slot(k.encode())]
            used.add(port)
            assert redis.Redis(host="127.0.0.1", port=port).exists(k) == 1
        assert used == {p for _, p in nodes}
    finally:
        rc.close()
