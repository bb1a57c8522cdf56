// Engine::Write during a RocksDB write stall: the write fails with a "write stall" error after
// write_stall_timeout_ms instead of blocking until the stall ends, and writes work again once
// flushes run.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "test_util.h"

using namespace cuckood::storage;
using namespace cuckood::storage::testing;

namespace {

TEST_CASE("a write stall gives a busy error after the timeout, not an endless wait", "[engine]") {
  TempDir dir;
  EngineOptions o;
  o.dir = dir.path();
  o.fsync = FsyncMode::kNo;
  o.block_cache_bytes = 8ULL << 20;
  o.write_buffer_bytes = 256ULL << 10;  // 4 memtables of 256 KiB, then writes stop
  o.write_stall_timeout_ms = 300;
  auto opened = Engine::Open(o);
  REQUIRE(opened.ok());
  auto& engine = **opened;
  // No flush can run: the memtables fill up and RocksDB stops writes.
  REQUIRE(engine.db()->PauseBackgroundWork().ok());
  const std::string value(4096, 'v');
  Status failed;
  double failed_after_s = 0;
  int written = 0;
  for (int i = 0; i < 4000 && failed.ok(); ++i) {
    rocksdb::WriteBatch batch;
    REQUIRE(batch.Put(engine.pages_cf(), "stall-key-" + std::to_string(i), value).ok());
    const auto t0 = std::chrono::steady_clock::now();
    failed = engine.Write(&batch);
    failed_after_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (failed.ok()) {
      ++written;
    }
  }
  INFO("writes before the stall: " << written);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.code() == Code::kBusy);
  CHECK_THAT(failed.message(), Catch::Contains("write stall"));
  CHECK(failed_after_s >= 0.25);  // it waited for the stall to end...
  CHECK(failed_after_s < 3.0);    // ...but not for ever
  CHECK(engine.stall_errors() == 1);
  CHECK(engine.WriteHealth().ok());  // a stall is not an I/O error: nothing is latched
  // Flushes run again: the next write goes through (waiting out the end of the stall).
  REQUIRE(engine.db()->ContinueBackgroundWork().ok());
  rocksdb::WriteBatch batch;
  REQUIRE(batch.Put(engine.pages_cf(), "after-the-stall", "x").ok());
  CHECK(engine.Write(&batch).ok());
  std::string got;
  CHECK(engine.db()->Get(rocksdb::ReadOptions(), engine.pages_cf(), "after-the-stall", &got).ok());
  CHECK(got == "x");
  engine.Close();
}

}  // namespace
