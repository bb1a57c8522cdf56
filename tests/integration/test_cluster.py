"""Cluster mode against the real binary: hash slots, the controller's contract (driven by the
contract double in tests/lib/controller_double.py, built from the kvrocks-controller 1.2.0
trace), CLUSTER SLOTS/NODES/SHARDS, MOVED/CROSSSLOT/CLUSTERDOWN, and real cluster clients:
redis-py's RedisCluster, redis-cli -c and redis-cli --cluster check."""
import os
import random
import shutil
import subprocess

import pytest
import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot

from controller_double import (ControllerDouble, RespConnection, RespError,
                               parse_cluster_info, parse_cluster_nodes)
from cuckood_group import ServerGroup, wait_for
from cuckood_testlib import RawClient

CLUSTER_ARGS = ["--cluster-enabled", "yes"]
VECTORS = {b"foo": 12182, b"bar": 5061, b"hello": 866, b"a": 15495, b"": 0,
           b"{user1000}.following": 3443, b"foo{}{bar}": 8363, b"foo{{bar}}zap": 4015,
           b"foo{bar}{zap}": 5061}


def client(node, **kw):
    return redis.Redis(host="127.0.0.1", port=node.port, socket_timeout=10, **kw)


def error_of(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


@pytest.fixture(scope="module")
def cluster3(tmp_path_factory):
    """Three masters, set up by the controller double exactly as the controller does it."""
    with ServerGroup(tmp_path_factory.mktemp("cluster3"), 3, CLUSTER_ARGS) as group:
        double = ControllerDouble([("127.0.0.1", n.port) for n in group.nodes])
        try:
            double.create_cluster()
            yield group, double
        finally:
            double.close()


def owner_of(double, slot):
    for shard in double.shards:
        if any(a <= slot <= b for a, b in shard["slots"]):
            return shard["master"]
    return None


def test_keyslot_matches_the_vectors_and_redis_py(tmp_path):
    with ServerGroup(tmp_path, 1, CLUSTER_ARGS) as group:
        r = client(group.nodes[0])
        for key, slot in VECTORS.items():
            assert r.execute_command("CLUSTER", "KEYSLOT", key) == slot, key
        rng = random.Random(7)
        alphabet = b"ab{}x\x00\xff"
        for i in range(1000):
            n = rng.randrange(0, 12)
            key = bytes(rng.choice(alphabet) for _ in range(n)) if i % 2 else os.urandom(n)
            assert r.execute_command("CLUSTER", "KEYSLOT", key) == key_slot(key), key


def test_cluster_commands_are_refused_when_cluster_mode_is_off(server):
    r = redis.Redis(port=server.port)
    for args in (("CLUSTER", "INFO"), ("CLUSTER", "KEYSLOT", "x"), ("READONLY",), ("ASKING",)):
        assert error_of(r.execute_command, *args) == \
            "This instance has cluster support disabled"
    assert error_of(r.execute_command, "CLUSTERX", "VERSION") == "Cluster mode is not enabled"
    assert r.info("cluster") == {"cluster_enabled": 0}


def test_the_double_creates_the_cluster_as_the_trace_shows(cluster3):
    group, double = cluster3
    # What the double saw is the trace's sequence per node: the not-initialized probe, then
    # SETNODEID and SETNODES at version 1, all answered as the controller needs.
    first = [(p, a[:2], str(rep)) for p, a, rep in double.log[:3]]
    assert first[0][1] == ("cluster", "info")
    assert "cluster is not initialized" in first[0][2]
    assert first[0][2] == "-CLUSTERDOWN The cluster is not initialized"
    assert first[1][1] == ("CLUSTERX", "SETNODEID") and first[1][2] == "OK"
    assert first[2][1] == ("CLUSTERX", "SETNODES") and first[2][2] == "OK"
    assert double.topology().count("\n") == 3 and double.topology().endswith("\n")
    assert [s["slots"] for s in double.shards] == [[(0, 5460)], [(5461, 10921)],
                                                   [(10922, 16383)]]
    assert double.probe() == {n.port: 1 for n in group.nodes}
    # Byte for byte the reply shape the controller accepted in the trace (there: 6 nodes).
    raw = RawClient(group.nodes[0].port)
    try:
        assert raw.call("cluster", "info") == (
            b"$201\r\ncluster_state:ok\r\ncluster_slots_assigned:16384\r\n"
            b"cluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\n"
            b"cluster_known_nodes:3\r\ncluster_size:3\r\ncluster_current_epoch:1\r\n"
            b"cluster_my_epoch:1\r\n\r\n")
    finally:
        raw.close()
    for node in group.nodes:
        info = parse_cluster_info(client(node).execute_command("CLUSTER", "INFO").decode())
        assert info["cluster_state"] == "ok"
        assert info["cluster_slots_assigned"] == "16384"
        assert info["cluster_known_nodes"] == "3"
        assert info["cluster_size"] == "3"
        assert info["cluster_my_epoch"] == "1"
        assert client(node).info("cluster") == {"cluster_enabled": 1}


def test_every_node_holds_the_same_topology(cluster3):
    group, double = cluster3
    expected = {(m["id"], m["port"], tuple(s["slots"])) for s in double.shards
                for m in [s["master"]]}
    for node, me in zip(group.nodes, double.nodes()):
        version, nodes = parse_cluster_nodes(
            client(node).execute_command("CLUSTER", "NODES").decode())
        assert version == double.version
        assert {(n["id"], n["port"], tuple(n["slots"])) for n in nodes} == expected
        assert [n["id"] for n in nodes if n["myself"]] == [me["id"]]
        assert all(n["role"] == "master" and n["master"] == "-" for n in nodes)
        assert client(node).execute_command("CLUSTER", "MYID").decode() == me["id"]
        assert client(node).execute_command("CLUSTERX", "MYID").decode() == me["id"]
        assert client(node).execute_command("CLUSTERX", "VERSION").decode() == \
            str(double.version)


def test_versions_same_is_a_no_op_lower_is_refused_higher_is_adopted(cluster3):
    group, double = cluster3
    node, me = group.nodes[0], next(double.nodes())
    nodes_file = os.path.join(node.data_dir, "nodes.conf")
    before = open(nodes_file).read()
    r = RespConnection("127.0.0.1", node.port)
    try:
        # The same version with another text: +OK and nothing changes, not even the file.
        other = "%s 127.0.0.1 %d master - 0-16383\n" % (me["id"], node.port)
        assert r.call("CLUSTERX", "SETNODES", other, str(double.version)) == "OK"
        assert open(nodes_file).read() == before
        assert parse_cluster_info(r.call("cluster", "info"))["cluster_slots_assigned"] == \
            "16384"
        assert parse_cluster_nodes(r.call("cluster", "nodes"))[1][0]["slots"] == [(0, 5460)]
        with pytest.raises(RespError, match="^ERR Invalid cluster version$"):
            r.call("CLUSTERX", "SETNODES", double.topology(), str(double.version - 1))
        with pytest.raises(RespError, match="^ERR Invalid version$"):
            r.call("CLUSTERX", "SETNODES", double.topology(), "x")
        with pytest.raises(RespError, match="^ERR Invalid cluster node id$"):
            r.call("CLUSTERX", "SETNODEID", "abc")
        with pytest.raises(RespError, match="^ERR Slot distribution is overlapped$"):
            r.call("CLUSTERX", "SETNODES",
                   double.topology() + "Z" * 40 + " 127.0.0.1 1 master - 7\n", "99")
        assert r.call("CLUSTERX", "VERSION") == str(double.version)
    finally:
        r.close()
    double.push()
    assert double.probe() == {n.port: double.version for n in group.nodes}
    assert open(nodes_file).read() != before


def test_a_node_that_lost_its_state_is_set_up_again_by_the_probe(cluster3):
    group, double = cluster3
    node = group.nodes[1]
    node.stop()
    double.conns.pop(node.port).close()
    os.remove(os.path.join(node.data_dir, "nodes.conf"))
    node.start()
    seen = double.probe()
    assert seen[node.port] == -1  # "cluster is not initialized": SETNODEID + SETNODES sent
    assert double.probe() == {n.port: double.version for n in group.nodes}
    # A restart with the file keeps id and version.
    node.restart()
    double.conns.pop(node.port).close()
    assert double.probe() == {n.port: double.version for n in group.nodes}


def test_a_node_ahead_of_the_controller_is_adopted(cluster3):
    group, double = cluster3
    ahead = double.version + 40
    node = group.nodes[2]
    r = RespConnection("127.0.0.1", node.port)
    try:
        assert r.call("CLUSTERX", "SETNODES", double.topology(), str(ahead)) == "OK"
    finally:
        r.close()
    seen = double.probe()
    assert seen[node.port] == ahead
    assert double.version == ahead  # read from its CLUSTER NODES
    assert [s["slots"] for s in double.shards] == [[(0, 5460)], [(5461, 10921)],
                                                   [(10922, 16383)]]
    double.probe()  # the others are brought up to the adopted version
    assert double.probe() == {n.port: ahead for n in group.nodes}


def test_cluster_slots_and_shards_shapes(cluster3):
    group, double = cluster3
    r = client(group.nodes[0])
    slots = r.execute_command("CLUSTER", "SLOTS")
    assert len(slots) == 3
    for entry, shard in zip(slots, double.shards):
        m = shard["master"]
        assert entry[:2] == list(shard["slots"][0])
        assert entry[2] == [b"127.0.0.1", m["port"], m["id"].encode(), []]
    shards = r.execute_command("CLUSTER", "SHARDS")
    assert len(shards) == 3
    for entry, shard in zip(shards, double.shards):
        d = dict(zip(entry[::2], entry[1::2]))
        assert d[b"slots"] == list(shard["slots"][0])
        (n,) = d[b"nodes"]
        n = dict(zip(n[::2], n[1::2]))
        assert n[b"id"] == shard["master"]["id"].encode()
        assert n[b"port"] == shard["master"]["port"]
        assert n[b"role"] == b"master" and n[b"health"] == b"online"
    assert r.execute_command("CLUSTER", "REPLICAS", double.shards[0]["master"]["id"]) == []
    assert error_of(r.execute_command, "CLUSTER", "REPLICAS", "x" * 40) == "Unknown node " + \
        "x" * 40
    assert "managed with CLUSTERX" in error_of(r.execute_command, "CLUSTER", "MEET", "h", "1")
    assert "managed with CLUSTERX" in error_of(r.execute_command, "CLUSTER", "ADDSLOTS", "1")
    # (slots this node does not own; the migration itself is in test_cluster_migrate.py)
    assert "doesn't belong to me" in error_of(r.execute_command, "CLUSTERX", "MIGRATE",
                                              "9000-9001", double.shards[1]["master"]["id"])


def test_redirections(cluster3):
    group, double = cluster3
    by_port = {n.port: n for n in group.nodes}
    slot = key_slot(b"foo")
    owner = owner_of(double, slot)
    other = next(n for n in group.nodes if n.port != owner["port"])
    r = client(other)
    assert error_of(r.execute_command, "CF.ADD", "foo", "x") == \
        "MOVED %d 127.0.0.1:%d" % (slot, owner["port"])
    assert error_of(r.execute_command, "DEL", "foo", "bar") == \
        "CROSSSLOT Keys in request don't hash to the same slot"
    assert client(by_port[owner["port"]]).execute_command("CF.ADD", "foo", "x") == 1
    assert error_of(r.execute_command, "SELECT", "1") == "SELECT is not allowed in cluster mode"
    assert r.execute_command("SELECT", "0") is True
    # Inside MULTI: a redirected command flags the transaction, EXEC aborts.
    raw = RespConnection("127.0.0.1", other.port)
    try:
        assert raw.call("MULTI") == "OK"
        with pytest.raises(RespError, match="^MOVED %d " % slot):
            raw.call("CF.EXISTS", "foo", "x")
        with pytest.raises(RespError, match="^EXECABORT"):
            raw.call("EXEC")
        # READONLY does not let a master serve another master's slot.
        assert raw.call("READONLY") == "OK"
        with pytest.raises(RespError, match="^MOVED"):
            raw.call("CF.EXISTS", "foo", "x")
        assert raw.call("READWRITE") == "OK"
        assert raw.call("ASKING") == "OK"
    finally:
        raw.close()


def test_clusterdown_crossslot_in_exec_and_slot_key_listing(tmp_path):
    with ServerGroup(tmp_path, 1, CLUSTER_ARGS) as group:
        node = group.nodes[0]
        r = client(node)
        assert error_of(r.execute_command, "CF.ADD", "k", "1") == \
            "CLUSTERDOWN Hash slot not served"
        me = "A" * 40
        assert r.execute_command("CLUSTERX", "SETNODEID", me) == b"OK"
        assert r.execute_command("CLUSTERX", "SETNODES",
                                 "%s 127.0.0.1 %d master - 0-8000\n" % (me, node.port),
                                 "1") == b"OK"
        assert error_of(r.execute_command, "CF.ADD", "foo", "1") == \
            "CLUSTERDOWN Hash slot not served"  # 12182
        assert r.execute_command("CF.ADD", "bar", "1") == 1  # 5061
        assert r.execute_command("CLUSTERX", "SETSLOT", "8001-16383", "NODE", me, "2") == b"OK"
        assert r.execute_command("CF.ADD", "foo", "1") == 1
        # EXEC checks the keys of the whole transaction: two slots are CROSSSLOT.
        p = r.pipeline(transaction=True)
        p.execute_command("CF.ADD", "{a}1", "x")
        p.execute_command("CF.ADD", "{b}1", "x")
        with pytest.raises(redis.ResponseError, match="CROSSSLOT"):
            p.execute()
        assert r.execute_command("EXISTS", "{a}1") == 0
        p = r.pipeline(transaction=True)
        p.execute_command("CF.ADD", "{a}1", "x")
        p.execute_command("CF.ADD", "{a}2", "x")
        assert p.execute() == [1, 1]
        for k in ("{a}3", "{a}4"):
            r.set(k, "v")
        slot = key_slot(b"a")
        assert r.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 4
        assert sorted(r.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 10)) == \
            [b"{a}1", b"{a}2", b"{a}3", b"{a}4"]
        assert len(r.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 2)) == 2
        assert error_of(r.execute_command, "CLUSTER", "COUNTKEYSINSLOT", 16384) == "Invalid slot"
        assert error_of(r.execute_command, "CLUSTER", "GETKEYSINSLOT", 1, -1) == \
            "Invalid slot or number of keys"
        assert error_of(r.execute_command, "CLUSTER", "RESET") == \
            "CLUSTER RESET can't be called with master nodes containing keys"
        r.flushall()
        assert r.execute_command("CLUSTER", "RESET", "HARD") == b"OK"
        assert error_of(r.execute_command, "CLUSTER", "INFO") == \
            "CLUSTERDOWN The cluster is not initialized"


def test_redis_py_cluster_client_runs_cf_commands(cluster3):
    group, double = cluster3
    rc = RedisCluster(host="127.0.0.1", port=group.nodes[0].port, socket_timeout=10)
    try:
        keys = ["cf:%d" % i for i in range(250)] + ["{tag}:%d" % i for i in range(50)]
        for i, key in enumerate(keys):
            assert rc.cf().add(key, "item-%d" % i) == 1
        assert rc.cf().insert("{tag}:0", ["a", "b"]) == [1, 1]
        for i, key in enumerate(keys):
            assert rc.cf().exists(key, "item-%d" % i) == 1
        assert rc.cf().exists("cf:0", "absent") == 0
        assert rc.cf().info("{tag}:0").insertedNum == 3
        # Every key lives on the node owning its slot, and nowhere else.
        wanted = set(k.encode() for k in keys)
        slots = sorted({key_slot(k) for k in wanted})
        per_node = {}
        for k in wanted:
            per_node.setdefault(owner_of(double, key_slot(k))["port"], set()).add(k)
        assert len(per_node) == 3
        for node in group.nodes:
            r = client(node)
            found = set()
            for slot in slots:
                found |= set(r.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 1000)) & wanted
            assert found == per_node[node.port]
    finally:
        rc.close()


def test_redis_cli_follows_moved_and_checks_the_cluster(cluster3):
    group, double = cluster3
    if shutil.which("redis-cli") is None:
        pytest.skip("redis-cli not installed")
    slot = key_slot(b"cli-key")
    owner = owner_of(double, slot)
    other = next(n for n in group.nodes if n.port != owner["port"])
    out = subprocess.run(["redis-cli", "-c", "-p", str(other.port), "CF.ADD", "cli-key", "v"],
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "1", out
    out = subprocess.run(["redis-cli", "-p", str(owner["port"]), "CF.EXISTS", "cli-key", "v"],
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "1", out
    out = subprocess.run(["redis-cli", "--cluster", "check", "127.0.0.1:%d" % other.port],
                         capture_output=True, text=True, timeout=60)
    assert "[OK] All 16384 slots covered." in out.stdout, out.stdout + out.stderr
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_replica_serves_reads_of_its_master_to_readonly_clients(tmp_path):
    with ServerGroup(tmp_path, 1, CLUSTER_ARGS) as group:
        node = group.nodes[0]
        master, me = "M" * 40, "R" * 40
        r = RespConnection("127.0.0.1", node.port)
        try:
            assert r.call("CLUSTERX", "SETNODEID", me) == "OK"
            topology = "%s 127.0.0.1 1 master - 0-16383\n%s 127.0.0.1 %d slave %s\n" % (
                master, me, node.port, master)
            assert r.call("CLUSTERX", "SETNODES", topology, "3") == "OK"
            # The topology's role went to replication (which keeps trying the absent master).
            wait_for(lambda: "replicating from 127.0.0.1:1" in node.read_log(), 5, "the log")
            slot = key_slot(b"k")
            with pytest.raises(RespError, match="^MOVED %d 127.0.0.1:1$" % slot):
                r.call("CF.EXISTS", "k", "x")
            assert r.call("READONLY") == "OK"
            assert r.call("CF.EXISTS", "k", "x") == 0
            with pytest.raises(RespError, match="^MOVED %d 127.0.0.1:1$" % slot):
                r.call("CF.ADD", "k", "x")
            assert r.call("RESET") == "RESET"  # back to READWRITE, as Redis
            with pytest.raises(RespError, match="^MOVED"):
                r.call("CF.EXISTS", "k", "x")
            assert parse_cluster_nodes(r.call("cluster", "nodes"))[1][1]["role"] == "slave"
            assert r.call("CLUSTER", "REPLICAS", master) == [
                "%s 127.0.0.1:%d@%d myself,slave %s 0 0 3 connected" % (
                    me, node.port, node.port + 10000, master)]
            with pytest.raises(RespError, match="^ERR The specified node is not a master$"):
                r.call("CLUSTER", "REPLICAS", me)
        finally:
            r.close()


def test_the_topology_drives_replication_and_failover(tmp_path):
    """The controller sends no REPLICAOF: "slave <master>" in the topology starts replicating,
    and a failover (version + 1, roles swapped) promotes the replica."""
    with ServerGroup(tmp_path, 2, CLUSTER_ARGS) as group:
        double = ControllerDouble([("127.0.0.1", n.port) for n in group.nodes], replicas=1)
        try:
            double.create_cluster()
            master, replica = group.nodes
            m_id = double.shards[0]["master"]["id"]
            r_id = double.shards[0]["replicas"][0]["id"]
            assert "%s 127.0.0.1 %d slave %s\n" % (r_id, replica.port, m_id) in double.topology()
            keys = ["rep:%d" % i for i in range(20)]
            for k in keys:
                assert client(master).execute_command("CF.ADD", k, "x") == 1
            rr = RespConnection("127.0.0.1", replica.port)
            try:
                assert rr.call("READONLY") == "OK"
                wait_for(lambda: all(rr.call("CF.EXISTS", k, "x") == 1 for k in keys), 20,
                         "the replica to hold the master's filters")
                with pytest.raises(RespError, match="^MOVED .* 127.0.0.1:%d$" % master.port):
                    rr.call("CF.ADD", "rep:0", "y")
            finally:
                rr.close()
            assert client(replica).info("replication")["role"] == "slave"
            # HELLO says cluster mode, and each node's role.
            for node, role in ((master, b"master"), (replica, b"replica")):
                h = client(node).execute_command("HELLO", "2")
                h = dict(zip(h[::2], h[1::2]))
                assert (h[b"mode"], h[b"role"]) == (b"cluster", role), node.port
            # Failover as the controller does it: the replica (role:slave, sequence > 0 in INFO)
            # becomes the master.
            assert double.failover(0)["port"] == replica.port
            assert "%s 127.0.0.1 %d slave %s\n" % (m_id, master.port, r_id) in double.topology()
            wait_for(lambda: client(replica).info("replication")["role"] == "master", 10,
                     "the promotion")
            assert client(replica).execute_command("CF.ADD", "rep:new", "x") == 1
            mr = RespConnection("127.0.0.1", master.port)
            try:
                assert mr.call("READONLY") == "OK"
                wait_for(lambda: mr.call("CF.EXISTS", "rep:new", "x") == 1, 20,
                         "the old master to replicate from the new one")
            finally:
                mr.close()
        finally:
            double.close()


def test_a_damaged_nodes_file_stops_the_start_with_its_name(tmp_path):
    with ServerGroup(tmp_path, 1, CLUSTER_ARGS) as group:
        node = group.nodes[0]
        me = "N" * 40
        r = client(node)
        assert r.execute_command("CLUSTERX", "SETNODEID", me) == b"OK"
        assert r.execute_command("CLUSTERX", "SETNODES",
                                 "%s localhost %d master - 0-16383\n" % (me, node.port),
                                 "4") == b"OK"
        path = os.path.join(node.data_dir, "nodes.conf")
        text = open(path).read()
        assert "format 1\n" in text and "version 4\n" in text and "id %s\n" % me in text
        assert "node %s localhost %d master - 0-16383\n" % (me, node.port) in text
        assert not os.path.exists(path + ".tmp")
        node.stop()
        with open(path, "w") as f:
            f.write("format 1\nversion 4\nnode %s localhost 0 master - 0-16383\n" % me)
        with pytest.raises(RuntimeError, match="nodes.conf.*Invalid cluster node port"):
            node.start(timeout=10)
        with open(path, "w") as f:
            f.write(text)
        node.start()
        assert client(node).execute_command("CLUSTERX", "VERSION") == b"4"
        # Hosts may be names: redirections carry them as given.
        assert client(node).execute_command("CLUSTER", "NODES").decode().startswith(
            "%s localhost:%d@%d myself,master - 0 0 4 connected 0-16383" % (
                me, node.port, node.port + 10000))
