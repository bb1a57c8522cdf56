"""The in-memory page cache must never change an answer: the same random session of CF commands
gets byte-identical replies from a server without the cache (cache-size 0), one whose cache is so
small that almost every page is evicted again at once, and one with the default cache. The
session pipelines its commands (so writes share write groups), spans filters that grow
sub-filters, and ends with every filter's SCANDUMP; the servers are then restarted and compared
again."""
import random

from cuckood_testlib import RawClient, raw_scandump, run_pipelined, run_threads

FILTERS = ["f%d" % i for i in range(6)]
CACHES = ["0", "65536", "1048576", "268435456"]


def random_session(seed, commands):
    rng = random.Random(seed)
    out = []
    for i, name in enumerate(FILTERS):
        bucket = [1, 2, 4][i % 3]
        out.append(["CF.RESERVE", name, str(rng.choice([50, 200, 1000])), "BUCKETSIZE",
                    str(bucket), "MAXITERATIONS", "20", "EXPANSION", str(rng.choice([1, 2]))])
    for _ in range(commands):
        name = rng.choice(FILTERS + ["auto%d" % rng.randrange(2)])
        item = "i%d" % rng.randrange(3000)
        r = rng.random()
        if r < 0.25:
            out.append(["CF.ADD", name, item])
        elif r < 0.32:
            out.append(["CF.ADDNX", name, item])
        elif r < 0.42:
            items = ["i%d" % rng.randrange(3000) for _ in range(rng.randrange(1, 40))]
            cmd = rng.choice(["CF.INSERT", "CF.INSERTNX"])
            out.append([cmd, name, "ITEMS"] + items)
        elif r < 0.55:
            out.append(["CF.DEL", name, item])
        elif r < 0.72:
            out.append(["CF.EXISTS", name, item])
        elif r < 0.82:
            out.append(["CF.MEXISTS", name] + ["i%d" % rng.randrange(3000) for _ in range(20)])
        elif r < 0.92:
            out.append(["CF.COUNT", name, item])
        else:
            out.append(["CF.INFO", name])
    return out


def dump_all(port):
    """Every filter's SCANDUMP chunks and its CF.INFO, as raw replies."""
    client = RawClient(port)
    out = []
    try:
        for name in FILTERS + ["auto0", "auto1"]:
            out.append(client.call("CF.INFO", name))
            out += raw_scandump(client, name)
    finally:
        client.close()
    return out


def info_field(reply, field):
    at = reply.find(field + b"\r\n:")
    if at < 0:
        return None
    start = at + len(field) + 3
    return int(reply[start:reply.index(b"\r\n", start)])


def test_replies_do_not_depend_on_the_in_memory_cache(fresh_server, tmp_path):
    servers = [fresh_server("--cache-size", c, data_dir=tmp_path / ("data-" + c)) for c in CACHES]
    session = random_session(seed=20261202, commands=6000)
    expected = run_pipelined(servers[0].port, session)
    # The session does exercise the filters: items land, get deleted, and filters grow.
    assert expected.count(b":1\r\n") > 1000
    assert max(info_field(r, b"Number of filters") or 0 for r in expected) > 1
    for srv, cache in zip(servers[1:], CACHES[1:]):
        got = run_pipelined(srv.port, session)
        for i, (want, have) in enumerate(zip(expected, got)):
            assert have == want, "cache-size %s, command %d %r" % (cache, i, session[i][:3])
    dumps = dump_all(servers[0].port)
    for srv in servers[1:]:
        assert dump_all(srv.port) == dumps
    # The same after a restart: what each server stored is the same, whatever it cached.
    for srv in servers:
        srv.restart()
    for srv in servers:
        assert dump_all(srv.port) == dumps
    more = random_session(seed=7, commands=2000)[len(FILTERS):]  # (the filters exist already)
    expected = run_pipelined(servers[0].port, more)
    for srv in servers[1:]:
        assert run_pipelined(srv.port, more) == expected



def test_writers_on_two_io_threads_with_a_tiny_cache_lose_nothing(fresh_server, tmp_path):
    # Connections on both io threads add items to the same filters at once, through a cache that
    # evicts almost every page and record at once: a command then reads from RocksDB what the
    # other thread has written and may still be storing (its write group). Every item whose
    # CF.ADD answered 1 must be found, and each filter's count must be the number of those adds,
    # before and after a restart.
    import threading
    srv = fresh_server("--cache-size", "65536", "--workers", "2", data_dir=tmp_path / "tiny")
    filters = ["shared%d" % i for i in range(4)]
    setup = RawClient(srv.port)
    try:
        for name in filters:
            assert setup.call("CF.RESERVE", name, "20000", "BUCKETSIZE", "2") == b"+OK\r\n"
    finally:
        setup.close()
    clients = 6
    per_client = 3000
    plans = []
    for c in range(clients):
        rng = random.Random(500 + c)
        plans.append([["CF.ADD", rng.choice(filters), "c%d-%d" % (c, n)] for n in range(per_client)])
    replies = [None] * clients

    def run(c):
        replies[c] = run_pipelined(srv.port, plans[c], batch=32)

    threads = [threading.Thread(target=run, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    added = {name: [] for name in filters}
    for c in range(clients):
        assert replies[c] is not None and len(replies[c]) == per_client
        for cmd, reply in zip(plans[c], replies[c]):
            assert reply == b":1\r\n", (cmd, reply)
            added[cmd[1]].append(cmd[2])

    def check():
        client = RawClient(srv.port)
        try:
            for name, items in added.items():
                assert info_field(client.call("CF.INFO", name), b"Number of items inserted") == len(items)
                for at in range(0, len(items), 500):
                    chunk = items[at:at + 500]
                    want = b"*%d\r\n" % len(chunk) + b":1\r\n" * len(chunk)
                    assert client.call("CF.MEXISTS", name, *chunk) == want, name
        finally:
            client.close()

    check()
    srv.restart()
    check()


def test_lookups_during_writes_and_recreated_keys_through_a_tiny_cache_find_every_added_item(
        fresh_server, tmp_path):
    # Lookups keep, per io thread, the addresses of the pages they found (storage/page_handles.h)
    # and use them again while the cache has not changed the page. Here writers add items to 100
    # filters, another client deletes and re-creates filters, and readers send pipelines of
    # CF.EXISTS across filters (read as one, across keys) and CF.MEXISTS, all at once, through a
    # cache that evicts all the time: every item whose CF.ADD answered 1, in a filter not
    # re-created since, must be found.
    import threading
    import time
    srv = fresh_server("--cache-size", "262144", "--workers", "2", data_dir=tmp_path / "handles")
    keys = ["hk%d" % i for i in range(100)]
    locks = [threading.Lock() for _ in keys]
    added = [set() for _ in keys]
    generation = [0] * len(keys)
    setup = RawClient(srv.port)
    try:
        for k in keys:
            assert setup.call("CF.RESERVE", k, "4000") == b"+OK\r\n"
    finally:
        setup.close()
    stop = time.time() + 6
    checked = [0]

    def writer(rng):
        while time.time() < stop:
            batch = [(rng.randrange(len(keys)), "i%d" % rng.randrange(10**9)) for _ in range(16)]
            held = sorted({k for k, _ in batch})
            for k in held:
                locks[k].acquire()
            try:
                replies = run_pipelined(srv.port, [["CF.ADD", keys[k], item] for k, item in batch])
                for (k, item), reply in zip(batch, replies):
                    assert reply in (b":1\r\n", b":0\r\n"), reply
                    if reply == b":1\r\n":
                        added[k].add(item)
            finally:
                for k in held:
                    locks[k].release()

    def recreator(rng):
        client = RawClient(srv.port)
        try:
            while time.time() < stop:
                k = rng.randrange(len(keys))
                with locks[k]:
                    generation[k] += 1
                    added[k].clear()
                    assert client.call("DEL", keys[k]) == b":1\r\n"
                    assert client.call("CF.RESERVE", keys[k], "4000") == b"+OK\r\n"
                time.sleep(0.02)
        finally:
            client.close()

    def reader(rng):
        client = RawClient(srv.port)
        try:
            while time.time() < stop:
                picks = []
                for _ in range(16):
                    k = rng.randrange(len(keys))
                    with locks[k]:
                        if added[k]:
                            picks.append((k, rng.choice(sorted(added[k])), generation[k]))
                if not picks:
                    continue
                k0 = picks[0][0]
                same_key = [item for k, item, g in picks if k == k0]
                cmds = [["CF.EXISTS", keys[k], item] for k, item, _ in picks]
                cmds.append(["CF.MEXISTS", keys[k0]] + same_key)
                replies = run_pipelined(srv.port, cmds)
                for (k, item, g), reply in zip(picks, replies):
                    if reply != b":1\r\n":
                        with locks[k]:  # (not a miss if the filter was re-created meanwhile)
                            assert generation[k] != g, (keys[k], item, reply)
                with locks[k0]:
                    if generation[k0] == picks[0][2]:
                        want = b"*%d\r\n" % len(same_key) + b":1\r\n" * len(same_key)
                        assert replies[-1] == want, (keys[k0], replies[-1])
                checked[0] += len(picks)
        finally:
            client.close()

    run_threads([(writer, random.Random(s)) for s in range(2)] +
                [(reader, random.Random(100 + s)) for s in range(2)] +
                [(recreator, random.Random(999))])
    assert checked[0] > 1000
