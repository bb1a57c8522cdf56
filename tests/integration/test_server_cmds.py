"""Connection, server and introspection commands over a socket, compared with Redis 7.0's replies.

Tests that change server-wide state (CONFIG SET, requirepass, SHUTDOWN, CONFIG RESETSTAT) get a
server of their own.
"""
import os
import re

import pytest
import redis
from cuckood_testlib import RawClient


@pytest.fixture
def raw(server):
    c = RawClient(server.port)
    yield c
    c.close()


@pytest.fixture
def r(server):
    c = redis.Redis(port=server.port)
    yield c
    c.close()


# ---- connection ---------------------------------------------------------------------------------

def test_ping_echo(raw):
    assert raw.call("PING") == b"+PONG\r\n"
    assert raw.call("PING", "hi") == b"$2\r\nhi\r\n"
    assert raw.call("PING", "a", "b") == b"-ERR wrong number of arguments for 'ping' command\r\n"
    assert raw.call("ECHO", "x") == b"$1\r\nx\r\n"
    assert raw.call("ECHO") == b"-ERR wrong number of arguments for 'echo' command\r\n"


def test_quit_closes_after_ok(server):
    c = RawClient(server.port)
    assert c.call("QUIT") == b"+OK\r\n"
    with pytest.raises((ConnectionError, OSError)):
        c.call("PING")


def test_select(raw):
    assert raw.call("SELECT", "16") == b"-ERR DB index is out of range\r\n"
    assert raw.call("SELECT", "-1") == b"-ERR DB index is out of range\r\n"
    assert raw.call("SELECT", "x") == b"-ERR value is not an integer or out of range\r\n"
    assert raw.call("SELECT", "1.5") == b"-ERR value is not an integer or out of range\r\n"
    assert raw.call("SELECT", "5") == b"+OK\r\n"
    raw.call("SET", "sc:select", "db5")
    assert raw.call("SELECT", "0") == b"+OK\r\n"
    assert raw.call("EXISTS", "sc:select") == b":0\r\n"


def test_hello_replies(raw):
    reply = raw.call("HELLO", "3")
    assert reply.startswith(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n"
                            b"$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:")
    assert reply.endswith(b"$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n"
                          b"$7\r\nmodules\r\n*1\r\n%4\r\n$4\r\nname\r\n$2\r\nbf\r\n$3\r\nver\r\n"
                          b":20820\r\n$4\r\npath\r\n$0\r\n\r\n$4\r\nargs\r\n*0\r\n")
    assert raw.call("PING") == b"+PONG\r\n"
    assert raw.call("CLIENT", "GETNAME") == b"_\r\n"  # RESP3 null
    assert raw.call("HELLO", "2").startswith(b"*14\r\n")
    assert raw.call("CLIENT", "GETNAME") == b"$-1\r\n"


@pytest.mark.parametrize("args,error", [
    (["4"], b"-NOPROTO unsupported protocol version\r\n"),
    (["1"], b"-NOPROTO unsupported protocol version\r\n"),
    (["abc"], b"-ERR Protocol version is not an integer or out of range\r\n"),
    (["3", "foo"], b"-ERR Syntax error in HELLO option 'foo'\r\n"),
    (["3", "AUTH", "x"], b"-ERR Syntax error in HELLO option 'AUTH'\r\n"),
    (["3", "SETNAME", "a", "b"], b"-ERR Syntax error in HELLO option 'b'\r\n"),
    (["3", "AUTH", "bob", "x"],
     b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"),
    (["3", "SETNAME", "a b"],
     b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n"),
])
def test_hello_errors(raw, args, error):
    assert raw.call("HELLO", *args) == error
    assert raw.call("PING") == b"+PONG\r\n"  # still RESP2


def test_hello_setname(raw):
    assert raw.call("HELLO", "2", "SETNAME", "sc-hello").startswith(b"*14\r\n")
    assert raw.call("CLIENT", "GETNAME") == b"$8\r\nsc-hello\r\n"


def test_auth_without_password(raw):
    assert raw.call("AUTH", "x") == (
        b"-ERR AUTH <password> called without any password configured for the default user. "
        b"Are you sure your configuration is correct?\r\n")
    assert raw.call("AUTH", "default", "anything") == b"+OK\r\n"
    assert raw.call("AUTH", "bob", "x") == (
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")
    assert raw.call("AUTH", "a", "b", "c") == b"-ERR syntax error\r\n"


def test_requirepass(fresh_server):
    srv = fresh_server("--requirepass", "s3cret")
    c = RawClient(srv.port)
    assert c.call("PING") == b"-NOAUTH Authentication required.\r\n"
    assert c.call("HELLO", "3") == (
        b"-NOAUTH HELLO must be called with the client already authenticated, otherwise the "
        b"HELLO AUTH <user> <pass> option can be used to authenticate the client and select the "
        b"RESP protocol version at the same time\r\n")
    assert c.call("AUTH", "wrong") == (
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")
    assert c.call("AUTH", "s3cret") == b"+OK\r\n"
    assert c.call("PING") == b"+PONG\r\n"
    assert c.call("RESET") == b"+RESET\r\n"
    assert c.call("PING") == b"-NOAUTH Authentication required.\r\n"
    assert c.call("HELLO", "3", "AUTH", "default", "s3cret").startswith(b"%7\r\n")
    assert c.call("PING") == b"+PONG\r\n"
    c.close()
    assert redis.Redis(port=srv.port, password="s3cret").ping()


def test_reset(raw):
    raw.call("HELLO", "3")
    raw.call("SELECT", "4")
    raw.call("CLIENT", "SETNAME", "sc-reset")
    raw.call("MULTI")
    assert raw.call("RESET") == b"+RESET\r\n"
    assert raw.call("CLIENT", "GETNAME") == b"$-1\r\n"  # back to RESP2, no name
    info = raw.call("CLIENT", "INFO")
    assert b" db=0 " in info and b" resp=2" in info
    assert raw.call("PING") == b"+PONG\r\n"  # not queued: MULTI was discarded


# ---- CLIENT -------------------------------------------------------------------------------------

def test_client_basics(raw):
    cid = int(raw.call("CLIENT", "ID")[1:-2])
    assert cid > 0
    assert raw.call("CLIENT", "GETNAME") == b"$-1\r\n"
    assert raw.call("CLIENT", "SETNAME", "bad name") == (
        b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n")
    assert raw.call("CLIENT", "SETNAME", "sc-one") == b"+OK\r\n"
    assert raw.call("CLIENT", "GETNAME") == b"$6\r\nsc-one\r\n"
    info = raw.call("CLIENT", "INFO").decode()
    assert re.search(r"^\$\d+\r\nid=%d addr=\S+ laddr=\S+ .*name=sc-one .*cmd=client\|info " % cid,
                     info)
    assert info.endswith("\n\r\n")
    assert raw.call("CLIENT", "SETNAME", "") == b"+OK\r\n"
    assert raw.call("CLIENT", "GETNAME") == b"$-1\r\n"


def test_client_errors(raw):
    assert raw.call("CLIENT") == b"-ERR wrong number of arguments for 'client' command\r\n"
    assert raw.call("CLIENT", "foo") == b"-ERR unknown subcommand 'foo'. Try CLIENT HELP.\r\n"
    assert raw.call("CLIENT", "SETNAME") == (
        b"-ERR wrong number of arguments for 'client|setname' command\r\n")
    assert raw.call("CLIENT", "ID", "x") == (
        b"-ERR wrong number of arguments for 'client|id' command\r\n")
    assert raw.call("CLIENT", "LIST", "TYPE", "foo") == b"-ERR Unknown client type 'foo'\r\n"
    assert raw.call("CLIENT", "LIST", "ID", "x") == b"-ERR Invalid client ID\r\n"
    assert raw.call("CLIENT", "LIST", "foo") == b"-ERR syntax error\r\n"
    assert raw.call("CLIENT", "NO-EVICT", "maybe") == b"-ERR syntax error\r\n"
    assert raw.call("CLIENT", "NO-EVICT", "on") == b"+OK\r\n"
    assert raw.call("CLIENT", "NO-TOUCH", "off") == b"+OK\r\n"
    assert raw.call("CLIENT", "SETINFO", "lib-name", "redis-py") == b"+OK\r\n"
    assert raw.call("CLIENT", "SETINFO", "lib-ver", "4.3.4") == b"+OK\r\n"
    assert raw.call("CLIENT", "SETINFO", "foo", "x") == b"-ERR Unrecognized option 'foo'\r\n"
    assert b"\r\n+CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n" in (
        raw.call("CLIENT", "HELP"))


def test_client_list_shows_each_connections_io_thread(fresh_server):
    # Connections are dealt to the io threads in turn; CLIENT LIST and CLIENT INFO say where each
    # is served (io-thread, as Redis 8 does).
    srv = fresh_server("--workers", "2")
    clients = [RawClient(srv.port) for _ in range(4)]
    seen = []
    for c in clients:
        own = c.call("CLIENT", "INFO").decode()
        assert own.endswith("\r\n") and " io-thread=" in own
        seen.append(own.split(" io-thread=")[1].split()[0])
    assert sorted(seen) == ["0", "0", "1", "1"]
    listing = clients[0].call("CLIENT", "LIST").decode()
    assert sorted(line.split(" io-thread=")[1] for line in listing.split("\r\n", 1)[1].split("\n")
                  if line.startswith("id=")) == ["0", "0", "1", "1"]
    for c in clients:
        c.close()


def test_client_list_and_kill(server):
    a = RawClient(server.port)
    b = RawClient(server.port)
    a.call("CLIENT", "SETNAME", "sc-victim")
    ida = int(a.call("CLIENT", "ID")[1:-2])
    listing = b.call("CLIENT", "LIST").decode()
    assert "id=%d " % ida in listing and "name=sc-victim" in listing
    only = b.call("CLIENT", "LIST", "ID", str(ida), "999999").decode()
    assert only.count("id=") == 1 and "id=%d " % ida in only
    assert b.call("CLIENT", "LIST", "TYPE", "pubsub") == b"$0\r\n\r\n"
    assert b.call("CLIENT", "KILL", "ID", "0") == b"-ERR client-id should be greater than 0\r\n"
    assert b.call("CLIENT", "KILL", "USER", "bob") == b"-ERR No such user 'bob'\r\n"
    assert b.call("CLIENT", "KILL", "1.2.3.4:5") == b"-ERR No such client\r\n"
    assert b.call("CLIENT", "KILL", "ID", "999999") == b":0\r\n"
    assert b.call("CLIENT", "KILL", "ID", str(ida)) == b":1\r\n"
    with pytest.raises((ConnectionError, OSError)):
        a.call("PING")
    idb = b.call("CLIENT", "ID")[1:-2].decode()
    assert b.call("CLIENT", "KILL", "ID", idb) == b":0\r\n"  # SKIPME yes by default
    assert b.call("CLIENT", "KILL", "ID", idb, "SKIPME", "no") == b":1\r\n"
    with pytest.raises((ConnectionError, OSError)):
        b.call("PING")


def test_client_list_shows_each_connections_descriptor(server):
    # fd= is the connection's socket in the server process, as Redis shows it.
    clients = [RawClient(server.port) for _ in range(3)]
    fds = []
    for c in clients:
        own = c.call("CLIENT", "INFO").decode()
        fds.append(int(re.search(r" fd=(-?\d+) ", own).group(1)))
    assert len(set(fds)) == 3 and min(fds) > 2
    for fd in fds:
        assert os.readlink("/proc/%d/fd/%d" % (server.proc.pid, fd)).startswith("socket:")
    listing = clients[0].call("CLIENT", "LIST").decode()
    assert all(" fd=%d " % fd in listing for fd in fds)
    # multi= is -1 outside MULTI, and the number of commands queued inside it.
    ida = int(clients[1].call("CLIENT", "ID")[1:-2])
    assert " multi=-1 " in clients[0].call("CLIENT", "LIST", "ID", str(ida)).decode()
    assert clients[1].call("MULTI") == b"+OK\r\n"
    assert clients[1].call("PING") == b"+QUEUED\r\n"
    assert clients[1].call("CF.EXISTS", "fd-k", "x") == b"+QUEUED\r\n"
    line = clients[0].call("CLIENT", "LIST", "ID", str(ida)).decode()
    assert " multi=2 " in line and " flags=x " in line
    assert clients[1].call("DISCARD") == b"+OK\r\n"
    for c in clients:
        c.close()


# ---- INFO ---------------------------------------------------------------------------------------

def parse_info(text):
    sections = {}
    current = None
    for line in text.split("\r\n"):
        if line.startswith("# "):
            current = line[2:]
            sections[current] = {}
        elif line:
            k, v = line.split(":", 1)
            sections[current][k] = v
    return sections


def test_info_default_sections(raw):
    reply = raw.call("INFO")
    body = reply.split(b"\r\n", 1)[1][:-2].decode()
    assert body.startswith("# Server\r\nredis_version:7.0.15\r\n")
    assert body.endswith("\r\n") and not body.endswith("\r\n\r\n")
    sections = parse_info(body)
    assert list(sections) == ["Server", "Clients", "Memory", "Persistence", "Stats",
                              "Replication", "CPU", "Modules", "Errorstats", "Cluster",
                              "Keyspace", "RocksDB"]
    assert sections["Server"]["redis_mode"] == "standalone"
    assert sections["Server"]["cuckood_version"] == "0.1.0"
    assert int(sections["Clients"]["connected_clients"]) >= 1
    assert sections["Persistence"]["aof_enabled"] == "1"
    assert sections["Replication"]["role"] == "master"
    assert sections["Modules"]["module"].startswith("name=bf,ver=20820,")
    assert sections["Cluster"]["cluster_enabled"] == "0"
    assert "block_cache_capacity" in sections["RocksDB"]
    assert "\r\n\r\n# Clients\r\n" in body


def test_info_sections_and_keyspace(r):
    r.set("sc:info:key", "v")
    info = r.info("keyspace")
    assert info["db0"]["keys"] >= 1
    assert set(r.info("cpu")) >= {"used_cpu_sys", "used_cpu_user"}
    assert r.execute_command("INFO", "nosuch") == {}  # redis-py parses "" as {}
    everything = r.info("everything")
    assert any(k.startswith("cmdstat_") for k in everything)
    assert any(k.startswith("latency_percentiles_usec_") for k in everything)


def test_info_resp3_is_verbatim(raw):
    raw.call("HELLO", "3")
    reply = raw.call("INFO", "cluster")
    assert reply == b"=34\r\ntxt:# Cluster\r\ncluster_enabled:0\r\n\r\n"


def test_info_counts_errors(raw):
    raw.call("SELECT", "x")
    text = raw.call("INFO", "errorstats", "stats").decode()
    assert re.search(r"\r\nerrorstat_ERR:count=[1-9]\d*\r\n", text)
    assert re.search(r"\r\ntotal_error_replies:[1-9]\d*\r\n", text)


# ---- CONFIG -------------------------------------------------------------------------------------

def test_config_get(raw, r):
    assert r.config_get("maxmemory") == {"maxmemory": "0"}
    assert r.config_get("save") == {"save": ""}
    assert r.config_get("appendonly") == {"appendonly": "yes"}
    assert r.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
    assert "port" in r.config_get("po*")
    assert raw.call("CONFIG", "GET", "no-such-option") == b"*0\r\n"
    got = raw.call("CONFIG", "GET", "databases", "databases")
    assert got == b"*2\r\n$9\r\ndatabases\r\n$2\r\n16\r\n"
    assert raw.call("CONFIG", "GET") == (
        b"-ERR wrong number of arguments for 'config|get' command\r\n")


def test_config_set_errors(raw):
    assert raw.call("CONFIG", "SET", "foo", "bar") == (
        b"-ERR Unknown option or number of arguments for CONFIG SET - 'foo'\r\n")
    assert raw.call("CONFIG", "SET", "dir", "/tmp") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected "
        b"config\r\n")
    assert raw.call("CONFIG", "SET", "port", "1234") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable "
        b"config\r\n")
    assert raw.call("CONFIG", "SET", "maxclients", "10", "foo") == b"-ERR syntax error\r\n"
    assert raw.call("CONFIG", "SET", "maxclients", "10", "maxclients", "20") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'maxclients') - duplicate "
        b"parameter\r\n")
    assert raw.call("CONFIG", "SET", "maxclients", "abc").startswith(
        b"-ERR CONFIG SET failed (possibly related to argument 'maxclients') - ")
    assert raw.call("CONFIG", "REWRITE") == b"-ERR The server is running without a config file\r\n"
    assert raw.call("CONFIG", "FOO") == b"-ERR unknown subcommand 'FOO'. Try CONFIG HELP.\r\n"


def test_config_set_applies_all_or_nothing(fresh_server):
    srv = fresh_server()
    r = redis.Redis(port=srv.port)
    assert r.config_set("slowlog-max-len", "7")
    assert r.config_get("slowlog-max-len") == {"slowlog-max-len": "7"}
    with pytest.raises(redis.ResponseError):
        r.execute_command("CONFIG", "SET", "slowlog-max-len", "9", "maxclients", "abc")
    assert r.config_get("slowlog-max-len") == {"slowlog-max-len": "7"}


def test_config_resetstat(fresh_server):
    srv = fresh_server()
    r = redis.Redis(port=srv.port)
    r.ping()
    assert r.config_resetstat()
    assert r.info("stats")["total_error_replies"] == 0


# ---- misc server commands -----------------------------------------------------------------------

def test_time_lastsave_role(raw, r):
    secs, micros = r.time()
    assert secs > 1600000000 and 0 <= micros < 1000000
    assert r.lastsave() is not None
    # A primary without replicas; the offset is its RocksDB sequence (INFO's sequence field).
    seq = re.search(rb"sequence:(\d+)", raw.call("INFO", "replication")).group(1)
    assert raw.call("ROLE") == b"*3\r\n$6\r\nmaster\r\n:" + seq + b"\r\n*0\r\n"


def test_save_family(raw):
    assert raw.call("SAVE") == b"+OK\r\n"
    assert raw.call("BGSAVE") == b"+Background saving started\r\n"
    assert raw.call("BGSAVE", "foo") == b"-ERR syntax error\r\n"
    assert raw.call("BGREWRITEAOF") == b"+Background append only file rewriting started\r\n"


def test_wait_readonly_monitor(raw):
    assert raw.call("WAIT", "0", "0") == b":0\r\n"
    assert raw.call("WAIT", "1", "100") == b":0\r\n"
    assert raw.call("WAIT", "0", "abc") == b"-ERR timeout is not an integer or out of range\r\n"
    assert raw.call("WAIT", "0", "-1") == b"-ERR timeout is negative\r\n"
    assert raw.call("WAIT", "x", "0") == b"-ERR value is not an integer or out of range\r\n"
    assert raw.call("READONLY") == b"-ERR This instance has cluster support disabled\r\n"
    assert raw.call("READWRITE") == b"-ERR This instance has cluster support disabled\r\n"
    assert raw.call("MONITOR") == b"-ERR MONITOR is not supported\r\n"


def test_slowlog(fresh_server):
    srv = fresh_server("--slowlog-log-slower-than", "0")
    c = RawClient(srv.port)
    c.call("CLIENT", "SETNAME", "slowpoke")
    c.call("SET", "sl:k", "v")
    entries = redis.Redis(port=srv.port).slowlog_get(100)
    assert any(e["command"] == b"SET sl:k v" for e in entries)
    assert int(c.call("SLOWLOG", "LEN")[1:-2]) > 0
    assert c.call("SLOWLOG", "GET", "x") == b"-ERR count should be greater than or equal to -1\r\n"
    assert c.call("SLOWLOG", "GET", "1", "2") == (
        b"-ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP.\r\n")
    reply = c.call("SLOWLOG", "GET", "1")
    assert reply.startswith(b"*1\r\n*6\r\n:")
    assert reply.endswith(b"$8\r\nslowpoke\r\n")
    assert c.call("SLOWLOG", "RESET") == b"+OK\r\n"
    c.close()


def test_latency(raw):
    assert raw.call("LATENCY", "LATEST") == b"*0\r\n"
    assert raw.call("LATENCY", "HISTORY", "command") == b"*0\r\n"
    assert raw.call("LATENCY", "RESET") == b":0\r\n"
    assert raw.call("LATENCY", "DOCTOR").startswith(b"$")
    assert raw.call("LATENCY", "foo") == b"-ERR unknown subcommand 'foo'. Try LATENCY HELP.\r\n"


def test_debug_sleep(raw):
    assert raw.call("DEBUG", "SLEEP", "0") == b"+OK\r\n"
    assert raw.call("DEBUG", "foo").startswith(b"-ERR unknown subcommand or wrong number")


def test_shutdown(fresh_server):
    srv = fresh_server()
    c = RawClient(srv.port)
    assert c.call("SHUTDOWN", "foo") == b"-ERR syntax error\r\n"
    assert c.call("SHUTDOWN", "ABORT") == b"-ERR No shutdown in progress.\r\n"
    assert c.call("SHUTDOWN", "SAVE", "NOSAVE") == b"-ERR syntax error\r\n"
    c.send_raw(b"*1\r\n$8\r\nSHUTDOWN\r\n")
    with pytest.raises((ConnectionError, OSError)):
        c.read_reply()
    assert srv.proc.wait(timeout=30) == 0


# ---- COMMAND ------------------------------------------------------------------------------------

def plain(server, *args):
    """A reply as redis-py parses it, without the command's response callback."""
    conn = redis.Connection(port=server.port)
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        conn.disconnect()


def test_command_info_shape(raw, server):
    assert raw.call("COMMAND", "INFO", "get") == (
        b"*1\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
        b"*3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n"
        b"+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n"
        b"*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n"
        b"$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n"
        b":0\r\n*0\r\n")
    assert raw.call("COMMAND", "INFO", "nosuch") == b"*1\r\n$-1\r\n"
    count = plain(server, "COMMAND", "COUNT")
    assert count == len(plain(server, "COMMAND"))
    names = plain(server, "COMMAND", "LIST")
    assert b"config|get" in names and b"cf.add" in names and b"del" in names
    info = plain(server, "COMMAND", "INFO", "config")[0]
    assert info[0] == b"config" and info[1] == -2
    assert [s[0] for s in info[9]] >= [b"config|get"]


def test_command_info_of_filter_commands(server):
    info = plain(server, "COMMAND", "INFO", "cf.add")[0]
    assert b"module" in info[2] and b"@cuckoo" in info[6]
    assert b"cf.add" in plain(server, "COMMAND", "LIST", "FILTERBY", "MODULE", "bf")


def test_command_docs(server):
    docs = plain(server, "COMMAND", "DOCS", "expire", "nosuch")
    assert docs[0] == b"expire"
    doc = dict(zip(docs[1][::2], docs[1][1::2]))
    assert doc[b"group"] == b"generic" and doc[b"since"] == b"1.0.0"
    args = [dict(zip(a[::2], a[1::2])) for a in doc[b"arguments"]]
    assert args[0] == {b"name": b"key", b"type": b"key", b"key_spec_index": 0}
    assert args[2][b"type"] == b"oneof"
    assert [dict(zip(c[::2], c[1::2]))[b"token"] for c in args[2][b"arguments"]] == [
        b"NX", b"XX", b"GT", b"LT"]
    assert plain(server, "COMMAND", "DOCS", "nosuch") == []


def test_command_getkeys(raw):
    assert raw.call("COMMAND", "GETKEYS", "get", "a") == b"*1\r\n$1\r\na\r\n"
    assert raw.call("COMMAND", "GETKEYS", "memory", "usage", "k") == b"*1\r\n$1\r\nk\r\n"
    assert raw.call("COMMAND", "GETKEYS", "ping", "x") == (
        b"-ERR The command has no key arguments\r\n")
    assert raw.call("COMMAND", "GETKEYS", "foo", "x") == b"-ERR Invalid command specified\r\n"
    assert raw.call("COMMAND", "GETKEYS", "get", "a", "b") == (
        b"-ERR Invalid number of arguments specified for command\r\n")
    assert raw.call("COMMAND", "GETKEYS", "get") == (
        b"-ERR wrong number of arguments for 'command|getkeys' command\r\n")
    assert raw.call("COMMAND", "GETKEYSANDFLAGS", "rename", "a", "b") == (
        b"*2\r\n*2\r\n$1\r\na\r\n*3\r\n+RW\r\n+access\r\n+delete\r\n"
        b"*2\r\n$1\r\nb\r\n*2\r\n+OW\r\n+update\r\n")


def test_command_resp3_sets(raw):
    raw.call("HELLO", "3")
    reply = raw.call("COMMAND", "INFO", "ping")
    assert reply == (b"*1\r\n*10\r\n$4\r\nping\r\n:-1\r\n~1\r\n+fast\r\n:0\r\n:0\r\n:0\r\n"
                     b"~2\r\n+@fast\r\n+@connection\r\n~2\r\n$25\r\nrequest_policy:all_shards\r\n"
                     b"$29\r\nresponse_policy:all_succeeded\r\n~0\r\n~0\r\n")


def test_command_info_without_names_lists_every_command(raw):
    # COMMAND INFO alone answers as COMMAND does (it once recursed until the stack ran out).
    every = raw.call("COMMAND")
    assert raw.call("COMMAND", "INFO") == every
    assert raw.call("PING") == b"+PONG\r\n"
