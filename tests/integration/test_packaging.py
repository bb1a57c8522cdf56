"""Packaging: `cmake --install`, the Dockerfile (through scripts/docker_check.sh, as no Docker
engine is available) and scripts/migrate_from_redisbloom.py between real servers."""
import os
import shutil
import subprocess
import sys
import time

import pytest
from cuckood_testlib import REPO, RawClient, binary, free_port

MIGRATE = os.path.join(REPO, "scripts", "migrate_from_redisbloom.py")
DOCKER_CHECK = os.path.join(REPO, "scripts", "docker_check.sh")


def build_dir():
    """The CMake tree of the binary under test: CUCKOOD_BIN is <build>/server/cuckood."""
    d = os.path.dirname(os.path.dirname(os.path.abspath(binary())))
    if not os.path.exists(os.path.join(d, "CMakeCache.txt")):
        pytest.skip("%s is not a CMake build tree" % d)
    return d


def wait_ping(port, timeout=20, proc=None, log=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError("server exited with %s: %s" % (proc.returncode, log and log()))
        try:
            c = RawClient(port, timeout=2)
            try:
                if c.call("PING") == b"+PONG\r\n":
                    return
            finally:
                c.close()
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("no PONG on port %d" % port)


# ------------------------------------------------------------------------------------------
# cmake --install
# ------------------------------------------------------------------------------------------

def test_cmake_install_puts_binary_config_and_unit_under_the_prefix(tmp_path):
    prefix = tmp_path / "prefix"
    out = subprocess.run(["cmake", "--install", build_dir(), "--prefix", str(prefix)],
                         capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    exe = prefix / "bin" / "cuckood"
    conf = prefix / "etc" / "cuckood" / "cuckood.conf"
    unit = prefix / "lib" / "systemd" / "system" / "cuckood.service"
    assert os.access(exe, os.X_OK)
    with open(os.path.join(REPO, "conf", "cuckood.conf"), "rb") as f:
        assert conf.read_bytes() == f.read()
    # The unit's paths are those of the default prefix /usr/local.
    text = unit.read_text()
    assert ("ExecStart=/usr/local/bin/cuckood --config /usr/local/etc/cuckood/cuckood.conf"
            in text)

    # The installed binary starts with the installed config and answers.
    port = free_port()
    log = tmp_path / "installed.log"
    with open(log, "wb") as lf:
        proc = subprocess.Popen([str(exe), "--config", str(conf), "--port", str(port),
                                 "--dir", str(tmp_path / "data"), "--workers", "2"],
                                stdout=lf, stderr=subprocess.STDOUT)
    try:
        wait_ping(port, proc=proc, log=log.read_text)
        c = RawClient(port)
        assert c.call("CF.ADD", "pkg:k", "x") == b":1\r\n"
        assert c.call("CONFIG", "GET", "port") == b"*2\r\n$4\r\nport\r\n$%d\r\n%d\r\n" % (
            len(str(port)), port)
        c.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


# ------------------------------------------------------------------------------------------
# The Dockerfile, checked without Docker
# ------------------------------------------------------------------------------------------

needs_debian = pytest.mark.skipif(shutil.which("dpkg-query") is None or
                                  shutil.which("redis-cli") is None,
                                  reason="scripts/docker_check.sh needs Debian (dpkg) and redis-cli")


@needs_debian
@pytest.mark.skipif(bool(os.environ.get("CUCKOOD_SANITIZER")),
                    reason="a sanitizer build links its runtime: not what the image ships")
def test_docker_check_with_the_prebuilt_tree():
    """The Dockerfile's install step, libraries, ENTRYPOINT and HEALTHCHECK on this build."""
    out = subprocess.run(["bash", DOCKER_CHECK, "--prebuilt", build_dir()],
                         capture_output=True, timeout=300)
    text = out.stdout.decode() + out.stderr.decode()
    assert out.returncode == 0, text
    assert "every shared library resolves and comes from RUNTIME_PACKAGES" in text
    assert "HEALTHCHECK passes" in text
    assert "docker_check: all checks passed" in text


@needs_debian
@pytest.mark.skipif(os.environ.get("CUCKOOD_DOCKER_CHECK") != "1",
                    reason="compiles the project again (minutes); set CUCKOOD_DOCKER_CHECK=1")
def test_docker_check_full_build():
    out = subprocess.run(["bash", DOCKER_CHECK], capture_output=True, timeout=3600)
    text = out.stdout.decode() + out.stderr.decode()
    assert out.returncode == 0, text[-8000:]
    assert "docker_check: all checks passed" in text


# ------------------------------------------------------------------------------------------
# scripts/migrate_from_redisbloom.py
# ------------------------------------------------------------------------------------------

def migrate(*args, timeout=120):
    out = subprocess.run([sys.executable, MIGRATE] + [str(a) for a in args],
                         capture_output=True, timeout=timeout)
    return out.returncode, out.stdout.decode(), out.stderr.decode()


def dump(client, key):
    """Every CF.SCANDUMP reply of a filter, as exact bytes, until the [0, nil] one."""
    chunks, it = [], 0
    while True:
        reply = client.call("CF.SCANDUMP", key, it)
        assert reply.startswith(b"*2\r\n:"), reply
        it = int(reply[5:reply.index(b"\r\n", 5)])
        chunks.append(reply)
        if it == 0:
            return chunks


def authed(port, password):
    c = RawClient(port)
    assert c.call("AUTH", password) == b"+OK\r\n"
    return c


def fill_source(c):
    assert c.call("CF.RESERVE", "mig:plain", 1000) == b"+OK\r\n"
    c.call("CF.INSERT", "mig:plain", "ITEMS", *["p%d" % i for i in range(300)])
    # Several sub-filters, a bigger bucket size, deletions.
    assert c.call("CF.RESERVE", "mig:grown", 64, "BUCKETSIZE", 4, "EXPANSION", 2,
                  "MAXITERATIONS", 50) == b"+OK\r\n"
    c.call("CF.INSERT", "mig:grown", "ITEMS", *["g%d" % i for i in range(1500)])
    for i in range(0, 100, 3):
        c.call("CF.DEL", "mig:grown", "g%d" % i)
    # About 2 MiB of buckets in one chunk.
    assert c.call("CF.RESERVE", "mig:large", 2000000) == b"+OK\r\n"
    c.call("CF.INSERT", "mig:large", "ITEMS", *["l%d" % i for i in range(2000)])
    # A time to live, and a binary key name.
    c.call("CF.ADD", "mig:ttl", "t")
    assert c.call("PEXPIRE", "mig:ttl", 600000) == b":1\r\n"
    c.call("CF.ADD", b"mig:bin\x00\xff", "b")
    # Not filters: left alone.
    assert c.call("SET", "mig:string", "v") == b"+OK\r\n"
    return [b"mig:plain", b"mig:grown", b"mig:large", b"mig:ttl", b"mig:bin\x00\xff"]


def test_migrate_copies_every_filter_byte_for_byte_with_ttls(fresh_server, tmp_path):
    src = fresh_server(data_dir=tmp_path / "a")
    dst = fresh_server("--requirepass", "pw", data_dir=tmp_path / "b")
    s = RawClient(src.port)
    keys = fill_source(s)
    d = authed(dst.port, "pw")

    # --dry-run lists and writes nothing.
    rc, out, err = migrate("--from", "127.0.0.1:%d" % src.port,
                           "--to", "127.0.0.1:%d" % dst.port, "--to-password", "pw", "--dry-run")
    assert rc == 0, err
    assert "5 cuckoo filter(s)" in out and "nothing was written" in out
    assert d.call("DBSIZE") == b":0\r\n"

    rc, out, err = migrate("--from", "127.0.0.1:%d" % src.port,
                           "--to", "127.0.0.1:%d" % dst.port, "--to-password", "pw")
    assert rc == 0, out + err
    assert "summary: 5 of 5 filter(s) copied and verified" in out
    for key in keys:
        assert dump(d, key) == dump(s, key), key
        assert d.call("CF.INFO", key) == s.call("CF.INFO", key)
    assert len(dump(s, b"mig:grown")) > 4          # header, a chunk per sub-filter, [0, nil]
    assert d.call("CF.EXISTS", "mig:grown", "g1") == b":1\r\n"
    assert d.call("EXISTS", "mig:string") == b":0\r\n"
    ttl = int(d.call("PTTL", "mig:ttl")[1:-2])
    assert 500000 < ttl <= 600000
    assert d.call("PTTL", "mig:plain") == b":-1\r\n"

    # Again: every key exists on the target now; without --replace that is an error per key.
    rc, out, err = migrate("--from", "127.0.0.1:%d" % src.port,
                           "--to", "127.0.0.1:%d" % dst.port, "--to-password", "pw")
    assert rc == 1
    assert "exists on the target (use --replace" in err

    # --replace with --match: only the matching keys are deleted and reloaded.
    d.call("CF.ADD", "mig:plain", "only-on-target")
    s.call("CF.ADD", "mig:grown", "new-on-source")
    rc, out, err = migrate("--from", "127.0.0.1:%d" % src.port,
                           "--to", "127.0.0.1:%d" % dst.port, "--to-password", "pw",
                           "--replace", "--match", "mig:p*")
    assert rc == 0, out + err
    assert "summary: 1 of 1 filter(s)" in out
    assert dump(d, "mig:plain") == dump(s, "mig:plain")
    assert d.call("CF.EXISTS", "mig:plain", "only-on-target") == b":0\r\n"
    assert d.call("CF.EXISTS", "mig:grown", "new-on-source") == b":0\r\n"
    s.close()
    d.close()


def test_migrate_reports_bad_password_and_unreachable_server(fresh_server, tmp_path):
    src = fresh_server(data_dir=tmp_path / "a")
    dst = fresh_server("--requirepass", "pw", data_dir=tmp_path / "b")
    rc, out, err = migrate("--from", "127.0.0.1:%d" % src.port,
                           "--to", "127.0.0.1:%d" % dst.port, "--to-password", "wrong")
    assert rc == 2
    assert "target" in err and "WRONGPASS" in err
    rc, out, err = migrate("--from", "127.0.0.1:%d" % free_port(),
                           "--to", "127.0.0.1:%d" % dst.port, "--to-password", "pw")
    assert rc == 2
    assert "source: cannot connect" in err


@pytest.fixture
def plain_redis(tmp_path):
    """Debian's redis-server, which has no RedisBloom module."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    log = tmp_path / "redis.log"
    with open(log, "wb") as lf:
        proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                 "--appendonly", "no", "--dir", str(tmp_path)],
                                stdout=lf, stderr=subprocess.STDOUT)
    try:
        wait_ping(port, proc=proc, log=log.read_text)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_migrate_refuses_a_server_without_cf_commands(fresh_server, tmp_path, plain_redis):
    cuckood = fresh_server(data_dir=tmp_path / "a")
    c = RawClient(cuckood.port)
    c.call("CF.ADD", "mig:k", "x")
    c.close()
    rc, out, err = migrate("--from", "127.0.0.1:%d" % plain_redis,
                           "--to", "127.0.0.1:%d" % cuckood.port)
    assert rc == 2
    assert "source" in err and "does not know the CF commands" in err
    assert "Traceback" not in err
    rc, out, err = migrate("--from", "127.0.0.1:%d" % cuckood.port,
                           "--to", "127.0.0.1:%d" % plain_redis)
    assert rc == 2
    assert "target" in err and "does not know the CF commands" in err
    r = RawClient(plain_redis)
    assert r.call("DBSIZE") == b":0\r\n"
    r.close()
