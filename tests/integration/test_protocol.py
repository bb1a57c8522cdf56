"""The wire protocol over a real socket: pipelining, inline commands, partial reads, protocol
errors, RESP3, HELLO, limits (bulk length, clients, idle timeout) and AUTH.

Where the exact bytes of a generic reply matter, the test also runs the same input against a real
redis-server 7.0 (skipped when it is not installed) and compares.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import pytest
from cuckood_testlib import RawClient, encode, free_port


# ---------------------------------------------------------------------------------------------
# helpers


def parse(data, pos=0):
    """Decodes one RESP2/RESP3 reply from bytes; returns (value, next position)."""
    nl = data.index(b"\r\n", pos)
    kind, head, pos = data[pos:pos + 1], data[pos + 1:nl], nl + 2
    if kind == b"+":
        return head.decode(), pos
    if kind == b"-":
        return Exception(head.decode()), pos
    if kind == b":":
        return int(head), pos
    if kind == b"_":
        return None, pos
    if kind == b"#":
        return head == b"t", pos
    if kind in (b"$", b"="):
        n = int(head)
        if n < 0:
            return None, pos
        return data[pos:pos + n], pos + n + 2
    if kind in (b"*", b"~", b">"):
        n = int(head)
        if n < 0:
            return None, pos
        out = []
        for _ in range(n):
            v, pos = parse(data, pos)
            out.append(v)
        return out, pos
    if kind == b"%":
        out = {}
        for _ in range(int(head)):
            k, pos = parse(data, pos)
            v, pos = parse(data, pos)
            out[k.decode() if isinstance(k, bytes) else k] = v
        return out, pos
    raise ValueError("unexpected reply type %r" % kind)


def decode(reply):
    value, end = parse(reply)
    assert end == len(reply)
    return value


def read_until_closed(sock, timeout=5.0):
    """Everything the server sends until it closes the connection; (bytes, closed)."""
    sock.settimeout(timeout)
    out = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return out, True
            out += chunk
    except ConnectionResetError:
        return out, True
    except socket.timeout:
        return out, False


def is_closed(raw, timeout=5.0):
    data, closed = read_until_closed(raw.sock, timeout)
    return closed and data == b""


@pytest.fixture
def raw(server):
    c = RawClient(server.port)
    yield c
    c.close()


class RealRedis:
    def __init__(self, *extra):
        self.exe = shutil.which("redis-server")
        self.dir = tempfile.mkdtemp(prefix="real-redis-")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [self.exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir] + list(extra),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def real_redis():
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed")
    r = RealRedis()
    yield r
    r.stop()


# ---------------------------------------------------------------------------------------------
# pipelining and request framing


def test_pipeline_of_1000_commands_in_one_send(raw):
    key = "proto:pipe1000"
    cmds, expected = [], []
    for i in range(1000):
        if i % 3 == 0:
            cmds.append(("ECHO", "msg-%d" % i))
            expected.append(b"$%d\r\nmsg-%d\r\n" % (len(b"msg-%d" % i), i))
        elif i % 3 == 1:
            cmds.append(("CF.ADD", key, "item-%d" % i))
            expected.append(b":1\r\n")
        else:
            # the item added by the previous command of this very pipeline must be visible
            cmds.append(("CF.EXISTS", key, "item-%d" % (i - 1)))
            expected.append(b":1\r\n")
    raw.send_raw(b"".join(encode(c) for c in cmds))
    replies = [raw.read_reply() for _ in cmds]
    assert replies == expected
    info = decode(raw.call("CF.INFO", key))
    assert info[info.index("Number of items inserted") + 1] == 333


def test_pipeline_mixing_inline_and_multibulk(raw):
    raw.send_raw(b"PING\r\n" + encode(["ECHO", "a"]) + b"ECHO b\r\n" + encode(["PING", "x"]))
    assert [raw.read_reply() for _ in range(4)] == [
        b"+PONG\r\n", b"$1\r\na\r\n", b"$1\r\nb\r\n", b"$1\r\nx\r\n"]


def test_inline_commands(raw):
    raw.send_raw(b"PING\r\n")
    assert raw.read_reply() == b"+PONG\r\n"
    raw.send_raw(b"PING\n")  # a bare LF ends an inline command too
    assert raw.read_reply() == b"+PONG\r\n"
    raw.send_raw(b"\r\n\r\nPING\r\n")  # empty lines are ignored
    assert raw.read_reply() == b"+PONG\r\n"
    raw.send_raw(b'ECHO "hello world"\r\n')
    assert raw.read_reply() == b"$11\r\nhello world\r\n"
    raw.send_raw(b"ECHO 'single quoted'\r\n")
    assert raw.read_reply() == b"$13\r\nsingle quoted\r\n"
    raw.send_raw(b'ECHO "\\x41\\x42\\n"\r\n')
    assert raw.read_reply() == b"$3\r\nAB\n\r\n"
    raw.send_raw(b"   ECHO    spaced   \r\n")
    assert raw.read_reply() == b"$6\r\nspaced\r\n"
    raw.send_raw(b'ECHO "a b" c\r\n')  # two arguments
    assert raw.read_reply() == b"-ERR wrong number of arguments for 'echo' command\r\n"


def test_inline_cf_commands_with_quoted_items(raw):
    raw.send_raw(b'CF.ADD proto:inline "hello world"\r\n')
    assert raw.read_reply() == b":1\r\n"
    # the same item sent as a bulk string is found: the quotes were not part of it
    assert raw.call("CF.EXISTS", "proto:inline", "hello world") == b":1\r\n"
    raw.send_raw(b"cf.exists proto:inline 'hello world'\r\n")
    assert raw.read_reply() == b":1\r\n"
    raw.send_raw(b'CF.COUNT proto:inline "hello world"\r\n')
    assert raw.read_reply() == b":1\r\n"


def test_inline_unbalanced_quotes_is_a_protocol_error(server):
    c = RawClient(server.port)
    c.send_raw(b'ECHO "unbalanced\r\n')
    data, closed = read_until_closed(c.sock)
    assert data == b"-ERR Protocol error: unbalanced quotes in request\r\n"
    assert closed


def _split_request():
    parts = [
        encode(["ECHO", "hello"]),
        b"PING\r\n",
        encode(["CF.EXISTS", "proto:split", "a"]),
        encode(["CF.MEXISTS", "proto:split", "a", "b", "zz"]),
        b'ECHO "x y"\r\n',
        b"\r\n",
        encode(["CF.COUNT", "proto:split", "b"]),
        encode(["SET", "proto:split:s", "v" * 40]),
        encode(["ECHO", ""]),
        encode(["GET", "proto:split:s"]),
        b"*1\r\n$4\r\nPING\r\n",
    ]
    return b"".join(parts), 10


def _reference_replies(port, data, n):
    c = RawClient(port)
    c.send_raw(data)
    out = [c.read_reply() for _ in range(n)]
    c.close()
    return out


def test_every_split_point_of_a_pipelined_request_parses_the_same(server):
    setup = RawClient(server.port)
    setup.call("CF.ADD", "proto:split", "a")
    setup.call("CF.ADD", "proto:split", "b")
    setup.close()
    data, n = _split_request()
    want = _reference_replies(server.port, data, n)
    assert want[:4] == [b"$5\r\nhello\r\n", b"+PONG\r\n", b":1\r\n", b"*3\r\n:1\r\n:1\r\n:0\r\n"]
    assert want[4:] == [b"$3\r\nx y\r\n", b":1\r\n", b"+OK\r\n", b"$0\r\n\r\n",
                        b"$40\r\n" + b"v" * 40 + b"\r\n", b"+PONG\r\n"]
    for k in range(1, len(data)):
        c = RawClient(server.port, timeout=10)
        c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.send_raw(data[:k])
        time.sleep(0.002)  # let the server read (and try to parse) the first part on its own
        c.send_raw(data[k:])
        got = [c.read_reply() for _ in range(n)]
        c.close()
        assert got == want, "split at byte %d" % k


def test_request_sent_one_byte_at_a_time(server):
    data, n = _split_request()
    want = _reference_replies(server.port, data, n)
    c = RawClient(server.port, timeout=10)
    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for i in range(len(data)):
        c.send_raw(data[i:i + 1])
        time.sleep(0.0005)
    assert [c.read_reply() for _ in range(n)] == want
    c.close()


def test_large_bulk_split_across_many_writes(raw):
    item = os.urandom(300000)
    data = encode(["CF.ADD", "proto:bigsplit", item]) + encode(["CF.EXISTS", "proto:bigsplit",
                                                                 item])
    for i in range(0, len(data), 7777):
        raw.send_raw(data[i:i + 7777])
    assert raw.read_reply() == b":1\r\n"
    assert raw.read_reply() == b":1\r\n"


# ---------------------------------------------------------------------------------------------
# protocol errors

PROTOCOL_ERRORS = [
    (b"*1\r\n$x\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$-1\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*x\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\r\nfoo\r\n", b"-ERR Protocol error: expected '$', got 'f'\r\n"),
    (b"*1\r\n$1073741824000\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
]


@pytest.mark.parametrize("request_bytes,error", PROTOCOL_ERRORS)
def test_protocol_error_replies_and_closes_only_that_connection(server, request_bytes, error):
    other = RawClient(server.port)
    assert other.call("PING") == b"+PONG\r\n"
    bad = RawClient(server.port)
    bad.send_raw(request_bytes)
    data, closed = read_until_closed(bad.sock)
    assert data == error
    assert closed
    # the other client is unaffected and new clients are accepted
    assert other.call("CF.ADD", "proto:after-error", "x") == b":1\r\n"
    assert other.call("PING") == b"+PONG\r\n"
    again = RawClient(server.port)
    assert again.call("CF.EXISTS", "proto:after-error", "x") == b":1\r\n"
    for c in (other, bad, again):
        c.close()


def test_commands_before_a_protocol_error_in_the_same_packet_are_answered(server):
    c = RawClient(server.port)
    c.send_raw(encode(["CF.ADD", "proto:before-error", "x"]) + b"PING\r\n*1\r\n$x\r\n")
    data, closed = read_until_closed(c.sock)
    assert data == b":1\r\n+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"
    assert closed
    c2 = RawClient(server.port)
    assert c2.call("CF.EXISTS", "proto:before-error", "x") == b":1\r\n"
    c2.close()


PROTOCOL_EDGE_CASES = [
    b"*1\r\n$x\r\n",
    b"*x\r\n",
    b"*1\r\nfoo\r\n",
    b"*1\r\n$-1\r\n",
    b"*-1\r\nPING\r\n",
    b"*0\r\nPING\r\n",
    b"*1\r\n$4\r\nPINGXX*1\r\n$4\r\nPING\r\n",
    b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n",
    b'ECHO "unbalanced\r\n',
    b"ECHO 'a'b\r\n",
    b'ECHO "\\x4"\r\n',
    b"\r\n",
    b"*3\r\n$3\r\nfoo\r\n$1\r\na\r\n$1\r\nb\r\n",
    b"*1\r\n$0\r\n\r\n",
    b'"" a\r\n',
    b"*2\r\n$4\r\nECHO\r\n:1\r\n",
    b"*1\r\n$ 4\r\nPING\r\n",
    b"*+1\r\n$4\r\nPING\r\n",
    b"*1\r\n$04\r\nPING\r\n",
    b"A" * 70000,
    b"*" + b"1" * 70000,
    b"*1\r\n$" + b"1" * 70000,
    b"*2147483648\r\n",
    b"*1\r\n$536870913\r\n",
    b"*1\r\n$4\r\nPING\r\r\n",
    b"$4\r\nPING\r\n",
    b"+PING\r\n",
    b'ping "a"b\r\n',
    b"ECHO a\tb\r\n",
    b'ECHO "\\t\\r\\a\\b"\r\n',
    b"ECHO ''\r\n",
    b"PING\r\nQUIT\r\nPING\r\n",
    b"*1\r\n$4\r\nQUIT\r\n*1\r\n$x\r\n",
]


@pytest.mark.parametrize("request_bytes", PROTOCOL_EDGE_CASES)
def test_protocol_edge_cases_match_real_redis(server, real_redis, request_bytes):
    clients = [RawClient(server.port), RawClient(real_redis.port)]
    results = [None, None]

    def run(i):
        clients[i].send_raw(request_bytes)
        results[i] = read_until_closed(clients[i].sock, timeout=0.4)
        clients[i].close()

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[0] == results[1]


# ---------------------------------------------------------------------------------------------
# command errors


def test_unknown_command_text(raw):
    assert raw.call("foo", "a", "b") == (
        b"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n")
    assert raw.call("foo") == b"-ERR unknown command 'foo', with args beginning with: \r\n"
    assert raw.call("CF.NOPE", "k") == (
        b"-ERR unknown command 'CF.NOPE', with args beginning with: 'k' \r\n")


def test_wrong_arity_text(raw):
    assert raw.call("GET") == b"-ERR wrong number of arguments for 'get' command\r\n"
    assert raw.call("CF.ADD", "k") == b"-ERR wrong number of arguments for 'cf.add' command\r\n"
    # Redis 7 prints the registered lowercase name whatever the client typed
    assert raw.call("Cf.Exists", "k") == (
        b"-ERR wrong number of arguments for 'cf.exists' command\r\n")
    assert raw.call("CF.RESERVE", "k") == (
        b"-ERR wrong number of arguments for 'cf.reserve' command\r\n")
    assert raw.call("CF.MEXISTS", "k") == (
        b"-ERR wrong number of arguments for 'cf.mexists' command\r\n")
    assert raw.call("CF.INFO") == b"-ERR wrong number of arguments for 'cf.info' command\r\n"


GENERIC_COMMANDS = [
    ("foo",),
    ("foo", "a", "b"),
    ("foo", "x" * 200),
    ("f" * 300, "a"),
    ("foo",) + ("abcdefghij",) * 20,
    ("foo", "with space", "quote'inside"),
    ("GET",),
    ("Get",),
    ("SET", "proto:diff:k"),
    ("PING",),
    ("PING", "hello"),
    ("PING", "a", "b"),
    ("ECHO",),
    ("ECHO", "x"),
    ("SELECT", "100"),
    ("SELECT", "x"),
    ("SELECT", "-1"),
    ("SELECT", "0"),
    ("HELLO", "4"),
    ("HELLO", "x"),
    ("HELLO", "1"),
    ("EXEC",),
    ("DISCARD",),
    ("UNWATCH",),
    ("SET", "proto:diff:k", "v"),
    ("GET", "proto:diff:k"),
    ("SET", "proto:diff:k", "v", "EX", "0"),
    ("SET", "proto:diff:k", "v", "EX", "x"),
    ("SET", "proto:diff:k", "v", "NX", "XX"),
    ("SET", "proto:diff:k", "v", "BOGUS"),
    ("SET", "proto:diff:k", "w", "GET"),
    ("EXPIRE", "proto:diff:k", "abc"),
    ("EXPIRE", "proto:diff:k", "100"),
    ("TTL", "proto:diff:k"),
    ("PERSIST", "proto:diff:k"),
    ("TTL", "proto:diff:k"),
    ("TYPE", "proto:diff:k"),
    ("TYPE", "proto:diff:none"),
    ("TTL", "proto:diff:none"),
    ("GET", "proto:diff:none"),
    ("DEL", "proto:diff:k", "proto:diff:k", "proto:diff:none"),
    ("EXISTS", "proto:diff:k"),
    ("CLIENT", "NOPE"),
    ("CONFIG", "NOPE"),
    ("COMMAND", "NOPE"),
    ("MEMORY", "NOPE"),
]


def test_generic_replies_match_real_redis(server, real_redis):
    ours, theirs = RawClient(server.port), RawClient(real_redis.port)
    for cmd in GENERIC_COMMANDS:
        a, b = ours.call(*cmd), theirs.call(*cmd)
        assert a == b, "%r: cuckood %r, redis %r" % (cmd, a, b)
    ours.close()
    theirs.close()


def test_generic_replies_match_real_redis_in_resp3(server, real_redis):
    ours, theirs = RawClient(server.port), RawClient(real_redis.port)
    ours.call("HELLO", "3")
    theirs.call("HELLO", "3")
    for cmd in [("GET", "proto:diff3:none"), ("SET", "proto:diff3:k", "v"),
                ("GET", "proto:diff3:k"), ("TTL", "proto:diff3:k"), ("PING",),
                ("SET", "proto:diff3:k", "w", "GET"), ("SET", "proto:diff3:n", "w", "GET"),
                ("EXISTS", "proto:diff3:k"), ("TYPE", "proto:diff3:k"), ("HELLO", "4"),
                ("MULTI",), ("GET", "proto:diff3:none"), ("EXEC",),
                ("RESET",), ("GET", "proto:diff3:none")]:
        a, b = ours.call(*cmd), theirs.call(*cmd)
        assert a == b, "%r: cuckood %r, redis %r" % (cmd, a, b)
    ours.close()
    theirs.close()


# ---------------------------------------------------------------------------------------------
# RESP3 and HELLO


def test_resp3_cf_replies(raw):
    key = "proto:resp3"
    hello = raw.call("HELLO", "3")
    assert hello.startswith(b"%7\r\n")
    assert raw.call("CF.RESERVE", key, "1000") == b"+OK\r\n"
    assert raw.call("CF.EXISTS", key, "x") == b"#f\r\n"
    assert raw.call("CF.ADD", key, "x") == b"#t\r\n"
    assert raw.call("CF.EXISTS", key, "x") == b"#t\r\n"
    assert raw.call("CF.ADDNX", key, "x") == b"#f\r\n"
    assert raw.call("CF.MEXISTS", key, "x", "nope") == b"*2\r\n#t\r\n#f\r\n"
    assert raw.call("CF.INSERT", key, "ITEMS", "y") == b"*1\r\n#t\r\n"
    # CF.INSERTNX and CF.COUNT stay integers in RESP3
    assert raw.call("CF.INSERTNX", key, "ITEMS", "y", "z") == b"*2\r\n:0\r\n:1\r\n"
    assert raw.call("CF.COUNT", key, "x") == b":1\r\n"
    assert raw.call("CF.DEL", key, "z") == b"#t\r\n"
    assert raw.call("CF.DEL", key, "z") == b"#f\r\n"
    assert raw.call("CF.INFO", key) == (
        b"%8\r\n+Size\r\n:1080\r\n+Number of buckets\r\n:512\r\n+Number of filters\r\n:1\r\n"
        b"+Number of items inserted\r\n:2\r\n+Number of items deleted\r\n:1\r\n"
        b"+Bucket size\r\n:2\r\n+Expansion rate\r\n:1\r\n+Max iterations\r\n:20\r\n")
    # nulls are `_`
    assert raw.call("GET", "proto:resp3:missing") == b"_\r\n"
    assert raw.call("CF.RESERVE", key + ":empty", "100") == b"+OK\r\n"
    assert raw.call("CF.SCANDUMP", key + ":empty", "0") == b"*2\r\n:0\r\n_\r\n"
    # back to RESP2
    assert raw.call("HELLO", "2").startswith(b"*14\r\n")
    assert raw.call("CF.EXISTS", key, "x") == b":1\r\n"
    assert raw.call("GET", "proto:resp3:missing") == b"$-1\r\n"
    assert raw.call("CF.SCANDUMP", key + ":empty", "0") == b"*2\r\n:0\r\n$-1\r\n"
    assert raw.call("CF.INFO", key).startswith(b"*16\r\n+Size\r\n:1080\r\n")


def test_hello_reply_is_a_map(raw):
    client_id = decode(raw.call("CLIENT", "ID"))
    reply = raw.call("HELLO", "3")
    assert reply.startswith(b"%7\r\n")
    hello = decode(reply)
    assert list(hello) == ["server", "version", "proto", "id", "mode", "role", "modules"]
    assert hello["server"] == b"redis"
    assert hello["version"].startswith(b"7.")
    assert hello["proto"] == 3
    assert hello["id"] == client_id
    assert hello["mode"] == b"standalone"
    assert hello["role"] == b"master"
    modules = hello["modules"]
    assert isinstance(modules, list) and len(modules) == 1
    assert modules[0]["name"] == b"bf"
    assert 20800 <= modules[0]["ver"] < 20900  # RedisBloom 2.8.x
    # HELLO 2 gives the same fields as a flat array
    flat = decode(raw.call("HELLO", "2"))
    assert flat[0::2][:6] == [b"server", b"version", b"proto", b"id", b"mode", b"role"]
    assert flat[5] == 2
    # HELLO without a version answers in the current protocol
    assert raw.call("HELLO").startswith(b"*14\r\n")


def test_hello_unsupported_protocol(raw):
    assert raw.call("HELLO", "4") == b"-NOPROTO unsupported protocol version\r\n"
    assert raw.call("HELLO", "1") == b"-NOPROTO unsupported protocol version\r\n"
    # the connection stays in RESP2
    assert raw.call("GET", "proto:hello4:missing") == b"$-1\r\n"


def test_quit_replies_ok_and_closes(server):
    c = RawClient(server.port)
    c.send_raw(encode(["QUIT"]) + encode(["PING"]))
    data, closed = read_until_closed(c.sock)
    assert data == b"+OK\r\n"
    assert closed


# ---------------------------------------------------------------------------------------------
# sizes and limits


def test_ten_mib_bulk_argument(raw):
    item = os.urandom(10 * 1024 * 1024)
    assert raw.call("CF.ADD", "proto:10mib", item) == b":1\r\n"
    assert raw.call("CF.EXISTS", "proto:10mib", item) == b":1\r\n"
    assert raw.call("CF.COUNT", "proto:10mib", item) == b":1\r\n"
    assert raw.call("CF.MEXISTS", "proto:10mib", item, item[:-1]) == b"*2\r\n:1\r\n:0\r\n"
    echoed = raw.call("ECHO", item)
    assert echoed == b"$%d\r\n" % len(item) + item + b"\r\n"


def test_proto_max_bulk_len(fresh_server):
    srv = fresh_server("--proto-max-bulk-len", "1mb")
    ok = RawClient(srv.port)
    exact = b"a" * (1 << 20)
    assert ok.call("CF.ADD", "k", exact) == b":1\r\n"  # exactly the limit is allowed
    bad = RawClient(srv.port)
    bad.send_raw(b"*3\r\n$6\r\nCF.ADD\r\n$1\r\nk\r\n$%d\r\n" % (2 << 20))
    data, closed = read_until_closed(bad.sock)
    assert data == b"-ERR Protocol error: invalid bulk length\r\n"
    assert closed
    bad2 = RawClient(srv.port)
    bad2.send_raw(b"*2\r\n$4\r\nECHO\r\n$%d\r\n" % ((1 << 20) + 1))
    assert read_until_closed(bad2.sock) == (b"-ERR Protocol error: invalid bulk length\r\n", True)
    assert ok.call("CF.EXISTS", "k", exact) == b":1\r\n"
    assert ok.call("CONFIG", "GET", "proto-max-bulk-len") == (
        b"*2\r\n$18\r\nproto-max-bulk-len\r\n$7\r\n1048576\r\n")


def test_maxclients(fresh_server):
    srv = fresh_server("--maxclients", "2")
    time.sleep(0.2)  # the start-up probe connection is gone
    a, b = RawClient(srv.port), RawClient(srv.port)
    assert a.call("PING") == b"+PONG\r\n"
    assert b.call("PING") == b"+PONG\r\n"
    c = RawClient(srv.port)
    data, closed = read_until_closed(c.sock)
    assert data == b"-ERR max number of clients reached\r\n"
    assert closed
    # the two admitted clients keep working
    assert a.call("CF.ADD", "k", "x") == b":1\r\n"
    assert b.call("CF.EXISTS", "k", "x") == b":1\r\n"
    # once one leaves, a new client gets in
    b.close()
    deadline = time.time() + 5
    while True:
        d = RawClient(srv.port)
        try:
            if d.call("PING") == b"+PONG\r\n":
                break
        except (ConnectionError, OSError):
            pass
        assert time.time() < deadline, "a slot was never freed"
        time.sleep(0.1)
    d.close()
    a.close()


def test_idle_timeout(fresh_server):
    srv = fresh_server("--timeout", "1")
    idle = RawClient(srv.port)
    busy = RawClient(srv.port)
    assert idle.call("PING") == b"+PONG\r\n"
    start = time.time()
    closed = []

    def watch():
        data, was_closed = read_until_closed(idle.sock, timeout=6)
        closed.append((data, was_closed, time.time() - start))

    t = threading.Thread(target=watch)
    t.start()
    while time.time() - start < 3.0:
        assert busy.call("PING") == b"+PONG\r\n"  # an active client is never timed out
        time.sleep(0.25)
    t.join()
    data, was_closed, elapsed = closed[0]
    assert was_closed and data == b""
    assert 0.9 <= elapsed <= 3.0
    assert busy.call("PING") == b"+PONG\r\n"
    busy.close()


def test_requirepass(fresh_server):
    srv = fresh_server("--requirepass", "secret")
    c = RawClient(srv.port)
    assert c.call("PING") == b"-NOAUTH Authentication required.\r\n"
    assert c.call("CF.ADD", "k", "x") == b"-NOAUTH Authentication required.\r\n"
    wrongpass = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    assert c.call("AUTH", "wrong") == wrongpass
    assert c.call("AUTH", "default", "wrong") == wrongpass
    assert c.call("CF.ADD", "k", "x") == b"-NOAUTH Authentication required.\r\n"
    assert c.call("AUTH", "secret") == b"+OK\r\n"
    assert c.call("CF.ADD", "k", "x") == b":1\r\n"
    assert c.call("AUTH", "default", "secret") == b"+OK\r\n"

    c2 = RawClient(srv.port)
    assert c2.call("HELLO", "3", "AUTH", "default", "wrong") == wrongpass
    assert c2.call("CF.EXISTS", "k", "x") == b"-NOAUTH Authentication required.\r\n"
    hello = decode(c2.call("HELLO", "3", "AUTH", "default", "secret"))
    assert hello["proto"] == 3
    assert c2.call("CF.EXISTS", "k", "x") == b"#t\r\n"
    c.close()
    c2.close()


def test_slow_reader_gets_every_reply_and_does_not_block_others(server):
    """A client that pipelines far more output than it reads: the server holds back (backpressure)
    without losing or reordering replies, and other clients are served meanwhile."""
    payload = os.urandom(1 << 20)
    n = 64
    slow = RawClient(server.port, timeout=60)
    request = b"".join(encode(["ECHO", payload + b"%03d" % i]) for i in range(n))
    sender = threading.Thread(target=slow.send_raw, args=(request,))
    sender.start()
    time.sleep(0.5)  # the slow client reads nothing yet
    other = RawClient(server.port, timeout=5)
    for i in range(20):
        assert other.call("CF.ADD", "proto:slow-reader", "x%d" % i) == b":1\r\n"
    other.close()
    for i in range(n):
        body = payload + b"%03d" % i
        assert slow.read_reply() == b"$%d\r\n" % len(body) + body + b"\r\n"
    sender.join(60)
    assert slow.call("PING") == b"+PONG\r\n"
    slow.close()


def test_idle_timeout_also_closes_a_client_with_a_partial_command(fresh_server):
    srv = fresh_server("--timeout", "1")
    c = RawClient(srv.port)
    c.send_raw(b"*2\r\n$4\r\nECHO\r\n$10\r\nabc")  # never finished
    start = time.time()
    data, closed = read_until_closed(c.sock, timeout=6)
    assert closed and data == b""
    assert time.time() - start <= 3.0


def test_unauthenticated_clients_get_small_request_limits(fresh_server):
    srv = fresh_server("--requirepass", "secret")
    # within the limits: an ordinary NOAUTH
    c = RawClient(srv.port)
    assert c.call(*["CF.MEXISTS", "k"] + ["x"] * 8) == b"-NOAUTH Authentication required.\r\n"
    assert c.call("ECHO", "a" * 16384) == b"-NOAUTH Authentication required.\r\n"
    c.close()
    c = RawClient(srv.port)
    c.send_raw(b"*11\r\n")
    assert read_until_closed(c.sock, timeout=2) == (
        b"-ERR Protocol error: unauthenticated multibulk length\r\n", True)
    c = RawClient(srv.port)
    c.send_raw(b"*2\r\n$4\r\nECHO\r\n$16385\r\n")
    assert read_until_closed(c.sock, timeout=2) == (
        b"-ERR Protocol error: unauthenticated bulk length\r\n", True)
    # after AUTH the normal limits apply
    c = RawClient(srv.port)
    assert c.call("AUTH", "secret") == b"+OK\r\n"
    assert c.call(*["CF.MEXISTS", "k"] + ["x"] * 20) == b"*20\r\n" + b":0\r\n" * 20
    c.close()


def test_unauthenticated_limits_match_real_redis():
    """The same check against a real redis-server with a password (documents Redis's side)."""
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed")
    real = RealRedis("--requirepass", "secret")
    try:
        c = RawClient(real.port)
        c.send_raw(b"*11\r\n")
        assert read_until_closed(c.sock, timeout=2) == (
            b"-ERR Protocol error: unauthenticated multibulk length\r\n", True)
        c = RawClient(real.port)
        c.send_raw(b"*2\r\n$4\r\nECHO\r\n$16385\r\n")
        assert read_until_closed(c.sock, timeout=2) == (
            b"-ERR Protocol error: unauthenticated bulk length\r\n", True)
    finally:
        real.stop()
