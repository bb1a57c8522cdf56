"""malloc-huge-pages: the server starts itself again once with glibc's allocator settings
(GLIBC_TUNABLES), keeping its pid and name, and leaves an operator's own settings alone."""
import ctypes.util
import os

import pytest
import redis
from cuckood_testlib import binary


# Neither glibc settings nor preloaded libraries from the test's own environment.
CLEAN = {"GLIBC_TUNABLES": None, "LD_PRELOAD": None}


def thread_arenas(pid):
    """glibc's arenas besides the main one: each is a 64 MiB-aligned anonymous reservation of
    64 MiB (its used part read-write, the rest inaccessible), which a thread's first allocation
    makes when glibc may have more than one arena."""
    regions = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            regions.append((start, end, fields[1], len(fields) > 5))
    arenas = 0
    for i, (start, end, perms, named) in enumerate(regions):
        if named or not perms.startswith("rw") or start % (64 << 20) != 0:
            continue
        extent = end
        for nstart, nend, nperms, nnamed in regions[i + 1:]:
            if nstart != extent or nnamed or nperms != "---p":
                break
            extent = nend
        if extent - start == 64 << 20:
            arenas += 1
    return arenas


def load(r):
    """Writes from several connections, so that both io threads allocate."""
    for i in range(8):
        c = redis.Redis(port=r.connection_pool.connection_kwargs["port"], socket_timeout=10)
        p = c.pipeline(transaction=False)
        for j in range(200):
            p.execute_command("CF.ADD", "alloc:%d" % (j % 20), "%d-%d" % (i, j))
        p.execute()


def comm(pid):
    with open("/proc/%d/comm" % pid) as f:
        return f.read().strip()


def client(proc, glibc=True):
    r = redis.Redis(port=proc.port, socket_timeout=10)
    if glibc and r.info("memory")["mem_allocator"] != "libc":
        # (a sanitized build: its allocator is the sanitizer's, which has no glibc arenas)
        pytest.skip("the server's allocator is not glibc's")
    return r


def test_default_sets_the_allocator_and_keeps_pid_and_name(fresh_server):
    proc = fresh_server(env=CLEAN)
    r = client(proc, glibc=False)
    # The process the test started is the one serving (execv keeps the pid).
    assert r.info("server")["process_id"] == proc.proc.pid
    # ps and pgrep show the executable's name, not "exe" (/proc/self/exe was not run).
    assert comm(proc.proc.pid) == os.path.basename(binary())[:15]
    assert r.config_get("malloc-huge-pages") == {"malloc-huge-pages": "yes"}
    r = client(proc)
    load(r)
    assert thread_arenas(proc.proc.pid) == 0  # (glibc.malloc.arena_max=1 in effect)
    # Its data survives a restart of the same kind.
    proc.restart()
    r = client(proc)
    assert r.execute_command("CF.EXISTS", "alloc:0", "0-0") == 1
    load(r)
    assert thread_arenas(proc.proc.pid) == 0


def test_no_leaves_glibc_defaults(fresh_server):
    proc = fresh_server("--malloc-huge-pages", "no", env=CLEAN)
    r = client(proc)
    assert r.info("server")["process_id"] == proc.proc.pid
    assert r.config_get("malloc-huge-pages") == {"malloc-huge-pages": "no"}
    with pytest.raises(redis.ResponseError):
        r.config_set("malloc-huge-pages", "yes")  # (start-up only)
    load(r)
    assert thread_arenas(proc.proc.pid) > 0  # (the io threads' own arenas, as glibc makes them)


def test_operator_setting_is_kept(fresh_server):
    proc = fresh_server(env=dict(CLEAN, GLIBC_TUNABLES="glibc.malloc.hugetlb=0"))
    r = client(proc)
    assert r.info("server")["process_id"] == proc.proc.pid
    load(r)
    assert thread_arenas(proc.proc.pid) > 0  # (nothing added to the operator's tunables)


def test_other_tunables_are_kept_beside_the_servers(fresh_server):
    proc = fresh_server(env=dict(CLEAN, GLIBC_TUNABLES="glibc.malloc.tcache_count=7"))
    r = client(proc)
    assert r.info("server")["process_id"] == proc.proc.pid
    load(r)
    assert thread_arenas(proc.proc.pid) == 0


def test_a_preloaded_library_is_left_alone(fresh_server):
    # (an allocator or tool the operator preloads, e.g. jemalloc or valgrind's: glibc's malloc
    # may not be what serves, so the server does not execute itself again)
    libm = ctypes.util.find_library("m")
    if libm is None:
        pytest.skip("no libm to preload")
    proc = fresh_server(env=dict(CLEAN, LD_PRELOAD=libm))
    r = client(proc)
    assert r.info("server")["process_id"] == proc.proc.pid
    load(r)
    assert thread_arenas(proc.proc.pid) > 0
