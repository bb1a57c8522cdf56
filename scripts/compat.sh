#!/usr/bin/env bash
# Real-client compatibility suites: cuckood driven by the Redis clients applications use.
#
#   scripts/compat.sh [python|node|go|java|all]...      (no argument = all)
#
#   python  redis-py (r.cf(), RESP2 + RESP3)  pytest      venv in build/compat-venv
#   node    node-redis + @redis/bloom         node --test node_modules in build/compat-node
#   go      go-redis v9                       go test     GOPATH/GOMODCACHE in build/compat-go
#   java    Jedis (cf* commands)              Maven       ~/.m2, output in build/compat-java
#
# Each suite installs its pinned client when missing or changed (idempotent, cached), gets a
# cuckood of its own on a free loopback port with a temporary data directory, runs, and stops the
# server. The python, node and go suites also get a 3-node cluster (CUCKOOD_CLUSTER_NODES) for
# their cluster clients (RedisCluster, createCluster, ClusterClient). The exit status is
# non-zero if any suite failed, or if one of its servers died during the run.
#
# Environment: CUCKOOD_BIN (default build/server/cuckood), CUCKOOD_COMPAT_DIR (where the caches go,
# default build/), CUCKOOD_COMPAT_TIMEOUT (seconds per suite run, default 900).
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
COMPAT="$REPO/tests/compat"
BUILD="${CUCKOOD_COMPAT_DIR:-$REPO/build}"
BIN="${CUCKOOD_BIN:-$REPO/build/server/cuckood}"
SUITE_TIMEOUT="${CUCKOOD_COMPAT_TIMEOUT:-900}"
PY=/usr/bin/python3

log() { printf '[compat] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }

mkdir -p "$BUILD" || die "cannot create $BUILD"
[ -x "$BIN" ] || die "cuckood binary not found at $BIN (build it, or set CUCKOOD_BIN)"

sha() { cat "$@" | sha256sum | cut -d' ' -f1; }

# ---------------------------------------------------------------- Debian packages

APT_UPDATED=0
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  log "installing Debian packages: ${missing[*]}"
  (
    flock -w 900 9 || exit 1
    if [ "$APT_UPDATED" -eq 0 ]; then
      $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq || exit 1
    fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
      --no-install-recommends "${missing[@]}"
  ) 9>"$BUILD/compat-apt.lock" || return 1
  APT_UPDATED=1
}

# ---------------------------------------------------------------- the server

SERVER_PID=""
SERVER_TMP=""

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_server() {
  local attempt port
  SERVER_TMP="$(mktemp -d "${TMPDIR:-/tmp}/cuckood-compat.XXXXXX")"
  for attempt in 1 2 3; do
    port="$(free_port)"
    "$BIN" --bind 127.0.0.1 --port "$port" --dir "$SERVER_TMP/data" --workers 2 \
      --loglevel notice >>"$SERVER_TMP/cuckood.log" 2>&1 9>&- &
    SERVER_PID=$!
    local deadline=$((SECONDS + 30))
    while [ $SECONDS -lt $deadline ]; do
      if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        break
      fi
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        export CUCKOOD_HOST=127.0.0.1 CUCKOOD_PORT="$port"
        log "cuckood (pid $SERVER_PID) listening on 127.0.0.1:$port, data in $SERVER_TMP"
        return 0
      fi
      sleep 0.1
    done
    log "cuckood did not come up on port $port (attempt $attempt):"
    tail -n 20 "$SERVER_TMP/cuckood.log" >&2
    kill -9 "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
    SERVER_PID=""
  done
  return 1
}

# Stops the server; fails if it had died before (a crash during the suite).
stop_server() {
  local rc=0
  if [ -n "$SERVER_PID" ]; then
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      wait "$SERVER_PID" 2>/dev/null
      log "cuckood died during the suite (exit status $?); its log ends with:"
      tail -n 40 "$SERVER_TMP/cuckood.log" >&2
      rc=1
    else
      kill -TERM "$SERVER_PID" 2>/dev/null
      local i
      for i in $(seq 1 300); do
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
      done
      if kill -0 "$SERVER_PID" 2>/dev/null; then
        log "cuckood did not stop on SIGTERM within 30 s; killing it"
        kill -9 "$SERVER_PID" 2>/dev/null
        rc=1
      fi
      wait "$SERVER_PID" 2>/dev/null
    fi
    SERVER_PID=""
  fi
  [ -n "$SERVER_TMP" ] && rm -rf "$SERVER_TMP"
  SERVER_TMP=""
  unset CUCKOOD_HOST CUCKOOD_PORT
  return $rc
}

# ---------------------------------------------------------------- a 3-node cluster

# Suites that also get a cluster: three cluster-enabled nodes, one shard each (slots split as
# the controller splits them), the topology pushed with CLUSTERX SETNODEID / SETNODES through
# redis-cli (the data nodes' side of what kvrocks-controller sends). CUCKOOD_CLUSTER_NODES
# names them: "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3".
CLUSTER_SUITES=" python node go "
CLUSTER_PIDS=()
CLUSTER_TMP=""

start_cluster() {
  command -v redis-cli >/dev/null 2>&1 || apt_install redis-tools || return 1
  CLUSTER_TMP="$(mktemp -d "${TMPDIR:-/tmp}/cuckood-compat-cluster.XXXXXX")"
  local i port ports=() ids=() topology="" addrs="" ranges=(0-5460 5461-10921 10922-16383)
  for i in 0 1 2; do
    port="$(free_port)"
    "$BIN" --bind 127.0.0.1 --port "$port" --dir "$CLUSTER_TMP/node$i" --workers 1 \
      --cluster-enabled yes --loglevel notice >>"$CLUSTER_TMP/node$i.log" 2>&1 9>&- &
    CLUSTER_PIDS+=($!)
    ports+=("$port")
    ids+=("$(printf 'compat%034d' "$i")")  # 40 characters of [A-Za-z0-9]
  done
  for i in 0 1 2; do
    local deadline=$((SECONDS + 30))
    until (exec 3<>"/dev/tcp/127.0.0.1/${ports[$i]}") 2>/dev/null; do
      if [ $SECONDS -ge $deadline ] || ! kill -0 "${CLUSTER_PIDS[$i]}" 2>/dev/null; then
        log "cluster node $i did not come up on port ${ports[$i]}:"
        tail -n 20 "$CLUSTER_TMP/node$i.log" >&2
        return 1
      fi
      sleep 0.1
    done
    topology+="${ids[$i]} 127.0.0.1 ${ports[$i]} master - ${ranges[$i]}"$'\n'
    addrs+="${addrs:+,}127.0.0.1:${ports[$i]}"
  done
  for i in 0 1 2; do
    if [ "$(redis-cli -p "${ports[$i]}" CLUSTERX SETNODEID "${ids[$i]}")" != OK ] ||
      [ "$(redis-cli -p "${ports[$i]}" CLUSTERX SETNODES "$topology" 1)" != OK ]; then
      log "cluster node $i refused the topology"
      return 1
    fi
  done
  export CUCKOOD_CLUSTER_NODES="$addrs"
  log "cluster of 3 nodes (pids ${CLUSTER_PIDS[*]}) on $addrs, data in $CLUSTER_TMP"
}

# Stops the cluster's nodes; fails if one had died before.
stop_cluster() {
  local rc=0 i pid
  for i in "${!CLUSTER_PIDS[@]}"; do
    pid="${CLUSTER_PIDS[$i]}"
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid" 2>/dev/null
      log "cluster node $i died during the suite; its log ends with:"
      tail -n 40 "$CLUSTER_TMP/node$i.log" >&2
      rc=1
      continue
    fi
    kill -TERM "$pid" 2>/dev/null
  done
  for i in "${!CLUSTER_PIDS[@]}"; do
    pid="${CLUSTER_PIDS[$i]}"
    local n
    for n in $(seq 1 300); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "cluster node $i did not stop on SIGTERM within 30 s; killing it"
      kill -9 "$pid" 2>/dev/null
      rc=1
    fi
    wait "$pid" 2>/dev/null
  done
  CLUSTER_PIDS=()
  [ -n "$CLUSTER_TMP" ] && rm -rf "$CLUSTER_TMP"
  CLUSTER_TMP=""
  unset CUCKOOD_CLUSTER_NODES
  return $rc
}

trap 'stop_server >/dev/null 2>&1; stop_cluster >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- per-suite setup and run

setup_python() {
  "$PY" -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv || return 1
  local venv="$BUILD/compat-venv" req="$COMPAT/python/requirements.txt" want
  want="$(sha "$req")"
  if [ "$(cat "$venv/.compat-stamp" 2>/dev/null)" = "$want" ] && [ -x "$venv/bin/python" ]; then
    return 0
  fi
  log "python: installing $(grep -E '^(redis|pytest)==' "$req" | tr '\n' ' ')into $venv"
  [ -x "$venv/bin/python" ] || "$PY" -m venv "$venv" || return 1
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$req" || return 1
  echo "$want" >"$venv/.compat-stamp"
}

run_python() {
  CUCKOOD_COMPAT_SUITE=python "$BUILD/compat-venv/bin/python" -m pytest -q -rfE \
    -p no:cacheprovider --confcutdir="$COMPAT/python" "$COMPAT/python"
}

setup_node() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    apt_install nodejs npm || return 1
  fi
  local major
  major="$(node -p 'process.versions.node.split(".")[0]')"
  if [ "$major" -lt 20 ]; then
    log "node: node-redis 6 needs Node.js >= 20, this is $(node --version)"
    return 1
  fi
  local dir="$BUILD/compat-node" want
  want="$(sha "$COMPAT/node/package.json" "$COMPAT/node/package-lock.json")"
  if [ "$(cat "$dir/.compat-stamp" 2>/dev/null)" = "$want" ] && [ -d "$dir/node_modules/redis" ]; then
    return 0
  fi
  log "node: npm ci into $dir"
  mkdir -p "$dir" && cp "$COMPAT/node/package.json" "$COMPAT/node/package-lock.json" "$dir/" &&
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || return 1
  echo "$want" >"$dir/.compat-stamp"
}

run_node() {
  NODE_PATH="$BUILD/compat-node/node_modules" node --test "$COMPAT/node/cf.test.js" \
    "$COMPAT/node/cluster.test.js"
}

go_env() {
  export GOPATH="$BUILD/compat-go" GOMODCACHE="$BUILD/compat-go/pkg/mod"
  export GOFLAGS="-modcacherw -mod=readonly -buildvcs=false" GOTOOLCHAIN=local
}

setup_go() {
  command -v go >/dev/null 2>&1 || apt_install golang-go || return 1
  go_env
  local need have
  need="$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$COMPAT/go/go.mod")"
  have="$(go env GOVERSION | sed 's/^go//')"
  if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n1)" != "$need" ]; then
    log "go: tests/compat/go/go.mod needs go $need, this is go $have"
    return 1
  fi
  (cd "$COMPAT/go" && go mod download) || return 1
}

run_go() {
  go_env
  (cd "$COMPAT/go" && go test -count=1 -v ./...)
}

setup_java() {
  if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
    apt_install maven default-jdk-headless || return 1
  fi
}

run_java() {
  mvn -B -ntp -Dstyle.color=never -f "$COMPAT/java/pom.xml" -Dcompat.buildDir="$BUILD/compat-java" \
    test
  local rc=$?
  echo # Maven ends with a colour reset and no newline
  return $rc
}

run_suite() {
  local suite=$1 t0=$SECONDS rc
  log "== $suite: setup"
  (
    trap 'stop_server >/dev/null 2>&1; stop_cluster >/dev/null 2>&1' EXIT
    trap 'exit 130' INT TERM
    flock -w 1800 9 || { log "$suite: could not lock $BUILD/compat-$suite.lock"; exit 1; }
    "setup_$suite" || { log "$suite: setup failed"; exit 1; }
    log "== $suite: setup done after $((SECONDS - t0)) s"
    start_server || exit 1
    if [[ "$CLUSTER_SUITES" == *" $suite "* ]]; then
      start_cluster || exit 1
    fi
    local t1=$SECONDS
    timeout -k 30 "$SUITE_TIMEOUT" bash -c "$(declare -f go_env "run_$suite"); run_$suite"
    rc=$?
    [ $rc -eq 124 ] && log "$suite: timed out after $SUITE_TIMEOUT s"
    stop_server || rc=1
    stop_cluster || rc=1
    log "== $suite: tests took $((SECONDS - t1)) s"
    exit $rc
  ) 9>"$BUILD/compat-$suite.lock"
  rc=$?
  log "== $suite: $([ $rc -eq 0 ] && echo PASSED || echo "FAILED (status $rc)") in $((SECONDS - t0)) s"
  return $rc
}

# ---------------------------------------------------------------- main

suites=()
[ $# -eq 0 ] && set -- all
for arg in "$@"; do
  case "$arg" in
    all) suites+=(python node go java) ;;
    python | node | go | java) suites+=("$arg") ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown suite '$arg' (python, node, go, java or all)" ;;
  esac
done

export BUILD COMPAT PY
passed=0
failed=0
failed_names=()
for suite in "${suites[@]}"; do
  if run_suite "$suite"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failed_names+=("$suite")
  fi
done
if [ ${#suites[@]} -gt 1 ]; then
  [ $failed -gt 0 ] && log "failed suites: ${failed_names[*]}"
  echo "compat suites: $passed passed, $failed failed"
fi
[ $failed -eq 0 ]
