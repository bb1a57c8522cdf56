#!/usr/bin/env bash
# Installs the Debian 12 packages cuckood needs (build and test), then builds the server into
# ./build (only the server: scripts/test.sh builds the tests). It never stops or kills anything
# it did not start: when redis-server (a test baseline) is installed here for the first time, its
# service is kept from starting; a Redis that already runs is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake librocksdb-dev libasio-dev libspdlog-dev libcli11-dev catch2 libssl-dev
          redis-tools redis-server python3 python3-pytest python3-redis clang-format)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  # Debian starts the service of a newly installed redis-server on port 6379: a policy-rc.d
  # that refuses service starts (exit 101) keeps it from starting during this install only.
  policy=""
  if [[ " ${missing[*]} " == *" redis-server "* ]] && [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod +x "$policy"
    trap '$SUDO rm -f "$policy"' EXIT
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  if [ -n "$policy" ]; then
    $SUDO rm -f "$policy"
    trap - EXIT
  fi
fi

BUILD_DIR=${CUCKOOD_BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$(nproc)" --target cuckood

# The README's first command starts cuckood on 6379 next: say so now if something listens there.
if command -v redis-cli >/dev/null 2>&1 && redis-cli -p 6379 ping >/dev/null 2>&1; then
  echo "setup: port 6379 is taken (a Redis or another cuckood answers there)." >&2
  echo "setup: start cuckood on another port: ./build/server/cuckood --config conf/cuckood.conf --port 6380" >&2
fi
