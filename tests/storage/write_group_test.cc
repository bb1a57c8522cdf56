// Group commit (storage/write_group.h): the filter writes of several commands reach RocksDB in
// one write at Commit(), later commands of the group see the earlier ones meanwhile, the result
// is stored exactly as without a group, and a failed commit leaves nothing behind.
#include "storage/write_group.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "test_util.h"

using namespace cuckood::storage;
using namespace cuckood::storage::testing;
namespace core = cuckood::core;

namespace {

std::vector<std::string> Items(int n, std::string_view prefix) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(std::string(prefix) + std::to_string(i));
  }
  return out;
}

// The scope of a command that joins group (none: writes alone).
Scope In(WriteGroup* group) {
  return Scope{.group = group};
}
Scope In(std::optional<WriteGroup>& group) {
  return In(group ? &*group : nullptr);
}

core::InsertResult Add(Db& db, const Scope& scope, std::string_view key, std::string_view item,
                       bool nx = false, const CfSettings& settings = SmallPages()) {
  auto r = db.CfInsert(scope, 0, key, {item}, InsertOptions{.nx = nx}, settings);
  REQUIRE(r.ok());
  REQUIRE(r->results.size() == 1);
  return r->results[0];
}

// Lookups as a reader that cannot use the in-memory cache sees them: RocksDB's committed state.
const Scope kSnapshotReads{.read = ReadMode::kSnapshot};

std::vector<uint64_t> Stored(Db& db, std::string_view key, const std::vector<std::string>& items) {
  std::vector<std::string_view> views(items.begin(), items.end());
  auto r = db.CfLookup(kSnapshotReads, 0, key, views, /*count=*/false);
  REQUIRE(r.ok());
  return *r;
}

std::vector<uint64_t> Cached(Db& db, const Scope& scope, std::string_view key,
                             const std::vector<std::string>& items) {
  std::vector<std::string_view> views(items.begin(), items.end());
  auto r = db.CfLookup(scope, 0, key, views, /*count=*/false);
  REQUIRE(r.ok());
  return *r;
}

// Both databases store the same page keys with the same bytes.
void CheckSamePages(Engine& a, Engine& b) {
  auto pa = AllPages(a);
  auto pb = AllPages(b);
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    CHECK(pa[i].key == pb[i].key);
    CHECK(pa[i].value == pb[i].value);
  }
}

// Runs the same commands on filter "f" of two databases, without and with a write group
// (run(db, grouped), which grows the filter past one sub-filter), and checks that both store
// the same pages and metadata, also after the grouped one restarts.
void CheckGroupedSameAsPlain(const std::function<void(TestDb&, bool)>& run,
                             const std::vector<std::string>& items) {
  TestDb plain;
  TestDb grouped;
  run(plain, false);
  run(grouped, true);
  REQUIRE_FALSE(AllPages(plain.engine()).empty());
  CheckSamePages(plain.engine(), grouped.engine());
  auto ma = plain.db().CfInfo(kAlone, 0, "f");
  auto mb = grouped.db().CfInfo(kAlone, 0, "f");
  REQUIRE((ma.ok() && mb.ok()));
  CHECK(ma->size == mb->size);
  CHECK(ma->cuckoo.filter.num_filters == mb->cuckoo.filter.num_filters);
  CHECK(ma->cuckoo.filter.num_filters > 1);
  // And across a restart.
  grouped.Reopen();
  CheckSamePages(plain.engine(), grouped.engine());
  CHECK(Stored(grouped.db(), "f", items) == Stored(plain.db(), "f", items));
}

uint64_t Size(Db& db, std::string_view key) {
  auto m = db.CfInfo(kSnapshotReads, 0, key);
  REQUIRE(m.ok());
  return m->size;
}

TEST_CASE("a write group writes nothing before Commit and everything at it", "[write_group]") {
  TestDb t;
  auto& db = t.db();
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(2000), SmallPages()).ok());
  const auto items = Items(300, "item-");
  const auto seq_before = t.engine().db()->GetLatestSequenceNumber();
  WriteGroup group(&t.engine(), &db.cache());
  for (const auto& item : items) {
    CHECK(Add(db, In(&group), "f", item) == core::InsertResult::kInserted);
  }
  // Later commands of the group see the earlier ones (NX finds them, DEL removes one).
  CHECK(Add(db, In(&group), "f", items[7], /*nx=*/true) == core::InsertResult::kExists);
  auto del = db.CfDelete(In(&group), 0, "f", items[0], SmallPages());
  REQUIRE(del.ok());
  CHECK(*del);
  // Nothing reached RocksDB yet; readers of the committed state see none of it.
  CHECK(t.engine().db()->GetLatestSequenceNumber() == seq_before);
  CHECK(Size(db, "f") == 0);
  CHECK(Stored(db, "f", items) == std::vector<uint64_t>(items.size(), 0));

  REQUIRE(group.Commit().ok());
  CHECK(t.engine().db()->GetLatestSequenceNumber() > seq_before);
  CHECK(Size(db, "f") == items.size() - 1);
  auto stored = Stored(db, "f", items);
  CHECK(stored[0] == 0);
  CHECK(std::count(stored.begin() + 1, stored.end(), 1) == static_cast<long>(items.size() - 1));
  CHECK(group.empty());
}

// Many commands on few pages of filter "f": pages change several times within a group, some
// items are deleted again, and the small filter grows a second sub-filter. With grouped, they
// run in one write group, committed after every commit_every commands; with hold_pages, every
// cached page of the filter is also held (as by a reader) while each command runs.
void MixedCommands(TestDb& t, bool grouped, const std::vector<std::string>& items,
                   size_t commit_every, bool hold_pages) {
  auto& db = t.db();
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(200), SmallPages()).ok());
  std::optional<WriteGroup> group;
  if (grouped) {
    group.emplace(&t.engine(), &db.cache());
  }
  std::vector<MemCache::Value> held;
  auto hold = [&] {
    held.clear();
    auto info = db.CfInfo(In(group), 0, "f");
    REQUIRE(info.ok());
    const auto& filter = info->cuckoo.filter;
    const std::string prefix = EncodePagePrefix(0, "f", info->version);  // (its own owner)
    for (uint32_t f = 0; f < filter.num_filters; ++f) {
      const uint64_t bytes = core::SubFilterBuckets(filter, f) * filter.bucket_size;
      for (uint32_t page = 0; page * SmallPages().page_size < bytes; ++page) {
        MemCache::Value v;
        if (db.cache().GetShared(PageCacheKey(EncodePageKey(prefix, f, page)), &v) && v) {
          held.push_back(std::move(v));
        }
      }
    }
  };
  for (size_t i = 0; i < items.size(); ++i) {
    if (grouped && hold_pages) {
      hold();
    }
    (void)Add(db, In(group), "f", items[i], /*nx=*/i % 3 == 0);
    if (i % 5 == 4) {
      REQUIRE(db.CfDelete(In(group), 0, "f", items[i - 2], SmallPages()).ok());
    }
    if (grouped && i % commit_every == commit_every - 1) {
      held.clear();
      REQUIRE(group->Commit().ok());  // several commits of one group
    }
  }
  held.clear();
  if (grouped) {
    REQUIRE(group->Commit().ok());
  }
}

TEST_CASE("a group stores the same bytes as the same commands one by one", "[write_group]") {
  const auto items = Items(500, "same-");
  CheckGroupedSameAsPlain(
      [&](TestDb& t, bool grouped) { MixedCommands(t, grouped, items, 97, false); }, items);
}

TEST_CASE("a group's changes to copies of held pages store the same bytes as one by one",
          "[write_group]") {
  // The first change of a page in a group is made on a copy (whose written buckets the group
  // writes), and the group's later changes are made in place on that copy.
  const auto items = Items(400, "held-");
  CheckGroupedSameAsPlain(
      [&](TestDb& t, bool grouped) { MixedCommands(t, grouped, items, 7, true); }, items);
}

TEST_CASE("a delete's compaction inside a group sees the pages the group changed",
          "[write_group]") {
  // The automatic compaction of CF.DEL walks the sub-filters for pages to move; pages written
  // earlier in the group (not in RocksDB yet) must not be skipped as empty, or their items are
  // lost when the sub-filter is dropped.
  // Sub-filters of 256 buckets in 8 pages: a delete's own lookups read few of them.
  const auto early = Items(600, "early-");
  const auto late = Items(600, "late-");
  auto run = [&](TestDb& t, bool grouped) {
    auto& db = t.db();
    REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(512), SmallPages()).ok());
    for (const auto& item : early) {
      (void)Add(db, kAlone, "f", item);
    }
    std::optional<WriteGroup> group;
    if (grouped) {
      group.emplace(&t.engine(), &db.cache());
    }
    for (const auto& item : late) {
      (void)Add(db, In(group), "f", item);
    }
    for (size_t i = 0; i < 150; ++i) {
      REQUIRE(db.CfDelete(In(group), 0, "f", early[i], SmallPages()).ok());
    }
    if (grouped) {
      REQUIRE(group->Commit().ok());
    }
  };
  TestDb plain;
  TestDb grouped;
  run(plain, false);
  run(grouped, true);
  CheckSamePages(plain.engine(), grouped.engine());
  auto ma = plain.db().CfInfo(kAlone, 0, "f");
  auto mb = grouped.db().CfInfo(kAlone, 0, "f");
  REQUIRE((ma.ok() && mb.ok()));
  CHECK(ma->cuckoo.filter.num_filters == mb->cuckoo.filter.num_filters);
  CHECK(ma->cuckoo.filter.num_deletes == mb->cuckoo.filter.num_deletes);
  CHECK(Stored(grouped.db(), "f", late) == std::vector<uint64_t>(late.size(), 1));
}

TEST_CASE("a group works without the in-memory cache", "[write_group]") {
  TestDb t;
  Db uncached_db(&t.engine(), 64, /*cache_bytes=*/0);
  REQUIRE(uncached_db.CfReserve(kAlone, 0, "f", Reserve(1000), SmallPages()).ok());
  const auto items = Items(200, "nocache-");
  WriteGroup group(&t.engine(), &uncached_db.cache());
  for (const auto& item : items) {
    CHECK(Add(uncached_db, In(&group), "f", item) == core::InsertResult::kInserted);
  }
  // The cache keeps nothing: the group itself serves the pages and metadata of its commands.
  for (size_t i = 0; i < items.size(); i += 10) {
    CHECK(Add(uncached_db, In(&group), "f", items[i], /*nx=*/true) == core::InsertResult::kExists);
  }
  CHECK(Cached(uncached_db, In(&group), "f", items) == std::vector<uint64_t>(items.size(), 1));
  REQUIRE(group.Commit().ok());
  CHECK(Size(uncached_db, "f") == items.size());
  CHECK(Stored(uncached_db, "f", items) == std::vector<uint64_t>(items.size(), 1));
}

TEST_CASE("a write of the group's scope that is not grouped commits the group first",
          "[write_group]") {
  TestDb t;
  auto& db = t.db();
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1000), SmallPages()).ok());
  REQUIRE(db.CfReserve(kAlone, 0, "g", Reserve(1000), SmallPages()).ok());
  REQUIRE(Add(db, kAlone, "g", "g-item") == core::InsertResult::kInserted);
  const auto items = Items(50, "first-");
  WriteGroup group(&t.engine(), &db.cache());
  for (const auto& item : items) {
    (void)Add(db, In(&group), "f", item);
  }
  CHECK(Size(db, "f") == 0);
  REQUIRE(db.CfCompact(In(&group), 0, "g", SmallPages()).ok());  // its own RocksDB write
  CHECK(Size(db, "f") == items.size());
  CHECK(Stored(db, "f", items) == std::vector<uint64_t>(items.size(), 1));
  CHECK(group.empty());
}

TEST_CASE("a failed commit stores nothing of the group and forgets its cached changes",
          "[write_group]") {
  TempDir dir;
  auto opened = Engine::Open(StallingOptions(dir.path()));
  REQUIRE(opened.ok());
  auto& engine = **opened;
  Db db(&engine, 64);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1000), SmallPages()).ok());
  const auto committed = Items(20, "committed-");
  for (const auto& item : committed) {
    (void)Add(db, kAlone, "f", item);
  }
  // A group committed before the failure, kept for reuse as an io thread keeps its last one.
  WriteGroup spare(&engine, &db.cache());
  CHECK(Add(db, In(&spare), "f", "spare-0") == core::InsertResult::kInserted);
  REQUIRE(spare.Commit().ok());
  // Stop RocksDB's writes: no flush can run and the memtables fill up.
  StallWrites(engine);
  const auto lost = Items(30, "lost-");
  Status failed;
  {
    WriteGroup group(&engine, &db.cache());
    for (const auto& item : lost) {
      CHECK(Add(db, In(&group), "f", item) == core::InsertResult::kInserted);
    }
    CHECK(Cached(db, In(&group), "f", lost) ==
          std::vector<uint64_t>(lost.size(), 1));  // in the cache
    failed = group.Commit();
    CHECK_FALSE(failed.ok());
    CHECK(group.Commit().code() == failed.code());  // the group stays failed
  }
  CHECK(failed.code() == Code::kBusy);
  REQUIRE(engine.db()->ContinueBackgroundWork().ok());
  // The cache forgot the group: every reader sees the committed state again.
  CHECK(Cached(db, kAlone, "f", lost) == std::vector<uint64_t>(lost.size(), 0));
  CHECK(Cached(db, kAlone, "f", committed) == std::vector<uint64_t>(committed.size(), 1));
  auto meta = db.CfInfo(kAlone, 0, "f");
  REQUIRE(meta.ok());
  CHECK(meta->size == committed.size() + 1);
  // And writes work again, alone and in the reused group (which reads from now on: it is not
  // failed for a failure that came after its last commit).
  CHECK(Add(db, kAlone, "f", lost[0]) == core::InsertResult::kInserted);
  CHECK(Stored(db, "f", {lost[0]}) == std::vector<uint64_t>{1});
  spare.Reuse(&engine, &db.cache());
  CHECK(Add(db, In(&spare), "f", lost[1]) == core::InsertResult::kInserted);
  REQUIRE(spare.Commit().ok());
  CHECK(Stored(db, "f", {lost[1], "spare-0"}) == std::vector<uint64_t>{1, 1});
  engine.Close();
}

TEST_CASE("a group's multi-item inserts store the same bytes as without a group", "[write_group]") {
  // Later commands of a group change the pages the group already changed in place; the result
  // must be what the same commands store one by one.
  const auto items = Items(3000, "multi-");
  auto run = [&](TestDb& t, bool grouped) {
    auto& db = t.db();
    REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(2000, 4), SmallPages()).ok());
    std::optional<WriteGroup> group;
    if (grouped) {
      group.emplace(&t.engine(), &db.cache());
    }
    for (size_t i = 0; i < items.size(); i += 50) {
      std::vector<std::string_view> batch(items.begin() + i, items.begin() + i + 50);
      REQUIRE(db.CfInsert(In(group), 0, "f", batch, InsertOptions{.nx = i % 200 == 0}, SmallPages())
                  .ok());
      REQUIRE(db.CfDelete(In(group), 0, "f", items[i + 7], SmallPages()).ok());
      if (grouped && i % 1000 == 950) {
        REQUIRE(group->Commit().ok());
      }
    }
    if (grouped) {
      REQUIRE(group->Commit().ok());
    }
  };
  TestDb plain;
  TestDb grouped;
  run(plain, false);
  run(grouped, true);
  CheckSamePages(plain.engine(), grouped.engine());
  CHECK(grouped.db().CfInfo(kAlone, 0, "f")->size == plain.db().CfInfo(kAlone, 0, "f")->size);
  CHECK(grouped.db().CfInfo(kAlone, 0, "f")->cuckoo.filter.num_filters > 1);
  CHECK(Cached(grouped.db(), kAlone, "f", items) == Stored(plain.db(), "f", items));
}

TEST_CASE("a failed command of a group leaves the group's pages as they were", "[write_group]") {
  // The first item of the failing command lands on a page the group has changed (so it is
  // changed in place), or, when the group was committed in between, on a page only the
  // in-memory cache holds (changed in place too); the second item's page is corrupt in RocksDB,
  // so the command fails.
  const bool committed_between = GENERATE(false, true);
  const CfSettings settings = SmallPages(64);
  uint64_t buckets = 0;
  {
    TestDb probe;
    REQUIRE(probe.db().CfReserve(kAlone, 0, "f", Reserve(100000), settings).ok());
    buckets = core::SubFilterBuckets(probe.db().CfInfo(kAlone, 0, "f")->cuckoo.filter, 0);
  }
  const uint64_t per_page = 32;
  const auto first = Items(40, "early-");
  std::set<uint64_t> written;  // pages of the first items' primary buckets (a sparse filter)
  for (const auto& item : first) {
    written.insert(core::PrimaryBucket(core::HashItem(item).hash, buckets) / per_page);
  }
  auto pages_of = [&](const std::string& item) {
    auto h = core::HashItem(item);
    const uint64_t b1 = core::PrimaryBucket(h.hash, buckets);
    return std::pair(b1 / per_page, core::AltBucket(h.hash, h.fp, buckets) / per_page);
  };
  std::string good;
  std::string bad;
  for (int i = 0; good.empty() || bad.empty(); ++i) {
    const std::string item = "probe-" + std::to_string(i);
    auto [p1, p2] = pages_of(item);
    if (good.empty() && written.count(p1) != 0) {
      good = item;
    } else if (bad.empty() && written.count(p1) == 0 && written.count(p2) == 0 &&
               p1 != pages_of(good.empty() ? item : good).second) {
      bad = item;
    }
  }
  auto run = [&](TestDb& t, bool grouped) {
    auto& db = t.db();
    REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(100000), settings).ok());
    const std::string corrupt = EncodePageKey(FilterPrefix(db, 0, "f"), 0, pages_of(bad).first);
    REQUIRE(t.engine()
                .db()
                ->Put(rocksdb::WriteOptions(), t.engine().pages_cf(), corrupt, std::string(5, 'x'))
                .ok());
    std::optional<WriteGroup> group;
    if (grouped) {
      group.emplace(&t.engine(), &db.cache());
    }
    std::vector<std::string_view> views(first.begin(), first.end());
    const InsertOptions existing{.no_create = true};
    REQUIRE(db.CfInsert(In(group), 0, "f", views, existing, settings).ok());
    if (grouped && committed_between) {
      REQUIRE(group->Commit().ok());
    }
    auto failed = db.CfInsert(In(group), 0, "f", {good, bad}, existing, settings);
    CHECK(failed.status().code() == Code::kCorruption);
    CHECK(Cached(db, In(group), "f", {good}) == std::vector<uint64_t>{0});
    CHECK(Cached(db, In(group), "f", first) == std::vector<uint64_t>(first.size(), 1));
    REQUIRE(db.CfInsert(In(group), 0, "f", {"after-0", "after-1"}, existing, settings).ok());
    if (grouped) {
      REQUIRE(group->Commit().ok());
    }
    REQUIRE(t.engine().db()->Delete(rocksdb::WriteOptions(), t.engine().pages_cf(), corrupt).ok());
  };
  TestDb plain;
  TestDb grouped;
  run(plain, false);
  run(grouped, true);
  CheckSamePages(plain.engine(), grouped.engine());
  CHECK(Stored(grouped.db(), "f", {good}) == std::vector<uint64_t>{0});
  CHECK(grouped.db().CfInfo(kAlone, 0, "f")->size == first.size() + 2);
}

TEST_CASE("a grouped insert changes a page only the cache holds in place, and copies a held one",
          "[write_group]") {
  const CfSettings settings = SmallPages(64);
  TestDb t;
  {
    auto& db = t.db();
    REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(100000), settings).ok());
  }
  const uint64_t buckets = core::SubFilterBuckets(t.db().CfInfo(kAlone, 0, "f")->cuckoo.filter, 0);
  const uint64_t per_page = 32;  // (64-byte pages of 2-slot buckets)
  const auto seeds = Items(40, "seed-");
  std::set<uint64_t> written;
  for (const auto& item : seeds) {
    (void)Add(t.db(), kAlone, "f", item, false, settings);  // (committed: the pages are cached)
    written.insert(core::PrimaryBucket(core::HashItem(item).hash, buckets) / per_page);
  }
  // An item whose primary bucket is on a stored page with room (this sparse filter's inserts
  // go to the primary bucket).
  std::string item;
  uint64_t page = 0;
  for (int i = 0; item.empty(); ++i) {
    const std::string probe = "probe-" + std::to_string(i);
    const uint64_t p = core::PrimaryBucket(core::HashItem(probe).hash, buckets) / per_page;
    if (written.count(p) != 0) {
      item = probe;
      page = p;
    }
  }
  const std::string cache_key =
      PageCacheKey(EncodePageKey(FilterPrefix(t.db(), 0, "f"), 0, static_cast<uint32_t>(page)));
  MemCache::Value held;
  REQUIRE(t.db().cache().GetShared(cache_key, &held));
  const std::string* const value = held.get();
  const std::string before = *held;
  MemCache::Value now;

  // Another item whose primary bucket is on the same page.
  auto another_on_page = [&](std::string_view prefix) {
    for (int i = 0;; ++i) {
      std::string probe = std::string(prefix) + std::to_string(i);
      if (core::PrimaryBucket(core::HashItem(probe).hash, buckets) / per_page == page) {
        return probe;
      }
    }
  };
  // After a restart, RocksDB holds the bytes of the page that the in-memory cache held: what
  // the groups wrote is the bytes they changed, applied to the stored page.
  auto check_stored_as_cached = [&] {
    REQUIRE(t.db().cache().GetShared(cache_key, &now));
    const std::string cached = *now;
    now.reset();
    t.Reopen();
    const auto pages = PagesWithPrefix(t.engine(), FilterPrefix(t.db(), 0, "f"));
    const auto stored = std::find_if(pages.begin(), pages.end(), [&](const RawPage& p) {
      return p.key == std::string_view(cache_key).substr(1);
    });
    REQUIRE(stored != pages.end());
    CHECK(stored->value == cached);
    CHECK(Stored(t.db(), "f", seeds) == std::vector<uint64_t>(seeds.size(), 1));
  };

  SECTION("nobody else holds the cache's value: the insert changes its bytes in place") {
    held.reset();
    WriteGroup group(&t.engine(), &t.db().cache());
    CHECK(Add(t.db(), In(&group), "f", item, false, settings) == core::InsertResult::kInserted);
    REQUIRE(t.db().cache().GetShared(cache_key, &now));
    CHECK(now.get() == value);
    CHECK(*now != before);
    now.reset();
    CHECK(Stored(t.db(), "f", {item}) == std::vector<uint64_t>{0});  // (not written yet)
    REQUIRE(group.Commit().ok());
    CHECK(Stored(t.db(), "f", {item}) == std::vector<uint64_t>{1});
    check_stored_as_cached();
  }
  SECTION("a reader holds the cache's value: the insert changes a copy") {
    WriteGroup group(&t.engine(), &t.db().cache());
    CHECK(Add(t.db(), In(&group), "f", item, false, settings) == core::InsertResult::kInserted);
    CHECK(*held == before);
    REQUIRE(t.db().cache().GetShared(cache_key, &now));
    CHECK(now.get() != value);
    CHECK(*now != before);
    now.reset();
    REQUIRE(group.Commit().ok());
    CHECK(*held == before);
    CHECK(Stored(t.db(), "f", {item}) == std::vector<uint64_t>{1});
  }
  SECTION("a group that has queued its write lets the next group change its pages in place") {
    held.reset();
    const std::string second = another_on_page("next-");
    WriteGroup first(&t.engine(), &t.db().cache());
    CHECK(Add(t.db(), In(&first), "f", item, false, settings) == core::InsertResult::kInserted);
    first.Seal();  // (queued, not yet waited for: another io thread's group runs meanwhile)
    WriteGroup next(&t.engine(), &t.db().cache());
    CHECK(Add(t.db(), In(&next), "f", second, false, settings) == core::InsertResult::kInserted);
    REQUIRE(t.db().cache().GetShared(cache_key, &now));
    CHECK(now.get() == value);  // (the same bytes, changed in place: no copy)
    now.reset();
    REQUIRE(first.Commit().ok());
    REQUIRE(next.Commit().ok());
    check_stored_as_cached();
    CHECK(Stored(t.db(), "f", {item, second}) == std::vector<uint64_t>{1, 1});
  }
  SECTION("a second command of the group adds its ranges to the page changed in place") {
    held.reset();
    // Another item on the same page, inserted by a later command of the same group.
    const std::string second = another_on_page("second-");
    WriteGroup group(&t.engine(), &t.db().cache());
    CHECK(Add(t.db(), In(&group), "f", item, false, settings) == core::InsertResult::kInserted);
    CHECK(Add(t.db(), In(&group), "f", second, false, settings) == core::InsertResult::kInserted);
    REQUIRE(group.Commit().ok());
    check_stored_as_cached();
    CHECK(Stored(t.db(), "f", {item, second}) == std::vector<uint64_t>{1, 1});
  }
}

}  // namespace
