"""MIGRATE between two cuckood servers (filters and strings; COPY, REPLACE, AUTH, AUTH2, KEYS,
TTLs, target errors, unreachable targets) and between cuckood and a Debian redis-server (strings
both ways). Every server is started here on a free port and stopped by its pid."""
import os
import shutil
import subprocess
import time

import pytest
import redis
from cuckood_testlib import free_port


@pytest.fixture
def pair(fresh_server, tmp_path):
    src = fresh_server(data_dir=tmp_path / "src")
    dst = fresh_server("--requirepass", "s3cret", data_dir=tmp_path / "dst")
    a = redis.Redis(port=src.port)
    b = redis.Redis(port=dst.port, password="s3cret")
    yield src, dst, a, b
    a.close()
    b.close()


def migrate(c, port, key, db, *opts, timeout=2000):
    return c.execute_command("MIGRATE", "127.0.0.1", port, key, db, timeout, *opts)


def test_filters_and_strings_move_between_cuckood_servers(pair):
    src, dst, a, b = pair
    a.execute_command("CF.RESERVE", "mg:f", 200, "BUCKETSIZE", 4, "EXPANSION", 2)
    a.execute_command("CF.INSERT", "mg:f", "ITEMS", *["i%d" % i for i in range(600)])
    a.set("mg:s", "hello", px=60000)
    f_payload = a.dump("mg:f")
    f_info = a.execute_command("CF.INFO", "mg:f")
    # Without AUTH the target refuses; nothing is deleted here.
    with pytest.raises(redis.ResponseError,
                       match="^Target instance replied with error: NOAUTH Authentication required.$"):
        migrate(a, dst.port, "mg:f", 0)
    assert a.exists("mg:f") == 1
    assert migrate(a, dst.port, "mg:f", 0, "AUTH", "s3cret") == b"OK"
    assert a.exists("mg:f") == 0
    assert b.dump("mg:f") == f_payload
    assert b.execute_command("CF.INFO", "mg:f") == f_info
    assert b.execute_command("CF.EXISTS", "mg:f", "i599") == 1
    # KEYS form into database 2 with AUTH2 and COPY: the keys stay here, the TTL goes along.
    assert migrate(a, dst.port, "", 2, "COPY", "AUTH2", "default", "s3cret", "KEYS", "mg:s",
                   "mg:missing") == b"OK"
    assert a.get("mg:s") == b"hello"
    b2 = redis.Redis(port=dst.port, password="s3cret", db=2)
    assert b2.get("mg:s") == b"hello"
    assert 0 < b2.pttl("mg:s") <= 60000
    # The key is there now: BUSYKEY from the target, unless REPLACE.
    a.set("mg:s", "newer")
    with pytest.raises(redis.ResponseError, match="^Target instance replied with error: BUSYKEY"):
        migrate(a, dst.port, "", 2, "AUTH", "s3cret", "KEYS", "mg:s")
    assert a.get("mg:s") == b"newer"
    assert migrate(a, dst.port, "", 2, "REPLACE", "AUTH", "s3cret", "KEYS", "mg:s") == b"OK"
    assert b2.get("mg:s") == b"newer"
    assert a.exists("mg:s") == 0
    b2.close()
    assert migrate(a, dst.port, "mg:none", 0) == b"NOKEY"


def test_migrate_argument_errors_and_unreachable_targets(pair):
    src, dst, a, b = pair
    a.set("mg:e", "v")
    with pytest.raises(redis.ResponseError, match="^When using MIGRATE KEYS option, the key "
                       "argument must be set to the empty string$"):
        migrate(a, dst.port, "mg:e", 0, "KEYS", "mg:e")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        migrate(a, dst.port, "mg:e", 0, "AUTH")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        migrate(a, dst.port, "mg:e", 0, "AUTH2", "u")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        migrate(a, dst.port, "mg:e", 0, "NOPE")
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        a.execute_command("MIGRATE", "127.0.0.1", dst.port, "mg:e", "x", 1000)
    with pytest.raises(redis.ResponseError):
        a.execute_command("MIGRATE", "127.0.0.1", dst.port, "mg:e", 0)
    closed = free_port()
    with pytest.raises(redis.ResponseError,
                       match="^IOERR error or timeout connecting to the client$"):
        migrate(a, closed, "mg:e", 0, timeout=500)
    assert a.get("mg:e") == b"v"
    # (a password spelled "keys" is not the KEYS option)
    assert a.command_getkeys("MIGRATE", "h", "1", "", "0", "5", "AUTH", "keys", "KEYS", "k1",
                             "k2") == ["k1", "k2"]


REDIS_SERVER = shutil.which("redis-server")


@pytest.fixture
def real_redis(tmp_path):
    if REDIS_SERVER is None:
        pytest.skip("redis-server not installed")
    port = free_port()
    proc = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c = redis.Redis(port=port)
    try:
        for _ in range(100):
            try:
                c.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        yield port, c
    finally:
        c.close()
        proc.terminate()
        proc.wait(timeout=10)


def test_strings_between_cuckood_and_redis(fresh_server, real_redis, tmp_path):
    port, r = real_redis
    s = fresh_server(data_dir=tmp_path / "c")
    c = redis.Redis(port=s.port)
    values = {"mg:r:int": b"12345", "mg:r:long": b"xy" * 500, "mg:r:raw": b"\x00\x01 binary"}
    for k, v in values.items():
        c.set(k, v)
    assert migrate(c, port, "", 0, "KEYS", *values) == b"OK"
    for k, v in values.items():
        assert r.get(k) == v
        assert c.exists(k) == 0
    # And back: Redis's MIGRATE sends its own RESTORE payloads to cuckood.
    r.set("mg:r:back", "q" * 3000, px=50000)
    assert r.execute_command("MIGRATE", "127.0.0.1", s.port, "mg:r:back", 0, 2000) == b"OK"
    assert c.get("mg:r:back") == b"q" * 3000
    assert 0 < c.pttl("mg:r:back") <= 50000
    # A filter cannot go to a Redis without RedisBloom: Redis's own error, the key stays.
    c.execute_command("CF.RESERVE", "mg:r:f", 100)
    with pytest.raises(redis.ResponseError,
                       match="^Target instance replied with error: ERR Bad data format$"):
        migrate(c, port, "mg:r:f", 0)
    assert c.exists("mg:r:f") == 1
    c.close()


def fake_target(reply):
    """A TCP listener that answers every connection with `reply` (or nothing when None)."""
    import socket
    import threading
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    conns = []

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conns.append(conn)
            conn.recv(1 << 16)
            if reply is not None:
                conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    return listener, conns


def test_a_target_that_is_not_a_resp_server_keeps_the_keys(fresh_server, tmp_path):
    s = fresh_server(data_dir=tmp_path / "c")
    c = redis.Redis(port=s.port)
    c.set("mg:h", "kept")
    for reply, error in ((b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n",
                          "^Target instance replied with error: HTTP/1.1 400 Bad Request$"),
                         (None, "^IOERR error or timeout reading to target instance$")):
        listener, conns = fake_target(reply)
        try:
            start = time.time()
            with pytest.raises(redis.ResponseError, match=error):
                migrate(c, listener.getsockname()[1], "mg:h", 0, timeout=300)
            assert time.time() - start < 5
        finally:
            listener.close()
            for conn in conns:
                conn.close()
        assert c.get("mg:h") == b"kept"
    c.close()
