#!/usr/bin/env bash
# Sets up (packages + build) and runs the whole test suite: Catch2 unit tests, the integration
# tests against the real binary, real clients and the RedisBloom golden replays, all under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --build build -j"$(nproc)"  # (the tests and tools, beyond the server)
if command -v clang-format >/dev/null 2>&1; then
  git ls-files '*.cc' '*.h' | xargs clang-format --dry-run --Werror
fi
ctest --test-dir build --output-on-failure -j2 --timeout 1500
