"""Test helpers: run the cuckood binary, and a tiny raw RESP client that returns reply bytes."""
import os
import signal
import socket
import subprocess
import threading
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def binary():
    path = os.environ.get("CUCKOOD_BIN") or os.path.join(REPO, "build", "server", "cuckood")
    if not os.path.exists(path):
        raise RuntimeError("cuckood binary not found at %s (set CUCKOOD_BIN)" % path)
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CuckoodProcess:
    def __init__(self, data_dir, port=None, extra_args=None, env=None):
        self.data_dir = data_dir
        self.port = port or free_port()
        self.extra_args = extra_args or []
        self.env = env  # variables added to (None: removed from) the test's environment
        self.proc = None
        self.log_path = data_dir.rstrip("/") + ".log"

    def start(self, timeout=20):
        args = [binary(), "--port", str(self.port), "--dir", self.data_dir, "--workers", "2",
                "--loglevel", "notice"] + self.extra_args
        self.log = open(self.log_path, "ab")
        env = None
        if self.env is not None:
            env = dict(os.environ)
            for k, v in self.env.items():
                if v is None:
                    env.pop(k, None)
                else:
                    env[k] = v
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("cuckood exited with %s: %s" % (self.proc.returncode,
                                                                   self.read_log()))
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("cuckood did not start listening on %d" % self.port)

    def read_log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def restart(self):
        self.stop()
        return self.start()


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n" % len(a) + a + b"\r\n")
    return b"".join(out)


class RawClient:
    """Sends commands and returns each reply as its exact bytes."""

    def __init__(self, port, timeout=30):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("connection closed by server")
        self.buf += chunk

    def _line(self, pos):
        while True:
            nl = self.buf.find(b"\r\n", pos)
            if nl >= 0:
                return nl
            self._fill()

    def _skip(self, pos):
        """Returns the index just past one whole reply starting at pos."""
        nl = self._line(pos)
        kind = self.buf[pos:pos + 1]
        head = self.buf[pos + 1:nl]
        pos = nl + 2
        if kind in b"+-:_#,(":
            return pos
        n = int(head)
        if kind in (b"$", b"=", b"!"):
            if n < 0:
                return pos
            while len(self.buf) < pos + n + 2:
                self._fill()
            return pos + n + 2
        if kind in (b"*", b"~", b">", b"%", b"|"):
            count = n * 2 if kind in (b"%", b"|") else n
            for _ in range(max(count, 0)):
                pos = self._skip(pos)
            return pos
        raise ValueError("bad reply type %r" % kind)

    def read_reply(self):
        end = self._skip(0)
        reply, self.buf = self.buf[:end], self.buf[end:]
        return reply

    def call(self, *args):
        self.sock.sendall(encode(args))
        return self.read_reply()


def run_pipelined(port, commands, batch=64):
    """Sends the commands on one connection, `batch` at a time, and returns every reply's bytes."""
    client = RawClient(port)
    replies = []
    try:
        for start in range(0, len(commands), batch):
            chunk = commands[start:start + batch]
            client.send_raw(b"".join(encode(c) for c in chunk))
            replies.extend(client.read_reply() for _ in chunk)
    finally:
        client.close()
    return replies


def raw_scandump(client, name):
    """[reply] of a filter's whole CF.SCANDUMP through a RawClient, each reply as its bytes."""
    chunks = []
    cursor = b"0"
    for _ in range(1000000):
        reply = client.call("CF.SCANDUMP", name, cursor)
        chunks.append(reply)
        # *2\r\n:<cursor>\r\n...: the next cursor is the first element
        cursor = reply.split(b"\r\n")[1][1:]
        if cursor == b"0":
            return chunks
    raise AssertionError("SCANDUMP of %s does not end" % name)


def raw_info(port, section):
    """INFO section's field:value pairs (strings), through a RawClient of its own."""
    client = RawClient(port)
    try:
        text = client.call("INFO", section).decode()
    finally:
        client.close()
    fields = {}
    for line in text.split("\r\n"):
        if ":" in line and not line.startswith("#"):
            name, value = line.split(":", 1)
            fields[name] = value
    return fields


def start_real_redis(prefix, *extra):
    """Debian's redis-server on a free loopback port, no persistence, as a baseline to compare
    replies with. Returns (proc, port, dir); the caller terminates proc. Skips the test when
    redis-server is not installed."""
    import shutil
    import tempfile

    import pytest
    exe = shutil.which("redis-server")
    if not exe:
        pytest.skip("redis-server is not installed")
    d = tempfile.mkdtemp(prefix=prefix)
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", d, *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.time() >= deadline:
                proc.kill()
                raise AssertionError("redis-server did not start on port %d" % port)
            time.sleep(0.05)
    return proc, port, d


def run_threads(targets):
    """Runs each (fn, *args) of targets on a thread of its own, waits for all (a thread still
    running after 120 s fails the test) and raises the first exception any of them raised."""
    errors = []

    def wrap(fn, *args):
        try:
            fn(*args)
        except BaseException as e:  # noqa: B902 - reported to the main thread
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive(), "a thread is stuck"
    if errors:
        raise errors[0]
