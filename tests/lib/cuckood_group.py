"""Several cuckood servers at once (cluster, replication): each on a free port with its own
directory, conditions awaited with deadlines, and only the processes started here stopped, by
pid, in a finally. Logs of every node are printed when the block fails."""
import os
import sys
import time

from cuckood_testlib import CuckoodProcess

# Lean servers: CI has 2 cores shared by every test.
LEAN_ARGS = ["--workers", "1", "--cache-size", "8mb", "--block-cache-size", "8mb",
             "--write-buffer-size", "4mb"]


def wait_for(condition, timeout=10.0, what="condition", interval=0.05):
    """Polls condition() until it returns a true value (returned) or the deadline passes."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 (a node may not be ready yet)
            last_error = e
        time.sleep(interval)
    raise AssertionError("timed out after %.1fs waiting for %s (last error: %r)"
                         % (timeout, what, last_error))


class ServerGroup:
    """`with ServerGroup(tmp_path, 3, ["--cluster-enabled", "yes"]) as g:` starts three nodes;
    g.nodes[i] is a CuckoodProcess (port, data_dir, restart(), stop())."""

    def __init__(self, base_dir, count, extra_args=()):
        self.nodes = [CuckoodProcess(os.path.join(str(base_dir), "node%d" % i, "data"),
                                     extra_args=LEAN_ARGS + list(extra_args))
                      for i in range(count)]

    def __enter__(self):
        try:
            for node in self.nodes:
                os.makedirs(os.path.dirname(node.data_dir), exist_ok=True)
                node.start()
        except BaseException:
            self.stop(failed=True)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop(failed=exc_type is not None)
        return False

    def stop(self, failed=False):
        for node in self.nodes:
            try:
                node.stop()  # SIGTERM to this process's own pid, then SIGKILL after a deadline
            except Exception as e:  # noqa: BLE001 (stop the others anyway)
                print("stopping node on port %d: %r" % (node.port, e), file=sys.stderr)
        if failed:
            for node in self.nodes:
                print("---- log of node on port %d ----\n%s" % (node.port, node.read_log()),
                      file=sys.stderr)
