"""Backups: BGSAVE writes a consistent checkpoint to dir/backup, LASTSAVE reports it, and a server
started on a copy of that folder serves the same data, while writes go on meanwhile."""
import shutil
import threading
import time

import pytest
from cuckood_nodes import snapshot

redis = pytest.importorskip("redis")


def test_bgsave_backup_restores_the_same_data(nodes, tmp_path):
    n = nodes.start("p")
    c = n.client()
    c.execute_command("CF.RESERVE", "f", 50000, "BUCKETSIZE", 4)
    c.execute_command("CF.INSERT", "f", "ITEMS", *["i%d" % i for i in range(3000)])
    c.execute_command("SET", "s", "v")
    c.execute_command("PEXPIRE", "s", 100000000)
    before = c.execute_command("LASTSAVE")
    time.sleep(1.1)
    stop = threading.Event()

    def writer():  # writes to another key while the backup is taken
        w = n.client()
        i = 0
        while not stop.is_set():
            w.execute_command("CF.ADD", "other", "x%d" % i)
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        f_dump = snapshot(c)[0][b"f"]
        assert c.execute_command("BGSAVE") in (True, b"Background saving started")
    finally:
        stop.set()
        t.join()
    assert c.execute_command("LASTSAVE") > before
    backup = tmp_path / "p" / "data" / "backup"
    assert (backup / "CURRENT").exists()
    # A second BGSAVE replaces the first.
    c.execute_command("CF.ADD", "f", "after-first-backup")
    c.execute_command("BGSAVE")
    copy = tmp_path / "restored"
    shutil.copytree(backup, copy)
    r = nodes.start("restored-node", data_dir=copy)
    rc = r.client()
    got = snapshot(rc)[0]
    assert got[b"f"]["dump"] != f_dump["dump"]  # the second backup holds the later item
    assert rc.execute_command("CF.EXISTS", "f", "after-first-backup") == 1
    assert rc.execute_command("CF.EXISTS", "f", "i17") == 1
    assert rc.execute_command("GET", "s") == b"v"
    assert rc.execute_command("PEXPIRETIME", "s") == c.execute_command("PEXPIRETIME", "s")
    assert rc.execute_command("CF.INFO", "f") == c.execute_command("CF.INFO", "f")
    r.proc.stop()
    code, out = nodes.check(r)
    assert code == 0, out
