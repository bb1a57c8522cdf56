"""scripts/setup.sh (the README's first command) never stops a Redis the user runs: run twice
while a redis-server listens on 6379, it leaves that server running and says the port is taken."""
import os
import shutil
import socket
import subprocess
import time

import pytest
from cuckood_testlib import REPO, binary


def port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs Debian's redis-server")
def test_setup_leaves_a_running_redis_alone(tmp_path):
    if not port_free(6379):
        pytest.skip("port 6379 is in use on this machine")
    redis_proc = subprocess.Popen(
        ["redis-server", "--port", "6379", "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while port_free(6379) and time.time() < deadline:
            time.sleep(0.05)
        build_dir = os.path.dirname(os.path.dirname(binary()))
        env = dict(os.environ, CUCKOOD_BUILD_DIR=build_dir)
        for _ in range(2):
            r = subprocess.run(["bash", os.path.join(REPO, "scripts", "setup.sh")], env=env,
                               capture_output=True, text=True, timeout=1200)
            assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
            assert "port 6379 is taken" in r.stderr
            assert "--port" in r.stderr
            assert redis_proc.poll() is None, "setup.sh stopped the running redis-server"
        ping = subprocess.run(["redis-cli", "-p", "6379", "ping"], capture_output=True, text=True)
        assert ping.stdout.strip() == "PONG"
        # And cuckood started on the taken port says how to pick another one.
        c = subprocess.run([binary(), "--port", "6379", "--dir", str(tmp_path / "data")],
                           capture_output=True, text=True, timeout=60)
        assert c.returncode != 0
        assert "--port" in c.stdout + c.stderr
    finally:
        redis_proc.terminate()
        redis_proc.wait(timeout=10)
