#!/usr/bin/env bash
# Builds cuckood with sanitizers in a separate folder and runs tests there.
#
#   scripts/sanitize.sh [asan|tsan] [extra ctest args...]
#
#   asan  build-asan/, -DCUCKOOD_SANITIZE=address,undefined, the whole ctest suite
#         (extra args go to ctest, e.g. `-LE compat` to skip the real-client suites).
#   tsan  build-tsan/, -DCUCKOOD_SANITIZE=thread, the concurrency-relevant tests: the storage and
#         server Catch2 tests (lock stripes, versions, compaction with RocksDB's background
#         threads, statistics) and the integration tests test_concurrency.py,
#         test_transactions.py, test_key_affinity.py and test_adaptive_io_threads.py
#         (connections moving between io threads)
#         against the TSan binary (extra args go to that ctest run;
#         SANITIZE_PYTEST=tests/integration runs the whole integration suite instead, ~5 min).
#
# Zero reports are required. Every sanitizer writes its reports to files under
# <build>/sanitizer-logs/ (log_path) as well as failing the process (halt_on_error), because the
# integration tests run the server as a child whose stderr goes to a log and whose exit status is
# not always checked; the script fails when any report file is left. TSan suppressions are in
# scripts/tsan.supp and cover third-party code only. Environment: CXX (default clang++-14 when
# installed, which builds several times faster than g++ with sanitizers; else c++), JOBS (build
# parallelism, default nproc), NICE (niceness of the build and tests, default 10).
main() {
  set -euo pipefail
  cd "$(dirname "$0")/.."
  ROOT=$(pwd)

  MODE=${1:-asan}
  shift || true
  JOBS=${JOBS:-$(nproc)}
  NICE=${NICE:-10}
  # The interpreter tests/CMakeLists.txt runs the Python suites with.
  local python=/usr/bin/python3
  [ -x "$python" ] || python=python3

  case "$MODE" in
    asan)
      BUILD=build-asan
      SANITIZE="address,undefined"
      ;;
    tsan)
      BUILD=build-tsan
      SANITIZE="thread"
      ;;
    *)
      echo "usage: $0 [asan|tsan] [extra ctest args...]" >&2
      exit 2
      ;;
  esac

  if [ -z "${CXX:-}" ]; then
    if command -v clang++-14 >/dev/null 2>&1; then CXX=clang++-14; else CXX=c++; fi
  fi
  export CXX

  LOGS="$ROOT/$BUILD/sanitizer-logs"
  start=$(date +%s)

  # GCC warns (-Wtsan) that TSan does not model std::atomic_thread_fence, which Asio's handler
  # invocation uses; with -Werror that stops the build. The warning is about Asio's code (TSan
  # still sees the mutexes Asio's scheduler hands work over with); silence it where the compiler
  # knows it.
  local cxx_flags=""
  if [ "$MODE" = tsan ] &&
    echo 'int main(){}' | "$CXX" -x c++ -Werror -Wno-tsan -fsyntax-only - 2>/dev/null; then
    cxx_flags="-Wno-tsan"
  fi
  nice -n "$NICE" cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$CXX" -DCUCKOOD_SANITIZE="$SANITIZE" -DCMAKE_CXX_FLAGS="$cxx_flags" \
    ${CMAKE_ARGS:-} >/dev/null
  # TSan runs only the server, storage and server tests: the rest is not built.
  targets=()
  [ "$MODE" = tsan ] && targets=(--target cuckood cuckood_storage_tests cuckood_server_tests)
  nice -n "$NICE" cmake --build "$BUILD" -j"$JOBS" "${targets[@]}"
  built=$(date +%s)
  echo "sanitize.sh: $MODE build took $((built - start)) s"

  rm -rf "$LOGS"
  mkdir -p "$LOGS"

  # Reports go to $LOGS/<tool>.<pid>. ASan and UBSan stop the process at the first one; TSan
  # reports every race it sees and makes the process exit with status 66 at the end. TSan ignores
  # the memory functions uninstrumented libraries call (ignore_noninstrumented_modules): RocksDB
  # synchronises its own threads with atomics TSan cannot see (see scripts/tsan.supp).
  export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:strict_init_order=1:check_initialization_order=1:detect_stack_use_after_return=0:log_path=$LOGS/asan"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$LOGS/ubsan"
  export TSAN_OPTIONS="halt_on_error=0:ignore_noninstrumented_modules=1:second_deadlock_stack=1:history_size=7:suppressions=$ROOT/scripts/tsan.supp:log_path=$LOGS/tsan"
  export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
  # Lets a test skip checks that cannot hold for a sanitizer build (the Docker packaging check:
  # a sanitizer binary links its runtime, which the image does not ship).
  export CUCKOOD_SANITIZER="$MODE"

  status=0
  if [ "$MODE" = asan ]; then
    nice -n "$NICE" ctest --test-dir "$BUILD" --output-on-failure -j2 --timeout 1500 "$@" || status=$?
  else
    # Lock order checking is off: FLUSHDB / FLUSHALL, SWAPDB and a slot range's deletion hold all
    # 4096 key stripes at once, past the 64 held locks TSan's deadlock detector can track (it
    # fails a CHECK in sanitizer_deadlock_detector.h and then spins). Races are still reported;
    # the lock tests check freedom from deadlock themselves (with deadlines).
    export TSAN_OPTIONS="$TSAN_OPTIONS:detect_deadlocks=0"
    # The storage and server unit tests: lock stripes, versions and statistics from many threads,
    # and RocksDB's background threads calling our compaction filter and merge operator. (The core
    # tests are single-threaded.)
    nice -n "$NICE" ctest --test-dir "$BUILD" --output-on-failure -j2 --timeout 900 \
      -R '^(storage|server):' "$@" || status=$?
    # The server under concurrent clients, MULTI/EXEC, and connections moving between io threads
    # (the tests start the TSan binary).
    TSAN_OPTIONS="$TSAN_OPTIONS" \
      CUCKOOD_BIN="$ROOT/$BUILD/server/cuckood" nice -n "$NICE" "$python" -m pytest -q \
      -p no:cacheprovider ${SANITIZE_PYTEST:-tests/integration/test_concurrency.py \
      tests/integration/test_transactions.py tests/integration/test_key_affinity.py \
      tests/integration/test_adaptive_io_threads.py} ||
      status=$?
  fi

  reports=$(find "$LOGS" -type f | sort)
  if [ -n "$reports" ]; then
    echo "sanitize.sh: sanitizer reports (one file per process; the first report of each):" >&2
    for f in $reports; do
      echo "==== $f: $(grep -c '^SUMMARY' "$f") report(s)" >&2
      grep '^SUMMARY' "$f" | sort | uniq -c | sort -rn | head -n 20 >&2
      awk '/^SUMMARY/ {exit} {print}' "$f" | head -n 120 >&2
    done
    status=1
  fi
  echo "sanitize.sh: $MODE done in $(($(date +%s) - start)) s (tests $(($(date +%s) - built)) s)," \
    "status $status"
  exit "$status"
}
# (Read whole before it runs, so editing this file during a run is harmless.)
main "$@"
