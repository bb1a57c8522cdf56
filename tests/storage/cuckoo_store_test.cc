// Cuckoo filter operations of Db (storage/cuckoo_store.cc): RESERVE, ADD/INSERT, EXISTS/COUNT,
// DEL, COMPACT, INFO, lazy pages, the page layout, corruption handling and versions.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/filter.h"
#include "test_util.h"

using namespace cuckood::storage;
using namespace cuckood::storage::testing;
namespace core = cuckood::core;

namespace {

// The first item "<prefix><i>" whose primary bucket in a sub-filter of n buckets is `bucket`.
std::string ItemWithPrimary(uint64_t bucket, uint64_t n, std::string_view prefix = "probe-") {
  for (int i = 0; i < 1'000'000; ++i) {
    std::string item = std::string(prefix) + std::to_string(i);
    if (core::PrimaryBucket(core::HashItem(item).hash, n) == bucket) {
      return item;
    }
  }
  FAIL("no item found");
  return {};
}

// Expected (filter 0) placement of items inserted one by one into an empty filter that never
// needs a kick-out: the primary bucket if it has a free slot, else the alternate.
std::map<uint64_t, std::vector<uint8_t>> PlaceWithoutKicks(const std::vector<std::string>& items,
                                                           uint64_t n, uint16_t bucket_size) {
  std::map<uint64_t, std::vector<uint8_t>> buckets;
  for (const auto& item : items) {
    auto h = core::HashItem(item);
    uint64_t b1 = core::PrimaryBucket(h.hash, n);
    uint64_t b2 = core::AltBucket(h.hash, h.fp, n);
    auto& first = buckets[b1];
    if (first.size() < bucket_size) {
      first.push_back(h.fp);
      continue;
    }
    auto& second = buckets[b2];
    REQUIRE(second.size() < bucket_size);
    second.push_back(h.fp);
  }
  return buckets;
}

std::string_view View(const std::string& s) {
  return s;
}

}  // namespace

TEST_CASE("CF.RESERVE writes only metadata", "[cuckoo]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);

  SECTION("the metadata records every requested field") {
    REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1000, 4, 3, 50), settings).ok());
    auto info = db.CfInfo(kAlone, 0, "f");
    REQUIRE(info.ok());
    CHECK(info->type == KeyType::kCuckoo);
    CHECK(info->size == 0);
    CHECK(info->expire_ms == 0);
    CHECK(info->version > 0);
    const auto& c = info->cuckoo;
    CHECK(c.filter.base_num_buckets == 256);  // next_pow2(1000 / 4)
    CHECK(c.filter.bucket_size == 4);
    CHECK(c.filter.max_iterations == 50);
    CHECK(c.filter.expansion == 4);  // normalised to a power of two
    CHECK(c.filter.num_filters == 1);
    CHECK(c.filter.num_items == 0);
    CHECK(c.filter.num_deletes == 0);
    CHECK(c.base_capacity == 1000);
    CHECK(c.page_size == 64);
    CHECK(c.owner.empty());
    CHECK(AllPages(t.engine()).empty());
    // A reserved filter with 0 items is a live key.
    CHECK(*db.Exists(kAlone, 0, "f"));
    CHECK(*db.DbSize(0) == 1);
  }
  SECTION("a second RESERVE is kExists, over a string kWrongType") {
    REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(100), settings).ok());
    const uint64_t version = db.CfInfo(kAlone, 0, "f")->version;
    auto again = db.CfReserve(kAlone, 0, "f", Reserve(5000), settings);
    CHECK(again.code() == Code::kExists);
    CHECK(again.reason() == Reason::kFilterExists);
    CHECK(db.CfInfo(kAlone, 0, "f")->version == version);
    CHECK(db.CfInfo(kAlone, 0, "f")->cuckoo.base_capacity == 100);
    REQUIRE(db.SetString(0, "s", "v", 0, false).ok());
    CHECK(db.CfReserve(kAlone, 0, "s", Reserve(100), settings).code() == Code::kWrongType);
    CHECK((*db.Get(kAlone, 0, "s"))->value == "v");
  }
  SECTION("capacity 1,000,000,000 is instant and writes no pages") {
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(db.CfReserve(kAlone, 0, "big", Reserve(1'000'000'000), CfSettings()).ok());
    const auto elapsed = std::chrono::steady_clock::now() - start;
    CHECK(elapsed < std::chrono::seconds(2));
    CHECK(db.CfInfo(kAlone, 0, "big")->cuckoo.filter.base_num_buckets == (1ULL << 29));
    CHECK(AllPages(t.engine()).empty());
    // Reading it touches at most the two candidate pages; writing one item writes one page.
    const uint64_t loaded = db.pages_loaded();
    CHECK(*db.CfLookup(kAlone, 0, "big", {"x"}, false) == std::vector<uint64_t>{0});
    CHECK(db.pages_loaded() - loaded <= 2);
    REQUIRE(db.CfInsert(kAlone, 0, "big", {"x"},
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, CfSettings())
                .ok());
    CHECK(AllPages(t.engine()).size() == 1);
    CHECK(*db.CfLookup(kAlone, 0, "big", {"x"}, false) == std::vector<uint64_t>{1});
  }
  SECTION("a filter over the byte limit cannot be created") {
    auto s = db.CfReserve(kAlone, 0, "huge", Reserve(1ULL << 40), CfSettings());
    CHECK(s.code() == Code::kInvalid);
    CHECK(s.reason() == Reason::kCreateTooLarge);
    CHECK_FALSE(*db.Exists(kAlone, 0, "huge"));
  }
}

TEST_CASE("CF.ADD, EXISTS, COUNT and DEL on one filter", "[cuckoo]") {
  TestDb t;
  Db& db = t.db();
  CfSettings settings = SmallPages(64);
  const auto items = Items::Make("item-", 0, 50);

  auto added = db.CfInsert(kAlone, 0, "f", items.views,
                           InsertOptions{.nx = false, .no_create = false, .capacity = 0}, settings);
  REQUIRE(added.ok());
  CHECK_FALSE(added->max_expansions);
  REQUIRE(added->results.size() == 50);
  for (auto r : added->results) {
    CHECK(r == core::InsertResult::kInserted);
  }
  auto info = db.CfInfo(kAlone, 0, "f");
  REQUIRE(info.ok());
  CHECK(info->cuckoo.base_capacity == 1024);  // auto-created with cf-initial-size
  CHECK(info->cuckoo.filter.base_num_buckets == 512);
  CHECK(info->size == 50);
  CHECK(info->cuckoo.filter.num_items == 50);
  CHECK(*db.CfLookup(kAlone, 0, "f", items.views, false) == std::vector<uint64_t>(50, 1));
  CHECK(*db.CfLookup(kAlone, 0, "f", items.views, true) == std::vector<uint64_t>(50, 1));
  const auto others = Items::Make("absent-", 0, 50);
  CHECK(*db.CfLookup(kAlone, 0, "f", others.views, false) == std::vector<uint64_t>(50, 0));

  SECTION("adding an item twice counts it twice; NX refuses the second copy") {
    auto again =
        db.CfInsert(kAlone, 0, "f", {"item-3"},
                    InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings);
    REQUIRE(again.ok());
    CHECK(again->results == std::vector<core::InsertResult>{core::InsertResult::kInserted});
    CHECK(*db.CfLookup(kAlone, 0, "f", {"item-3"}, true) == std::vector<uint64_t>{2});
    auto nx = db.CfInsert(kAlone, 0, "f", {"item-3", "new-item"},
                          InsertOptions{.nx = true, .no_create = true, .capacity = 0}, settings);
    REQUIRE(nx.ok());
    CHECK(nx->results == std::vector<core::InsertResult>{core::InsertResult::kExists,
                                                         core::InsertResult::kInserted});
    CHECK(*db.CfLookup(kAlone, 0, "f", {"item-3", "new-item"}, true) ==
          std::vector<uint64_t>{2, 1});
    CHECK(db.CfInfo(kAlone, 0, "f")->size == 52);
  }
  SECTION("NX of only existing items writes nothing") {
    const auto before = AllPages(t.engine());
    auto nx = db.CfInsert(kAlone, 0, "f", {"item-1", "item-2"},
                          InsertOptions{.nx = true, .no_create = true, .capacity = 0}, settings);
    REQUIRE(nx.ok());
    CHECK(nx->results == std::vector<core::InsertResult>(2, core::InsertResult::kExists));
    CHECK(db.CfInfo(kAlone, 0, "f")->size == 50);
    CHECK(AllPages(t.engine()).size() == before.size());
  }
  SECTION("DEL removes one copy") {
    auto d = db.CfDelete(kAlone, 0, "f", "item-7", settings);
    REQUIRE(d.ok());
    CHECK(*d);
    CHECK(*db.CfLookup(kAlone, 0, "f", {"item-7"}, false) == std::vector<uint64_t>{0});
    CHECK(db.CfInfo(kAlone, 0, "f")->size == 49);
    CHECK(db.CfInfo(kAlone, 0, "f")->cuckoo.filter.num_deletes == 1);
    auto again = db.CfDelete(kAlone, 0, "f", "item-7", settings);
    REQUIRE(again.ok());
    CHECK_FALSE(*again);
    CHECK(db.CfInfo(kAlone, 0, "f")->size == 49);
    // The other items are untouched.
    auto rest = *db.CfLookup(kAlone, 0, "f", items.views, false);
    for (size_t i = 0; i < rest.size(); ++i) {
      CHECK(rest[i] == (i == 7 ? 0u : 1u));
    }
  }
  SECTION("deleting every item leaves no pages behind") {
    for (auto item : items.views) {
      REQUIRE(*db.CfDelete(kAlone, 0, "f", item, settings));
    }
    CHECK(db.CfInfo(kAlone, 0, "f")->size == 0);
    CHECK(AllPages(t.engine()).empty());  // all-zero pages are deleted, not stored
    CHECK(*db.Exists(kAlone, 0, "f"));
  }
}

TEST_CASE("cuckoo commands on missing keys and other types", "[cuckoo]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings;
  REQUIRE(db.SetString(0, "s", "string", 0, false).ok());

  SECTION("lookup answers 0 for a missing key and for another type") {
    CHECK(*db.CfLookup(kAlone, 0, "missing", {"a", "b"}, false) == std::vector<uint64_t>{0, 0});
    CHECK(*db.CfLookup(kAlone, 0, "s", {"a"}, true) == std::vector<uint64_t>{0});
  }
  SECTION("insert: no_create on a missing key is kNotFound and creates nothing") {
    auto r = db.CfInsert(kAlone, 0, "missing", {"a"},
                         InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings);
    CHECK(r.status().code() == Code::kNotFound);
    CHECK(r.status().reason() == Reason::kFilterNotFound);
    CHECK_FALSE(*db.Exists(kAlone, 0, "missing"));
  }
  SECTION("insert into a string is kWrongType and leaves it") {
    auto r = db.CfInsert(kAlone, 0, "s", {"a"},
                         InsertOptions{.nx = false, .no_create = false, .capacity = 0}, settings);
    CHECK(r.status().code() == Code::kWrongType);
    CHECK((*db.Get(kAlone, 0, "s"))->value == "string");
    CHECK(AllPages(t.engine()).empty());
  }
  SECTION("delete, compact and info") {
    CHECK(db.CfDelete(kAlone, 0, "missing", "a", settings).status().code() == Code::kNotFound);
    CHECK(db.CfDelete(kAlone, 0, "s", "a", settings).status().code() == Code::kNotFound);
    CHECK(db.CfDelete(kAlone, 0, "s", "a", settings).status().reason() ==
          Reason::kDelFilterNotFound);
    CHECK(db.CfCompact(kAlone, 0, "missing", settings).code() == Code::kNotFound);
    CHECK(db.CfCompact(kAlone, 0, "s", settings).code() == Code::kNotFound);
    CHECK(db.CfCompact(kAlone, 0, "s", settings).reason() == Reason::kCompactFilterNotFound);
    CHECK(db.CfInfo(kAlone, 0, "missing").status().code() == Code::kNotFound);
    CHECK(db.CfInfo(kAlone, 0, "missing").status().reason() == Reason::kFilterNotFound);
    CHECK(db.CfInfo(kAlone, 0, "s").status().code() == Code::kWrongType);
  }
  SECTION("an auto-created key stays even when max expansions refuses the items") {
    CfSettings limited;
    limited.max_expansions = 1;
    auto r = db.CfInsert(kAlone, 0, "new", {"a", "b"},
                         InsertOptions{.nx = false, .no_create = false, .capacity = 0}, limited);
    REQUIRE(r.ok());
    CHECK(r->max_expansions);
    CHECK(r->results.empty());
    CHECK(*db.Exists(kAlone, 0, "new"));
    CHECK(db.CfInfo(kAlone, 0, "new")->size == 0);
    CHECK(*db.CfLookup(kAlone, 0, "new", {"a"}, false) == std::vector<uint64_t>{0});
  }
  SECTION("an explicit capacity sizes an auto-created filter") {
    REQUIRE(db.CfInsert(kAlone, 0, "sized", {"a"},
                        InsertOptions{.nx = false, .no_create = false, .capacity = 100000},
                        settings)
                .ok());
    CHECK(db.CfInfo(kAlone, 0, "sized")->cuckoo.base_capacity == 100000);
    CHECK(db.CfInfo(kAlone, 0, "sized")->cuckoo.filter.base_num_buckets == 65536);
  }
}

TEST_CASE("pages are created lazily, only where buckets are written", "[cuckoo][pages]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);  // 32 two-slot buckets per page
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1024), settings).ok());  // 512 buckets, 16 pages
  const std::string prefix = FilterPrefix(db, 0, "f");

  SECTION("one item writes exactly its bucket's page, with the fingerprint in place") {
    const std::string item = "hello";
    const auto h = core::HashItem(item);
    const uint64_t b = core::PrimaryBucket(h.hash, 512);
    REQUIRE(db.CfInsert(kAlone, 0, "f", {View(item)},
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
                .ok());
    auto pages = AllPages(t.engine());
    REQUIRE(pages.size() == 1);
    CHECK(pages[0].key == EncodePageKey(prefix, 0, static_cast<uint32_t>(b / 32)));
    REQUIRE(pages[0].value.size() == 64);
    std::string want(64, '\0');
    want[(b % 32) * 2] = static_cast<char>(h.fp);
    CHECK(pages[0].value == want);
  }
  SECTION("several items write the pages of the buckets they land in, nothing else") {
    auto items = Items::Make("lazy-", 0, 12);
    const auto expected = PlaceWithoutKicks(items.owned, 512, 2);
    REQUIRE(db.CfInsert(kAlone, 0, "f", items.views,
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
                .ok());
    std::map<uint32_t, std::string> want_pages;
    for (const auto& [bucket, fps] : expected) {
      auto& page = want_pages[static_cast<uint32_t>(bucket / 32)];
      page.resize(64, '\0');
      for (size_t s = 0; s < fps.size(); ++s) {
        page[(bucket % 32) * 2 + s] = static_cast<char>(fps[s]);
      }
    }
    auto pages = AllPages(t.engine());
    REQUIRE(pages.size() == want_pages.size());
    REQUIRE(pages.size() < 16);
    size_t i = 0;
    for (const auto& [page, bytes] : want_pages) {
      INFO("page " << page);
      CHECK(pages[i].key == EncodePageKey(prefix, 0, page));
      CHECK(pages[i].value == bytes);
      ++i;
    }
  }
  SECTION("a page written by hand with a fingerprint in place makes the item visible") {
    const std::string item = "planted";
    const auto h = core::HashItem(item);
    const uint64_t b = core::AltBucket(h.hash, h.fp, 512);  // the alternate bucket works too
    std::string page(64, '\0');
    page[(b % 32) * 2 + 1] = static_cast<char>(h.fp);
    REQUIRE(t.engine()
                .db()
                ->Put(rocksdb::WriteOptions(), t.engine().pages_cf(),
                      EncodePageKey(prefix, 0, static_cast<uint32_t>(b / 32)), page)
                .ok());
    CHECK(*db.CfLookup(kAlone, 0, "f", {View(item)}, false) == std::vector<uint64_t>{1});
    CHECK(*db.CfLookup(kAlone, 0, "f", {View(item)}, true) ==
          std::vector<uint64_t>{core::PrimaryBucket(h.hash, 512) == b ? 2u : 1u});
  }
}

TEST_CASE("a missing page reads as zeros", "[cuckoo][pages]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1024), settings).ok());
  const auto items = Items::Make("z-", 0, 100);
  CHECK(*db.CfLookup(kAlone, 0, "f", items.views, false) == std::vector<uint64_t>(100, 0));
  CHECK(*db.CfLookup(kAlone, 0, "f", items.views, true) == std::vector<uint64_t>(100, 0));
  CHECK_FALSE(*db.CfDelete(kAlone, 0, "f", "z-1", settings));
  CHECK(AllPages(t.engine()).empty());
  // A filter whose pages are partly stored: the stored ones count, the missing ones are empty.
  REQUIRE(db.CfInsert(kAlone, 0, "f", {"z-1"},
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  auto found = *db.CfLookup(kAlone, 0, "f", items.views, false);
  CHECK(found[1] == 1);
  CHECK(found[0] == 0);
}

TEST_CASE("a bucket in the short last page of a sub-filter", "[cuckoo][pages]") {
  TestDb t;
  Db& db = t.db();
  // 3-slot buckets, 64-byte pages: 21 buckets (63 bytes) a page. 64 buckets: pages 0-2 are full,
  // page 3 holds bucket 63 alone (3 bytes).
  const CfSettings settings = SmallPages(64);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(192, 3), settings).ok());
  REQUIRE(db.CfInfo(kAlone, 0, "f")->cuckoo.filter.base_num_buckets == 64);
  const std::string prefix = FilterPrefix(db, 0, "f");
  const std::string last_page_key = EncodePageKey(prefix, 0, 3);

  const std::string item = ItemWithPrimary(63, 64);
  const auto h = core::HashItem(item);
  REQUIRE(db.CfInsert(kAlone, 0, "f", {View(item)},
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  std::string value;
  REQUIRE(t.engine()
              .db()
              ->Get(rocksdb::ReadOptions(), t.engine().pages_cf(), last_page_key, &value)
              .ok());
  CHECK(value == std::string(1, static_cast<char>(h.fp)) + std::string(2, '\0'));
  CHECK(*db.CfLookup(kAlone, 0, "f", {View(item)}, false) == std::vector<uint64_t>{1});

  SECTION("filling the last bucket and beyond keeps every item visible") {
    std::vector<std::string> more;
    for (int i = 0; more.size() < 4; ++i) {
      std::string it = ItemWithPrimary(63, 64, "more-" + std::to_string(i) + "-");
      more.push_back(it);
    }
    std::vector<std::string_view> views(more.begin(), more.end());
    auto r = db.CfInsert(kAlone, 0, "f", views,
                         InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings);
    REQUIRE(r.ok());
    CHECK(*db.CfLookup(kAlone, 0, "f", views, false) == std::vector<uint64_t>(4, 1));
    REQUIRE(t.engine()
                .db()
                ->Get(rocksdb::ReadOptions(), t.engine().pages_cf(), last_page_key, &value)
                .ok());
    CHECK(value.size() == 3);
    CHECK(value.find('\0') == std::string::npos);  // bucket 63 is full
    for (const auto& p : AllPages(t.engine())) {
      PageKeyParts parts;
      REQUIRE(DecodePageKey(p.key, &parts));
      CHECK(p.value.size() == (parts.page == 3 ? 3u : 63u));
    }
  }
  SECTION("a full-length value in the short page's place is corruption") {
    REQUIRE(t.engine()
                .db()
                ->Put(rocksdb::WriteOptions(), t.engine().pages_cf(), last_page_key,
                      std::string(63, '\x01'))
                .ok());
    db.cache().Clear();  // the page was changed behind the server's back, as on disk
    CHECK(db.CfLookup(kAlone, 0, "f", {View(item)}, false).status().code() == Code::kCorruption);
  }
}

TEST_CASE("a page of the wrong length is corruption and the command writes nothing",
          "[cuckoo][pages]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1024), settings).ok());
  const std::string prefix = FilterPrefix(db, 0, "f");
  // "good" has both candidate buckets on clean pages; "bad" has its primary bucket on the page
  // that gets corrupted (page 15), and its alternate elsewhere.
  auto alt_page = [](const std::string& item) {
    auto h = core::HashItem(item);
    return core::AltBucket(h.hash, h.fp, 512) / 32;
  };
  std::string good;
  for (int i = 0; good.empty() || alt_page(good) == 15; ++i) {
    good = ItemWithPrimary(0, 512, "good-" + std::to_string(i) + "-");
  }
  std::string bad;
  for (int i = 0; bad.empty() || alt_page(bad) == 15; ++i) {
    bad = ItemWithPrimary(500, 512, "bad-" + std::to_string(i) + "-");
  }
  REQUIRE(db.CfInsert(kAlone, 0, "f", {View(good)},
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  const std::string corrupt_key = EncodePageKey(prefix, 0, 500 / 32);
  const std::string corrupt_value =
      GENERATE(std::string(5, '\x07'), std::string(65, '\x07'), std::string());
  REQUIRE(t.engine()
              .db()
              ->Put(rocksdb::WriteOptions(), t.engine().pages_cf(), corrupt_key, corrupt_value)
              .ok());
  const auto pages_before = AllPages(t.engine());
  const auto meta_before = RawMeta(t.engine(), 0, "f");

  auto unchanged = [&] {
    const auto pages_after = AllPages(t.engine());
    REQUIRE(pages_after.size() == pages_before.size());
    for (size_t i = 0; i < pages_after.size(); ++i) {
      CHECK(pages_after[i].key == pages_before[i].key);
      CHECK(pages_after[i].value == pages_before[i].value);
    }
    CHECK(RawMeta(t.engine(), 0, "f") == meta_before);
  };

  SECTION("lookup and count") {
    auto r = db.CfLookup(kAlone, 0, "f", {View(bad)}, false);
    CHECK(r.status().code() == Code::kCorruption);
    CHECK(r.status().message().find("corrupt page") != std::string::npos);
    CHECK(db.CfLookup(kAlone, 0, "f", {View(good), View(bad)}, true).status().code() ==
          Code::kCorruption);
  }
  SECTION("insert, also when an earlier item of the command was fine") {
    CHECK(db.CfInsert(kAlone, 0, "f", {View(bad)},
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .status()
              .code() == Code::kCorruption);
    unchanged();
    CHECK(db.CfInsert(kAlone, 0, "f", {"fresh", View(bad)},
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .status()
              .code() == Code::kCorruption);
    unchanged();
    CHECK(*db.CfLookup(kAlone, 0, "f", {"fresh"}, false) == std::vector<uint64_t>{0});
  }
  SECTION("delete") {
    CHECK(db.CfDelete(kAlone, 0, "f", bad, settings).status().code() == Code::kCorruption);
    unchanged();
  }
  SECTION("scandump") {
    CHECK(db.CfScanDump(kAlone, 0, "f", 1).status().code() == Code::kCorruption);
  }
  SECTION("items on clean pages still work") {
    CHECK(*db.CfLookup(kAlone, 0, "f", {View(good)}, false) == std::vector<uint64_t>{1});
  }
}

TEST_CASE("a re-created key gets a new version and does not see the old items", "[cuckoo]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  const auto items = Items::Make("old-", 0, 30);
  REQUIRE(db.CfInsert(kAlone, 0, "f", items.views,
                      InsertOptions{.nx = false, .no_create = false, .capacity = 1000}, settings)
              .ok());
  const uint64_t v1 = db.CfInfo(kAlone, 0, "f")->version;
  const std::string old_prefix = FilterPrefix(db, 0, "f");
  const size_t old_pages = PagesWithPrefix(t.engine(), old_prefix).size();
  REQUIRE(old_pages > 0);
  REQUIRE(*db.Delete(0, "f"));
  CHECK(*db.CfLookup(kAlone, 0, "f", items.views, false) == std::vector<uint64_t>(30, 0));

  SECTION("by RESERVE") {
    REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1000), settings).ok());
  }
  SECTION("by auto-creating ADD") {
    REQUIRE(db.CfInsert(kAlone, 0, "f", {"new"},
                        InsertOptions{.nx = false, .no_create = false, .capacity = 1000}, settings)
                .ok());
    CHECK(*db.CfLookup(kAlone, 0, "f", {"new"}, false) == std::vector<uint64_t>{1});
  }
  SECTION("after the old filter expired") {
    REQUIRE(db.CfInsert(kAlone, 0, "f", items.views,
                        InsertOptions{.nx = false, .no_create = false, .capacity = 1000}, settings)
                .ok());
    const std::string second_prefix = FilterPrefix(db, 0, "f");
    REQUIRE(*db.SetExpire(0, "f", NowMs() - 1));
    CHECK(*db.CfLookup(kAlone, 0, "f", items.views, false) == std::vector<uint64_t>(30, 0));
    CHECK(db.CfInsert(kAlone, 0, "f", {"x"},
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .status()
              .code() == Code::kNotFound);
    CHECK(db.CfInfo(kAlone, 0, "f").status().code() == Code::kNotFound);
    REQUIRE(db.CfInsert(kAlone, 0, "f", {"new"},
                        InsertOptions{.nx = false, .no_create = false, .capacity = 1000}, settings)
                .ok());
    CHECK(FilterPrefix(db, 0, "f") != second_prefix);
    CHECK(db.CfInfo(kAlone, 0, "f")->expire_ms == 0);
  }
  SECTION("after an overwrite by a string and a DEL") {
    REQUIRE(db.SetString(0, "f", "x", 0, false).ok());
    REQUIRE(*db.Delete(0, "f"));
    REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1000), settings).ok());
  }
  const uint64_t v2 = db.CfInfo(kAlone, 0, "f")->version;
  CHECK(v2 > v1);
  CHECK(*db.CfLookup(kAlone, 0, "f", items.views, false) == std::vector<uint64_t>(30, 0));
  CHECK(db.CfInfo(kAlone, 0, "f")->size <= 1);
  // DEL touched only metadata: the old version's pages are still stored until compaction.
  CHECK(PagesWithPrefix(t.engine(), old_prefix).size() == old_pages);
}

TEST_CASE("CF.COMPACT after many deletes reduces the sub-filters", "[cuckoo]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  // 32 buckets x 2 slots a sub-filter, expansion 1: 600 items need many sub-filters.
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(64, 2, 1), settings).ok());
  const auto items = Items::Make("c-", 0, 600);
  auto r = db.CfInsert(kAlone, 0, "f", items.views,
                       InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings);
  REQUIRE(r.ok());
  for (auto res : r->results) {
    REQUIRE(res == core::InsertResult::kInserted);
  }
  const uint32_t grown = db.CfInfo(kAlone, 0, "f")->cuckoo.filter.num_filters;
  REQUIRE(grown > 5);

  // Delete all but the first 40.
  for (size_t i = 40; i < items.views.size(); ++i) {
    auto d = db.CfDelete(kAlone, 0, "f", items.views[i], settings);
    REQUIRE(d.ok());
    REQUIRE(*d);
  }
  const uint32_t before_compact = db.CfInfo(kAlone, 0, "f")->cuckoo.filter.num_filters;
  REQUIRE(db.CfCompact(kAlone, 0, "f", settings).ok());
  auto info = db.CfInfo(kAlone, 0, "f");
  REQUIRE(info.ok());
  const auto& f = info->cuckoo.filter;
  CHECK(f.num_filters < grown);
  CHECK(f.num_filters <= before_compact);
  CHECK(f.num_filters <= 2);  // 40 items fit in one or two 64-slot sub-filters
  CHECK(f.num_deletes == 0);
  CHECK(info->size == 40);
  std::vector<std::string_view> kept(items.views.begin(), items.views.begin() + 40);
  CHECK(*db.CfLookup(kAlone, 0, "f", kept, false) == std::vector<uint64_t>(40, 1));
  // Pages of freed sub-filters were emptied, hence deleted; stored slots equal num_items.
  uint64_t non_empty = 0;
  for (const auto& p : AllPages(t.engine())) {
    PageKeyParts parts;
    REQUIRE(DecodePageKey(p.key, &parts));
    CHECK(parts.filter < f.num_filters);
    for (char c : p.value) {
      non_empty += c != 0 ? 1 : 0;
    }
  }
  CHECK(non_empty == 40);

  SECTION("the filter grows again into fresh sub-filters afterwards") {
    const auto again = Items::Make("again-", 0, 300);
    REQUIRE(db.CfInsert(kAlone, 0, "f", again.views,
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
                .ok());
    CHECK(*db.CfLookup(kAlone, 0, "f", again.views, false) == std::vector<uint64_t>(300, 1));
    CHECK(*db.CfLookup(kAlone, 0, "f", kept, false) == std::vector<uint64_t>(40, 1));
    CHECK(db.CfInfo(kAlone, 0, "f")->size == 340);
  }
}

TEST_CASE("an insert that grows the chain reads no page of its new sub-filters",
          "[cuckoo][pages]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings;
  const InsertOptions into{.nx = false, .no_create = true, .capacity = 0};
  // Four one-slot buckets a sub-filter, expansion 1: every few items append a sub-filter.
  REQUIRE(db.CfReserve(kAlone, 0, "g", Reserve(4, 1, 1), settings).ok());
  const auto first = Items::Make("first-", 0, 1);
  REQUIRE(db.CfInsert(kAlone, 0, "g", first.views, into, settings).ok());  // (page 0 cached)
  const uint64_t loaded = db.pages_loaded();
  const auto items = Items::Make("grow-", 0, 60);
  auto r = db.CfInsert(kAlone, 0, "g", items.views, into, settings);
  REQUIRE(r.ok());
  const uint32_t grown = db.CfInfo(kAlone, 0, "g")->cuckoo.filter.num_filters;
  REQUIRE(grown > 10);
  // The pages of the sub-filters appended by the command cannot be stored anywhere: none was
  // read from RocksDB (the older one's page is in the in-memory cache).
  CHECK(db.pages_loaded() == loaded);
  uint64_t stored = 0;
  for (auto res : r->results) {
    stored += res == core::InsertResult::kInserted ? 1 : 0;
  }
  CHECK(db.CfInfo(kAlone, 0, "g")->size == stored + 1);
  CHECK(*db.CfLookup(kAlone, 0, "g", items.views, false) == std::vector<uint64_t>(60, 1));
  // The same from RocksDB alone, after a restart.
  t.Reopen();
  Db& again = t.db();
  CHECK(*again.CfLookup(kAlone, 0, "g", items.views, false) == std::vector<uint64_t>(60, 1));
  CHECK(*again.CfLookup(kAlone, 0, "g", first.views, false) == std::vector<uint64_t>{1});
}

TEST_CASE("RENAME of a filter keeps its items", "[cuckoo][rename]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  const auto items = Items::Make("r-", 0, 40);
  REQUIRE(db.CfInsert(kAlone, 0, "a", items.views,
                      InsertOptions{.nx = false, .no_create = false, .capacity = 500}, settings)
              .ok());
  const uint64_t version = db.CfInfo(kAlone, 0, "a")->version;
  const size_t pages = AllPages(t.engine()).size();

  REQUIRE(*db.Rename(0, "a", "b", false));
  CHECK_FALSE(*db.Exists(kAlone, 0, "a"));
  CHECK(*db.CfLookup(kAlone, 0, "a", items.views, false) == std::vector<uint64_t>(40, 0));
  CHECK(*db.CfLookup(kAlone, 0, "b", items.views, false) == std::vector<uint64_t>(40, 1));
  auto info = db.CfInfo(kAlone, 0, "b");
  REQUIRE(info.ok());
  CHECK(info->version == version);
  CHECK(info->cuckoo.owner == "a");
  CHECK(info->size == 40);
  // O(1): no page was copied.
  CHECK(AllPages(t.engine()).size() == pages);

  SECTION("the renamed filter takes new items and deletes") {
    REQUIRE(db.CfInsert(kAlone, 0, "b", {"after"},
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
                .ok());
    REQUIRE(*db.CfDelete(kAlone, 0, "b", "r-0", settings));
    CHECK(*db.CfLookup(kAlone, 0, "b", {"after", "r-0", "r-1"}, false) ==
          std::vector<uint64_t>{1, 0, 1});
  }
  SECTION("rename back clears the owner") {
    REQUIRE(*db.Rename(0, "b", "a", false));
    CHECK(db.CfInfo(kAlone, 0, "a")->cuckoo.owner.empty());
    CHECK(*db.CfLookup(kAlone, 0, "a", items.views, false) == std::vector<uint64_t>(40, 1));
    CHECK_FALSE(*db.Exists(kAlone, 0, "b"));
  }
  SECTION("a chain of renames keeps the original owner") {
    REQUIRE(*db.Rename(0, "b", "c", false));
    CHECK(db.CfInfo(kAlone, 0, "c")->cuckoo.owner == "a");
    CHECK(*db.CfLookup(kAlone, 0, "c", items.views, false) == std::vector<uint64_t>(40, 1));
  }
  SECTION("rename over an existing filter replaces it") {
    const auto other = Items::Make("other-", 0, 40);
    REQUIRE(db.CfInsert(kAlone, 0, "c", other.views,
                        InsertOptions{.nx = false, .no_create = false, .capacity = 500}, settings)
                .ok());
    REQUIRE(*db.Rename(0, "b", "c", false));
    CHECK(*db.CfLookup(kAlone, 0, "c", items.views, false) == std::vector<uint64_t>(40, 1));
    CHECK(*db.CfLookup(kAlone, 0, "c", other.views, false) == std::vector<uint64_t>(40, 0));
    CHECK(db.CfInfo(kAlone, 0, "c")->version == version);
  }
  SECTION("a new filter under the old name is independent") {
    REQUIRE(db.CfInsert(kAlone, 0, "a", {"fresh"},
                        InsertOptions{.nx = false, .no_create = false, .capacity = 500}, settings)
                .ok());
    CHECK(db.CfInfo(kAlone, 0, "a")->version != version);
    CHECK(*db.CfLookup(kAlone, 0, "a", items.views, false) == std::vector<uint64_t>(40, 0));
    CHECK(*db.CfLookup(kAlone, 0, "a", {"fresh"}, false) == std::vector<uint64_t>{1});
    CHECK(*db.CfLookup(kAlone, 0, "b", {"fresh"}, false) == std::vector<uint64_t>{0});
    CHECK(*db.CfLookup(kAlone, 0, "b", items.views, false) == std::vector<uint64_t>(40, 1));
    SECTION("and renaming the old filter back over it restores the old items") {
      REQUIRE(*db.Rename(0, "b", "a", false));
      CHECK(*db.CfLookup(kAlone, 0, "a", items.views, false) == std::vector<uint64_t>(40, 1));
      CHECK(*db.CfLookup(kAlone, 0, "a", {"fresh"}, false) == std::vector<uint64_t>{0});
    }
  }
  SECTION("RENAMENX onto a filter refuses") {
    REQUIRE(db.CfReserve(kAlone, 0, "d", Reserve(100), settings).ok());
    CHECK_FALSE(*db.Rename(0, "b", "d", true));
    CHECK(db.CfInfo(kAlone, 0, "d")->size == 0);
    CHECK(*db.CfLookup(kAlone, 0, "b", items.views, false) == std::vector<uint64_t>(40, 1));
  }
}

TEST_CASE("filters survive closing and reopening the engine", "[cuckoo][restart]") {
  TestDb t;
  const CfSettings settings = SmallPages(128);
  const auto items = Items::Make("p-", 0, 200);
  REQUIRE(t.db()
              .CfInsert(kAlone, 0, "f", items.views,
                        InsertOptions{.nx = false, .no_create = false, .capacity = 100}, settings)
              .ok());
  REQUIRE(t.db()
              .CfInsert(kAlone, 2, "g", {"x"},
                        InsertOptions{.nx = false, .no_create = false, .capacity = 100}, settings)
              .ok());
  REQUIRE(*t.db().Rename(2, "g", "h", false));
  REQUIRE(t.db().SetString(0, "s", "value", NowMs() + 3'600'000, false).ok());
  const Metadata before = *t.db().CfInfo(kAlone, 0, "f");
  const uint64_t expire = (*t.db().Get(kAlone, 0, "s"))->expire_ms;
  REQUIRE(before.cuckoo.filter.num_filters > 1);

  t.Reopen();
  Db& db = t.db();
  const Metadata after = *db.CfInfo(kAlone, 0, "f");
  CHECK(EncodeMetadata(after) == EncodeMetadata(before));
  CHECK(*db.CfLookup(kAlone, 0, "f", items.views, false) == std::vector<uint64_t>(200, 1));
  CHECK(*db.CfLookup(kAlone, 2, "h", {"x"}, false) == std::vector<uint64_t>{1});
  CHECK((*db.Get(kAlone, 0, "s"))->value == "value");
  CHECK((*db.Get(kAlone, 0, "s"))->expire_ms == expire);
  // And the reopened database keeps working.
  REQUIRE(db.CfInsert(kAlone, 0, "f", {"later"},
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  CHECK(*db.CfLookup(kAlone, 0, "f", {"later"}, false) == std::vector<uint64_t>{1});
}

TEST_CASE("lookups see every change of the filter's metadata at once", "[cuckoo][meta]") {
  // Lookups keep the decoded metadata of hot keys per thread; each change below must be seen
  // by the next lookup on the same thread.
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  auto exists = [&](std::string_view key, std::string_view item) {
    auto r = db.CfLookup(kAlone, 0, key, {item}, false);
    REQUIRE(r.ok());
    return (*r)[0] == 1;
  };
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(1000), settings).ok());
  CHECK_FALSE(exists("f", "a"));
  REQUIRE(db.CfInsert(kAlone, 0, "f", {"a"},
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  CHECK(exists("f", "a"));
  CHECK(db.CfInfo(kAlone, 0, "f")->size == 1);
  // A filter that grows: the second sub-filter's items are found.
  const auto many = Items::Make("grow-", 0, 3000);
  REQUIRE(db.CfInsert(kAlone, 0, "f", many.views,
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  REQUIRE(db.CfInfo(kAlone, 0, "f")->cuckoo.filter.num_filters > 1);
  CHECK(*db.CfLookup(kAlone, 0, "f", many.views, false) == std::vector<uint64_t>(3000, 1));
  REQUIRE(*db.Rename(0, "f", "g", false));
  CHECK_FALSE(exists("f", "a"));
  CHECK(exists("g", "a"));
  REQUIRE(*db.Delete(0, "g"));
  CHECK_FALSE(exists("g", "a"));
  // Re-created under the same name: a new version, none of the old items.
  REQUIRE(db.CfReserve(kAlone, 0, "g", Reserve(1000), settings).ok());
  REQUIRE(db.CfInsert(kAlone, 0, "g", {"b"},
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  CHECK_FALSE(exists("g", "a"));
  CHECK(exists("g", "b"));
  REQUIRE(*db.SetExpire(0, "g", NowMs() - 1));
  CHECK_FALSE(exists("g", "b"));
  REQUIRE(db.CfInsert(kAlone, 0, "h", {"c"},
                      InsertOptions{.nx = false, .no_create = false, .capacity = 0}, settings)
              .ok());
  CHECK(exists("h", "c"));
  REQUIRE(db.FlushAll().ok());
  CHECK_FALSE(exists("h", "c"));
  // Another type under a filter's old name answers 0, as a missing key does.
  REQUIRE(db.SetString(0, "h", "c", 0, false).ok());
  CHECK_FALSE(exists("h", "c"));
}

TEST_CASE("lookups over many keys see every other thread's write of each key", "[cuckoo][meta]") {
  // A lookup thread keeps the decoded metadata of many keys (one slot each for most of 1,000
  // keys); a writer on another thread then grows some of the filters into more sub-filters and
  // re-creates others (a new version, new pages). Each change must reach the lookup thread's next
  // lookup of that key: items stored in a new sub-filter or under the new version are found
  // (a lookup with the old metadata misses them; only present items are checked, since a
  // cuckoo filter may report an absent one). Keys nobody wrote keep answering.
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  const InsertOptions add{.nx = false, .no_create = true, .capacity = 0};
  constexpr int kKeys = 1000;
  auto key = [](int i) { return "mk:" + std::to_string(i); };
  for (int i = 0; i < kKeys; ++i) {
    REQUIRE(db.CfReserve(kAlone, 0, key(i), Reserve(64), settings).ok());
    REQUIRE(db.CfInsert(kAlone, 0, key(i), {"base"}, add, settings).ok());
  }
  const auto grow = Items::Make("fill-", 0, 200);  // more than a 64-item filter holds
  auto written = [](int i) { return i % 7 == 0; };
  int wrong = 0;  // (Catch2 is not thread-safe: counted here, checked after the joins)
  auto lookup_all = [&](bool after_writes) {
    for (int i = 0; i < kKeys; ++i) {
      if (!after_writes || !written(i)) {
        auto r = db.CfLookup(kAlone, 0, key(i), {"base"}, false);
        wrong += !r.ok() || *r != std::vector<uint64_t>{1} ? 1 : 0;
        continue;
      }
      std::vector<std::string_view> items = {"new"};
      if (i % 14 != 0) {
        items.insert(items.end(), grow.views.begin(), grow.views.end());
      }
      auto r = db.CfLookup(kAlone, 0, key(i), items, false);
      wrong += !r.ok() || *r != std::vector<uint64_t>(items.size(), 1) ? 1 : 0;
    }
  };
  // One reader thread for both rounds (its slots are thread-local), waiting for the writer.
  std::atomic<bool> read_all{false};
  std::atomic<bool> written_all{false};
  int wrong_before = 0;
  std::thread reader([&] {
    lookup_all(false);  // (fills the reader's slots)
    wrong_before = wrong;
    read_all.store(true);
    while (!written_all.load()) {
      std::this_thread::yield();
    }
    lookup_all(true);
  });
  std::thread writer([&] {
    while (!read_all.load()) {
      std::this_thread::yield();
    }
    for (int i = 0; i < kKeys; ++i) {
      if (!written(i)) {
        continue;
      }
      if (i % 14 == 0) {  // re-created under the same name
        (void)db.Delete(0, key(i));
        (void)db.CfReserve(kAlone, 0, key(i), Reserve(64), settings);
      } else {
        (void)db.CfInsert(kAlone, 0, key(i), grow.views, add, settings);
      }
      (void)db.CfInsert(kAlone, 0, key(i), {"new"}, add, settings);
    }
    written_all.store(true);
  });
  writer.join();
  reader.join();
  CHECK(wrong_before == 0);
  CHECK(wrong - wrong_before == 0);
  CHECK(db.CfInfo(kAlone, 0, key(7))->cuckoo.filter.num_filters > 1);
}

TEST_CASE("a new Db does not see the metadata an earlier one decoded", "[cuckoo][meta]") {
  // Two databases in turn, on the same thread, likely at the same address, each with one write
  // of "f" (so the cache counters that tell a current record match): the second one's filter
  // must not be answered from what the lookups of the first one's string kept.
  const CfSettings settings = SmallPages(64);
  {
    TestDb t;
    REQUIRE(t.db().SetString(0, "f", "v", 0, false).ok());
    CHECK(*t.db().CfLookup(kAlone, 0, "f", {"x"}, false) == std::vector<uint64_t>{0});
  }
  TestDb t;
  REQUIRE(t.db()
              .CfInsert(kAlone, 0, "f", {"x"},
                        InsertOptions{.nx = false, .no_create = false, .capacity = 0}, settings)
              .ok());
  CHECK(*t.db().CfLookup(kAlone, 0, "f", {"x"}, false) == std::vector<uint64_t>{1});
}

TEST_CASE("lookups without the in-memory cache see every write", "[cuckoo][meta]") {
  TestDb t;
  Db nocache(&t.engine(), 64, 0);
  const CfSettings settings = SmallPages(64);
  REQUIRE(nocache.CfReserve(kAlone, 0, "f", Reserve(1000), settings).ok());
  for (int i = 0; i < 5; ++i) {
    const std::string item = "item-" + std::to_string(i);
    CHECK(*nocache.CfLookup(kAlone, 0, "f", {item}, false) == std::vector<uint64_t>{0});
    REQUIRE(nocache
                .CfInsert(kAlone, 0, "f", {item},
                          InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
                .ok());
    CHECK(*nocache.CfLookup(kAlone, 0, "f", {item}, true) == std::vector<uint64_t>{1});
  }
  REQUIRE(*nocache.Delete(0, "f"));
  CHECK(*nocache.CfLookup(kAlone, 0, "f", {"item-0"}, false) == std::vector<uint64_t>{0});
}

TEST_CASE("a lookup of more items than the filter has pages answers as one lookup per item",
          "[cuckoo][meta]") {
  // Many more candidate buckets than pages (each page wanted once), over a chain of sub-filters.
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(200, 2, 2), settings).ok());
  const auto stored = Items::Make("in-", 0, 600);
  REQUIRE(db.CfInsert(kAlone, 0, "f", stored.views,
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  REQUIRE(db.CfInfo(kAlone, 0, "f")->cuckoo.filter.num_filters >= 2);
  auto probe = Items::Make("in-", 0, 600);
  const auto absent = Items::Make("out-", 0, 3000);
  probe.views.insert(probe.views.end(), absent.views.begin(), absent.views.end());
  for (bool count : {false, true}) {
    auto all = db.CfLookup(kAlone, 0, "f", probe.views, count);
    REQUIRE(all.ok());
    REQUIRE(all->size() == probe.views.size());
    for (size_t i = 0; i < probe.views.size(); i += 7) {
      auto one = db.CfLookup(kAlone, 0, "f", {probe.views[i]}, count);
      REQUIRE(one.ok());
      CHECK((*all)[i] == (*one)[0]);
    }
    for (size_t i = 0; i < 600; ++i) {
      CHECK((*all)[i] >= 1);
    }
  }
}

TEST_CASE("lookups answer the same whether their pages are cached, partly cached or not",
          "[cuckoo][meta]") {
  // Db::CfLookup answers from the in-memory cache alone when it holds every candidate page, and
  // otherwise through the page cache (which reads the rest from RocksDB). Both must agree with a
  // Db that has no in-memory cache, for chains of sub-filters, both bucket sizes, and pages that
  // were never stored (zeros).
  TestDb t;
  Db& db = t.db();
  Db nocache(&t.engine(), 64, 0);
  const CfSettings settings = SmallPages(64);
  const uint16_t bucket_size = GENERATE(2, 4);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(300, bucket_size, 2), settings).ok());
  const auto stored = Items::Make("in-", 0, 900);
  REQUIRE(db.CfInsert(kAlone, 0, "f", stored.views,
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  REQUIRE(db.CfInfo(kAlone, 0, "f")->cuckoo.filter.num_filters >= 2);
  REQUIRE(db.CfReserve(kAlone, 0, "sparse", Reserve(100000, bucket_size), settings).ok());
  REQUIRE(db.CfInsert(kAlone, 0, "sparse", {"only"},
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());

  auto probe = Items::Make("in-", 0, 900);
  const auto absent = Items::Make("out-", 0, 300);
  probe.views.insert(probe.views.end(), absent.views.begin(), absent.views.end());
  const std::vector<std::string_view> few(probe.views.begin(), probe.views.begin() + 40);
  const std::vector<std::string_view> one = {probe.views[7]};

  for (const char* key : {"f", "sparse"}) {
    for (bool count : {false, true}) {
      for (const std::vector<std::string_view>* items :
           std::initializer_list<const std::vector<std::string_view>*>{&one, &few, &probe.views}) {
        auto expected = nocache.CfLookup(kAlone, 0, key, *items, count);
        REQUIRE(expected.ok());
        if (std::string_view(key) == "f" && items != &probe.views) {
          for (uint64_t v : *expected) {
            CHECK(v >= 1);  // (the first items are stored)
          }
        }
        db.cache().Clear();
        // Cold: every page is read; then warm for a part (the first items), then for all.
        const uint64_t loaded_before = db.pages_loaded();
        CHECK(*db.CfLookup(kAlone, 0, key, *items, count) == *expected);
        CHECK(db.pages_loaded() > loaded_before);
        db.cache().Clear();
        REQUIRE(
            db.CfLookup(kAlone, 0, key, std::vector<std::string_view>{items->front()}, count).ok());
        CHECK(*db.CfLookup(kAlone, 0, key, *items, count) == *expected);
        const uint64_t loaded_warm = db.pages_loaded();
        const uint64_t misses_warm = db.cache().misses();
        const uint64_t hits_warm = db.cache().hits();
        CHECK(*db.CfLookup(kAlone, 0, key, *items, count) == *expected);
        CHECK(db.pages_loaded() == loaded_warm);
        CHECK(db.cache().misses() == misses_warm);
        CHECK(db.cache().hits() > hits_warm);
      }
    }
  }
}

TEST_CASE("lookups from the pages a thread kept follow writes, deletes, evictions and new filters",
          "[cuckoo][meta]") {
  // Cached lookups keep the addresses of the pages they found (storage/page_handles.h) and use
  // them again while the in-memory cache still holds the same values. Random writes, deletes,
  // DEL and re-creation of keys under a cache small enough to evict all the time: every lookup
  // (one item, several, and one item per key across keys) must agree with a Db that has no
  // in-memory cache.
  TestDb t;
  // A cache that holds every page, and one of ~100 pages with their entries (64 bytes each):
  // evictions all the time.
  const uint64_t cache_bytes = GENERATE(uint64_t{1} << 20, uint64_t{24} << 10);
  Db db(&t.engine(), 64, cache_bytes);
  // (Its metadata slots follow only its own writes: expected() clears its cache first.)
  Db nocache(&t.engine(), 64, 0);
  auto expected_of = [&nocache](std::string_view key, const std::vector<std::string_view>& items) {
    nocache.cache().Clear();
    auto r = nocache.CfLookup(kAlone, 0, key, items, false);
    REQUIRE(r.ok());
    return *r;
  };
  const CfSettings settings = SmallPages(64);
  const Scope held{.group = nullptr, .read = ReadMode::kCached, .stripes_held = true};
  const std::vector<std::string> keys = {"a", "b", "c", "d"};
  for (const auto& k : keys) {
    REQUIRE(db.CfReserve(kAlone, 0, k, Reserve(200, 2, 2), settings).ok());
  }
  const auto items = Items::Make("it-", 0, 400);
  std::mt19937 rng(7);
  auto pick = [&rng](size_t n) { return static_cast<size_t>(rng() % n); };
  uint64_t positives = 0;
  for (int round = 0; round < 300; ++round) {
    const std::string& key = keys[pick(keys.size())];
    switch (pick(10)) {
      case 0:
        REQUIRE(db.Delete(0, key).ok());
        REQUIRE(db.CfReserve(kAlone, 0, key, Reserve(200, 2, 2), settings).ok());
        break;
      case 1:
      case 2: {
        const auto item = items.views[pick(items.views.size())];
        REQUIRE(db.CfDelete(kAlone, 0, key, item, settings).ok());  // (found or not)
        break;
      }
      default: {
        std::vector<std::string_view> add;
        for (int i = 0; i < 8; ++i) {
          add.push_back(items.views[pick(items.views.size())]);
        }
        REQUIRE(db.CfInsert(kAlone, 0, key, add,
                            InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
                    .ok());
      }
    }
    for (int look = 0; look < 3; ++look) {
      std::vector<std::string_view> one = {items.views[pick(items.views.size())]};
      std::vector<std::string_view> several;
      for (int i = 0; i < 12; ++i) {
        several.push_back(items.views[pick(items.views.size())]);
      }
      for (const auto* probe : {&one, &several}) {
        const auto expected = expected_of(key, *probe);
        auto got = db.CfLookup(held, 0, key, *probe, false);
        REQUIRE(got.ok());
        CHECK(*got == expected);
        for (uint64_t v : expected) {
          positives += v;
        }
      }
      std::vector<std::string_view> across_keys;
      std::vector<std::string_view> across_items;
      for (int i = 0; i < 16; ++i) {
        across_keys.push_back(keys[pick(keys.size())]);
        across_items.push_back(items.views[pick(items.views.size())]);
      }
      std::vector<StatusOr<uint64_t>> across;
      db.CfLookupKeys(held, 0, across_keys, across_items, false, &across);
      REQUIRE(across.size() == across_keys.size());
      for (size_t i = 0; i < across_keys.size(); ++i) {
        const auto expected = expected_of(across_keys[i], {across_items[i]});
        REQUIRE(across[i].ok());
        CHECK(*across[i] == expected[0]);
      }
    }
  }
  CHECK(positives > 0);  // (the lookups found stored items, not only absent ones)
}

TEST_CASE("a partly cached lookup asks the in-memory cache for each page once", "[cuckoo][meta]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(4096), settings).ok());
  const auto stored = Items::Make("in-", 0, 1000);
  REQUIRE(db.CfInsert(kAlone, 0, "f", stored.views,
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  db.cache().Clear();
  const auto warm = Items::Make("in-", 0, 10);
  REQUIRE(db.CfLookup(kAlone, 0, "f", warm.views, false).ok());
  const auto probe = Items::Make("in-", 0, 50);
  const uint64_t asked_before = db.cache().hits() + db.cache().misses();
  const uint64_t loaded_before = db.pages_loaded();
  REQUIRE(*db.CfLookup(kAlone, 0, "f", probe.views, false) == std::vector<uint64_t>(50, 1));
  // Two candidate pages per item in the one sub-filter: each looked up once, hit or miss.
  CHECK(db.cache().hits() + db.cache().misses() - asked_before == 100);
  CHECK(db.pages_loaded() > loaded_before);
}

TEST_CASE("never-stored pages of different lengths read as zeros in one cached lookup",
          "[cuckoo][pages]") {
  // Bucket size 3 in 64-byte pages: 21 buckets a page, and the last page of 1,024 buckets holds
  // 16 (48 bytes). A lookup whose first never-stored page is that short one, and whose next ones
  // are full, must not read the short one's zeros from a buffer the full ones replaced. (Run on
  // a new thread: the cached lookup keeps its buffers per thread.)
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(3072, 3), settings).ok());
  REQUIRE(core::SubFilterBuckets(db.CfInfo(kAlone, 0, "f")->cuckoo.filter, 0) == 1024);
  std::vector<std::string> items = {ItemWithPrimary(1020, 1024, "short-")};
  for (uint64_t b : {0, 100, 500, 900}) {
    items.push_back(ItemWithPrimary(b, 1024, "full-"));
  }
  const std::vector<std::string_view> views(items.begin(), items.end());
  const std::vector<uint64_t> none(items.size(), 0);
  // The first lookup reads RocksDB and leaves the pages in the cache as "not stored".
  REQUIRE(*db.CfLookup(kAlone, 0, "f", views, false) == none);
  const uint64_t loaded = db.pages_loaded();
  std::vector<uint64_t> exists;
  std::vector<uint64_t> counts;
  std::thread([&] {
    exists = *db.CfLookup(kAlone, 0, "f", views, false);
    counts = *db.CfLookup(kAlone, 0, "f", views, true);
  }).join();
  CHECK(db.pages_loaded() == loaded);  // (answered from the cache)
  CHECK(exists == none);
  CHECK(counts == none);
}

namespace {

// The reference for a chain: each sub-filter's bytes in a vector of their own, read and written
// bucket by bucket (no resident sub-filters, no prefetch, no cache).
class PlainAccess final : public core::BucketAccess {
 public:
  explicit PlainAccess(const core::FilterMeta* meta) : meta_(meta) {}
  const uint8_t* Read(uint32_t f, uint64_t b) override { return Sub(f) + b * meta_->bucket_size; }
  uint8_t* Write(uint32_t f, uint64_t b) override { return Sub(f) + b * meta_->bucket_size; }

 private:
  uint8_t* Sub(uint32_t f) {
    while (subs_.size() <= f) {
      subs_.emplace_back();  // (a deque: the other sub-filters' bytes do not move)
    }
    auto& v = subs_[f];
    if (v.empty()) {
      v.assign(core::SubFilterBytes(*meta_, f), 0);
    }
    return v.data();
  }
  const core::FilterMeta* meta_;
  std::deque<std::vector<uint8_t>> subs_;
};

}  // namespace

TEST_CASE("a long chain of one-page sub-filters answers as the plain algorithm does",
          "[cuckoo][chain]") {
  // Sub-filters of one page are scanned from their resident bytes (copied side by side once
  // many are loaded) rather than bucket by bucket: inserts, deletes (with their automatic
  // compaction), lookups and counts over hundreds of sub-filters must decide exactly as the
  // algorithm over plain memory, through the in-memory cache and straight from RocksDB.
  TestDb t;
  Db& db = t.db();
  Db nocache(&t.engine(), 64, 0);
  CfSettings settings;
  settings.max_expansions = 65535;
  const uint16_t bucket_size = GENERATE(1, 2);
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(2, bucket_size, 1), settings).ok());
  core::FilterMeta ref = db.CfInfo(kAlone, 0, "f")->cuckoo.filter;
  PlainAccess plain(&ref);
  const core::Limits limits;

  std::vector<std::string> all;
  uint64_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return seed >> 33;
  };
  const size_t sizes[] = {1, 3, 40, 250, 7, 120};
  for (int round = 0; round < 24; ++round) {
    Items batch;
    const size_t n = sizes[round % 6];
    for (size_t i = 0; i < n; ++i) {
      // (one in eight an item stored before: duplicates, as CF.ADD allows)
      batch.owned.push_back(!all.empty() && next() % 8 == 0
                                ? all[next() % all.size()]
                                : "c" + std::to_string(round) + "-" + std::to_string(i));
    }
    for (const auto& s : batch.owned) {
      batch.views.emplace_back(s);
    }
    auto r = db.CfInsert(kAlone, 0, "f", batch.views,
                         InsertOptions{.nx = round % 5 == 4, .no_create = true, .capacity = 0},
                         settings);
    REQUIRE(r.ok());
    REQUIRE(r->results.size() == n);
    for (size_t i = 0; i < n; ++i) {
      const auto want =
          core::Insert(ref, plain, core::HashItem(batch.views[i]), round % 5 == 4, limits);
      REQUIRE(r->results[i] == want);
      all.push_back(batch.owned[i]);
    }
    if (round % 3 == 2) {
      for (int d = 0; d < 6; ++d) {
        const std::string victim =
            next() % 4 == 0 ? "never-" + std::to_string(d) : all[next() % all.size()];
        auto got = db.CfDelete(kAlone, 0, "f", victim, settings);
        REQUIRE(got.ok());
        const auto want = core::Delete(ref, plain, core::HashItem(victim));
        REQUIRE(*got == (want == core::DeleteResult::kDeleted));
      }
    }
    auto info = db.CfInfo(kAlone, 0, "f");
    REQUIRE(info.ok());
    REQUIRE(info->cuckoo.filter.num_filters == ref.num_filters);
    REQUIRE(info->cuckoo.filter.num_items == ref.num_items);
    if (round % 4 == 3 || round == 23) {
      std::vector<std::string> probe(all.begin(), all.end());
      for (int i = 0; i < 200; ++i) {
        probe.push_back("absent-" + std::to_string(i));
      }
      std::vector<std::string_view> views(probe.begin(), probe.end());
      for (bool count : {false, true}) {
        std::vector<uint64_t> want;
        for (auto v : views) {
          const auto h = core::HashItem(v);
          bool io_error = false;
          want.push_back(count ? core::Count(ref, plain, h, &io_error)
                               : (core::Exists(ref, plain, h, &io_error) ? 1 : 0));
          REQUIRE_FALSE(io_error);
        }
        CHECK(*db.CfLookup(kAlone, 0, "f", views, count) == want);
        CHECK(*nocache.CfLookup(kAlone, 0, "f", views, count) == want);
      }
    }
  }
  CHECK(ref.num_filters > 200);
}
