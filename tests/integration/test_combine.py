"""Consecutive pipelined calls of CF.ADD, CF.ADDNX, CF.EXISTS and CF.COUNT on one key run as one
(combine-commands, Dispatcher::DispatchCombined). Nothing a client sees may change: the same
random pipelined sessions get byte-identical replies, SCANDUMP bytes and INFO commandstats counts
from a server that combines and from one that runs every call by itself (combine-commands no),
in RESP2 and RESP3; a chain that reaches cf-max-expansions in the middle of a run refuses exactly
the calls that came after; calls inside MULTI are queued one by one."""
import random

import pytest

from cuckood_testlib import RawClient, encode, run_pipelined
from cuckood_testlib import raw_info as info_fields
from cuckood_testlib import raw_scandump as scandump

FILTERS = {
    # a chain of equal sub-filters that reaches cf-max-expansions (8) during the session
    "grow": ["CF.RESERVE", "grow", "2", "BUCKETSIZE", "1", "EXPANSION", "1"],
    "big": ["CF.RESERVE", "big", "1000", "BUCKETSIZE", "2"],
    "few": ["CF.RESERVE", "few", "4", "BUCKETSIZE", "4", "EXPANSION", "2", "MAXITERATIONS", "3"],
}
KEYS = list(FILTERS) + ["auto", "str", "gone"]  # auto: created by CF.ADD; str: a string key


def random_session(seed, runs, protocol):
    rng = random.Random(seed)
    out = [["HELLO", str(protocol)]] + list(FILTERS.values()) + [["SET", "str", "v"]]
    for _ in range(runs):
        key = rng.choice(KEYS)
        r = rng.random()
        if r < 0.8:
            # a run of one command on one key (what is combined), names in any case
            name = rng.choice(["CF.ADD", "CF.ADDNX", "CF.EXISTS", "CF.COUNT"])
            for _ in range(rng.randrange(1, 40)):
                item = "i%d" % rng.randrange(60)
                call = [rng.choice([name, name.lower()]), key, item]
                if rng.random() < 0.03:
                    call = call[:2]  # wrong arity: ends the run, answers its error
                out.append(call)
        elif r < 0.86:
            out.append(["CF.DEL", key, "i%d" % rng.randrange(60)])
        elif r < 0.9:
            out.append(["CF.INSERT", key, "ITEMS"] + ["j%d" % rng.randrange(60)
                                                      for _ in range(rng.randrange(1, 8))])
        elif r < 0.94:
            out += [["MULTI"], ["CF.ADD", key, "m1"], ["CF.ADD", key, "m2"],
                    ["CF.EXISTS", key, "m1"], ["EXEC"]]
        elif r < 0.97:
            out.append(["CF.INFO", key])
        else:
            out.append(["DEL", "gone"])
    return out


def call_counts(port):
    """{command: (calls, failed_calls, rejected_calls)} of INFO commandstats (usec differs)."""
    counts = {}
    for name, value in info_fields(port, "commandstats").items():
        parts = dict(p.split("=") for p in value.split(","))
        counts[name] = (parts["calls"], parts["failed_calls"], parts["rejected_calls"])
    return counts


@pytest.mark.parametrize("protocol", [2, 3])
def test_combined_runs_answer_as_calls_one_by_one(fresh_server, tmp_path, protocol):
    args = ["--cf-max-expansions", "8"]
    one_by_one = fresh_server(*args, "--combine-commands", "no", data_dir=tmp_path / "no")
    combined = fresh_server(*args, data_dir=tmp_path / "yes")
    session = random_session(seed=1205 + protocol, runs=700, protocol=protocol)
    want = run_pipelined(one_by_one.port, session, batch=300)
    got = run_pipelined(combined.port, session, batch=300)
    for i, (w, g) in enumerate(zip(want, got)):
        assert g == w, "command %d %r" % (i, session[i])
    # The session did what it is meant to test: runs were combined, the growing chain reached its
    # maximum (and refused calls), items were found and not found.
    stats = info_fields(combined.port, "stats")
    assert int(stats["combined_calls"]) > 2 * int(stats["combined_runs"]) > 100
    assert info_fields(one_by_one.port, "stats")["combined_calls"] == "0"
    assert any(b"Maximum expansions reached" in r for r in got), \
        "no call was refused by cf-max-expansions"
    assert any(r in (b":1\r\n", b"#t\r\n") for r in got)
    assert any(r in (b":0\r\n", b"#f\r\n") for r in got)
    assert any(r.startswith(b"-WRONGTYPE") for r in got)
    assert call_counts(combined.port) == call_counts(one_by_one.port)
    assert info_fields(combined.port, "errorstats") == info_fields(one_by_one.port, "errorstats")
    for name in list(FILTERS) + ["auto"]:
        a, b = RawClient(one_by_one.port), RawClient(combined.port)
        try:
            assert scandump(b, name) == scandump(a, name), name
            assert b.call("CF.INFO", name) == a.call("CF.INFO", name)
        finally:
            a.close()
            b.close()


def test_a_run_that_reaches_max_expansions_refuses_the_calls_after_it(fresh_server):
    srv = fresh_server("--cf-max-expansions", "3")
    c = RawClient(srv.port)
    calls = [["CF.ADD", "KEY", "item%d" % i] for i in range(12)]
    # one call at a time (nothing to combine), then the same calls in one pipeline
    assert c.call("CF.RESERVE", "one", "2", "BUCKETSIZE", "1", "EXPANSION", "1") == b"+OK\r\n"
    want = [c.call(*[a.replace("KEY", "one") for a in call]) for call in calls]
    assert c.call("CF.RESERVE", "all", "2", "BUCKETSIZE", "1", "EXPANSION", "1") == b"+OK\r\n"
    c.send_raw(b"".join(encode([a.replace("KEY", "all") for a in call]) for call in calls))
    got = [c.read_reply() for _ in calls]
    assert got == want
    # Some calls went in, then the chain had its 3 sub-filters: every later call is refused.
    stored = want.count(b":1\r\n")
    assert 0 < stored < len(calls)
    assert want[:stored] == [b":1\r\n"] * stored
    assert want[stored:] == [b"-Maximum expansions reached\r\n"] * (len(calls) - stored)
    assert c.call("CF.INFO", "all") == c.call("CF.INFO", "one")
    stats = info_fields(srv.port, "stats")
    assert stats["combined_calls"] == "12" and stats["combined_runs"] == "1"
    assert call_counts(srv.port)["cmdstat_cf.add"] == (
        "24", str(2 * (len(calls) - stored)), "0")
    c.close()


def test_calls_in_multi_are_queued_one_by_one_and_config_set_turns_combining_off(fresh_server):
    srv = fresh_server()
    c = RawClient(srv.port)
    calls = [["MULTI"]] + [["CF.ADD", "k", "a%d" % i] for i in range(5)] + [["EXEC"]]
    c.send_raw(b"".join(encode(call) for call in calls))
    replies = [c.read_reply() for _ in calls]
    assert replies[1:6] == [b"+QUEUED\r\n"] * 5
    assert replies[6] == b"*5\r\n" + b":1\r\n" * 5
    assert info_fields(srv.port, "stats")["combined_calls"] == "0"
    assert c.call("CONFIG", "SET", "combine-commands", "no") == b"+OK\r\n"
    calls = [["CF.EXISTS", "k", "a%d" % i] for i in range(5)]
    c.send_raw(b"".join(encode(call) for call in calls))
    assert [c.read_reply() for _ in calls] == [b":1\r\n"] * 5
    assert info_fields(srv.port, "stats")["combined_calls"] == "0"
    assert c.call("CONFIG", "SET", "combine-commands", "yes") == b"+OK\r\n"
    c.send_raw(b"".join(encode(call) for call in calls))
    assert [c.read_reply() for _ in calls] == [b":1\r\n"] * 5
    assert info_fields(srv.port, "stats")["combined_calls"] == "5"
    c.close()


def test_every_call_of_a_run_across_keys_is_counted_and_logged(fresh_server):
    """A run of lookups across keys counts each call as a command of its own: its calls in INFO
    commandstats and total_commands_processed, and one SLOWLOG entry each. (Errors in runs:
    test_reads_of_different_keys_answer_as_calls_one_by_one.)"""
    srv = fresh_server()
    c = RawClient(srv.port)
    for i in range(4):
        assert c.call("CF.RESERVE", "k%d" % i, "1000") == b"+OK\r\n"
    assert c.call("CONFIG", "SET", "slowlog-log-slower-than", "0") == b"+OK\r\n"
    assert c.call("SLOWLOG", "RESET") == b"+OK\r\n"
    before = int(info_fields(srv.port, "stats")["total_commands_processed"])
    calls = [["CF.EXISTS", "k%d" % (i % 4), "x%d" % i] for i in range(10)]
    c.send_raw(b"".join(encode(call) for call in calls))
    assert [c.read_reply() for _ in calls] == [b":0\r\n"] * 10
    stats = info_fields(srv.port, "stats")
    assert stats["combined_calls"] == "10" and stats["combined_runs"] == "1"
    # (+1: the INFO that read `before`)
    assert int(stats["total_commands_processed"]) == before + 1 + 10
    assert call_counts(srv.port)["cmdstat_cf.exists"] == ("10", "0", "0")
    log = c.call("SLOWLOG", "GET", "100")
    assert log.count(b"\r\nCF.EXISTS\r\n") == 10
    c.close()


def reads_across_keys_session(seed, protocol):
    """Filters of several shapes (one page, many pages, sub-filters, a long chain), a string key,
    keys that expire or have expired and keys never made; then pipelined runs of CF.EXISTS and
    CF.COUNT naming a random key each (the same key now and then), between writes."""
    rng = random.Random(seed)
    out = [["HELLO", str(protocol)]]
    filters = []
    for i in range(30):
        name = "k%d" % i
        filters.append(name)
        out.append(["CF.RESERVE", name, str(rng.choice([4, 50, 2000, 100000])), "BUCKETSIZE",
                    str(rng.choice([1, 2, 4])), "EXPANSION", str(rng.choice([1, 2]))])
        out.append(["CF.INSERT", name, "ITEMS"] + ["i%d" % rng.randrange(300) for _ in range(40)])
    out.append(["CF.RESERVE", "chain", "2", "BUCKETSIZE", "1", "EXPANSION", "1"])
    out.append(["CF.INSERT", "chain", "ITEMS"] + ["i%d" % n for n in range(300)])
    out += [["SET", "str", "v"], ["EXPIRE", "k1", "100000"], ["PEXPIREAT", "k2", "1"]]
    keys = filters + ["chain", "str", "nokey1", "nokey2"]
    for _ in range(120):
        name = rng.choice(["CF.EXISTS", "CF.COUNT"])
        for _ in range(rng.randrange(1, 40)):
            call = [rng.choice([name, name.lower()]), rng.choice(keys), "i%d" % rng.randrange(400)]
            if rng.random() < 0.02:
                call = call[:2]  # wrong arity: ends the run, answers its error
            out.append(call)
        r = rng.random()
        if r < 0.5:
            out.append(["CF.ADD", rng.choice(filters), "i%d" % rng.randrange(400)])
        elif r < 0.6:
            out.append(["CF.DEL", rng.choice(filters), "i%d" % rng.randrange(400)])
        elif r < 0.65:
            out.append(["CF.MEXISTS", rng.choice(keys), "i1", "i2"])
    return out


@pytest.mark.parametrize("protocol", [2, 3])
def test_reads_of_different_keys_answer_as_calls_one_by_one(fresh_server, tmp_path, protocol):
    # Consecutive CF.EXISTS / CF.COUNT calls on different keys run as one lookup
    # (Dispatcher::DispatchAcrossKeys): replies and INFO commandstats must be those of the calls
    # one by one, with the pages in the in-memory cache and without a cache (cache-size 0:
    # every call is answered by the lookup of its key alone).
    args = ["--cf-max-expansions", "1024"]
    one_by_one = fresh_server(*args, "--combine-commands", "no", data_dir=tmp_path / "no")
    combined = fresh_server(*args, data_dir=tmp_path / "yes")
    uncached = fresh_server(*args, "--cache-size", "0", data_dir=tmp_path / "nocache")
    session = reads_across_keys_session(seed=4400 + protocol, protocol=protocol)
    want = run_pipelined(one_by_one.port, session, batch=200)
    for srv in (combined, uncached):
        got = run_pipelined(srv.port, session, batch=200)
        for i, (w, g) in enumerate(zip(want, got)):
            assert g == w, "command %d %r" % (i, session[i])
        stats = info_fields(srv.port, "stats")
        assert int(stats["combined_calls"]) > 2 * int(stats["combined_runs"]) > 100
        counts = {k: v for k, v in call_counts(srv.port).items() if k != "cmdstat_info"}
        want_counts = {k: v for k, v in call_counts(one_by_one.port).items()
                       if k != "cmdstat_info"}
        assert counts == want_counts
        assert info_fields(srv.port, "errorstats") == info_fields(one_by_one.port, "errorstats")
    assert any(r in (b":1\r\n", b"#t\r\n") for r in want)
    assert any(r in (b":0\r\n", b"#f\r\n") for r in want)
    assert any(r.startswith(b":") and r not in (b":0\r\n", b":1\r\n") for r in want), \
        "no CF.COUNT above 1"
