"""Failover of a 6-node cluster (3 shards x primary + replica) as kvrocks-controller 1.2.0 does
it (the contract double of tests/lib/controller_double.py): the primary of a shard is killed
with SIGKILL after the shard is quiesced, the double promotes the replica with the highest
`sequence` by a pushed topology (version + 1), RedisCluster recovers within its retries,
nothing written before the kill is lost, and the old primary, restarted, is set up again by the
probe as a replica of the new primary and converges to the same filters."""
import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot

from controller_double import ControllerDouble, parse_cluster_info
from cuckood_group import ServerGroup, wait_for

CLUSTER_ARGS = ["--cluster-enabled", "yes"]


def client(port):
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=10,
                       single_connection_client=True)


def info(port, section=None):
    return client(port).info(section) if section else client(port).info()


def sequence(port):
    return int(info(port, "replication")["sequence"])


def dump(r, key):
    chunks, it = [], 0
    while True:
        it, data = r.execute_command("CF.SCANDUMP", key, it)
        if it == 0:
            return chunks
        chunks.append((it, data))


def hello(port):
    reply = client(port).execute_command("HELLO", "2")
    return dict(zip(reply[::2], reply[1::2]))


def shard_of(double, key):
    slot = key_slot(key.encode())
    for i, shard in enumerate(double.shards):
        if any(a <= slot <= b for a, b in shard["slots"]):
            return i
    raise AssertionError("slot %d unowned" % slot)


def test_kill9_of_a_primary_is_failed_over_and_the_old_primary_rejoins(tmp_path):
    with ServerGroup(tmp_path, 6, CLUSTER_ARGS) as group:
        double = ControllerDouble([("127.0.0.1", n.port) for n in group.nodes], replicas=1)
        rc = None
        try:
            double.create_cluster()
            by_port = {n.port: n for n in group.nodes}
            for shard in double.shards:
                (r,) = shard["replicas"]
                wait_for(lambda: info(r["port"], "replication").get("master_link_status")
                         == "up", 20, "replica %d linked" % r["port"])
            # HELLO speaks of cluster mode and of each node's role.
            m0, r0 = double.shards[0]["master"]["port"], double.shards[0]["replicas"][0]["port"]
            assert hello(m0)[b"mode"] == b"cluster" and hello(m0)[b"role"] == b"master"
            assert hello(r0)[b"mode"] == b"cluster" and hello(r0)[b"role"] == b"replica"

            rc = RedisCluster(host="127.0.0.1", port=group.nodes[0].port, socket_timeout=5)
            keys = ["fo:%d" % i for i in range(240)] + ["{fo}:%d" % i for i in range(60)]
            items = {}
            for i, k in enumerate(keys):
                items[k] = ["a%d" % i, "b%d" % i]
                assert rc.cf().add(k, items[k][0]) == 1
                assert rc.cf().insert(k, [items[k][1]]) == [1]
            victim_index = shard_of(double, "{fo}:0")
            victim = double.shards[victim_index]["master"]
            heir = double.shards[victim_index]["replicas"][0]
            shard_keys = [k for k in keys if shard_of(double, k) == victim_index]
            assert len(shard_keys) >= 60

            # Quiesce: every primary's writes acknowledged by its replica, equal sequences.
            for shard in double.shards:
                m, (r,) = shard["master"], shard["replicas"]
                assert client(m["port"]).execute_command("WAIT", 1, 10000) == 1
                wait_for(lambda: sequence(m["port"]) == sequence(r["port"]), 10,
                         "equal sequences on shard of %d" % m["port"])
            before = {k: dump(client(victim["port"]), k) for k in shard_keys}

            by_port[victim["port"]].kill9()
            assert double.probe()[victim["port"]] is None
            promoted = double.failover(victim_index)
            assert promoted["id"] == heir["id"]
            sent = [(p, a[0]) for p, a, _ in double.log[-20:]]
            assert (heir["port"], "info") in sent  # the candidate's sequence was read
            assert "%s 127.0.0.1 %d slave %s\n" % (victim["id"], victim["port"], heir["id"]) \
                in double.topology()
            wait_for(lambda: info(heir["port"], "replication")["role"] == "master", 10,
                     "the promotion")
            assert hello(heir["port"])[b"role"] == b"master"
            # The probe sees every live node at the new version.
            seen = double.probe()
            assert seen[victim["port"]] is None
            assert {p: v for p, v in seen.items() if p != victim["port"]} == \
                {n.port: double.version for n in group.nodes if n.port != victim["port"]}

            # The client recovers within its retries (a refused connection makes it re-read
            # the slots); nothing written before the kill is lost.
            for k in keys:
                assert rc.cf().exists(k, items[k][0]) == 1, k
                assert rc.cf().exists(k, items[k][1]) == 1, k
            for k in shard_keys:
                assert dump(client(heir["port"]), k) == before[k], k
            after = {}
            for i, k in enumerate(shard_keys[:30]):
                after[k] = "after%d" % i
                assert rc.cf().add(k, after[k]) == 1

            # The old primary comes back with its old topology (version behind): the probe sets
            # it up again as a replica of the new primary, and it converges.
            old_version = double.version - 1
            by_port[victim["port"]].start()
            seen = double.probe()
            assert seen[victim["port"]] == old_version
            assert double.probe() == {n.port: double.version for n in group.nodes}
            wait_for(lambda: info(victim["port"], "replication")["role"] == "slave" and
                     info(victim["port"], "replication")["master_port"] == heir["port"], 10,
                     "the old primary to replicate from the new one")
            assert client(heir["port"]).execute_command("WAIT", 1, 20000) == 1
            wait_for(lambda: sequence(victim["port"]) == sequence(heir["port"]), 20,
                     "the old primary to catch up")
            assert hello(victim["port"])[b"role"] == b"replica"
            old = client(victim["port"])
            assert old.execute_command("READONLY") is True
            new = client(heir["port"])
            for k in shard_keys:
                assert dump(old, k) == dump(new, k), k
                if k not in after:
                    assert dump(old, k) == before[k], k
            for k, item in after.items():
                assert old.execute_command("CF.EXISTS", k, item) == 1
            # It redirects writes to the new primary.
            slot = key_slot(shard_keys[0].encode())
            try:
                old.execute_command("CF.ADD", shard_keys[0], "z")
                raise AssertionError("the old primary accepted a write")
            except redis.ResponseError as e:
                assert str(e) == "MOVED %d 127.0.0.1:%d" % (slot, heir["port"])
            cinfo = parse_cluster_info(old.execute_command("CLUSTER", "INFO").decode())
            assert cinfo["cluster_current_epoch"] == str(double.version)
        finally:
            if rc is not None:
                rc.close()
            double.close()
