// Engine::Write during a RocksDB write stall: the write fails with a "write stall" error after
// write_stall_timeout_ms instead of blocking until the stall ends, and writes work again once
// flushes run.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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

std::unique_ptr<Engine> OpenQuiet(const TempDir& dir) {
  EngineOptions o;
  o.dir = dir.path();
  o.fsync = FsyncMode::kNo;
  o.block_cache_bytes = 8ULL << 20;
  o.write_buffer_bytes = 4ULL << 20;
  auto opened = Engine::Open(o);
  REQUIRE(opened.ok());
  return std::move(*opened);
}

std::string Read(Engine& engine, const std::string& key) {
  std::string got;
  auto s = engine.db()->Get(rocksdb::ReadOptions(), engine.pages_cf(), key, &got);
  return s.ok() ? got : "<" + s.ToString() + ">";
}

// A column family RocksDB does not have: a batch that writes to it is refused.
class MissingCf final : public rocksdb::ColumnFamilyHandle {
 public:
  const std::string& GetName() const override { return name_; }
  uint32_t GetID() const override { return 4242; }
  rocksdb::Status GetDescriptor(rocksdb::ColumnFamilyDescriptor*) override {
    return rocksdb::Status::NotSupported();
  }
  const rocksdb::Comparator* GetComparator() const override {
    return rocksdb::BytewiseComparator();
  }

 private:
  std::string name_ = "missing";
};

void CountFailure(void* counter) {
  static_cast<std::atomic<int>*>(counter)->fetch_add(1);
}

TEST_CASE("queued writes are stored in the order they were submitted", "[engine][queue]") {
  TempDir dir;
  auto engine = OpenQuiet(dir);
  rocksdb::WriteBatch b1, b2, b3;
  REQUIRE(b1.Put(engine->pages_cf(), "k", "first").ok());
  REQUIRE(b1.Put(engine->pages_cf(), "only-in-1", "1").ok());
  REQUIRE(b2.Put(engine->pages_cf(), "k", "second").ok());
  REQUIRE(b3.Delete(engine->pages_cf(), "only-in-1").ok());
  REQUIRE(b3.Put(engine->pages_cf(), "only-in-3", "3").ok());
  Engine::PendingWrite w1, w2, w3;
  w1.batch = &b1;
  w2.batch = &b2;
  w3.batch = &b3;
  const uint64_t g = engine->generation();
  engine->Submit(&w1, g);
  engine->Submit(&w2, g);
  engine->Submit(&w3, g);
  CHECK(w1.ticket < w2.ticket);
  CHECK(w2.ticket < w3.ticket);
  CHECK(Read(*engine, "k").find("NotFound") != std::string::npos);  // nothing written yet
  const uint64_t seq = engine->db()->GetLatestSequenceNumber();
  // Waiting for the last one writes all three (one RocksDB write: consecutive sequence
  // numbers for the five records).
  CHECK(engine->Await(&w3).ok());
  CHECK(engine->db()->GetLatestSequenceNumber() == seq + 5);
  CHECK(engine->Await(&w1).ok());
  CHECK(engine->Await(&w2).ok());
  CHECK(Read(*engine, "k") == "second");
  CHECK(Read(*engine, "only-in-1").find("NotFound") != std::string::npos);
  CHECK(Read(*engine, "only-in-3") == "3");
  engine->Close();
}

TEST_CASE("writers of one key that submit under a lock and wait outside it keep its order",
          "[engine][queue]") {
  TempDir dir;
  auto engine = OpenQuiet(dir);
  std::mutex stripe;
  uint64_t counter = 0;  // the "cache": the newest value, guarded by stripe
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        rocksdb::WriteBatch batch;
        Engine::PendingWrite w;
        w.batch = &batch;
        {
          std::lock_guard lock(stripe);
          ++counter;
          (void)batch.Put(engine->pages_cf(), "counter", std::to_string(counter));
          engine->Submit(&w, engine->generation());
        }
        if (!engine->Await(&w).ok()) {
          failures.fetch_add(1);
        }
      }
    });
  }
  // Meanwhile, readers that settle first never see RocksDB behind what was submitted before.
  uint64_t checks = 0;
  uint64_t behind = 0;
  while (checks < 2000) {
    uint64_t seen;
    {
      std::lock_guard lock(stripe);
      seen = counter;
    }
    engine->Settle();
    const std::string stored = Read(*engine, "counter");
    if (seen > 0 && (stored.empty() || stored[0] == '<' || std::stoull(stored) < seen)) {
      ++behind;
    }
    ++checks;
  }
  for (auto& t : threads) {
    t.join();
  }
  CHECK(failures.load() == 0);
  CHECK(behind == 0);
  CHECK(Read(*engine, "counter") == "8000");
  engine->Close();
}

TEST_CASE("a failed write fails the writes queued behind it and those that may have read it",
          "[engine][queue]") {
  TempDir dir;
  auto engine = OpenQuiet(dir);
  MissingCf missing;
  rocksdb::WriteBatch bad, good;
  REQUIRE(bad.Put(&missing, "bad", "x").ok());
  REQUIRE(good.Put(engine->pages_cf(), "queued-behind", "x").ok());
  std::atomic<int> failed_calls{0};
  Engine::PendingWrite w1, w2;
  w1.batch = &bad;
  w2.batch = &good;
  for (auto* w : {&w1, &w2}) {
    w->on_fail = &CountFailure;
    w->arg = &failed_calls;
  }
  const uint64_t g = engine->generation();
  engine->Submit(&w1, g);
  engine->Submit(&w2, g);
  const Status s2 = engine->Await(&w2);
  CHECK_FALSE(s2.ok());
  CHECK_FALSE(engine->Await(&w1).ok());
  CHECK(failed_calls.load() == 2);  // each told once, before Await returned
  CHECK(Read(*engine, "queued-behind").find("NotFound") != std::string::npos);
  CHECK(engine->generation() != g);
  // A write that started reading before the failure is refused with its error...
  rocksdb::WriteBatch late;
  REQUIRE(late.Put(engine->pages_cf(), "late", "x").ok());
  Engine::PendingWrite w3;
  w3.batch = &late;
  engine->Submit(&w3, g);
  CHECK(w3.ticket == 0);
  const Status s3 = engine->Await(&w3);
  CHECK_FALSE(s3.ok());
  CHECK(s3.message() == s2.message());
  CHECK(Read(*engine, "late").find("NotFound") != std::string::npos);
  // ...and one that starts now is stored (the error was not an I/O error: nothing is latched).
  Engine::PendingWrite w4;
  w4.batch = &late;
  engine->Submit(&w4, engine->generation());
  CHECK(engine->Await(&w4).ok());
  CHECK(Read(*engine, "late") == "x");
  CHECK(engine->WriteHealth().ok());
  engine->Close();
}

TEST_CASE("Settle returns once another thread's submitted write is stored", "[engine][queue]") {
  TempDir dir;
  auto engine = OpenQuiet(dir);
  for (int round = 0; round < 200; ++round) {
    rocksdb::WriteBatch batch;
    const std::string value = std::to_string(round);
    REQUIRE(batch.Put(engine->pages_cf(), "settled", value).ok());
    Engine::PendingWrite w;
    w.batch = &batch;
    std::atomic<bool> submitted{false};
    bool awaited_ok = false;  // (assertions only on this thread: Catch is not thread-safe)
    std::thread writer([&] {
      engine->Submit(&w, engine->generation());
      submitted.store(true);
      std::this_thread::sleep_for(std::chrono::microseconds(round % 3 == 0 ? 200 : 0));
      awaited_ok = engine->Await(&w).ok();
    });
    while (!submitted.load()) {
      std::this_thread::yield();
    }
    engine->Settle();
    CHECK(Read(*engine, "settled") == value);
    writer.join();
    CHECK(awaited_ok);
  }
  engine->Close();
}

TEST_CASE("SettleKey waits for the pending writes of its key, not for other keys'",
          "[engine][queue]") {
  TempDir dir;
  auto engine = OpenQuiet(dir);
  const uint64_t g = engine->generation();
  rocksdb::WriteBatch ba, bb;
  REQUIRE(ba.Put(engine->pages_cf(), "key-a", "a").ok());
  REQUIRE(bb.Put(engine->pages_cf(), "key-b", "b").ok());
  Engine::PendingWrite wa, wb;
  wa.batch = &ba;
  wa.marked = true;
  wb.batch = &bb;
  wb.marked = true;
  engine->Submit(&wa, g);
  engine->MarkPending("key-a", wa.ticket);
  engine->Submit(&wb, g);
  engine->MarkPending("key-b", wb.ticket);
  // A key nobody writes returns at once: neither write is stored. (Keys are marked by a hash
  // slot; these three have slots of their own.)
  const std::string other = "key-other";
  engine->SettleKey(other);
  CHECK(Read(*engine, "key-a").find("NotFound") != std::string::npos);
  CHECK(Read(*engine, "key-b").find("NotFound") != std::string::npos);
  // Key a's write is stored before SettleKey returns (and b's, queued before the drain).
  engine->SettleKey("key-a");
  CHECK(Read(*engine, "key-a") == "a");
  CHECK(engine->Await(&wa).ok());
  CHECK(engine->Await(&wb).ok());
  CHECK(Read(*engine, "key-b") == "b");

  // A write that names no keys: every key's SettleKey waits for it.
  rocksdb::WriteBatch bc;
  REQUIRE(bc.Put(engine->pages_cf(), "key-c", "c").ok());
  Engine::PendingWrite wc;
  wc.batch = &bc;
  engine->Submit(&wc, engine->generation());
  engine->SettleKey(other);
  CHECK(Read(*engine, "key-c") == "c");
  CHECK(engine->Await(&wc).ok());
  engine->Close();
}

}  // namespace
