"""Long chains of sub-filters are served through an index (chain-index-memory) that must never
change an answer: the same random session over filters with hundreds of sub-filters gets
byte-identical replies and SCANDUMP bytes from a server without indexes (chain-index-memory 0),
one with the default budget, one whose budget holds two of its three indexes (indexes are
dropped and built again), and one without the in-memory cache. The session pipelines inserts,
lookups, counts, deletes (which compact the chain), CF.COMPACT and a filter loaded with
LOADCHUNK; the servers are then restarted and compared again."""
import random

from cuckood_testlib import RawClient, raw_info, raw_scandump as scandump, run_pipelined

# name -> CF.RESERVE arguments: equal sub-filters (EXPANSION 1) of 1, 2 and 4 slots a bucket, and
# one growing filter the index does not cover.
FILTERS = {
    "c1": ["2", "BUCKETSIZE", "1", "EXPANSION", "1"],
    "c2": ["8", "BUCKETSIZE", "2", "EXPANSION", "1", "MAXITERATIONS", "5"],
    "c4": ["16", "BUCKETSIZE", "4", "EXPANSION", "1"],
    "g2": ["4", "BUCKETSIZE", "2", "EXPANSION", "2"],
}
# (chain-index-memory, cache-size): no index; the default budget; a budget that holds two of the
# three indexes; the default budget without the in-memory cache.
SERVERS = [("0", "256mb"), ("64mb", "256mb"), ("9kb", "256mb"), ("64mb", "0")]


def random_session(seed, commands):
    rng = random.Random(seed)
    out = [["CF.RESERVE", name] + args for name, args in FILTERS.items()]
    inserted = {name: [] for name in FILTERS}
    # Past the index's 128 sub-filters at once (slots a sub-filter: 2, 8, 16).
    for name, n in (("c1", 400), ("c2", 1400), ("c4", 2600), ("g2", 200)):
        items = ["%s-%d" % (name, i) for i in range(n)]
        for at in range(0, n, 500):
            out.append(["CF.INSERT", name, "ITEMS"] + items[at:at + 500])
        inserted[name] += items
    for _ in range(commands):
        name = rng.choice(list(FILTERS))
        known = inserted[name]
        item = rng.choice(known) if known and rng.random() < 0.5 else "x%d" % rng.randrange(20000)
        r = rng.random()
        if r < 0.2:
            out.append(["CF.ADD", name, item])
            known.append(item)
        elif r < 0.27:
            out.append(["CF.ADDNX", name, item])
        elif r < 0.37:
            items = ["y%d" % rng.randrange(20000) for _ in range(rng.randrange(1, 60))]
            out.append([rng.choice(["CF.INSERT", "CF.INSERTNX"]), name, "ITEMS"] + items)
            known += items
        elif r < 0.45:
            out.append(["CF.DEL", name, item])
        elif r < 0.62:
            out.append(["CF.EXISTS", name, item])
        elif r < 0.77:
            out.append(["CF.MEXISTS", name] + [rng.choice(known) if known and rng.random() < 0.5
                                               else "z%d" % rng.randrange(20000)
                                               for _ in range(30)])
        elif r < 0.9:
            out.append(["CF.COUNT", name, item])
        elif r < 0.905:
            out.append(["CF.COMPACT", name])
        else:
            out.append(["CF.INFO", name])
    return out


def dump_all(port, names):
    client = RawClient(port)
    try:
        return [(client.call("CF.INFO", n), scandump(client, n)) for n in names]
    finally:
        client.close()


def load_copy(port, src, dst):
    """Copies filter src to dst with SCANDUMP / LOADCHUNK (the copy's pages come from chunks)."""
    client = RawClient(port)
    try:
        for reply in scandump(client, src):
            parts = reply.split(b"\r\n")
            cursor = parts[1][1:]
            if cursor == b"0":
                break
            length = int(parts[2][1:])
            start = len(b"\r\n".join(parts[:3])) + 2
            data = reply[start:start + length]
            assert client.call(b"CF.LOADCHUNK", dst, cursor, data) == b"+OK\r\n"
    finally:
        client.close()


def info_stat(port, field):
    return int(raw_info(port, "rocksdb")[field])


def test_long_chains_answer_the_same_with_and_without_their_index(fresh_server, tmp_path):
    servers = [fresh_server("--cf-max-expansions", "65535", "--chain-index-memory", budget,
                            "--cache-size", cache,
                            data_dir=tmp_path / ("data-%s-%s" % (budget, cache)))
               for budget, cache in SERVERS]
    session = random_session(seed=20261205, commands=5000)
    expected = run_pipelined(servers[0].port, session)
    for srv, config in zip(servers[1:], SERVERS[1:]):
        got = run_pipelined(srv.port, session)
        for i, (want, have) in enumerate(zip(expected, got)):
            assert have == want, "chain-index-memory, cache-size %r, command %d %r" % (
                config, i, session[i][:3])
    # The session reached the index and its edges: long chains, deletes that compacted them.
    infos = [r for r in expected if r.startswith(b"*")]
    assert any(b"Number of filters\r\n:" in r for r in infos)
    assert info_stat(servers[0].port, "chain_index_builds") == 0
    assert info_stat(servers[1].port, "chain_index_builds") >= 3
    # (the small budget keeps two of the three indexes: the third is built again when used)
    assert info_stat(servers[2].port, "chain_index_builds") > info_stat(servers[1].port,
                                                                        "chain_index_builds")
    assert info_stat(servers[2].port, "chain_index_bytes") <= 9 * 1024
    assert info_stat(servers[3].port, "chain_index_builds") >= 3
    for srv in servers:
        load_copy(srv.port, "c2", "c2copy")
    names = list(FILTERS) + ["c2copy"]
    dumps = dump_all(servers[0].port, names)
    for srv in servers[1:]:
        assert dump_all(srv.port, names) == dumps
    more = random_session(seed=11, commands=1500)
    more = [c for c in more if c[0] != "CF.RESERVE"]
    more = [[c[0], "c2copy"] + c[2:] if c[1] == "c2" else c for c in more]
    expected = run_pipelined(servers[0].port, more)
    for srv in servers[1:]:
        assert run_pipelined(srv.port, more) == expected
    dumps = dump_all(servers[0].port, names)
    for srv in servers:
        srv.restart()
    for srv in servers:
        assert dump_all(srv.port, names) == dumps
    expected = run_pipelined(servers[0].port, more[:500])
    for srv in servers[1:]:
        assert run_pipelined(srv.port, more[:500]) == expected
