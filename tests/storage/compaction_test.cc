// The compaction filters (storage/engine.cc) and version allocation: DEL, overwrite, expiry and
// FLUSHDB are O(1) metadata changes; CompactAll then really drops the dead pages and expired
// metadata, and keeps every live page, including those of RENAMEd filters. Versions never repeat,
// also across restarts.
#include <algorithm>
#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

using namespace cuckood::storage;
using namespace cuckood::storage::testing;

namespace {

const CfSettings kSettings = SmallPages(64);

// A filter with items spread over several pages; returns its page prefix.
std::string MakeFilter(Db& db, uint16_t ns, const std::string& key, const Items& items) {
  auto r = db.CfInsert(kAlone, ns, key, items.views,
                       InsertOptions{.nx = false, .no_create = false, .capacity = 1000}, kSettings);
  REQUIRE(r.ok());
  return FilterPrefix(db, ns, key);
}

}  // namespace

TEST_CASE("CompactAll drops the pages of dead versions and keeps live ones", "[compaction]") {
  TestDb t;
  Db& db = t.db();
  Engine& e = t.engine();
  const auto items = Items::Make("i-", 0, 60);

  const std::string live = MakeFilter(db, 0, "live", items);
  const std::string deleted = MakeFilter(db, 0, "deleted", items);
  const std::string overwritten = MakeFilter(db, 0, "overwritten", items);
  const std::string expired = MakeFilter(db, 0, "expired", items);
  const std::string renamed = MakeFilter(db, 0, "renamed", items);
  const std::string flushed = MakeFilter(db, 1, "flushed", items);
  const std::string recreated_old = MakeFilter(db, 0, "recreated", items);
  const auto live_pages = PagesWithPrefix(e, live);
  REQUIRE(live_pages.size() > 3);
  for (const auto& p : {deleted, overwritten, expired, renamed, flushed, recreated_old}) {
    REQUIRE(PagesWithPrefix(e, p).size() == live_pages.size());
  }
  const auto renamed_pages = PagesWithPrefix(e, renamed);

  REQUIRE(*db.Delete(0, "deleted"));
  REQUIRE(db.SetString(0, "overwritten", "now a string", 0, false).ok());
  REQUIRE(*db.SetExpire(0, "expired", NowMs() - 1));
  REQUIRE(*db.Rename(0, "renamed", "renamed2", false));
  REQUIRE(db.FlushDb(1).ok());
  REQUIRE(*db.Delete(0, "recreated"));
  const auto other = Items::Make("other-", 0, 10);
  const std::string recreated_new = MakeFilter(db, 0, "recreated", other);
  REQUIRE(recreated_new != recreated_old);
  REQUIRE(db.SetString(0, "expired-string", "v", NowMs() - 1, false).ok());

  // Before compaction the dead pages are still stored (DEL and friends are O(1)).
  CHECK(PagesWithPrefix(e, deleted).size() == live_pages.size());
  CHECK(PagesWithPrefix(e, overwritten).size() == live_pages.size());
  CHECK(PagesWithPrefix(e, expired).size() == live_pages.size());
  CHECK(PagesWithPrefix(e, recreated_old).size() == live_pages.size());
  CHECK(PagesWithPrefix(e, flushed).empty());  // range-deleted at once
  CHECK(RawMeta(e, 0, "expired").has_value());
  CHECK(RawMeta(e, 0, "expired-string").has_value());

  REQUIRE(e.CompactAll().ok());

  SECTION("dead pages are gone") {
    CHECK(PagesWithPrefix(e, deleted).empty());
    CHECK(PagesWithPrefix(e, overwritten).empty());
    CHECK(PagesWithPrefix(e, expired).empty());
    CHECK(PagesWithPrefix(e, flushed).empty());
    CHECK(PagesWithPrefix(e, recreated_old).empty());
    // Nothing but the three live filters remains.
    CHECK(AllPages(e).size() == 2 * live_pages.size() + PagesWithPrefix(e, recreated_new).size());
  }
  SECTION("expired metadata is gone") {
    CHECK_FALSE(RawMeta(e, 0, "expired").has_value());
    CHECK_FALSE(RawMeta(e, 0, "expired-string").has_value());
    CHECK(RawMeta(e, 0, "overwritten").has_value());
  }
  SECTION("live pages survive byte for byte, including the renamed filter's") {
    const auto live_after = PagesWithPrefix(e, live);
    REQUIRE(live_after.size() == live_pages.size());
    for (size_t i = 0; i < live_after.size(); ++i) {
      CHECK(live_after[i].key == live_pages[i].key);
      CHECK(live_after[i].value == live_pages[i].value);
    }
    const auto renamed_after = PagesWithPrefix(e, renamed);
    REQUIRE(renamed_after.size() == renamed_pages.size());
    for (size_t i = 0; i < renamed_after.size(); ++i) {
      CHECK(renamed_after[i].value == renamed_pages[i].value);
    }
    CHECK(*db.CfLookup(kAlone, 0, "live", items.views, false) == std::vector<uint64_t>(60, 1));
    CHECK(*db.CfLookup(kAlone, 0, "renamed2", items.views, false) == std::vector<uint64_t>(60, 1));
    CHECK(*db.CfLookup(kAlone, 0, "recreated", other.views, false) == std::vector<uint64_t>(10, 1));
    CHECK(*db.CfLookup(kAlone, 0, "recreated", items.views, false) == std::vector<uint64_t>(60, 0));
  }
  SECTION("deleting the renamed filter later lets its pages go") {
    REQUIRE(*db.Delete(0, "renamed2"));
    REQUIRE(e.CompactAll().ok());
    CHECK(PagesWithPrefix(e, renamed).empty());
    CHECK(PagesWithPrefix(e, live).size() == live_pages.size());
  }
  SECTION("overwriting the renamed filter with a string lets its pages go") {
    REQUIRE(db.SetString(0, "renamed2", "x", 0, false).ok());
    REQUIRE(e.CompactAll().ok());
    CHECK(PagesWithPrefix(e, renamed).empty());
  }
}

TEST_CASE("renamed filters keep their pages through compaction in every rename pattern",
          "[compaction][rename]") {
  TestDb t;
  Db& db = t.db();
  Engine& e = t.engine();
  const auto items = Items::Make("x-", 0, 50);
  const auto fresh = Items::Make("fresh-", 0, 10);
  const std::string original = MakeFilter(db, 0, "a", items);
  const size_t pages = PagesWithPrefix(e, original).size();
  REQUIRE(*db.Rename(0, "a", "b", false));

  SECTION("a chain of renames") {
    REQUIRE(*db.Rename(0, "b", "c", false));
    REQUIRE(*db.Rename(0, "c", "d", false));
    REQUIRE(e.CompactAll().ok());
    CHECK(PagesWithPrefix(e, original).size() == pages);
    CHECK(*db.CfLookup(kAlone, 0, "d", items.views, false) == std::vector<uint64_t>(50, 1));
  }
  SECTION("rename back to the owner name") {
    REQUIRE(*db.Rename(0, "b", "a", false));
    REQUIRE(e.CompactAll().ok());
    CHECK(PagesWithPrefix(e, original).size() == pages);
    CHECK(*db.CfLookup(kAlone, 0, "a", items.views, false) == std::vector<uint64_t>(50, 1));
  }
  SECTION("a new filter under the owner name") {
    const std::string second = MakeFilter(db, 0, "a", fresh);
    REQUIRE(e.CompactAll().ok());
    CHECK(PagesWithPrefix(e, original).size() == pages);
    CHECK_FALSE(PagesWithPrefix(e, second).empty());
    CHECK(*db.CfLookup(kAlone, 0, "b", items.views, false) == std::vector<uint64_t>(50, 1));
    CHECK(*db.CfLookup(kAlone, 0, "a", fresh.views, false) == std::vector<uint64_t>(10, 1));
    SECTION("then the renamed filter moves back over it") {
      REQUIRE(*db.Rename(0, "b", "a", false));
      REQUIRE(e.CompactAll().ok());
      CHECK(PagesWithPrefix(e, original).size() == pages);
      CHECK(PagesWithPrefix(e, second).empty());
      CHECK(*db.CfLookup(kAlone, 0, "a", items.views, false) == std::vector<uint64_t>(50, 1));
    }
  }
  SECTION("the destination of a rename is overwritten by another rename") {
    MakeFilter(db, 0, "z", fresh);
    REQUIRE(*db.Rename(0, "z", "b", false));
    REQUIRE(e.CompactAll().ok());
    CHECK(PagesWithPrefix(e, original).empty());
    CHECK(*db.CfLookup(kAlone, 0, "b", fresh.views, false) == std::vector<uint64_t>(10, 1));
  }
  SECTION("the renamed filter expires") {
    REQUIRE(*db.SetExpire(0, "b", NowMs() - 1));
    REQUIRE(e.CompactAll().ok());
    CHECK(PagesWithPrefix(e, original).empty());
  }
  SECTION("FLUSHALL") {
    REQUIRE(db.FlushAll().ok());
    REQUIRE(e.CompactAll().ok());
    CHECK(AllPages(e).empty());
    CHECK(AllRecords(e, e.metadata_cf()).empty());
  }
}

TEST_CASE("an unexpired key with an expiry keeps its pages through compaction", "[compaction]") {
  TestDb t;
  Db& db = t.db();
  const auto items = Items::Make("e-", 0, 30);
  const std::string prefix = MakeFilter(db, 0, "f", items);
  const size_t pages = PagesWithPrefix(t.engine(), prefix).size();
  REQUIRE(*db.SetExpire(0, "f", NowMs() + 3'600'000));
  REQUIRE(t.engine().CompactAll().ok());
  CHECK(PagesWithPrefix(t.engine(), prefix).size() == pages);
  CHECK(RawMeta(t.engine(), 0, "f").has_value());
  CHECK(*db.CfLookup(kAlone, 0, "f", items.views, false) == std::vector<uint64_t>(30, 1));
}

TEST_CASE("NewVersion never repeats, also across close and reopen", "[versions]") {
  TestDb t;
  std::vector<uint64_t> versions;
  auto take = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto v = t.engine().NewVersion();
      REQUIRE(v.ok());
      versions.push_back(*v);
    }
  };
  take(5);
  t.Reopen();
  take(5);
  // Filters created after a restart get versions from the new range too.
  REQUIRE(t.db().CfReserve(kAlone, 0, "f", Reserve(100), CfSettings()).ok());
  versions.push_back(t.db().CfInfo(kAlone, 0, "f")->version);
  t.Reopen();
  t.Reopen();
  take(3);
  REQUIRE(t.db()
              .CfLoadChunk(
                  kAlone, 0, "g", 1,
                  [] {
                    cuckood::core::FilterMeta m;
                    m.num_items = 1;
                    m.base_num_buckets = 64;
                    return cuckood::core::EncodeHeader(m);
                  }(),
                  CfSettings())
              .ok());
  versions.push_back(t.db().CfInfo(kAlone, 0, "g")->version);

  INFO("versions: " << Catch::rangeToString(versions));
  CHECK(std::is_sorted(versions.begin(), versions.end()));
  CHECK(std::adjacent_find(versions.begin(), versions.end()) == versions.end());
  CHECK(versions.front() > 0);
}

TEST_CASE("NewVersion hands out distinct versions to concurrent callers", "[versions]") {
  TestDb t;
  std::mutex mu;
  std::vector<uint64_t> all;
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&] {
      std::vector<uint64_t> mine;
      for (int i = 0; i < 2000; ++i) {
        auto v = t.engine().NewVersion();
        if (v.ok()) {
          mine.push_back(*v);
        }
      }
      std::lock_guard lock(mu);
      all.insert(all.end(), mine.begin(), mine.end());
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  REQUIRE(all.size() == 8000);
  CHECK(std::set<uint64_t>(all.begin(), all.end()).size() == 8000);
}

TEST_CASE("the pages filter alone drops pages of expired filters whose metadata is still stored",
          "[compaction]") {
  TestDb t;
  Db& db = t.db();
  Engine& e = t.engine();
  const auto items = Items::Make("pe-", 0, 40);
  const std::string expired = MakeFilter(db, 0, "expired", items);
  const std::string renamed = MakeFilter(db, 0, "renamed", items);
  const std::string live = MakeFilter(db, 0, "live", items);
  const size_t pages = PagesWithPrefix(e, live).size();
  REQUIRE(*db.SetExpire(0, "expired", NowMs() - 1));
  REQUIRE(*db.Rename(0, "renamed", "renamed2", false));
  REQUIRE(*db.SetExpire(0, "renamed2", NowMs() - 1));

  // Compact only the pages: the expired metadata records stay, so the pages filter must judge
  // the expiry itself.
  rocksdb::CompactRangeOptions o;
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  REQUIRE(e.db()->CompactRange(o, e.pages_cf(), nullptr, nullptr).ok());
  CHECK(RawMeta(e, 0, "expired").has_value());
  CHECK(RawMeta(e, 0, "renamed2").has_value());
  CHECK(PagesWithPrefix(e, expired).empty());
  CHECK(PagesWithPrefix(e, renamed).empty());
  CHECK(PagesWithPrefix(e, live).size() == pages);
  CHECK(*db.CfLookup(kAlone, 0, "live", items.views, false) == std::vector<uint64_t>(40, 1));
}
