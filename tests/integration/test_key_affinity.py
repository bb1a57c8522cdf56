"""key-affinity (server/connection.h): a connection whose writes keep finding their key held by
another io thread moves to the io thread that key belongs to, and back to where it started once it
has neither waited for nor written that key for 5 seconds. Clients must see nothing of it: every reply in order and right, nothing lost
(also after kill -9), CLIENT LIST / CLIENT KILL / Pub/Sub still reach a connection that moved,
and with `key-affinity no` no connection moves."""
import random
import socket
import threading
import time

from cuckood_testlib import RawClient, encode


def info_stats(c):
    out = {}
    for line in c.call("INFO", "stats").decode().split("\r\n"):
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = v
    return out


def hammer(port, clients, key, rounds, seed, name_prefix=None, keep=None):
    """Each client writes its own items to one key, one command at a time (so that a write finds
    the key held by the other io thread's lock batch) and now and then a pipeline of a write, a
    read of it and an ECHO. Returns (problems, items added)."""
    problems, added = [], []
    lock = threading.Lock()

    def client(n):
        rng = random.Random(seed + n)
        cc = RawClient(port)
        if name_prefix:
            assert cc.call("CLIENT", "SETNAME", "%s%d" % (name_prefix, n)) == b"+OK\r\n"
        mine = []
        try:
            for r in range(rounds):
                item = b"a%d-%d-%d" % (seed, n, r)
                if rng.random() < 0.8:
                    reply = cc.call("CF.ADD", key, item)
                    if reply != b":1\r\n":
                        problems.append((item, reply))
                else:
                    marker = b"m%d-%d" % (n, r)
                    cc.send_raw(encode(["CF.ADD", key, item]) + encode(["CF.COUNT", key, item]) +
                                encode(["ECHO", marker]))
                    replies = [cc.read_reply() for _ in range(3)]
                    if replies[0] != b":1\r\n" or not replies[1].startswith(b":") or \
                            int(replies[1][1:]) < 1 or \
                            replies[2] != b"$%d\r\n%s\r\n" % (len(marker), marker):
                        problems.append((item, replies))
                mine.append(item)
        finally:
            if keep is None:
                cc.close()
            else:
                with lock:
                    keep.append(cc)
        with lock:
            added.extend(mine)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return problems, added


def test_writers_of_one_key_move_and_nothing_changes_for_them(fresh_server):
    srv = fresh_server("--workers", "2", "--adaptive-io-threads", "no")
    c = RawClient(srv.port)
    assert c.call("CF.RESERVE", "hot", "400000") == b"+OK\r\n"
    kept = []
    problems, added = hammer(srv.port, 8, "hot", 1500, 1, name_prefix="w", keep=kept)
    assert problems == []
    stats = info_stats(c)
    assert int(stats["client_moves"]) > 0, "no connection moved"
    # Every write is in and readable, from a connection that never wrote.
    info = c.call("CF.INFO", "hot")
    assert b"+Number of items inserted\r\n:%d\r\n" % len(added) in info
    for i in range(0, len(added), 500):
        chunk = added[i:i + 500]
        assert c.call("CF.MEXISTS", "hot", *chunk) == b"*%d\r\n" % len(chunk) + b":1\r\n" * len(chunk)

    # The connections that moved are still the server's: listed, reachable by Pub/Sub, killable.
    listing = c.call("CLIENT", "LIST").decode()
    for n in range(8):
        assert " name=w%d " % n in listing
    for cc in kept:
        assert cc.call("SUBSCRIBE", "news").startswith(b"*3\r\n$9\r\nsubscribe\r\n")
    assert c.call("PUBLISH", "news", "hello") == b":8\r\n"
    for cc in kept:
        assert cc.read_reply() == b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
    ids = [int(line.split("id=")[1].split(" ")[0]) for line in listing.splitlines()
           if " name=w" in line]
    for client_id in ids:
        assert c.call("CLIENT", "KILL", "ID", str(client_id)) == b":1\r\n"
    for cc in kept:
        cc.sock.settimeout(5)
        try:
            data = cc.sock.recv(1)
        except (ConnectionResetError, socket.timeout):
            data = b"timeout"
        assert data == b"", "a killed connection stayed open"
        cc.close()
    assert " name=w" not in c.call("CLIENT", "LIST").decode()
    c.close()

    srv.kill9()
    srv.start()
    c = RawClient(srv.port)
    assert b"+Number of items inserted\r\n:%d\r\n" % len(added) in c.call("CF.INFO", "hot")
    assert c.call("CF.MEXISTS", "hot", *added[-300:]) == b"*300\r\n" + b":1\r\n" * 300
    c.close()


def test_moved_connections_go_back_when_quiet(fresh_server):
    """After 5 seconds without contention or a write of the hot key, a connection that moved goes
    back to the io thread it was accepted on at its next read (one more move each), and goes on
    answering."""
    srv = fresh_server("--workers", "2", "--adaptive-io-threads", "no")
    c = RawClient(srv.port)
    assert c.call("CF.RESERVE", "hot", "200000") == b"+OK\r\n"
    kept = []
    problems, _ = hammer(srv.port, 6, "hot", 800, 2, keep=kept)
    assert problems == []
    moved = int(info_stats(c)["client_moves"])
    assert moved > 0
    time.sleep(5.5)
    for n, cc in enumerate(kept):
        assert cc.call("CF.ADD", "quiet", "item%d" % n) == b":1\r\n"
    for n, cc in enumerate(kept):
        assert cc.call("CF.EXISTS", "quiet", "item%d" % n) == b":1\r\n"
        cc.close()
    after = int(info_stats(c)["client_moves"])
    assert after > moved, "no connection went back"
    assert after <= 2 * moved + 6
    c.close()


def test_key_affinity_no_keeps_connections_where_they_are(fresh_server):
    srv = fresh_server("--workers", "2", "--key-affinity", "no", "--adaptive-io-threads", "no")
    c = RawClient(srv.port)
    assert c.call("CF.RESERVE", "hot", "200000") == b"+OK\r\n"
    problems, added = hammer(srv.port, 6, "hot", 600, 3)
    assert problems == []
    stats = info_stats(c)
    assert int(stats["client_moves"]) == 0
    assert int(stats["parked_commands"]) > 0, "the writers never contended: the test shows nothing"
    # Switched on at run time, the same load moves connections.
    assert c.call("CONFIG", "SET", "key-affinity", "yes") == b"+OK\r\n"
    problems, more = hammer(srv.port, 6, "hot", 600, 4)
    assert problems == []
    assert int(info_stats(c)["client_moves"]) > 0
    assert b"+Number of items inserted\r\n:%d\r\n" % (len(added) + len(more)) in \
        c.call("CF.INFO", "hot")
    c.close()
