"""Automatic failover by Redis Sentinel (Debian's redis-server --sentinel) over cuckood
replication: Sentinel monitors a cuckood primary with two replicas; the primary is killed with
kill -9; Sentinel promotes a replica and repoints the other; redis-py's Sentinel client keeps
writing CF items through it; every item acknowledged before the (quiesced) kill is on the new
primary; the old primary, restarted, is turned into a replica by Sentinel and converges."""
import shutil
import time

import pytest
from cuckood_nodes import info, sequence, snapshot, wait_for

redis = pytest.importorskip("redis")
from redis.sentinel import Sentinel  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None,
                                reason="needs Debian's redis-server (Sentinel)")


def start_node(nodes, tmp_path, name, *extra):
    conf = tmp_path / ("%s.conf" % name)
    conf.write_text("# %s: Sentinel rewrites this file (CONFIG REWRITE)\n" % name)
    return nodes.start(name, "--config", str(conf), *extra)


def sentinel_cmd(port, *args):
    c = redis.Redis(port=port, socket_timeout=5, decode_responses=True)
    try:
        return c.execute_command(*args)
    finally:
        c.close()


def test_sentinel_fails_over_a_killed_primary(nodes, tmp_path):
    from cuckood_testlib import free_port
    p = start_node(nodes, tmp_path, "p")
    r1 = start_node(nodes, tmp_path, "r1", "--replicaof", "127.0.0.1 %d" % p.port)
    r2 = start_node(nodes, tmp_path, "r2", "--replicaof", "127.0.0.1 %d" % p.port,
                    "--replica-priority", "50")
    for r in (r1, r2):
        wait_for(lambda r=r: info(r.client(), "replication")["master_link_status"] == "up", 20,
                 "replication link")
    sport = free_port()
    sdir = tmp_path / "sentinel"
    sdir.mkdir()
    conf = sdir / "sentinel.conf"
    conf.write_text("port %d\nbind 127.0.0.1\ndir %s\n"
                    "sentinel monitor m 127.0.0.1 %d 1\n"
                    "sentinel down-after-milliseconds m 1000\n"
                    "sentinel failover-timeout m 10000\n" % (sport, sdir, p.port))
    nodes.spawn(["redis-server", str(conf), "--sentinel"], "sentinel.log")
    # Sentinel learns the replicas from the primary's INFO (every 10 s at first).
    def replicas_seen():
        reps = sentinel_cmd(sport, "SENTINEL", "REPLICAS", "m")
        flags = [dict(zip(x[::2], x[1::2]))["flags"] for x in reps]
        return len(reps) == 2 and all(f == "slave" for f in flags)
    wait_for(replicas_seen, 40, "Sentinel to see both replicas", interval=0.5)

    sentinel = Sentinel([("127.0.0.1", sport)], socket_timeout=2)
    master = sentinel.master_for("m", socket_timeout=2)
    acked = []
    for i in range(300):
        master.execute_command("CF.ADD", "events", "before-%d" % i)
        acked.append("before-%d" % i)
    # Quiesced: both replicas have every acknowledged write before the kill.
    assert master.execute_command("WAIT", 2, 5000) == 2
    p.proc.kill9()
    killed = time.time()

    def promoted():
        host, port = sentinel_cmd(sport, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m")
        return int(port) != p.port and int(port)
    new_port = wait_for(promoted, 60, "Sentinel to promote a replica", interval=0.1)
    failover_seconds = time.time() - killed
    print("sentinel failover took %.1f s" % failover_seconds)
    new, other = (r1, r2) if new_port == r1.port else (r2, r1)
    assert new_port == r2.port  # the lower replica-priority wins
    wait_for(lambda: info(new.client(), "replication")["role"] == "master", 20, "promotion")

    # The client keeps writing through Sentinel (retrying while the failover settles).
    def add(item):
        deadline = time.time() + 30
        while True:
            try:
                return master.execute_command("CF.ADD", "events", item)
            except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError,
                    redis.ResponseError):
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
    for i in range(100):
        add("after-%d" % i)
        acked.append("after-%d" % i)
    nc = new.client()
    for item in acked:
        assert nc.execute_command("CF.EXISTS", "events", item) == 1, item
    # The other replica now follows the new primary.
    wait_for(lambda: info(other.client(), "replication").get("master_port") == str(new_port)
             and info(other.client(), "replication")["master_link_status"] == "up", 40,
             "the other replica to follow the new primary", interval=0.2)
    wait_for(lambda: sequence(other.client()) == sequence(nc), 30,
             "the other replica to have every item written after the failover")
    # The old primary comes back and Sentinel makes it a replica of the new one. On a loaded
    # machine Sentinel may meanwhile fail over once more (a primary that misses its pings for
    # down-after-milliseconds is down to it); whichever node Sentinel names as the primary, the
    # other two must end up replicating from it with every acknowledged item.
    p.proc.start()
    by_port = {n.port: n for n in (p, r1, r2)}

    def converged():
        _, port = sentinel_cmd(sport, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m")
        port = int(port)
        if port not in by_port or info(by_port[port].client(), "replication")["role"] != "master":
            return False
        for n in by_port.values():
            if n.port == port:
                continue
            r = info(n.client(), "replication")
            if r.get("master_port") != str(port) or r["master_link_status"] != "up":
                return False
        return by_port[port]
    top = wait_for(converged, 60, "the old primary to become a replica", interval=0.3)
    if top is not new:
        print("Sentinel failed over again, to port %d" % top.port)
    tc = top.client()

    def same():
        s = sequence(tc)
        return all(sequence(n.client()) == s for n in by_port.values())
    wait_for(same, 30, "every node at the primary's sequence")
    for item in acked:
        assert tc.execute_command("CF.EXISTS", "events", item) == 1, item
    want = snapshot(tc)
    assert all(snapshot(n.client()) == want for n in by_port.values())
