"""Replays RedisBloom's recorded sessions (tests/goldens/*.jsonl) against cuckood and compares
every reply byte for byte. One test per recorded scenario; a scenario runs on a fresh connection
after FLUSHALL, and RESP3 scenarios begin with their HELLO 3 setup step."""
import base64
import glob
import json
import os

import pytest

from cuckood_testlib import RawClient

GOLDEN_DIR = os.path.join(os.path.dirname(__file__), "..", "goldens")


def load_scenarios():
    out = []
    for path in sorted(glob.glob(os.path.join(GOLDEN_DIR, "*.jsonl"))):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    scenario = json.loads(line)
                    out.append(pytest.param(scenario, id=scenario["name"]))
    return out


def decode_args(step):
    if step.get("b64"):
        return [base64.b64decode(a) for a in step["cmd"]]
    return [a.encode() for a in step["cmd"]]


def shorten(b, n=300):
    return b if len(b) <= n else b[:n] + b"...(%d bytes)" % len(b)


@pytest.mark.parametrize("scenario", load_scenarios())
def test_golden_scenario(server, scenario):
    client = RawClient(server.port, timeout=120)
    try:
        assert client.call("FLUSHALL") == b"+OK\r\n"
        mismatches = []
        for i, step in enumerate(scenario["steps"]):
            args = decode_args(step)
            reply = client.call(*args)
            if step.get("setup"):
                continue
            expected = base64.b64decode(step["reply"])
            if reply != expected:
                mismatches.append("step %d %r:\n  expected %r\n  got      %r" % (
                    i, [shorten(a, 60) for a in args[:6]], shorten(expected), shorten(reply)))
                if len(mismatches) >= 10:
                    break
        assert not mismatches, "\n".join(mismatches)
    finally:
        client.close()
