"""pytest fixtures shared by the Python suites (tests/integration, tests/compat): the real cuckood
binary on a free port with its own data directory. Each suite's conftest.py imports them."""
import os
import tempfile

import pytest
from cuckood_testlib import CuckoodProcess


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

    def make(*extra_args, data_dir=None, env=None):
        p = CuckoodProcess(str(data_dir or tmp_path / "data"), extra_args=list(extra_args),
                           env=env)
        p.start()
        procs.append(p)
        return p

    yield make
    for p in procs:
        p.stop()
