#!/usr/bin/env bash
# Installs the Debian 12 packages cuckood needs (build and test), then builds it into ./build.
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
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The Debian redis-server package starts a service on 6379; cuckood wants that port.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet redis-server 2>/dev/null; then
  systemctl stop redis-server || true
fi
pkill -x redis-server 2>/dev/null || true

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-}
cmake --build build -j"$(nproc)"
