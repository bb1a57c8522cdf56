// Shared helpers of the storage tests: a private temporary directory per test, an Engine + Db
// opened in it, and raw views of the column families.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/filter.h"
#include "storage/db.h"
#include "storage/engine.h"
#include "storage/format.h"

namespace cuckood::storage::testing {

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "cuckood-storage-test-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      FAIL("mkdtemp failed");
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// An Engine and a Db over a private directory. Small caches keep parallel test runs light.
class TestDb {
 public:
  TestDb() { Open(); }
  ~TestDb() { Close(); }
  TestDb(const TestDb&) = delete;
  TestDb& operator=(const TestDb&) = delete;

  void Open() {
    EngineOptions o;
    o.dir = dir_.path();
    o.fsync = FsyncMode::kNo;
    o.block_cache_bytes = 8ULL << 20;
    o.write_buffer_bytes = 4ULL << 20;
    o.background_jobs = 2;
    auto e = Engine::Open(o);
    REQUIRE(e.ok());
    engine_ = std::move(*e);
    db_ = std::make_unique<Db>(engine_.get(), 64);
  }
  void Close() {
    db_.reset();
    if (engine_) {
      engine_->Close();
      engine_.reset();
    }
  }
  void Reopen() {
    Close();
    Open();
  }

  Db& db() { return *db_; }
  Engine& engine() { return *engine_; }
  const std::string& dir() const { return dir_.path(); }

 private:
  TempDir dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Db> db_;
};

struct RawPage {
  std::string key;
  std::string value;
};

// Every key/value of a column family, in key order (what is really stored, not what Db reads).
inline std::vector<RawPage> AllRecords(Engine& e, rocksdb::ColumnFamilyHandle* cf) {
  std::vector<RawPage> out;
  std::unique_ptr<rocksdb::Iterator> it(e.db()->NewIterator(rocksdb::ReadOptions(), cf));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    out.push_back({it->key().ToString(), it->value().ToString()});
  }
  REQUIRE(it->status().ok());
  return out;
}

inline std::vector<RawPage> AllPages(Engine& e) {
  return AllRecords(e, e.pages_cf());
}

// Pages stored under one filter version (page key prefix).
inline std::vector<RawPage> PagesWithPrefix(Engine& e, std::string_view prefix) {
  std::vector<RawPage> out;
  for (auto& p : AllPages(e)) {
    if (std::string_view(p.key).substr(0, prefix.size()) == prefix) {
      out.push_back(std::move(p));
    }
  }
  return out;
}

// The metadata record as stored (expired or not); nullopt when there is none.
inline std::optional<std::string> RawMeta(Engine& e, uint16_t ns, std::string_view key) {
  std::string v;
  auto s = e.db()->Get(rocksdb::ReadOptions(), e.metadata_cf(), EncodeMetaKey(ns, key), &v);
  if (s.IsNotFound()) {
    return std::nullopt;
  }
  REQUIRE(s.ok());
  return v;
}

// Options of a small engine in dir whose stalled writes fail after `stall_timeout_ms` instead of
// waiting (see StallWrites).
inline EngineOptions StallingOptions(const std::string& dir, uint64_t stall_timeout_ms = 200) {
  EngineOptions o;
  o.dir = dir;
  o.fsync = FsyncMode::kNo;
  o.block_cache_bytes = 8ULL << 20;
  o.write_buffer_bytes = 256ULL << 10;
  o.write_stall_timeout_ms = stall_timeout_ms;
  return o;
}

// Stops RocksDB's background work and fills the memtables until a write fails: every write then
// fails (busy) until engine.db()->ContinueBackgroundWork().
inline void StallWrites(Engine& engine) {
  REQUIRE(engine.db()->PauseBackgroundWork().ok());
  const std::string filler(4096, 'v');
  for (int i = 0; i < 4000; ++i) {
    rocksdb::WriteBatch batch;
    REQUIRE(batch.Put(engine.pages_cf(), "filler-" + std::to_string(i), filler).ok());
    if (!engine.Write(&batch).ok()) {
      break;
    }
  }
}

// Settings with small pages, so that small filters span many pages.
inline CfSettings SmallPages(uint32_t page_size = 64) {
  CfSettings s;
  s.page_size = page_size;
  return s;
}

inline ReserveArgs Reserve(uint64_t capacity, uint16_t bucket_size = 2, uint16_t expansion = 1,
                           uint16_t max_iterations = 20) {
  ReserveArgs a;
  a.capacity = capacity;
  a.bucket_size = bucket_size;
  a.expansion = expansion;
  a.max_iterations = max_iterations;
  return a;
}

// Owned item strings plus views for the Db API.
struct Items {
  std::vector<std::string> owned;
  std::vector<std::string_view> views;

  static Items Make(std::string_view prefix, int from, int to) {
    Items it;
    for (int i = from; i < to; ++i) {
      it.owned.push_back(std::string(prefix) + std::to_string(i));
    }
    for (const auto& s : it.owned) {
      it.views.emplace_back(s);
    }
    return it;
  }
};

// The page prefix of a live filter (its owner and version from the metadata).
inline std::string FilterPrefix(Db& db, uint16_t ns, std::string_view key) {
  auto info = db.CfInfo(kAlone, ns, key);
  REQUIRE(info.ok());
  std::string_view owner = info->cuckoo.owner.empty() ? key : std::string_view(info->cuckoo.owner);
  return EncodePagePrefix(ns, owner, info->version);
}

}  // namespace cuckood::storage::testing
