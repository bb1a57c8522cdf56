"""Group commit (`group-commit`, storage/write_group.h): the filter writes of the commands an io
thread runs in one round (pipelines, on one key or many) share one RocksDB write. Replies must be exactly those of the same commands
sent one by one, every acknowledged write must survive kill -9, and the sharing must really
happen (INFO stats write_groups / write_group_commands)."""
import random
import threading

from cuckood_testlib import RawClient, encode


def info_stats(c):
    reply = c.call("INFO", "stats").decode()
    out = {}
    for line in reply.split("\r\n"):
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = v
    return out


def mixed_commands(rng, key, n):
    """A pipeline of writes and reads on one key (and, now and then, another key)."""
    items = [b"it-%d" % i for i in range(300)]
    cmds = [["CF.RESERVE", key, "500", "BUCKETSIZE", "2"]]
    for _ in range(n):
        r = rng.random()
        item = rng.choice(items)
        if r < 0.35:
            cmds.append(["CF.ADD", key, item])
        elif r < 0.45:
            cmds.append(["CF.ADDNX", key, item])
        elif r < 0.55:
            cmds.append(["CF.INSERT", key, "ITEMS"] + rng.sample(items, 5))
        elif r < 0.60:
            cmds.append(["CF.INSERTNX", key, "NOCREATE", "ITEMS"] + rng.sample(items, 5))
        elif r < 0.75:
            cmds.append(["CF.DEL", key, item])
        elif r < 0.82:
            cmds.append(["CF.EXISTS", key, item])
        elif r < 0.86:
            cmds.append(["CF.COUNT", key, item])
        elif r < 0.90:
            cmds.append(["CF.MEXISTS", key] + rng.sample(items, 4))
        elif r < 0.93:
            cmds.append(["CF.INFO", key])
        elif r < 0.96:
            cmds.append(["CF.ADD", key + b":other", item])
        elif r < 0.98:
            cmds.append(["SET", key + b":str", "v"])
        else:
            cmds.append(["CF.ADD", key + b":str", item])  # WRONGTYPE inside the pipeline
    return cmds


def replies_of(c, cmds, pipelined):
    if pipelined:
        c.send_raw(b"".join(encode(cmd) for cmd in cmds))
        return [c.read_reply() for _ in cmds]
    return [c.call(*cmd) for cmd in cmds]


def test_pipelined_writes_answer_exactly_as_one_by_one(fresh_server):
    srv = fresh_server()
    c = RawClient(srv.port)
    rng = random.Random(20261201)
    for round_ in range(6):
        seed = rng.randrange(1 << 30)
        cmds_a = mixed_commands(random.Random(seed), b"gc:a%d" % round_, 400)
        cmds_b = mixed_commands(random.Random(seed), b"gc:b%d" % round_, 400)
        one_by_one = replies_of(c, cmds_a, pipelined=False)
        pipelined = replies_of(c, cmds_b, pipelined=True)
        assert len(one_by_one) == len(pipelined)
        for i, (x, y) in enumerate(zip(one_by_one, pipelined)):
            assert x == y, (i, cmds_b[i], x, y)
        # the stored filters are the same bytes too
        assert c.call("CF.SCANDUMP", b"gc:a%d" % round_, "0") == \
            c.call("CF.SCANDUMP", b"gc:b%d" % round_, "0")
    # a pipeline of writes on one key shares few RocksDB writes (the commands of one read of
    # the socket form a group)
    before = info_stats(c)
    cmds = [["CF.ADD", "gc:shared", "s%d" % i] for i in range(300)]
    assert replies_of(c, cmds, pipelined=True) == [b":1\r\n"] * 300
    after = info_stats(c)
    groups = int(after["write_groups"]) - int(before["write_groups"])
    grouped = int(after["write_group_commands"]) - int(before["write_group_commands"])
    assert grouped == 300
    assert 1 <= groups <= 30, (groups, grouped)
    c.close()


def test_pipelined_writes_on_many_keys_share_groups(fresh_server):
    """Commands on different keys join one group too: 400 CF.ADDs over 100 filters, pipelined,
    store exactly what the same commands one by one store, in few RocksDB writes."""
    srv = fresh_server()
    c = RawClient(srv.port)
    for side in (b"one", b"pipe"):
        assert replies_of(c, [["CF.RESERVE", b"mk:%s:%d" % (side, k), "1000"]
                              for k in range(100)], pipelined=True) == [b"+OK\r\n"] * 100
    rng = random.Random(7)
    plan = [(rng.randrange(100), rng.randrange(5000)) for _ in range(400)]

    def cmds(side):
        return [["CF.ADD", b"mk:%s:%d" % (side, k), b"i%d" % i] for k, i in plan]
    before = info_stats(c)
    assert replies_of(c, cmds(b"pipe"), pipelined=True) == [b":1\r\n"] * 400
    after = info_stats(c)
    groups = int(after["write_groups"]) - int(before["write_groups"])
    grouped = int(after["write_group_commands"]) - int(before["write_group_commands"])
    assert grouped == 400
    assert 1 <= groups <= 40, (groups, grouped)
    assert replies_of(c, cmds(b"one"), pipelined=False) == [b":1\r\n"] * 400
    for k in range(100):
        assert c.call("CF.SCANDUMP", b"mk:one:%d" % k, "0") == \
            c.call("CF.SCANDUMP", b"mk:pipe:%d" % k, "0"), k
    c.close()


def test_with_group_commit_off_every_command_writes_alone(fresh_server):
    srv = fresh_server("--group-commit", "no")
    c = RawClient(srv.port)
    cmds = [["CF.ADD", "gc:off", "i%d" % i] for i in range(500)]
    assert replies_of(c, cmds, pipelined=True) == [b":1\r\n"] * 500
    stats = info_stats(c)
    assert stats["write_groups"] == "0" and stats["write_group_commands"] == "0"
    # and it can be switched on at run time
    assert c.call("CONFIG", "SET", "group-commit", "yes") == b"+OK\r\n"
    assert replies_of(c, cmds, pipelined=True) == [b":1\r\n"] * 500
    assert int(info_stats(c)["write_group_commands"]) == 500
    assert c.call("CF.INFO", "gc:off").count(b":1000\r\n") == 1
    c.close()


def test_acknowledged_pipelined_writes_survive_kill9(fresh_server):
    srv = fresh_server()
    c = RawClient(srv.port)
    acked = []
    for batch in range(40):
        items = [b"k%d-%d" % (batch, i) for i in range(64)]
        cmds = [["CF.ADD", "gc:crash", it] for it in items]
        cmds += [["CF.INSERT", "gc:crash", "ITEMS"] + [it + b"x" for it in items[:16]]]
        cmds += [["CF.ADDNX", "gc:crash", it] for it in items[:8]]  # present: answer 0
        replies = replies_of(c, cmds, pipelined=True)
        assert replies[:64] == [b":1\r\n"] * 64
        assert replies[64] == b"*16\r\n" + b":1\r\n" * 16
        assert replies[65:] == [b":0\r\n"] * 8
        acked += items + [it + b"x" for it in items[:16]]
    # the last replies are read: kill at once, without a SAVE or a clean shutdown
    srv.kill9()
    srv.start()
    c = RawClient(srv.port)
    info = c.call("CF.INFO", "gc:crash")
    assert b"+Number of items inserted\r\n:%d\r\n" % len(acked) in info, info
    reply = c.call("CF.MEXISTS", "gc:crash", *acked)
    assert reply == b"*%d\r\n" % len(acked) + b":1\r\n" * len(acked)
    c.close()


def test_writes_of_many_clients_share_groups_and_survive_kill9(fresh_server):
    """Unpipelined clients on one key: the commands an io thread receives in one round of its
    event loop share a RocksDB write; every acknowledged one survives kill -9."""
    srv = fresh_server()
    c = RawClient(srv.port)
    assert c.call("CF.RESERVE", "gc:many", "200000") == b"+OK\r\n"
    before = info_stats(c)
    acked = [[] for _ in range(16)]
    errors = []

    def client(n):
        cc = RawClient(srv.port)
        try:
            for i in range(300):
                item = b"c%d-%d" % (n, i)
                r = cc.call("CF.ADD", "gc:many", item)
                if r != b":1\r\n":
                    errors.append(r)
                    return
                acked[n].append(item)
        finally:
            cc.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    after = info_stats(c)
    groups = int(after["write_groups"]) - int(before["write_groups"])
    grouped = int(after["write_group_commands"]) - int(before["write_group_commands"])
    assert grouped == 16 * 300
    assert groups < grouped, "no two clients' writes ever shared a write"
    c.close()
    srv.kill9()
    srv.start()
    c = RawClient(srv.port)
    items = [it for part in acked for it in part]
    assert b"+Number of items inserted\r\n:%d\r\n" % len(items) in c.call("CF.INFO", "gc:many")
    assert c.call("CF.MEXISTS", "gc:many", *items) == \
        b"*%d\r\n" % len(items) + b":1\r\n" * len(items)
    c.close()


def scandump_chunks(c, key):
    """Every chunk of CF.SCANDUMP, as raw reply bytes, until the end marker."""
    chunks, it = [], 0
    while True:
        reply = c.call("CF.SCANDUMP", key, it)
        head = reply.split(b"\r\n", 2)
        nxt = int(head[1][1:])
        if nxt == 0:
            return chunks
        chunks.append(reply)
        it = nxt


def test_overlapping_writers_of_one_key_store_exactly_what_they_answered(fresh_server):
    """Clients on both io threads pipeline writes to one small filter (kick-outs, growth into
    sub-filters, deletes): a thread's write group is written while the other thread's next
    group already changes the same pages. After kill -9 the stored filter must be exactly the
    one the server answered from before: same CF.INFO, same answers for every item (including
    false positives, which depend on every fingerprint's place) and the same SCANDUMP bytes."""
    srv = fresh_server()
    c = RawClient(srv.port)
    assert c.call("CF.RESERVE", "gc:overlap", "3000", "BUCKETSIZE", "2",
                  "MAXITERATIONS", "50", "EXPANSION", "2") == b"+OK\r\n"
    errors = []

    def writer(n):
        rng = random.Random(n)
        cc = RawClient(srv.port)
        try:
            for batch in range(100):
                cmds = []
                for i in range(40):
                    item = b"o%d-%d-%d" % (n, batch, i)
                    r = rng.random()
                    if r < 0.7:
                        cmds.append(["CF.ADD", "gc:overlap", item])
                    elif r < 0.8:
                        cmds.append(["CF.INSERT", "gc:overlap", "ITEMS", item, item + b"x"])
                    else:
                        cmds.append(["CF.DEL", "gc:overlap", b"o%d-%d-%d" % (
                            n, max(0, batch - 1), rng.randrange(40))])
                for r in replies_of(cc, cmds, True):
                    if r.startswith(b"-"):
                        errors.append(r)
        finally:
            cc.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    probe = [b"o%d-%d-%d" % (n, b, i) for n in range(8) for b in range(100) for i in range(40)]
    probe += [b"never-%d" % i for i in range(5000)]
    info_before = c.call("CF.INFO", "gc:overlap")
    assert b"Number of filters\r\n:1\r\n" not in info_before, "the filter never grew"
    answers_before = c.call("CF.MEXISTS", "gc:overlap", *probe)
    dump_before = scandump_chunks(c, "gc:overlap")
    c.close()
    srv.kill9()
    srv.start()
    c = RawClient(srv.port)
    assert c.call("CF.INFO", "gc:overlap") == info_before
    assert c.call("CF.MEXISTS", "gc:overlap", *probe) == answers_before
    assert scandump_chunks(c, "gc:overlap") == dump_before
    c.close()


def test_writes_set_aside_for_another_threads_batch_keep_their_order(fresh_server):
    """Clients on both io threads pipeline writes to a few shared filters, each write followed
    by a read of the same item and an ECHO. A write whose key the other io thread's lock batch
    holds is set aside and run again after the thread's other work (INFO stats
    parked_commands); the pipeline behind it must wait for it: every reply comes in order, and
    the CF.COUNT right after a CF.ADD always sees its item. Nothing is lost, also after kill -9.
    (Both io threads stay in use: adaptive-io-threads would gather the clients on one.)"""
    srv = fresh_server("--workers", "2", "--adaptive-io-threads", "no")
    keys = ["park%d" % i for i in range(4)]
    c = RawClient(srv.port)
    for k in keys:
        assert c.call("CF.RESERVE", k, "40000", "BUCKETSIZE", "2") == b"+OK\r\n"
    added = {k: [] for k in keys}
    problems = []
    lock = threading.Lock()

    def client(n):
        rng = random.Random(7000 + n)
        cc = RawClient(srv.port)
        try:
            for round_ in range(40):
                cmds, plan = [], []
                for j in range(24):
                    key = rng.choice(keys)
                    item = b"p%d-%d-%d" % (n, round_, j)
                    marker = b"m%d-%d-%d" % (n, round_, j)
                    cmds += [["CF.ADD", key, item], ["CF.COUNT", key, item], ["ECHO", marker]]
                    plan.append((key, item, marker))
                replies = replies_of(cc, cmds, True)
                for j, (key, item, marker) in enumerate(plan):
                    add, count, echo = replies[3 * j:3 * j + 3]
                    if add != b":1\r\n" or echo != b"$%d\r\n%s\r\n" % (len(marker), marker) \
                            or not count.startswith(b":") or int(count[1:]) < 1:
                        problems.append((key, item, add, count, echo))
                    with lock:
                        added[key].append(item)
        finally:
            cc.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert problems == []
    assert int(info_stats(c)["parked_commands"]) > 0, "no write was ever set aside"
    c.close()
    srv.kill9()
    srv.start()
    c = RawClient(srv.port)
    for k, items in added.items():
        assert b"+Number of items inserted\r\n:%d\r\n" % len(items) in c.call("CF.INFO", k)
        assert c.call("CF.MEXISTS", k, *items) == b"*%d\r\n" % len(items) + b":1\r\n" * len(items)
    c.close()
