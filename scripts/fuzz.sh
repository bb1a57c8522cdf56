#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ into build-fuzz/ (clang, ASan + UBSan) and runs each for
# a bounded time, starting from its seed corpus fuzz/corpus/<target>/. Fails on any crash,
# sanitizer report, leak, timeout or out-of-memory; the input that caused it is saved as
# build-fuzz/artifacts/<target>-crash-<sha1> (replay: build-fuzz/<target> <that file>).
#
#   scripts/fuzz.sh [seconds per target, default 20] [target...]
#
# New inputs that reach new code are kept in build-fuzz/corpus/<target>/ (cache that folder in
# CI to carry coverage across runs; add a small interesting one to fuzz/corpus/ by hand).
# Environment: CXX (default clang++-14), JOBS (targets run at once, default nproc), NICE
# (default 10), FUZZ_SERVER=1 to also build and run fuzz_cf_argv (CF argv through the whole
# server over RocksDB; its build adds several minutes).
main() {
  set -euo pipefail
  cd "$(dirname "$0")/.."
  ROOT=$(pwd)

  SECONDS_PER_TARGET=${1:-20}
  shift || true
  CXX=${CXX:-clang++-14}
  JOBS=${JOBS:-$(nproc)}
  NICE=${NICE:-10}
  BUILD="$ROOT/build-fuzz"

  if ! command -v "$CXX" >/dev/null 2>&1; then
    echo "fuzz.sh: $CXX not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
    exit 2
  fi

  start=$(date +%s)
  generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  server=OFF
  [ "${FUZZ_SERVER:-0}" = 1 ] && server=ON
  nice -n "$NICE" cmake -S fuzz -B "$BUILD" "${generator[@]}" -DCMAKE_CXX_COMPILER="$CXX" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUCKOOD_FUZZ_SERVER="$server" >/dev/null
  nice -n "$NICE" cmake --build "$BUILD" -j"$(nproc)"
  built=$(date +%s)
  echo "fuzz.sh: build took $((built - start)) s"

  if [ $# -gt 0 ]; then
    targets=("$@")
  else
    targets=()
    for t in fuzz_resp_parser fuzz_dump_header fuzz_rdb_payload fuzz_metadata fuzz_page_merge fuzz_cf_argv; do
      [ "$t" = fuzz_cf_argv ] && [ "$server" = OFF ] && continue
      [ -x "$BUILD/$t" ] && targets+=("$t")
    done
  fi

  mkdir -p "$BUILD/artifacts" "$BUILD/logs"
  # Leaks count as failures (libFuzzer's default); UBSan is built non-recoverable.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

  run_target() {
    local t=$1
    local work="$BUILD/corpus/$t"
    local seeds="$ROOT/fuzz/corpus/$t"
    local dict=()
    mkdir -p "$work" "$seeds"
    [ -f "$ROOT/fuzz/$t.dict" ] && dict=(-dict="$ROOT/fuzz/$t.dict")
    # The first folder receives new inputs; the seeds are only read.
    nice -n "$NICE" "$BUILD/$t" "$work" "$seeds" "${dict[@]}" \
      -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
      -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t-" >"$BUILD/logs/$t.log" 2>&1 &&
      echo 0 >"$BUILD/logs/$t.rc" || echo $? >"$BUILD/logs/$t.rc"
  }

  failed=()
  running=0
  for t in "${targets[@]}"; do
    rm -f "$BUILD/logs/$t.rc" "$BUILD/logs/$t.log" "$BUILD/artifacts/$t-"*
    if [ ! -x "$BUILD/$t" ]; then
      echo "fuzz.sh: no target $t" >&2
      failed+=("$t")
      continue
    fi
    run_target "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
      wait -n || true
      running=$((running - 1))
    fi
  done
  wait
  for t in "${targets[@]}"; do
    if [ -x "$BUILD/$t" ] && [ "$(cat "$BUILD/logs/$t.rc" 2>/dev/null)" != 0 ]; then
      failed+=("$t")
    fi
  done

  for t in "${targets[@]}"; do
    log="$BUILD/logs/$t.log"
    [ -f "$log" ] || continue
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
    echo "fuzz.sh: $t: ${runs:-?} runs, ${cov:-cov: ?}, corpus $(ls "$BUILD/corpus/$t" | wc -l) files"
  done

  if [ ${#failed[@]} -gt 0 ]; then
    for t in "${failed[@]}"; do
      echo "==== $t FAILED; last lines of $BUILD/logs/$t.log:" >&2
      tail -n 60 "$BUILD/logs/$t.log" >&2 || true
    done
    ls "$BUILD"/artifacts/* >&2 || true
    exit 1
  fi
  echo "fuzz.sh: all targets passed in $(($(date +%s) - start)) s (fuzzing $(($(date +%s) - built)) s)"
}
# (Read whole before it runs, so editing this file during a run is harmless.)
main "$@"
