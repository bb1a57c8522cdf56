"""Shared fixtures: start the real cuckood binary on a free port with its own data directory."""
import os
import socket
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cuckood_testlib import CuckoodProcess, free_port  # noqa: E402,F401


@pytest.fixture(scope="session")
def server():
    """One server for the session; tests must use their own key names."""
    with tempfile.TemporaryDirectory(prefix="cuckood-it-") as d:
        proc = CuckoodProcess(os.path.join(d, "data"))
        proc.start()
        yield proc
        proc.stop()


@pytest.fixture
def fresh_server(tmp_path):
    """A server of its own, for tests that restart it or change its configuration."""
    procs = []

    def make(*extra_args, data_dir=None):
        p = CuckoodProcess(str(data_dir or tmp_path / "data"), extra_args=list(extra_args))
        p.start()
        procs.append(p)
        return p

    yield make
    for p in procs:
        p.stop()
