"""Live slot migration (CLUSTERX MIGRATE) driven as kvrocks-controller 1.2.0 drives it: MIGRATE to
the source master, `cluster info` every second until migrating_state is success or fail, then
the slots moved in the topology (version + 1) or the state cleared (version + 1)."""
import threading
import time

import pytest
import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot

from controller_double import ControllerDouble, RespError, parse_cluster_info
from cuckood_group import ServerGroup, wait_for

CLUSTER_ARGS = ["--cluster-enabled", "yes"]


def client(node, **kw):
    return redis.Redis(host="127.0.0.1", port=node.port, socket_timeout=10, **kw)


def keys_in(slots, per_slot, prefix="k"):
    """Key names whose slots are in `slots`, per_slot of them each (found by trying names)."""
    want = {s: [] for s in slots}
    i = 0
    while any(len(v) < per_slot for v in want.values()):
        k = "%s%d" % (prefix, i)
        s = key_slot(k.encode())
        if s in want and len(want[s]) < per_slot:
            want[s].append(k)
        i += 1
    return [k for v in want.values() for k in v]


def migrate(double, source, slots, target, deadline=60.0):
    """MIGRATE, then poll cluster info every second as the controller does; returns the state."""
    assert double.send(source, "CLUSTERX", "MIGRATE", slots, target["id"]) == "OK"
    double.push()  # version + 1, slots unchanged
    end = time.time() + deadline
    while time.time() < end:
        info = {k: v.strip() for k, v in
                parse_cluster_info(double.send(source, "cluster", "info")).items()}
        assert info["migrating_slot(s)"] == slots
        assert info["destination_node"] == target["id"]
        state = info["migrating_state"]
        if state in ("success", "fail"):
            return state
        time.sleep(1.0)
    raise AssertionError("migration did not end")


def test_migrate_100_slots_while_a_writer_adds(tmp_path):
    with ServerGroup(tmp_path, 2, CLUSTER_ARGS) as group:
        double = ControllerDouble([("127.0.0.1", n.port) for n in group.nodes])
        try:
            double.create_cluster()
            src, dst = double.shards[0]["master"], double.shards[1]["master"]
            src_node = group.nodes[0]
            r = client(src_node)
            quiet = keys_in(range(0, 100), 2, "q")       # not written during the migration
            busy = keys_in(range(0, 100, 10), 1, "w")    # the writer's keys
            for k in quiet:
                r.execute_command("CF.RESERVE", k, 1000)
                for j in range(20):
                    r.execute_command("CF.ADD", k, "item-%d" % j)
            r.execute_command("RENAME", quiet[0], "{%s}renamed" % quiet[0])
            quiet[0] = "{%s}renamed" % quiet[0]
            dumps = {k: r.execute_command("CF.SCANDUMP", k, 0) for k in quiet}
            acked, tryagain, stop = [], [0], threading.Event()

            def writer():
                rc = RedisCluster(host="127.0.0.1", port=src_node.port, socket_timeout=10)
                i = 0
                while not stop.is_set():
                    k = busy[i % len(busy)]
                    item = "x%d" % i
                    try:
                        rc.execute_command("CF.ADD", k, item)
                        acked.append((k, item))
                        i += 1
                    except redis.exceptions.ResponseError as e:
                        if "TRYAGAIN" not in str(e):
                            raise
                        tryagain[0] += 1
                        time.sleep(0.01)
                    except (redis.exceptions.ClusterError, redis.exceptions.RedisClusterException):
                        tryagain[0] += 1
                        time.sleep(0.01)
                rc.close()

            t = threading.Thread(target=writer)
            t.start()
            try:
                wait_for(lambda: len(acked) > 50, 20, "writes before the migration")
                assert migrate(double, src, "0-99", dst) == "success"
                double.shards[0]["slots"] = [(100, 8191)]
                double.shards[1]["slots"] = [(0, 99), (8192, 16383)]
                double.push()
                n = len(acked)
                wait_for(lambda: len(acked) > n + 50, 20, "writes after the migration")
            finally:
                stop.set()
                t.join(30)
            assert tryagain[0] < 200
            d = client(group.nodes[1])
            for k, item in acked:
                assert d.execute_command("CF.EXISTS", k, item) == 1, (k, item)
            for k in quiet:
                assert d.execute_command("CF.SCANDUMP", k, 0) == dumps[k]
            info = d.execute_command("CLUSTER", "INFO").decode()
            assert "importing_slot(s): 0-99" in info and "import_state: success" in info
            # The source dropped the range once the topology moved it.
            for s in range(0, 100):
                assert r.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) == 0
            with pytest.raises(redis.ResponseError, match="MOVED"):
                r.execute_command("CF.EXISTS", quiet[1], "item-1")
            # New filters on the destination get versions of their own.
            d.execute_command("DEL", quiet[1])
            d.execute_command("CF.RESERVE", quiet[1], 1000)
            assert d.execute_command("CF.EXISTS", quiet[1], "item-1") == 0
        finally:
            double.close()


def test_a_migration_whose_destination_dies_fails_and_the_source_serves(tmp_path):
    with ServerGroup(tmp_path, 2, CLUSTER_ARGS) as group:
        double = ControllerDouble([("127.0.0.1", n.port) for n in group.nodes])
        try:
            double.create_cluster()
            src, dst = double.shards[0]["master"], double.shards[1]["master"]
            r = client(group.nodes[0])
            keys = keys_in(range(0, 50), 1, "big")
            for k in keys:
                r.execute_command("CF.RESERVE", k, 2000000)
                r.execute_command("CF.ADD", k, "a")
            # A slow transfer (large pages, rate limited) to kill the destination in.
            assert double.send(src, "CLUSTERX", "MIGRATE", "0-49", dst["id"]) == "OK"
            group.nodes[1].kill9()
            wait_for(lambda: "migrating_state: fail" in
                     r.execute_command("CLUSTER", "INFO").decode(), 30, "fail")
            for k in keys:
                assert r.execute_command("CF.EXISTS", k, "a") == 1
            r.execute_command("CF.ADD", keys[0], "b")
        finally:
            double.close()


def test_migrate_refuses_bad_requests(tmp_path):
    with ServerGroup(tmp_path, 2, CLUSTER_ARGS) as group:
        double = ControllerDouble([("127.0.0.1", n.port) for n in group.nodes])
        try:
            double.create_cluster()
            src, dst = double.shards[0]["master"], double.shards[1]["master"]

            def err(*argv):
                with pytest.raises(RespError) as e:
                    double.send(src, *argv)
                return str(e.value)

            assert "Slot range is invalid" in err("CLUSTERX", "MIGRATE", "9-3", dst["id"])
            assert "doesn't belong to me" in err("CLUSTERX", "MIGRATE", "9000", dst["id"])
            assert "destination" in err("CLUSTERX", "MIGRATE", "5", "a" * 40)
            assert "myself" in err("CLUSTERX", "MIGRATE", "5", src["id"])
            assert "No import" in err("CLUSTERX", "APPLYBATCH", "x" * 20)
            # The destination side: FLUSHALL waits for the import's end; garbage is refused.
            d = client(group.nodes[1])
            assert "belongs to me" in str(pytest.raises(
                redis.ResponseError, d.execute_command, "CLUSTERX", "IMPORT", "9000", "start").value)
            assert d.execute_command("CLUSTERX", "IMPORT", "0-9", "start") == b"OK"
            assert "Invalid import state" in str(pytest.raises(
                redis.ResponseError, d.execute_command, "CLUSTERX", "IMPORT", "0-9", "x").value)
            assert "migrated" in str(pytest.raises(redis.ResponseError, d.flushall).value)
            assert "Invalid write batch" in str(pytest.raises(
                redis.ResponseError, d.execute_command, "CLUSTERX", "APPLYBATCH", "x" * 20).value)
            assert d.execute_command("CLUSTERX", "IMPORT", "0-9", "fail") == b"OK"
            assert "import_state: error" in d.execute_command("CLUSTER", "INFO").decode()
            assert d.flushall() is True
        finally:
            double.close()


def test_an_import_whose_source_dies_ends_in_fail_and_keeps_nothing(tmp_path):
    # The destination hears nothing more from a source killed midway:
    # after cluster-import-timeout seconds the import ends in fail, drops what arrived and
    # lets the next migration start from a clean range.
    with ServerGroup(tmp_path, 2, CLUSTER_ARGS + ["--cluster-import-timeout", "2"]) as group:
        double = ControllerDouble([("127.0.0.1", n.port) for n in group.nodes])
        try:
            double.create_cluster()
            src, dst = double.shards[0]["master"], double.shards[1]["master"]
            source, r, d = group.nodes[0], client(group.nodes[0]), client(group.nodes[1])
            keys = keys_in(range(0, 20), 1, "dies")
            for k in keys:
                # 2 MiB each, nearly every page stored: a transfer of ~40 MiB (>= 0.15 s at the
                # source's rate limit) to kill the source in.
                r.execute_command("CF.RESERVE", k, 2000000)
                p = r.pipeline(transaction=False)
                for start in range(0, 10000, 1000):
                    p.execute_command("CF.INSERT", k, "NOCREATE", "ITEMS",
                                      *("%s:%d" % (k, j) for j in range(start, start + 1000)))
                p.execute()
            first = key_slot(keys[0].encode())
            assert double.send(src, "CLUSTERX", "MIGRATE", "0-19", dst["id"]) == "OK"
            wait_for(lambda: d.execute_command("CLUSTER", "COUNTKEYSINSLOT", first) > 0, 10,
                     "the first records on the destination", interval=0.002)
            source.kill9()
            double.conns.pop(src["port"], None)
            started = time.monotonic()
            info = d.execute_command("CLUSTER", "INFO").decode()
            assert "importing_slot(s): 0-19" in info and "import_state: start" in info, info
            assert "migrated" in str(pytest.raises(redis.ResponseError, d.flushall).value)
            wait_for(lambda: "import_state: error" in
                     d.execute_command("CLUSTER", "INFO").decode(), 10, "the import to fail")
            assert time.monotonic() - started >= 1.0  # (the timeout, not anything else, ended it)
            for s in range(0, 20):
                assert d.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) == 0, s
            assert "slot migration: the import of slots 0-19 failed (no batch from the source " \
                "for 2 s)" in group.nodes[1].read_log()
            # The source comes back and migrates again: the destination takes it from scratch.
            source.start()
            double.probe()
            assert migrate(double, src, "0-19", dst) == "success"
            for k in keys:
                assert d.execute_command("CLUSTER", "COUNTKEYSINSLOT", key_slot(k.encode())) == 1
            assert "import_state: success" in d.execute_command("CLUSTER", "INFO").decode()
        finally:
            double.close()
