"""Real clients from the redis-tools package against cuckood: redis-cli and redis-benchmark."""
import shutil
import subprocess

import pytest
import redis
from cuckood_testlib import RawClient, encode

REDIS_CLI = shutil.which("redis-cli")
REDIS_BENCHMARK = shutil.which("redis-benchmark")

needs_cli = pytest.mark.skipif(REDIS_CLI is None, reason="redis-cli is not installed")
needs_benchmark = pytest.mark.skipif(REDIS_BENCHMARK is None,
                                     reason="redis-benchmark is not installed")


def cli(port, *args, stdin=None, timeout=60):
    return subprocess.run([REDIS_CLI, "-p", str(port)] + [str(a) for a in args], input=stdin,
                          capture_output=True, timeout=timeout)


@needs_cli
def test_ping(server):
    out = cli(server.port, "ping")
    assert out.returncode == 0
    assert out.stdout == b"PONG\n"


@needs_cli
def test_cf_commands_resp2_and_resp3_output(server):
    assert cli(server.port, "cf.exists", "cli:k", "x").stdout == b"0\n"
    assert cli(server.port, "cf.add", "cli:k", "x").stdout == b"1\n"
    assert cli(server.port, "-3", "cf.exists", "cli:k", "x").stdout == b"(true)\n"
    assert cli(server.port, "-3", "cf.exists", "cli:k", "nope").stdout == b"(false)\n"
    assert cli(server.port, "-3", "cf.mexists", "cli:k", "x", "nope").stdout == (
        b"(true)\n(false)\n")
    assert cli(server.port, "-3", "cf.count", "cli:k", "x").stdout == b"1\n"
    # not a tty: raw output; a RESP3 map prints one "key value" line per entry
    out = cli(server.port, "-3", "cf.info", "cli:k").stdout.decode()
    assert out.splitlines()[:2] == ["Size 1080", "Number of buckets 512"]
    out = cli(server.port, "cf.info", "cli:k").stdout.decode()
    assert out.splitlines()[:2] == ["Size", "1080"]
    # raw mode prints an error followed by an empty line
    err = cli(server.port, "cf.info", "cli:missing")
    assert err.stdout == b"ERR not found\n\n"
    err = cli(server.port, "cf.reserve", "cli:k2", "abc")
    assert err.stdout == b"Bad capacity\n\n"


@needs_cli
def test_cli_tty_style_formatting(server):
    # --no-raw forces the human format that a terminal would get
    out = cli(server.port, "--no-raw", "-3", "cf.info", "cli:fmt:missing").stdout
    assert out == b"(error) ERR not found\n"
    cli(server.port, "cf.reserve", "cli:fmt", "1000")
    out = cli(server.port, "--no-raw", "-3", "cf.info", "cli:fmt").stdout.decode()
    # the map keys are simple strings, which redis-cli prints without quotes
    assert out.splitlines()[0] == "1# Size => (integer) 1080"
    assert out.splitlines()[7] == "8# Max iterations => (integer) 20"
    out = cli(server.port, "--no-raw", "cf.info", "cli:fmt").stdout.decode()
    assert out.splitlines()[:2] == [" 1) Size", " 2) (integer) 1080"]
    out = cli(server.port, "--no-raw", "-3", "cf.exists", "cli:fmt", "x").stdout
    assert out == b"(false)\n"
    out = cli(server.port, "--no-raw", "-3", "cf.mexists", "cli:fmt", "x", "y").stdout
    assert out == b"1) (false)\n2) (false)\n"


@needs_cli
def test_pipe_mass_insertion(fresh_server):
    srv = fresh_server()
    n = 100000
    r = redis.Redis(port=srv.port)
    # an auto-created filter (capacity 1024, expansion 1) would stop at 32 sub-filters with
    # "Maximum expansions reached" after ~30,000 items, exactly as RedisBloom does
    assert r.cf().create("cli:mass", 200000) is True
    stream = b"".join(encode(["CF.ADD", "cli:mass", "item:%d" % i]) for i in range(n))
    out = cli(srv.port, "--pipe", stdin=stream, timeout=120)
    text = out.stdout.decode() + out.stderr.decode()
    assert out.returncode == 0, text
    assert "errors: 0, replies: %d" % n in text
    info = r.cf().info("cli:mass")
    assert info.insertedNum == n
    assert r.cf().mexists("cli:mass", *["item:%d" % i for i in range(0, n, 997)]) == (
        [1] * len(range(0, n, 997)))
    r.close()


@needs_cli
def test_pipe_reports_errors(fresh_server):
    srv = fresh_server()
    stream = b"".join(encode(c) for c in [
        ["CF.RESERVE", "cli:pe", "100"], ["CF.RESERVE", "cli:pe", "100"], ["CF.ADD", "cli:pe", "x"],
        ["CF.INFO", "cli:missing"]])
    out = cli(srv.port, "--pipe", stdin=stream)
    text = out.stdout.decode() + out.stderr.decode()
    assert "errors: 2, replies: 4" in text


@needs_cli
def test_scan_from_the_cli(fresh_server):
    srv = fresh_server()
    r = redis.Redis(port=srv.port)
    for i in range(50):
        r.cf().add("cli:scan:cf:%d" % i, "x")
        r.set("cli:scan:str:%d" % i, "v")
    filters = {"cli:scan:cf:%d" % i for i in range(50)}
    out = cli(srv.port, "--scan", "--pattern", "cli:scan:cf:*")
    assert set(out.stdout.decode().split()) == filters
    out = cli(srv.port, "--scan")
    assert len(out.stdout.decode().split()) == 100
    # SCAN ... TYPE through the CLI's command mode
    cursor, keys = "0", set()
    while True:
        lines = cli(srv.port, "scan", cursor, "type", "MBbloomCF", "count", "20").stdout
        lines = lines.decode().split("\n")
        cursor = lines[0]
        keys.update(x for x in lines[1:] if x)
        if cursor == "0":
            break
    assert keys == filters
    help_text = subprocess.run([REDIS_CLI, "--help"], capture_output=True).stdout
    help_text += subprocess.run([REDIS_CLI, "--help"], capture_output=True).stderr
    if b"--type" in help_text:  # redis-cli >= 7.2
        out = cli(srv.port, "--scan", "--type", "MBbloomCF")
        assert set(out.stdout.decode().split()) == filters
    r.close()


def _parse(data, pos=0):
    """Minimal RESP2 decoder (redis-py 4.3 mis-parses COMMAND DOCS with COMMAND's callback)."""
    nl = data.index(b"\r\n", pos)
    kind, head, pos = data[pos:pos + 1], data[pos + 1:nl], nl + 2
    if kind in b"+-":
        return head, pos
    if kind == b":":
        return int(head), pos
    if kind == b"$":
        n = int(head)
        return (None, pos) if n < 0 else (data[pos:pos + n], pos + n + 2)
    out = []
    for _ in range(int(head)):
        v, pos = _parse(data, pos)
        out.append(v)
    return out, pos


def _oneof_or_block_without_children(args, path):
    bad = []
    for a in args:
        d = dict(zip(a[::2], a[1::2]))
        if d.get(b"type") in (b"oneof", b"block") and b"arguments" not in d:
            bad.append(path + "/" + d[b"name"].decode())
        bad += _oneof_or_block_without_children(d.get(b"arguments", []), path)
    return bad


def _walk_docs(docs, prefix=""):
    bad = []
    for i in range(0, len(docs), 2):
        name, spec = prefix + docs[i].decode(), dict(zip(docs[i + 1][::2], docs[i + 1][1::2]))
        bad += _oneof_or_block_without_children(spec.get(b"arguments", []), name)
        bad += _walk_docs(spec.get(b"subcommands", []), name + "|")
    return bad


def test_command_docs_oneof_and_block_arguments_have_children(server):
    c = RawClient(server.port)
    docs, _ = _parse(c.call("COMMAND", "DOCS"))
    c.close()
    assert len(docs) > 100
    assert _walk_docs(docs) == []


@needs_cli
def test_cli_interactive_style_stdin_commands(server):
    # redis-cli reading commands from stdin (one per line)
    out = cli(server.port, stdin=b"CF.ADD cli:stdin a\nCF.EXISTS cli:stdin a\n"
                                  b"CF.EXISTS cli:stdin b\nPING\n")
    assert out.stdout == b"1\n1\n0\nPONG\n"


@needs_benchmark
def test_benchmark_ping(server):
    out = subprocess.run([REDIS_BENCHMARK, "-p", str(server.port), "-t", "ping", "-n", "2000",
                          "-q"], capture_output=True, timeout=120)
    text = (out.stdout + out.stderr).decode()
    assert out.returncode == 0, text
    assert "WARNING" not in text and "CONFIG" not in text, text
    assert "PING_INLINE" in text and "PING_MBULK" in text
    assert "requests per second" in text


@needs_benchmark
def test_benchmark_cf_add(server):
    before = RawClient(server.port)
    out = subprocess.run([REDIS_BENCHMARK, "-p", str(server.port), "-n", "2000", "-r", "100000",
                          "-q", "CF.ADD", "cli:bk", "__rand_int__"],
                         capture_output=True, timeout=120)
    text = (out.stdout + out.stderr).decode()
    assert out.returncode == 0, text
    assert "WARNING" not in text, text
    assert "requests per second" in text
    # every request added one fingerprint
    assert b"+Number of items inserted\r\n:2000\r\n" in before.call("CF.INFO", "cli:bk")
    before.close()


@needs_benchmark
def test_benchmark_pipelined_and_parallel_clients(server):
    out = subprocess.run([REDIS_BENCHMARK, "-p", str(server.port), "-n", "20000", "-c", "20",
                          "-P", "16", "-r", "1000000", "-q", "CF.ADD", "cli:bkp",
                          "__rand_int__"], capture_output=True, timeout=120)
    text = (out.stdout + out.stderr).decode()
    assert out.returncode == 0, text
    c = RawClient(server.port)
    assert b"+Number of items inserted\r\n:20000\r\n" in c.call("CF.INFO", "cli:bkp")
    c.close()


@needs_cli
def test_memkeys_reports_filters(fresh_server):
    srv = fresh_server()
    r = redis.Redis(port=srv.port)
    r.cf().create("cli:mk:big", 100000)
    r.cf().add("cli:mk:small", "x")
    r.set("cli:mk:s", "v")
    out = cli(srv.port, "--memkeys", timeout=30)
    text = out.stdout.decode()
    assert out.returncode == 0, text
    size = r.memory_usage("cli:mk:big")
    assert size > 131072  # the filter's buckets
    assert "Biggest MBbloomCF found '\"cli:mk:big\"' has %d bytes" % size in text
    assert "2 MBbloomCFs with" in text and "1 strings with" in text
    r.close()


@needs_cli
def test_bigkeys(fresh_server):
    srv = fresh_server()
    r = redis.Redis(port=srv.port)
    r.cf().add("cli:bk:cf", "x")
    r.set("cli:bk:s", "hello")
    out = cli(srv.port, "--bigkeys", timeout=30)
    text = (out.stdout + out.stderr).decode()
    assert out.returncode == 0, text
    assert "Warning" not in text, text
    assert "1 strings with 5 bytes" in text
    assert "1 MBbloomCFs with" in text
    r.close()
