"""Crash test: kill -9 at random moments while several writers run CF.ADD/ADDNX/INSERT/INSERTNX/
DEL, CF.RESERVE, DEL of keys, CF.COMPACT and SCANDUMP -> LOADCHUNK copies; after every restart the
server must hold exactly what the acknowledged replies say, and every filter must be consistent.

The model is exact because of two choices:
  * every writer thread owns its keys, so each key's history is sequential and known;
  * all items of the test have pairwise different fingerprints (murmur64a(item) % 255 + 1), so
    inside one filter no item can be mistaken for another: CF.EXISTS answers 1 exactly for the
    items with at least one copy left, CF.DEL removes a copy of exactly that item, and CF.ADDNX /
    CF.INSERTNX / CF.DEL replies are predictable.
A command whose reply was not received when the server died may or may not have happened: the
items (or, for RESERVE / DEL / LOADCHUNK, the whole key) it touched are "uncertain"; everything
else is asserted exactly. Uncertain keys are deleted after the checks so the model is exact again.

The seed is printed; rerun one with CUCKOOD_CRASH_SEED=<seed>.
"""
import os
import random
import subprocess
import threading
import time

from cuckood_testlib import RawClient, binary, encode

# ---------------------------------------------------------------------------------------------
# helpers

M64 = 0xc6a4a7935bd1e995
MASK64 = (1 << 64) - 1


def murmur64a(data, seed=0):
    """MurmurHash64A as RedisBloom uses it for CF (seed 0)."""
    n = len(data)
    h = (seed ^ (n * M64)) & MASK64
    blocks = n // 8
    for i in range(blocks):
        k = int.from_bytes(data[8 * i:8 * i + 8], "little")
        k = (k * M64) & MASK64
        k ^= k >> 47
        k = (k * M64) & MASK64
        h ^= k
        h = (h * M64) & MASK64
    tail = data[8 * blocks:]
    if tail:
        for j, b in enumerate(tail):
            h ^= b << (8 * j)
        h = (h * M64) & MASK64
    h ^= h >> 47
    h = (h * M64) & MASK64
    h ^= h >> 47
    return h


def fingerprint(item):
    return murmur64a(item) % 255 + 1


def test_murmur_matches_the_reference_vectors():
    assert murmur64a(b"") == 0
    assert murmur64a(b"foo") == 0xcdde38358fd25b01
    assert murmur64a(b"123456789") == 0x4977490251674330
    assert murmur64a(b"12345678") == 0x758f67d162b2d202
    assert fingerprint(b"item1") == 7


class Err(Exception):
    pass


def parse(data, pos=0):
    nl = data.index(b"\r\n", pos)
    kind, head, pos = data[pos:pos + 1], data[pos + 1:nl], nl + 2
    if kind == b"+":
        return head.decode(), pos
    if kind == b"-":
        return Err(head.decode(errors="replace")), pos
    if kind == b":":
        return int(head), pos
    if kind == b"$":
        n = int(head)
        if n < 0:
            return None, pos
        return data[pos:pos + n], pos + n + 2
    if kind == b"*":
        n = int(head)
        if n < 0:
            return None, pos
        out = []
        for _ in range(n):
            v, pos = parse(data, pos)
            out.append(v)
        return out, pos
    raise ValueError("unexpected reply %r" % data[:60])


def decode(reply):
    value, end = parse(reply)
    assert end == len(reply), reply[:100]
    return value


def info(c, key):
    """CF.INFO as a dict, or None when the key does not exist."""
    v = decode(c.call("CF.INFO", key))
    if isinstance(v, Err):
        assert str(v) == "ERR not found", (key, v)
        return None
    return dict(zip(v[0::2], v[1::2]))


def scandump(c, key):
    """[(iterator, chunk)] of a whole CF.SCANDUMP walk (empty when numItems = 0)."""
    chunks, it = [], 0
    while True:
        v = decode(c.call("CF.SCANDUMP", key, it))
        assert isinstance(v, list) and len(v) == 2, (key, v)
        nxt, data = v
        if nxt == 0:
            assert data is None
            return chunks
        assert isinstance(data, bytes) and nxt > it, (key, it, nxt)
        chunks.append((nxt, data))
        it = nxt


def non_empty_slots(chunks):
    return sum(len(data) - data.count(0) for _, data in chunks[1:])


def run_check(data_dir):
    out = subprocess.run([binary(), "--check", "--dir", data_dir], capture_output=True,
                         text=True, timeout=120)
    text = out.stdout + out.stderr
    assert out.returncode == 0 and " 0 errors" in text, text
    return text


def make_pool(rnd, n=255):
    """Items with pairwise different fingerprints (some binary, one empty)."""
    pool, fps = [], set()
    tag = b"%08x" % rnd.getrandbits(32)
    candidates = [b""] + [b"\x00\r\n\xff" + tag]
    i = 0
    while len(pool) < n:
        if candidates:
            item = candidates.pop()
        else:
            item = tag + b"-%d" % i + (b"\x00\x01" if i % 7 == 0 else b"")
            i += 1
        fp = fingerprint(item)
        if fp not in fps:
            fps.add(fp)
            pool.append(item)
    return pool


# ---------------------------------------------------------------------------------------------
# the model


class KeyState:
    def __init__(self, name):
        self.name = name
        self.exists = False
        self.counts = {}  # item -> copies (only items with at least one copy)
        self.loading = False  # created by a LOADCHUNK header, chunks not all loaded yet
        self.origin = None  # "cmd" or "load"
        self.uncertain_items = set()
        self.uncertain_key = False
        self.loaded_this_cycle = False

    def total(self):
        return sum(self.counts.values())

    def reset(self):
        self.exists = False
        self.counts = {}
        self.loading = False
        self.origin = None


FULL_ERRORS = ("Filter is full", "Maximum expansions reached", "ERR Insufficient memory")


class Writer:
    """One thread: its own keys, two connections, an exact model of its keys."""

    def __init__(self, tid, seed, pool, prefix, nkeys):
        self.tid = tid
        self.rnd = random.Random(seed)
        self.pool = pool
        self.keys = []
        for j in range(nkeys):
            name = b"%s:t%d:k%d" % (prefix, tid, j)
            if j == 0:
                name += b"\x00\xfe bin"
            self.keys.append(KeyState(name))
        self.failures = []
        self.pending = []  # ops sent whose replies were not received
        self.acked = 0
        self.copies = 0

    # -- expected replies and effects; each returns None or a failure text ------------------

    def _add(self, st, item, nx):
        def apply(v):
            if isinstance(v, Err) and str(v) == "Maximum expansions reached" and st.exists:
                return None  # checked before the item, even by ADDNX of a present item
            if nx and st.counts.get(item, 0) > 0:
                if v != 0:
                    return "ADDNX of a present item answered %r" % (v,)
                return None
            if v == 1:
                if not st.exists:
                    st.exists, st.origin = True, "cmd"
                st.counts[item] = st.counts.get(item, 0) + 1
                return None
            if isinstance(v, Err) and str(v) in FULL_ERRORS and st.exists:
                return None
            return "%s answered %r" % ("ADDNX" if nx else "ADD", v)
        return [b"CF.ADDNX" if nx else b"CF.ADD", st.name, item], apply, {item}, False

    def _insert(self, st, items, nx):
        rnd = self.rnd
        args = [b"CF.INSERTNX" if nx else b"CF.INSERT", st.name]
        if rnd.random() < 0.3:
            args += [b"CAPACITY", b"%d" % rnd.choice([4, 10, 64, 500, 3000])]
        nocreate = rnd.random() < 0.2
        if nocreate:
            args.append(b"NOCREATE")
        args.append(b"ITEMS")
        args += items

        def apply(v):
            if nocreate and not st.exists:
                return None if isinstance(v, Err) and str(v) == "ERR not found" else \
                    "INSERT NOCREATE on a missing key answered %r" % (v,)
            if isinstance(v, Err) and str(v) in FULL_ERRORS and st.exists:
                return None
            if not isinstance(v, list) or len(v) != len(items):
                return "INSERT answered %r" % (v,)
            if not st.exists:
                st.exists, st.origin = True, "cmd"
            for item, r in zip(items, v):
                if nx and st.counts.get(item, 0) > 0:
                    if r != 0:
                        return "INSERTNX of a present item answered %r" % (r,)
                elif r == 1:
                    st.counts[item] = st.counts.get(item, 0) + 1
                elif r != -1:
                    return "INSERT item answered %r" % (r,)
            return None
        return args, apply, set(items), False

    def _del_item(self, st, item):
        def apply(v):
            if not st.exists:
                return None if isinstance(v, Err) and str(v) == "Not found" else \
                    "CF.DEL on a missing key answered %r" % (v,)
            want = 1 if st.counts.get(item, 0) > 0 else 0
            if v != want:
                return "CF.DEL answered %r, model says %d" % (v, want)
            if want:
                st.counts[item] -= 1
                if not st.counts[item]:
                    del st.counts[item]
            return None
        return [b"CF.DEL", st.name, item], apply, {item}, False

    def _compact(self, st):
        def apply(v):
            if not st.exists:
                return None if isinstance(v, Err) and str(v) == "Cuckoo filter was not found" \
                    else "CF.COMPACT on a missing key answered %r" % (v,)
            return None if v == "OK" else "CF.COMPACT answered %r" % (v,)
        return [b"CF.COMPACT", st.name], apply, set(), False

    def _reserve(self, st):
        rnd = self.rnd
        bs = rnd.choice([1, 2, 2, 3, 4])
        cap = rnd.choice([rnd.randint(2 * bs, 64), rnd.randint(100, 5000),
                          rnd.randint(100, 5000), 1 << 20])
        args = [b"CF.RESERVE", st.name, b"%d" % cap, b"BUCKETSIZE", b"%d" % bs]
        if rnd.random() < 0.7:
            args += [b"EXPANSION", b"%d" % rnd.choice([0, 1, 1, 2, 4])]
        if rnd.random() < 0.5:
            args += [b"MAXITERATIONS", b"%d" % rnd.choice([1, 5, 20, 100])]

        def apply(v):
            if st.exists:
                return None if isinstance(v, Err) and str(v) == "ERR item exists" else \
                    "RESERVE of an existing key answered %r" % (v,)
            if v != "OK":
                return "RESERVE answered %r" % (v,)
            st.reset()
            st.exists, st.origin = True, "cmd"
            return None
        return args, apply, set(), True

    def _del_key(self, st):
        def apply(v):
            want = 1 if st.exists else 0
            if v != want:
                return "DEL answered %r, model says %d" % (v, want)
            st.reset()
            return None
        return [b"DEL", st.name], apply, set(), True

    # -- running ---------------------------------------------------------------------------

    def _send(self, conn, ops):
        """Pipelines ops; applies each reply as it arrives. Raises on a lost connection (the
        unanswered ops stay in self.pending)."""
        self.pending = list(ops)
        conn.send_raw(b"".join(encode(op[0]) for op in ops))
        while self.pending:
            args, apply, _, _ = self.pending[0]
            v = decode(conn.read_reply())
            self.pending.pop(0)
            self.acked += 1
            err = apply(v)
            if err:
                self.failures.append("%r: %s" % (args[:3], err))

    def _loadchunk_copy(self, conn):
        """SCANDUMP one of our keys and replay it into one of our missing keys."""
        rnd = self.rnd
        sources = [k for k in self.keys if k.exists and not k.loading and k.total() > 0]
        targets = [k for k in self.keys if not k.exists]
        if not sources or not targets:
            return
        src, dst = rnd.choice(sources), rnd.choice(targets)
        chunks = []
        it = 0
        while True:
            v = decode(conn.call("CF.SCANDUMP", src.name, it))
            nxt, data = v
            if nxt == 0:
                break
            chunks.append((nxt, data))
            it = nxt
        if not chunks:
            self.failures.append("SCANDUMP of %r (model %d items) is empty" % (src.name,
                                                                              src.total()))
            return
        dst.loaded_this_cycle = True
        for n, (it, data) in enumerate(chunks):
            def apply(v, n=n):
                if v != "OK":
                    return "LOADCHUNK answered %r" % (v,)
                if n == 0:
                    dst.reset()
                    dst.exists, dst.loading, dst.origin = True, True, "load"
                if n == len(chunks) - 1:
                    dst.loading = False
                    self.copies += 1
                    dst.counts = dict(src.counts)
                return None
            op = ([b"CF.LOADCHUNK", dst.name, b"%d" % it, data], apply, set(), True)
            self._send(conn, [op])

    def one_step(self, conns):
        rnd = self.rnd
        conn = rnd.choice(conns)
        st = rnd.choice(self.keys)
        r = rnd.random()
        if r < 0.03:
            self._loadchunk_copy(conn)
            return
        if r < 0.07:
            self._send(conn, [self._reserve(st)])
            return
        if r < 0.09:
            self._send(conn, [self._del_key(st)])
            return
        if r < 0.10:
            self._send(conn, [self._compact(st)])
            return
        # a pipeline of item operations on one key
        ops = []
        present = list(st.counts)
        for _ in range(rnd.choice([1, 1, 1, 2, 5, 20])):
            q = rnd.random()
            if q < 0.35:
                ops.append(self._add(st, rnd.choice(self.pool), False))
            elif q < 0.45:
                ops.append(self._add(st, rnd.choice(self.pool), True))
            elif q < 0.60:
                items = [rnd.choice(self.pool) for _ in range(rnd.randint(1, 8))]
                ops.append(self._insert(st, items, rnd.random() < 0.3))
            else:
                # mostly delete something that is there; sometimes something that is not
                item = rnd.choice(present) if present and rnd.random() < 0.8 \
                    else rnd.choice(self.pool)
                ops.append(self._del_item(st, item))
        # the expectations of later ops depend on the earlier ones: apply() runs in order
        self._send(conn, ops)

    def run(self, port, stop):
        self.pending = []
        try:
            conns = [RawClient(port), RawClient(port)]
        except OSError as e:
            self.failures.append("connect failed: %r" % e)
            return
        try:
            while not stop.is_set():
                self.one_step(conns)
        except (ConnectionError, OSError):
            pass  # the server was killed
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            self.failures.append("writer %d crashed: %r" % (self.tid, e))
        finally:
            for c in conns:
                c.close()

    def mark_pending_uncertain(self):
        for args, _, items, whole_key in self.pending:
            st = next(k for k in self.keys if k.name == args[1])
            st.uncertain_items |= items
            if whole_key:
                st.uncertain_key = True
        self.pending = []


# ---------------------------------------------------------------------------------------------
# verification


def verify_key(c, st, pool, exact=True):
    """Compares one key with the model; returns a list of problems."""
    problems = []
    name = st.name
    inf = info(c, name)
    whole_uncertain = st.uncertain_key or st.loading
    consistency_only = whole_uncertain or not exact
    if inf is None:
        if st.exists and not consistency_only:
            problems.append("%r: acknowledged key is gone (model: %d items)" % (name,
                                                                               st.total()))
        return problems
    if not st.exists and not consistency_only and not st.uncertain_items:
        problems.append("%r: exists after being deleted / never acknowledged" % name)
    n_items = inf["Number of items inserted"]
    # INFO counter == non-empty slots, unless the key is a half-loaded LOADCHUNK copy (it carries
    # its source's counters before its data has arrived) or may be one.
    partial_load_possible = st.loading or (st.uncertain_key and st.loaded_this_cycle) or \
        (not exact and st.loaded_this_cycle)
    if not partial_load_possible:
        chunks = scandump(c, name)
        if n_items == 0:
            if chunks:
                problems.append("%r: numItems 0 but SCANDUMP is not empty" % name)
        else:
            hdr_items = int.from_bytes(chunks[0][1][:8], "little")
            slots = non_empty_slots(chunks)
            if not (hdr_items == n_items == slots):
                problems.append("%r: INFO items %d, header %d, non-empty slots %d" % (
                    name, n_items, hdr_items, slots))
    if consistency_only:
        return problems
    if not st.uncertain_items and n_items != st.total():
        problems.append("%r: INFO items %d, model %d" % (name, n_items, st.total()))
    v = decode(c.call("CF.MEXISTS", name, *pool))
    for item, got in zip(pool, v):
        if item in st.uncertain_items:
            continue
        want = 1 if st.counts.get(item, 0) > 0 else 0
        if got != want:
            problems.append("%r: CF.EXISTS %r = %r, model has %d copies" % (
                name, item, got, st.counts.get(item, 0)))
    return problems


def resolve_uncertain(c, writers, everything=False):
    """Deletes keys whose state the model does not know exactly."""
    for w in writers:
        for st in w.keys:
            if everything or st.uncertain_key or st.loading or st.uncertain_items:
                reply = c.call("DEL", st.name)
                assert reply in (b":0\r\n", b":1\r\n"), reply
                st.reset()
            st.uncertain_items = set()
            st.uncertain_key = False
            st.loaded_this_cycle = False


# ---------------------------------------------------------------------------------------------
# the test


def test_kill9_at_random_moments_keeps_every_acknowledged_effect(fresh_server, tmp_path):
    seed = int(os.environ.get("CUCKOOD_CRASH_SEED") or random.randrange(1 << 30))
    print("crash test seed:", seed, "(rerun with CUCKOOD_CRASH_SEED=%d)" % seed)
    rnd = random.Random(seed)
    pool = make_pool(rnd)
    prefix = b"crash:%d" % seed
    writers = [Writer(t, rnd.getrandbits(32), pool, prefix, nkeys=6) for t in range(4)]
    data_dir = str(tmp_path / "crashdata")
    srv = fresh_server("--appendfsync", "always", data_dir=data_dir)
    started = time.time()
    # everysec in the middle, so that the final offline check sees a populated database
    cycles = [("always", rnd.uniform(0.6, 2.5)) for _ in range(3)] + \
             [("everysec", rnd.uniform(0.8, 2.0))] + \
             [("always", rnd.uniform(0.6, 2.5)) for _ in range(3)]
    log = []
    for n, (fsync, run_for) in enumerate(cycles):
        if n > 0:
            srv.extra_args = ["--appendfsync", fsync]
            srv.start()
        stop = threading.Event()
        threads = [threading.Thread(target=w.run, args=(srv.port, stop)) for w in writers]
        acked_before = sum(w.acked for w in writers)
        for t in threads:
            t.start()
        time.sleep(run_for)
        srv.kill9()
        stop.set()
        for t in threads:
            t.join(30)
            assert not t.is_alive(), "a writer hangs"
        failures = [f for w in writers for f in w.failures]
        assert not failures, "seed %d: wrong replies before the crash:\n%s" % (
            seed, "\n".join(failures[:20]))
        acked = sum(w.acked for w in writers) - acked_before
        log.append("cycle %d (%s): %.1f s, %d acknowledged commands" % (n, fsync, run_for, acked))
        assert acked > 20, log
        for w in writers:
            w.mark_pending_uncertain()
        # the crash image itself must be consistent
        run_check(data_dir)
        srv.start()
        c = RawClient(srv.port)
        exact = fsync == "always"
        problems = []
        exact_keys = 0
        for w in writers:
            for st in w.keys:
                problems += verify_key(c, st, pool, exact=exact)
                exact_keys += exact and st.exists and not (st.uncertain_key or st.loading)
        log[-1] += ", %d keys checked exactly after the restart" % exact_keys
        assert not problems, "seed %d, cycle %d (%s):\n%s" % (seed, n, fsync,
                                                            "\n".join(problems[:30]))
        resolve_uncertain(c, writers, everything=not exact)
        assert c.call("PING") == b"+PONG\r\n"
        c.close()
        if n < len(cycles) - 1:
            assert srv.stop() == 0, srv.read_log()
    assert srv.stop() == 0, srv.read_log()
    text = run_check(data_dir)
    elapsed = time.time() - started
    log.append("%d SCANDUMP/LOADCHUNK copies completed" % sum(w.copies for w in writers))
    print("\n".join(log), "\nfinal check:", text.strip(), "\ntotal %.1f s" % elapsed)
