"""Shared fixtures (tests/lib/cuckood_fixtures.py): the real cuckood binary on a free port with
its own data directory."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cuckood_fixtures import fresh_server, server  # noqa: E402,F401
from cuckood_testlib import CuckoodProcess, free_port  # noqa: E402,F401
from cuckood_nodes import nodes, pytest_runtest_makereport  # noqa: E402,F401
