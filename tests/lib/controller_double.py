"""A contract double of apache/kvrocks-controller 1.2.0: a conformance driver, not a product.

It sends a data node exactly what the real controller sent in the recorded trace
(/work/shared/cluster/kvrocks-controller-1.2.0.trace.jsonl, described in cluster/README.md §1),
and reads the replies the way the controller reads them, so CI can check cuckood against that
contract without the controller (which cannot be installed here):

- RESP2 over plain sockets, no HELLO / PING / SELECT; command names as the trace spells them
  (`cluster info`, `cluster nodes` in lower case, `CLUSTERX ...` in upper case).
- Creating a cluster: node ids of 40 characters of [A-Za-z0-9]; slots split evenly over the
  masters (3 shards: 0-5460, 5461-10921, 10922-16383); then per node, on one connection:
  `cluster info` (must fail with "cluster is not initialized"), `CLUSTERX SETNODEID <id>`,
  `CLUSTERX SETNODES "<topology>" <version>`; every topology line ends with "\n".
- A probe: `cluster info` per node; `cluster_current_epoch` read from lines split on "\r\n"
  (a line without exactly one ':' is skipped). A node behind gets SETNODEID + SETNODES again; a
  node ahead has its `cluster nodes` read (>= 7 fields, field 3 the role flags, field 7 the
  version, slots from field 9) and adopted.
- Each topology change: version + 1 and SETNODES to every node, then the same version again
  (the raft store re-sends it right after a change).

- A failover of a shard: `cluster info` (must succeed) then `info` on each other node of the
  shard; a candidate needs `role:slave` and `sequence:N` with N > 0, the highest wins; then the
  roles swap (the old master becomes `slave <new master>`), version + 1, SETNODES to all. No
  SLAVEOF/REPLICAOF is sent.

- A node that cannot be reached (killed) is skipped by a push and reported as None by a probe;
  when it is back with an older version, the probe sets it up again (SETNODEID + SETNODES).

It does no automatic failure detection, no migration and no HTTP: only what the tests need.
"""
import random
import socket
import string

SLOTS = 16384
NOT_INITIALIZED = "cluster is not initialized"


class RespError(Exception):
    """An error reply (the text after '-')."""


class RespConnection:
    """One RESP2 connection that sends argv as given and parses the reply."""

    def __init__(self, host, port, timeout=3.0):
        # go-redis v8 as the controller configures it: 3 s read/write timeout, no retries.
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def call(self, *argv):
        out = [b"*%d\r\n" % len(argv)]
        for a in argv:
            a = a.encode() if isinstance(a, str) else a
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        value = self._read()
        if isinstance(value, RespError):
            raise value
        return value

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RespError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("connection closed")
                self.buf += chunk
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data.decode()
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise ValueError("unexpected RESP2 reply %r" % line)


def new_node_id(rng):
    alphabet = string.ascii_letters + string.digits
    return "".join(rng.choice(alphabet) for _ in range(40))


def split_slots(shards):
    """The controller's even split: shard i gets [i*16384//n, (i+1)*16384//n - 1]."""
    return [(i * SLOTS // shards, (i + 1) * SLOTS // shards - 1) for i in range(shards)]


def parse_cluster_info(text):
    """As the controller reads CLUSTER INFO: fields of lines with exactly one ':'."""
    fields = {}
    for line in text.split("\r\n"):
        parts = line.split(":")
        if len(parts) == 2:
            fields[parts[0]] = parts[1]
    return fields


def parse_cluster_nodes(text):
    """As the controller parses CLUSTER NODES: returns (version, nodes), nodes as dicts."""
    nodes = []
    version = None
    for line in text.split("\n"):
        if not line:
            continue
        fields = line.split(" ")
        if len(fields) < 7:
            raise ValueError("cluster nodes line with fewer than 7 fields: %r" % line)
        flags = fields[2].split(",")
        role = "master" if "master" in flags else "slave" if "slave" in flags else None
        if role is None:
            raise ValueError("no role in %r" % fields[2])
        addr = fields[1].split("@")[0]
        host, port = addr.split(":", 1)  # (the controller splits at the first colon)
        slots = []
        for s in fields[8:]:
            if "[" in s:
                raise ValueError("migration marker the controller cannot parse: %r" % s)
            a, _, b = s.partition("-")
            slots.append((int(a), int(b or a)))
        version = int(fields[6])
        nodes.append({"id": fields[0], "host": host, "port": int(port), "role": role,
                      "master": fields[3], "myself": "myself" in flags, "slots": slots})
    return version, nodes


class ControllerDouble:
    """Drives data nodes as kvrocks-controller 1.2.0 does. addrs: [(host, port), ...]."""

    def __init__(self, addrs, replicas=0, seed=1):
        self.rng = random.Random(seed)
        self.version = 0
        self.shards = []  # [{"master": node, "replicas": [node...], "slots": [(a, b)...]}]
        groups = [addrs[i:i + replicas + 1] for i in range(0, len(addrs), replicas + 1)]
        for (a, b), group in zip(split_slots(len(groups)), groups):
            members = [{"id": new_node_id(self.rng), "host": h, "port": p} for h, p in group]
            self.shards.append({"master": members[0], "replicas": members[1:],
                                "slots": [(a, b)]})
        self.conns = {}
        self.log = []  # every (port, argv, reply or error text) sent

    # ---- the contract ----------------------------------------------------------------------
    def nodes(self):
        for shard in self.shards:
            yield shard["master"]
            yield from shard["replicas"]

    def topology(self):
        lines = []
        for shard in self.shards:
            m = shard["master"]
            ranges = " ".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in shard["slots"])
            lines.append("%s %s %d master - %s\n" % (m["id"], m["host"], m["port"], ranges))
            for r in shard["replicas"]:
                lines.append("%s %s %d slave %s\n" % (r["id"], r["host"], r["port"], m["id"]))
        return "".join(lines)

    def send(self, node, *argv):
        conn = self.conns.get(node["port"])
        if conn is None:
            conn = self.conns[node["port"]] = RespConnection(node["host"], node["port"])
        try:
            reply = conn.call(*argv)
        except RespError as e:
            self.log.append((node["port"], argv, "-" + str(e)))
            raise
        except OSError as e:  # (ConnectionError included) the node is down: reconnect next time
            self.log.append((node["port"], argv, "!" + repr(e)))
            self.conns.pop(node["port"], None)
            conn.close()
            raise
        self.log.append((node["port"], argv, reply))
        return reply

    def create_cluster(self):
        """POST /clusters: probe, SETNODEID, SETNODES at version 1 on every node."""
        self.version = 1
        for node in self.nodes():
            try:
                self.send(node, "cluster", "info")
                raise AssertionError("node %d answered cluster info before it was set up"
                                     % node["port"])
            except RespError as e:
                if NOT_INITIALIZED not in str(e):
                    raise
            assert self.send(node, "CLUSTERX", "SETNODEID", node["id"]) == "OK"
            assert self.send(node, "CLUSTERX", "SETNODES", self.topology(),
                             str(self.version)) == "OK"

    def push(self):
        """A topology change: version + 1 to every node, then the same version re-sent."""
        self.version += 1
        for _ in range(2):
            for node in self.nodes():
                try:
                    reply = self.send(node, "CLUSTERX", "SETNODES", self.topology(),
                                      str(self.version))
                except OSError:
                    continue  # down: the probe sets it up when it is back
                assert reply == "OK"

    def epoch(self, node):
        info = parse_cluster_info(self.send(node, "cluster", "info"))
        return int(info["cluster_current_epoch"])

    def probe(self):
        """One probe round. Returns {port: version seen} (before any repair; None: down)."""
        seen = {}
        for node in list(self.nodes()):
            try:
                version = self.epoch(node)
            except OSError:
                seen[node["port"]] = None
                continue
            except RespError as e:
                if NOT_INITIALIZED not in str(e):
                    raise
                version = -1
            seen[node["port"]] = version
            if version < self.version:
                self.send(node, "CLUSTERX", "SETNODEID", node["id"])
                self.send(node, "CLUSTERX", "SETNODES", self.topology(), str(self.version))
            elif version > self.version:
                self.adopt(node)
        return seen

    def failover(self, shard_index):
        """POST .../shards/{n}/failover with body {}: promote the best replica."""
        shard = self.shards[shard_index]
        best, best_seq = None, 0
        for replica in shard["replicas"]:
            self.send(replica, "cluster", "info")
            info = parse_cluster_info(self.send(replica, "info"))
            seq = int(info.get("sequence", "0"))
            if info.get("role") == "slave" and seq > best_seq:
                best, best_seq = replica, seq
        if best is None:
            raise AssertionError("no match new master in shard")
        shard["replicas"] = [r for r in shard["replicas"] if r is not best] + [shard["master"]]
        shard["master"] = best
        self.push()
        return best

    def adopt(self, node):
        """A node ahead of the controller: its CLUSTER NODES becomes the topology."""
        version, nodes = parse_cluster_nodes(self.send(node, "cluster", "nodes"))
        by_id = {n["id"]: n for n in nodes}
        shards = []
        for n in nodes:
            if n["role"] != "master":
                continue
            replicas = [{"id": r["id"], "host": r["host"], "port": r["port"]}
                        for r in nodes if r["role"] == "slave" and r["master"] == n["id"]]
            shards.append({"master": {"id": n["id"], "host": n["host"], "port": n["port"]},
                           "replicas": replicas, "slots": n["slots"]})
        assert by_id
        self.shards = shards
        self.version = version

    def close(self):
        for c in self.conns.values():
            c.close()
        self.conns.clear()
