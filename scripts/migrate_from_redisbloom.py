#!/usr/bin/env python3
"""Copies cuckoo filters from one server to another with CF.SCANDUMP / CF.LOADCHUNK.

Made for moving filters from Redis + RedisBloom to cuckood, but works between any two servers
that speak those commands (cuckood to cuckood, cuckood back to RedisBloom). Python 3 standard
library only: it speaks RESP over plain sockets.

    python3 scripts/migrate_from_redisbloom.py --from redis.internal:6379 --to 127.0.0.1:6380
    python3 scripts/migrate_from_redisbloom.py --from old:6379 --from-password s1 \\
        --to new:6379 --to-password s2 --match 'visitors:*' --replace

For every key of type MBbloomCF matching --match (found with SCAN ... TYPE MBbloomCF), it walks
CF.SCANDUMP from iterator 0 until the server answers [0, nil], replays each chunk in order with
CF.LOADCHUNK on the target, copies the remaining time to live (PTTL -> PEXPIRE), and checks
that CF.INFO is the same on both sides. A key that already exists on the target is an error
unless --replace (which deletes it on the target first). --dry-run only lists what would be
copied. Writers should be stopped during the copy: a filter changed while it is being dumped
can arrive inconsistent, which the final CF.INFO comparison usually, but not always, catches.

Exit status: 0 when every filter was copied and verified, 1 when some key failed, 2 when the
servers could not be used at all (connection, authentication, no CF commands).
"""
import argparse
import socket
import sys
import time
import uuid

FILTER_TYPE = b"MBbloomCF"


class RespError(Exception):
    """An error reply from the server (-ERR ...)."""


class FatalError(Exception):
    """A problem that stops the whole migration."""


class Connection:
    """A minimal RESP2 client: call() sends one command and returns the decoded reply
    (bytes, int, None, or a list of those); error replies raise RespError."""

    def __init__(self, label, address, password=None, username=None, db=0, timeout=60.0):
        self.label = label
        host, port = parse_address(address)
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise FatalError("%s: cannot connect to %s: %s" % (label, address, e))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")
        self.address = address
        try:
            if password:
                self.call(*(["AUTH", username, password] if username else ["AUTH", password]))
            if db:
                self.call("SELECT", db)
        except RespError as e:
            raise FatalError("%s (%s): %s" % (label, address, e))

    def close(self):
        try:
            self.reader.close()
            self.sock.close()
        except OSError:
            pass

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, int):
                a = str(a).encode()
            elif isinstance(a, str):
                a = a.encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        try:
            self.sock.sendall(b"".join(out))
            return self._read()
        except (OSError, EOFError) as e:
            raise FatalError("%s (%s): connection lost: %s" % (self.label, self.address, e))

    def _line(self):
        line = self.reader.readline()
        if not line.endswith(b"\r\n"):
            raise EOFError("connection closed")
        return line[:-2]

    def _read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            # The whole error line is consumed, so the connection stays usable.
            raise RespError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.reader.read(n + 2)
            if len(data) != n + 2:
                raise EOFError("connection closed")
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            if n < 0:
                return None
            items = []
            for _ in range(n):
                try:
                    items.append(self._read())
                except RespError as e:  # an error inside an array (EXEC) is kept as a value
                    items.append(e)
            return items
        raise FatalError("%s: unexpected reply %r" % (self.label, line[:80]))


def parse_address(address):
    """host:port, [v6]:port, or host alone (port 6379)."""
    if address.startswith("["):
        host, _, rest = address[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else "6379"
    elif address.count(":") == 1:
        host, port = address.split(":")
    else:
        host, port = address, "6379"
    try:
        return host or "127.0.0.1", int(port)
    except ValueError:
        raise FatalError("bad address %r (expected host:port)" % address)


def show(key):
    return key.decode("utf-8", errors="backslashreplace")


def require_cf(conn):
    """Fails clearly when the server does not know the CF commands (e.g. Redis without
    RedisBloom). CF.INFO on a key that does not exist changes nothing."""
    probe = "__cf_migrate_probe_%s" % uuid.uuid4().hex
    try:
        conn.call("CF.INFO", probe)
    except RespError as e:
        msg = str(e)
        if "unknown command" in msg.lower():
            raise FatalError("%s (%s) does not know the CF commands (is the RedisBloom module "
                             "loaded?): %s" % (conn.label, conn.address, msg))
        # "ERR not found" (RedisBloom, cuckood) is the expected answer.


def scan_filters(conn, pattern):
    """Keys of type MBbloomCF matching pattern, each once, in SCAN order."""
    seen, keys, cursor = set(), [], b"0"
    while True:
        reply = conn.call("SCAN", cursor, "MATCH", pattern, "TYPE", FILTER_TYPE, "COUNT", 1000)
        cursor, batch = reply[0], reply[1]
        for k in batch:
            if k not in seen:
                seen.add(k)
                keys.append(k)
        if cursor == b"0":
            return keys


def info_map(conn, key):
    reply = conn.call("CF.INFO", key)
    return dict(zip(reply[0::2], reply[1::2]))


def migrate_key(src, dst, key, args, totals):
    """Copies one filter. Returns None on success, or an error message."""
    if dst.call("EXISTS", key):
        if not args.replace:
            return "exists on the target (use --replace to overwrite it)"
    if args.dry_run:
        info = info_map(src, key)
        pttl = src.call("PTTL", key)
        print("would copy %s: %s bytes, %s items%s%s" % (
            show(key), info.get(b"Size"), info.get(b"Number of items inserted"),
            ", ttl %d ms" % pttl if pttl > 0 else "",
            " (replacing the target's key)" if dst.call("EXISTS", key) else ""))
        return None
    if args.replace:
        dst.call("DEL", key)
    chunks = nbytes = 0
    it = 0
    try:
        while True:
            reply = src.call("CF.SCANDUMP", key, it)
            it, data = reply[0], reply[1]
            if it == 0:
                break
            if data is None:
                raise RespError("CF.SCANDUMP returned no data at iterator %d" % it)
            dst.call("CF.LOADCHUNK", key, it, data)
            chunks += 1
            nbytes += len(data)
    except RespError as e:
        # Leave no half-loaded filter behind.
        try:
            dst.call("DEL", key)
        except RespError:
            pass
        return "copy failed after %d chunks: %s" % (chunks, e)
    pttl = src.call("PTTL", key)
    if pttl == -2:
        dst.call("DEL", key)
        return "the key disappeared from the source during the copy (expired or deleted)"
    if pttl > 0:
        dst.call("PEXPIRE", key, pttl)
    src_info, dst_info = info_map(src, key), info_map(dst, key)
    if src_info != dst_info:
        diff = ", ".join("%s: %r vs %r" % (show(k), src_info.get(k), dst_info.get(k))
                         for k in sorted(set(src_info) | set(dst_info))
                         if src_info.get(k) != dst_info.get(k))
        return "CF.INFO differs after the copy (source vs target): %s" % diff
    totals["chunks"] += chunks
    totals["bytes"] += nbytes
    print("copied %s: %d chunks, %d bytes%s" % (show(key), chunks, nbytes,
                                                ", ttl %d ms" % pttl if pttl > 0 else ""))
    return None


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Copy cuckoo filters between servers with CF.SCANDUMP / CF.LOADCHUNK "
                    "(Redis+RedisBloom -> cuckood, or any two servers speaking them).")
    p.add_argument("--from", dest="source", required=True, metavar="HOST:PORT",
                   help="source server")
    p.add_argument("--from-password", metavar="P", help="AUTH password of the source")
    p.add_argument("--from-user", metavar="U", help="ACL user of the source (with --from-password)")
    p.add_argument("--from-db", type=int, default=0, metavar="N", help="database of the source")
    p.add_argument("--to", dest="target", required=True, metavar="HOST:PORT",
                   help="target server")
    p.add_argument("--to-password", metavar="P", help="AUTH password of the target")
    p.add_argument("--to-user", metavar="U", help="ACL user of the target (with --to-password)")
    p.add_argument("--to-db", type=int, default=0, metavar="N", help="database of the target")
    p.add_argument("--match", default="*", metavar="PATTERN",
                   help="copy only keys matching this SCAN pattern (default: *)")
    p.add_argument("--replace", action="store_true",
                   help="delete a key that already exists on the target before loading it")
    p.add_argument("--dry-run", action="store_true", help="list what would be copied, write nothing")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="socket timeout per command (default: 60)")
    args = p.parse_args(argv)

    started = time.time()
    src = dst = None
    try:
        src = Connection("source", args.source, args.from_password, args.from_user,
                         args.from_db, args.timeout)
        dst = Connection("target", args.target, args.to_password, args.to_user,
                         args.to_db, args.timeout)
        require_cf(src)
        require_cf(dst)
        keys = scan_filters(src, args.match)
        print("%d cuckoo filter(s) matching %r on %s" % (len(keys), args.match, args.source))
        totals = {"chunks": 0, "bytes": 0}
        failed = []
        for key in keys:
            try:
                error = migrate_key(src, dst, key, args, totals)
            except RespError as e:
                error = str(e)
            if error:
                failed.append(key)
                print("error: %s: %s" % (show(key), error), file=sys.stderr)
    except FatalError as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    except RespError as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    finally:
        for c in (src, dst):
            if c:
                c.close()

    done = len(keys) - len(failed)
    if args.dry_run:
        print("dry run: %d filter(s) would be copied, %d would fail; nothing was written"
              % (done, len(failed)))
    else:
        print("summary: %d of %d filter(s) copied and verified (%d chunks, %d bytes) in %.1f s; "
              "%d failed" % (done, len(keys), totals["chunks"], totals["bytes"],
                             time.time() - started, len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
