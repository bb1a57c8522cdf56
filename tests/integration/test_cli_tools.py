"""redis-cli's monitoring modes against cuckood: --latency and --stat read PING and INFO."""
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("redis-cli") is None, reason="redis-cli missing")


def run_for(args, seconds):
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        out, _ = p.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        p.terminate()
        out, _ = p.communicate(timeout=10)
    return out.decode(errors="replace")


def test_latency_mode_measures_pings(server):
    out = run_for(["redis-cli", "-p", str(server.port), "--latency", "--raw", "-i", "1"], 3)
    # --raw prints "min max avg samples" lines
    lines = [l.split() for l in out.splitlines() if l.strip()]
    assert lines, out
    fields = lines[-1]
    assert len(fields) == 4, out
    assert int(fields[3]) > 0  # samples taken
    assert float(fields[0]) <= float(fields[2]) <= float(fields[1])


def test_stat_mode_reads_info(server):
    # --stat does not flush its output when it is not a terminal: stdbuf makes it unbuffered.
    out = run_for(["stdbuf", "-o0", "redis-cli", "-p", str(server.port), "--stat", "-i", "1"], 3)
    assert "keys" in out and "clients" in out and "requests" in out, out
    rows = [l.split() for l in out.splitlines() if l[:1].isdigit()]
    assert rows, out  # one row of figures a second
    assert "ERR" not in out and "Error" not in out, out
