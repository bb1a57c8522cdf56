"""redis-py compatibility suite: runs only under scripts/compat.sh python, in its own virtualenv
(build/compat-venv, pinned by requirements.txt) against a cuckood that the script started.

The ctest suite "pytest: compat" also walks tests/compat with the system Python; there these
files are skipped at collection time (they need the pinned redis-py and the script's server)."""
import os
import re

import pytest

if os.environ.get("CUCKOOD_COMPAT_SUITE") != "python":
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def address():
    """The server scripts/compat.sh started for this suite alone; emptied once at the start."""
    import redis

    host, port = os.environ.get("CUCKOOD_HOST", "127.0.0.1"), int(os.environ["CUCKOOD_PORT"])
    with redis.Redis(host=host, port=port) as c:
        c.flushall()
    return host, port


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def proto(request):
    return request.param


@pytest.fixture
def r(address, proto):
    import redis

    c = redis.Redis(host=address[0], port=address[1], protocol=proto, socket_timeout=60)
    yield c
    c.close()


@pytest.fixture
def key(request, proto):
    """Unique key names per test and parameters, so that tests never see each other's data."""
    base = "py:" + re.sub(r"[][*?\\]", "_", request.node.name)  # no glob characters (SCAN MATCH)

    def make(suffix=""):
        return base + (":" + suffix if suffix else "")

    return make
