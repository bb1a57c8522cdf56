// The per-command page cache (storage/page_cache.h): how many pages it reads, byte ranges across
// pages, dirty pages, lazily stored pages and corruption.
#include "storage/page_cache.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/dump.h"
#include "core/filter.h"
#include "test_util.h"

using namespace cuckood::storage;
using namespace cuckood::storage::testing;
namespace core = cuckood::core;

namespace {

// Distinct pages holding the two candidate buckets of an item in every sub-filter.
size_t CandidatePages(const core::FilterMeta& meta, uint32_t page_size, std::string_view item) {
  PageGeometry g(page_size, meta.bucket_size);
  auto h = core::HashItem(item);
  std::set<std::pair<uint32_t, uint64_t>> pages;
  for (uint32_t f = 0; f < meta.num_filters; ++f) {
    const uint64_t n = core::SubFilterBuckets(meta, f);
    pages.insert({f, g.PageOf(core::PrimaryBucket(h.hash, n))});
    pages.insert({f, g.PageOf(core::AltBucket(h.hash, h.fp, n))});
  }
  return pages.size();
}

void Commit(Engine& e, PageCache& cache) {
  rocksdb::WriteBatch batch;
  cache.AddDirty(&batch);
  REQUIRE(e.Write(&batch).ok());
}

}  // namespace

TEST_CASE("a lookup loads only the candidate pages, with one MultiGet", "[page_cache]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1024), settings).ok());  // 16 pages
  const auto items = Items::Make("pl-", 0, 100);
  REQUIRE(db.CfInsert(kAlone, 0, "f", items.views,
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  const auto meta = db.CfInfo(kAlone, 0, "f")->cuckoo.filter;
  REQUIRE(meta.num_filters == 1);

  SECTION("one item in a one-sub-filter filter: at most 2 pages") {
    bool saw_two = false;
    for (int i = 0; i < 30; ++i) {
      const auto item = items.views[static_cast<size_t>(i)];
      const size_t want = CandidatePages(meta, 64, item);
      saw_two |= want == 2;
      for (bool count : {false, true}) {
        db.cache().Clear();  // what a lookup reads from RocksDB when nothing is cached
        const uint64_t before = db.pages_loaded();
        REQUIRE(*db.CfLookup(kAlone, 0, "f", {item}, count) == std::vector<uint64_t>{1});
        const uint64_t loaded = db.pages_loaded() - before;
        CHECK(loaded <= 2);
        CHECK(loaded == want);
        // The same lookup again is served by the in-memory cache.
        const uint64_t again = db.pages_loaded();
        REQUIRE(*db.CfLookup(kAlone, 0, "f", {item}, count) == std::vector<uint64_t>{1});
        CHECK(db.pages_loaded() == again);
      }
    }
    CHECK(saw_two);
  }
  SECTION("an absent item and a missing page count too") {
    db.cache().Clear();
    const uint64_t before = db.pages_loaded();
    REQUIRE(*db.CfLookup(kAlone, 0, "f", {"not-there"}, false) == std::vector<uint64_t>{0});
    CHECK(db.pages_loaded() - before == CandidatePages(meta, 64, "not-there"));
  }
  SECTION("many items share page reads") {
    db.cache().Clear();
    const uint64_t before = db.pages_loaded();
    REQUIRE(*db.CfLookup(kAlone, 0, "f", items.views, false) == std::vector<uint64_t>(100, 1));
    CHECK(db.pages_loaded() - before <= 16);
  }
  SECTION("a filter of several sub-filters: at most 2 pages each") {
    REQUIRE(db.CfReserve(kAlone, 0, "g", Reserve(64, 2, 2), settings).ok());
    const auto many = Items::Make("g-", 0, 250);
    REQUIRE(db.CfInsert(kAlone, 0, "g", many.views,
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
                .ok());
    const auto gmeta = db.CfInfo(kAlone, 0, "g")->cuckoo.filter;
    REQUIRE(gmeta.num_filters >= 3);
    db.cache().Clear();
    const uint64_t before = db.pages_loaded();
    REQUIRE(*db.CfLookup(kAlone, 0, "g", {"g-7"}, false) == std::vector<uint64_t>{1});
    const uint64_t loaded = db.pages_loaded() - before;
    CHECK(loaded <= 2 * gmeta.num_filters);
    CHECK(loaded == CandidatePages(gmeta, 64, "g-7"));
  }
}

TEST_CASE("PageCache reads each page at most once", "[page_cache]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1024), settings).ok());
  const auto items = Items::Make("once-", 0, 50);
  REQUIRE(db.CfInsert(kAlone, 0, "f", items.views,
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  const Metadata meta = *db.CfInfo(kAlone, 0, "f");
  const auto& fm = meta.cuckoo.filter;
  PageCache cache(&t.engine(), nullptr, FilterPrefix(db, 0, "f"), &fm, 64);

  const auto h = core::HashItem("once-3");
  const uint64_t b1 = core::PrimaryBucket(h.hash, 512);
  const uint64_t b2 = core::AltBucket(h.hash, h.fp, 512);
  const uint64_t distinct = (b1 / 32 == b2 / 32) ? 1 : 2;

  SECTION("Prefetch then Read and Write do not load again") {
    cache.Prefetch(std::span<const core::ItemHash>(&h, 1));
    CHECK(cache.pages_loaded() == distinct);
    REQUIRE(cache.Read(0, b1) != nullptr);
    REQUIRE(cache.Read(0, b2) != nullptr);
    REQUIRE(cache.Write(0, b1) != nullptr);
    CHECK(cache.pages_loaded() == distinct);
    // The prefetched bucket holds the item's fingerprint in one of its slots.
    bool found = false;
    for (uint64_t b : {b1, b2}) {
      const uint8_t* bucket = cache.Read(0, b);
      found |= bucket[0] == h.fp || bucket[1] == h.fp;
    }
    CHECK(found);
    SECTION("prefetching the same item again loads nothing") {
      cache.Prefetch(std::span<const core::ItemHash>(&h, 1));
      CHECK(cache.pages_loaded() == distinct);
    }
  }
  SECTION("Read without Prefetch loads a page once") {
    uint64_t other = 0;
    while (other / 32 == b1 / 32) {
      other += 32;
    }
    REQUIRE(cache.Read(0, b1) != nullptr);
    CHECK(cache.pages_loaded() == 1);
    REQUIRE(cache.Read(0, b1 ^ 1) != nullptr);  // same page
    CHECK(cache.pages_loaded() == 1);
    REQUIRE(cache.Read(0, other) != nullptr);
    CHECK(cache.pages_loaded() == 2);
    REQUIRE(cache.Read(0, other) != nullptr);
    CHECK(cache.pages_loaded() == 2);
  }
}

TEST_CASE("PageCache byte ranges span pages, including the short last one", "[page_cache]") {
  TestDb t;
  Db& db = t.db();
  // 3-slot buckets in 64-byte pages: 63 bytes a page; 64 buckets = 192 bytes = 63+63+63+3.
  const CfSettings settings = SmallPages(64);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(192, 3), settings).ok());
  const Metadata meta = *db.CfInfo(kAlone, 0, "f");
  const std::string prefix = FilterPrefix(db, 0, "f");
  std::string bytes(192, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>(i % 251 + 1);
  }

  {
    PageCache w(&t.engine(), nullptr, prefix, &meta.cuckoo.filter, 64);
    REQUIRE(w.WriteRange(0, 0, bytes).ok());
    CHECK(w.dirty());
    CHECK(w.pages_loaded() == 0);  // whole pages need no read
    Commit(t.engine(), w);
    CHECK_FALSE(w.dirty());
  }
  auto pages = AllPages(t.engine());
  REQUIRE(pages.size() == 4);
  CHECK(pages[0].value == bytes.substr(0, 63));
  CHECK(pages[2].value == bytes.substr(126, 63));
  CHECK(pages[3].value == bytes.substr(189, 3));

  PageCache r(&t.engine(), nullptr, prefix, &meta.cuckoo.filter, 64);
  std::string out;
  SECTION("whole and partial ranges read back") {
    REQUIRE(r.ReadRange(0, 0, 192, &out).ok());
    CHECK(out == bytes);
    REQUIRE(r.ReadRange(0, 60, 70, &out).ok());
    CHECK(out == bytes.substr(60, 70));
    REQUIRE(r.ReadRange(0, 188, 4, &out).ok());
    CHECK(out == bytes.substr(188, 4));
    REQUIRE(r.ReadRange(0, 5, 0, &out).ok());
    CHECK(out.empty());
  }
  SECTION("a partial write reads the page first and keeps the rest") {
    REQUIRE(r.WriteRange(0, 61, "XYZW").ok());  // crosses from page 0 into page 1
    CHECK(r.pages_loaded() == 2);
    // Dirty pages win over stored ones within the same cache.
    REQUIRE(r.ReadRange(0, 0, 192, &out).ok());
    std::string want = bytes;
    want.replace(61, 4, "XYZW");
    CHECK(out == want);
    Commit(t.engine(), r);
    PageCache fresh(&t.engine(), nullptr, prefix, &meta.cuckoo.filter, 64);
    REQUIRE(fresh.ReadRange(0, 0, 192, &out).ok());
    CHECK(out == want);
  }
  SECTION("zeroing a page deletes it") {
    REQUIRE(r.WriteRange(0, 63, std::string(63, '\0')).ok());
    Commit(t.engine(), r);
    pages = AllPages(t.engine());
    REQUIRE(pages.size() == 3);
    PageKeyParts parts;
    REQUIRE(DecodePageKey(pages[1].key, &parts));
    CHECK(parts.page == 2);
    REQUIRE(r.ReadRange(0, 0, 192, &out).ok());
    std::string want = bytes;
    want.replace(63, 63, std::string(63, '\0'));
    CHECK(out == want);
  }
  SECTION("missing pages read as zeros in a range") {
    REQUIRE(
        t.engine()
            .db()
            ->Delete(rocksdb::WriteOptions(), t.engine().pages_cf(), EncodePageKey(prefix, 0, 1))
            .ok());
    REQUIRE(r.ReadRange(0, 0, 192, &out).ok());
    CHECK(out.substr(0, 63) == bytes.substr(0, 63));
    CHECK(out.substr(63, 63) == std::string(63, '\0'));
    CHECK(out.substr(126) == bytes.substr(126));
  }
  SECTION("a wrong-length page fails the range read") {
    REQUIRE(t.engine()
                .db()
                ->Put(rocksdb::WriteOptions(), t.engine().pages_cf(), EncodePageKey(prefix, 0, 3),
                      std::string(63, 'x'))
                .ok());
    CHECK(r.ReadRange(0, 0, 192, &out).code() == Code::kCorruption);
    CHECK(r.Read(0, 63) == nullptr);
    CHECK(r.status().code() == Code::kCorruption);
  }
}

TEST_CASE("PageCache::NextMaybeNonEmpty skips pages that are not stored", "[page_cache]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1024), settings).ok());  // 512 buckets, 32 a page
  Metadata meta = *db.CfInfo(kAlone, 0, "f");
  meta.cuckoo.filter.num_filters = 2;  // sub-filter 1 has no pages at all
  const std::string prefix = FilterPrefix(db, 0, "f");
  {
    PageCache w(&t.engine(), nullptr, prefix, &meta.cuckoo.filter, 64);
    w.Write(0, 5 * 32 + 3)[0] = 9;
    w.Write(0, 9 * 32)[1] = 9;
    Commit(t.engine(), w);
  }
  REQUIRE(AllPages(t.engine()).size() == 2);
  PageCache c(&t.engine(), nullptr, prefix, &meta.cuckoo.filter, 64);
  CHECK(c.NextMaybeNonEmpty(0, 0, 512) == 5 * 32);
  CHECK(c.NextMaybeNonEmpty(0, 5 * 32 + 4, 512) == 5 * 32 + 4);
  CHECK(c.NextMaybeNonEmpty(0, 6 * 32, 512) == 9 * 32);
  CHECK(c.NextMaybeNonEmpty(0, 10 * 32, 512) == 512);
  CHECK(c.NextMaybeNonEmpty(1, 0, 512) == 512);
  CHECK(c.pages_loaded() == 0);
  // A page this cache wrote counts even though it is not stored yet.
  c.Write(0, 12 * 32)[0] = 1;
  CHECK(c.NextMaybeNonEmpty(0, 12 * 32 + 1, 512) == 12 * 32 + 1);
}

TEST_CASE("PageCache reports a wrong-length page as corruption", "[page_cache]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1024), settings).ok());
  const Metadata meta = *db.CfInfo(kAlone, 0, "f");
  const std::string prefix = FilterPrefix(db, 0, "f");
  REQUIRE(t.engine()
              .db()
              ->Put(rocksdb::WriteOptions(), t.engine().pages_cf(), EncodePageKey(prefix, 0, 2),
                    std::string(10, 'x'))
              .ok());
  PageCache c(&t.engine(), nullptr, prefix, &meta.cuckoo.filter, 64);
  CHECK(c.Read(0, 0) != nullptr);  // a clean page is fine
  CHECK(c.Write(0, 2 * 32) == nullptr);
  CHECK(c.status().code() == Code::kCorruption);
  CHECK(c.status().message().find("page 2 has 10 bytes, expected 64") != std::string::npos);
  // Once failed, the cache serves no page it has not loaded yet.
  CHECK(c.Read(0, 3 * 32) == nullptr);
}

TEST_CASE("PageCache::Checkpoint commits dirty pages with the metadata once enough pile up",
          "[page_cache]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  // 2^20 two-slot buckets in 64-byte pages: 32768 pages.
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1 << 21), settings).ok());
  const Metadata meta = *db.CfInfo(kAlone, 0, "f");
  const std::string prefix = FilterPrefix(db, 0, "f");
  PageCache c(&t.engine(), nullptr, prefix, &meta.cuckoo.filter, 64);
  int checkpoints = 0;
  c.set_on_checkpoint([&](rocksdb::WriteBatch* batch) {
    ++checkpoints;
    REQUIRE(batch->Put(t.engine().default_cf(), "checkpoint-marker", "1").ok());
  });

  SECTION("below the threshold nothing is written") {
    for (uint64_t page = 0; page < 100; ++page) {
      c.Write(0, page * 32)[0] = 1;
    }
    REQUIRE(c.Checkpoint());
    CHECK(checkpoints == 0);
    CHECK(c.dirty());
    CHECK(AllPages(t.engine()).empty());
  }
  SECTION("past it, pages and the callback's records commit together and the cache empties") {
    const uint64_t n = 2100;
    for (uint64_t page = 0; page < n; ++page) {
      c.Write(0, page * 32 + 1)[1] = static_cast<uint8_t>(page % 200 + 1);
    }
    REQUIRE(c.Checkpoint());
    CHECK(checkpoints == 1);
    CHECK_FALSE(c.dirty());
    CHECK(AllPages(t.engine()).size() == n);
    std::string marker;
    CHECK(t.engine()
              .db()
              ->Get(rocksdb::ReadOptions(), t.engine().default_cf(), "checkpoint-marker", &marker)
              .ok());
    // The cache was dropped: reading again loads from RocksDB and sees the committed bytes.
    const uint64_t loaded = c.pages_loaded();
    const uint8_t* bucket = c.Read(0, 7 * 32 + 1);
    REQUIRE(bucket != nullptr);
    CHECK(bucket[1] == 8);
    CHECK(c.pages_loaded() == loaded + 1);
  }
  SECTION("a reader (with a snapshot) never commits") {
    const rocksdb::Snapshot* snap = t.engine().db()->GetSnapshot();
    {
      PageCache reader(&t.engine(), snap, prefix, &meta.cuckoo.filter, 64);
      for (uint64_t page = 0; page < 2100; ++page) {
        reader.Write(0, page * 32)[0] = 1;
      }
      REQUIRE(reader.Checkpoint());
      CHECK(reader.dirty());
    }
    t.engine().db()->ReleaseSnapshot(snap);
    CHECK(AllPages(t.engine()).empty());
  }
}

TEST_CASE("CF.COMPACT of a large sub-filter commits in several batches and loses nothing",
          "[page_cache][cuckoo]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  // Two sub-filters of 2^17 one-slot buckets (2048 pages each), built through LOADCHUNK: the
  // old one empty, the newer one holding ~8000 fingerprints at their items' primary buckets.
  // Compaction moves every one of them back to the same bucket of sub-filter 0, dirtying ~4000
  // pages: more than one checkpoint's worth.
  constexpr uint64_t kBuckets = 1 << 17;
  core::FilterMeta header;
  header.base_num_buckets = kBuckets;
  header.num_filters = 2;
  header.bucket_size = 1;
  header.expansion = 1;
  std::string newer(kBuckets, '\0');
  std::vector<std::string> items;
  for (int i = 0; items.size() < 8000; ++i) {
    std::string item = "big-compact-" + std::to_string(i);
    auto h = core::HashItem(item);
    uint64_t b = core::PrimaryBucket(h.hash, kBuckets);
    if (newer[b] == 0) {
      newer[b] = static_cast<char>(h.fp);
      items.push_back(std::move(item));
    }
  }
  header.num_items = items.size();
  std::vector<std::string_view> views(items.begin(), items.end());
  REQUIRE(db.CfLoadChunk(kAlone, 0, "f", 1, core::EncodeHeader(header), settings).ok());
  // Sub-filter 1 occupies bytes [kBuckets, 2 * kBuckets) of the dump; its chunk's iterator is
  // the position after it.
  REQUIRE(
      db.CfLoadChunk(kAlone, 0, "f", static_cast<int64_t>(2 * kBuckets + 1), newer, settings).ok());
  REQUIRE(*db.CfLookup(kAlone, 0, "f", views, false) == std::vector<uint64_t>(items.size(), 1));
  const std::string prefix = FilterPrefix(db, 0, "f");
  const size_t stored_before = AllPages(t.engine()).size();
  REQUIRE(stored_before > 2000);

  REQUIRE(db.CfCompact(kAlone, 0, "f", settings).ok());
  auto info = db.CfInfo(kAlone, 0, "f");
  REQUIRE(info.ok());
  CHECK(info->cuckoo.filter.num_filters == 1);
  CHECK(info->size == items.size());
  CHECK(info->cuckoo.filter.num_deletes == 0);
  CHECK(*db.CfLookup(kAlone, 0, "f", views, false) == std::vector<uint64_t>(items.size(), 1));
  // Every fingerprint sits at the same bucket of sub-filter 0 now; sub-filter 1 is gone.
  PageCache c(&t.engine(), nullptr, prefix, &info->cuckoo.filter, 64);
  std::string old_bytes;
  REQUIRE(c.ReadRange(0, 0, kBuckets, &old_bytes).ok());
  CHECK(old_bytes == newer);
  for (const auto& p : AllPages(t.engine())) {
    PageKeyParts parts;
    REQUIRE(DecodePageKey(p.key, &parts));
    CHECK(parts.filter == 0);
  }
  CHECK(AllPages(t.engine()).size() == stored_before);
}

TEST_CASE("pages read for the in-memory cache are not kept in RocksDB's block cache too",
          "[page_cache]") {
  TestDb t;
  Db& db = t.db();
  // 131,072 buckets of 2 bytes: 128 pages of 2 KiB, every one written by 20,000 items.
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(262144), CfSettings{}).ok());
  const auto items = Items::Make("bc-", 0, 20000);
  REQUIRE(db.CfInsert(kAlone, 0, "f", items.views,
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, CfSettings{})
              .ok());
  REQUIRE(t.engine().Flush().ok());  // (reads now come from an SST file's data blocks)
  constexpr size_t kFilterBytes = 128 * 2048;

  // Through the server's in-memory cache: the pages land there, not in the block cache.
  db.cache().Clear();
  const uint64_t before = t.engine().Stats().block_cache_usage;
  const uint64_t loaded = db.pages_loaded();
  REQUIRE(*db.CfLookup(kAlone, 0, "f", items.views, false) ==
          std::vector<uint64_t>(items.views.size(), 1));
  REQUIRE(db.pages_loaded() - loaded == 128);
  const uint64_t with_cache = t.engine().Stats().block_cache_usage - before;
  // Nor does a SCANDUMP of the whole filter (it reads a snapshot, page by page).
  const uint64_t before_dump = t.engine().Stats().block_cache_usage;
  size_t dumped = 0;
  for (int64_t iter = 0;;) {
    auto chunk = db.CfScanDump(kAlone, 0, "f", iter);
    REQUIRE(chunk.ok());
    if (chunk->next == 0) {
      break;
    }
    dumped += chunk->data->size();
    iter = chunk->next;
  }
  REQUIRE(dumped >= kFilterBytes);
  const uint64_t with_cache_dump = t.engine().Stats().block_cache_usage - before_dump;

  // Without an in-memory cache (cache-size 0) the block cache is the only cache: it keeps the
  // data blocks of the same pages (128 pages' changes, at least ~64 KiB).
  Db uncached(&t.engine(), 64, 0);
  const uint64_t before_uncached = t.engine().Stats().block_cache_usage;
  REQUIRE(*uncached.CfLookup(kAlone, 0, "f", items.views, false) ==
          std::vector<uint64_t>(items.views.size(), 1));
  const uint64_t without_cache = t.engine().Stats().block_cache_usage - before_uncached;
  CHECK(without_cache >= 64 * 1024);
  CHECK(with_cache < without_cache / 8);
  CHECK(with_cache_dump < without_cache / 8);
  CHECK(with_cache_dump < 16 * 1024);  // (the filter's data blocks are ~115 KB)
}

TEST_CASE("an insert without NX reads the newest sub-filter's primary pages first",
          "[page_cache]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  PageGeometry g(64, 2);

  SECTION("primary buckets with room: one page per item, the alternate pages are not read") {
    REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(8192), settings).ok());  // 4096 buckets, 128 pages
    REQUIRE(db.CfInsert(kAlone, 0, "f", Items::Make("old-", 0, 200).views,
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
                .ok());
    const auto meta = db.CfInfo(kAlone, 0, "f")->cuckoo.filter;
    const auto items = Items::Make("new-", 0, 20);
    std::set<uint64_t> primary;
    std::set<uint64_t> all;
    for (auto item : items.views) {
      const auto h = core::HashItem(item);
      const uint64_t b1 = core::PrimaryBucket(h.hash, 4096);
      primary.insert(g.PageOf(b1));
      all.insert(g.PageOf(b1));
      all.insert(g.PageOf(core::AltBucket(h.hash, h.fp, 4096)));
    }
    REQUIRE(all.size() > primary.size());  // (else the test shows nothing)
    db.cache().Clear();
    const uint64_t before = db.pages_loaded();
    auto out = db.CfInsert(kAlone, 0, "f", items.views,
                           InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings);
    REQUIRE(out.ok());
    // 200 items in 8192 slots: every primary bucket had room (the lookups below confirm that
    // each item went in), so only their pages were read.
    CHECK(db.pages_loaded() - before == primary.size());
    CHECK(*db.CfLookup(kAlone, 0, "f", items.views, false) ==
          std::vector<uint64_t>(items.views.size(), 1));
    CHECK(db.CfInfo(kAlone, 0, "f")->cuckoo.filter.num_items ==
          meta.num_items + items.views.size());
  }

  SECTION("a full primary bucket: its item's other candidate pages are read too") {
    REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(8192), settings).ok());
    // The same item twice fills its primary bucket (2 slots).
    REQUIRE(db.CfInsert(kAlone, 0, "f", {"dup", "dup"},
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
                .ok());
    const auto h = core::HashItem("dup");
    const uint64_t b1 = core::PrimaryBucket(h.hash, 4096);
    const uint64_t b2 = core::AltBucket(h.hash, h.fp, 4096);
    db.cache().Clear();
    const uint64_t before = db.pages_loaded();
    REQUIRE(db.CfInsert(kAlone, 0, "f", {"dup"},
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
                .ok());
    CHECK(db.pages_loaded() - before == (g.PageOf(b1) == g.PageOf(b2) ? 1u : 2u));
    CHECK(*db.CfLookup(kAlone, 0, "f", {"dup"}, true) == std::vector<uint64_t>{3});
  }

  SECTION("several sub-filters: only the newest one's primary page") {
    REQUIRE(db.CfReserve(kAlone, 0, "g", Reserve(64, 2, 2), settings).ok());
    REQUIRE(db.CfInsert(kAlone, 0, "g", Items::Make("g-", 0, 250).views,
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
                .ok());
    const auto meta = db.CfInfo(kAlone, 0, "g")->cuckoo.filter;
    REQUIRE(meta.num_filters >= 3);
    const uint32_t newest = meta.num_filters - 1;
    const uint64_t n = core::SubFilterBuckets(meta, newest);
    // An item whose primary bucket in the newest sub-filter has room.
    std::string item;
    {
      PageCache peek(&t.engine(), nullptr, FilterPrefix(db, 0, "g"), &meta, 64);
      for (int i = 0; item.empty(); ++i) {
        REQUIRE(i < 1000);
        const std::string candidate = "fresh-" + std::to_string(i);
        const auto h = core::HashItem(candidate);
        const uint8_t* bucket = peek.Read(newest, core::PrimaryBucket(h.hash, n));
        REQUIRE(bucket != nullptr);
        if (bucket[0] == 0 || bucket[1] == 0) {
          item = candidate;
        }
      }
    }
    REQUIRE(CandidatePages(meta, 64, item) > 1);  // what a full prefetch would read
    db.cache().Clear();
    const uint64_t before = db.pages_loaded();
    REQUIRE(db.CfInsert(kAlone, 0, "g", {item},
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
                .ok());
    CHECK(db.pages_loaded() - before == 1);
    CHECK(*db.CfLookup(kAlone, 0, "g", {item}, false) == std::vector<uint64_t>{1});
    CHECK(db.CfInfo(kAlone, 0, "g")->cuckoo.filter.num_items == meta.num_items + 1);
  }
}
