// Chain indexes kept by the Db (storage/chain_indexes.h): built once for a long chain and used
// by later commands, dropped by every change of the pages they cannot follow (a failed write
// group, an erase from the in-memory cache, CF.COMPACT, LOADCHUNK), and kept within a budget.
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "storage/chain_indexes.h"
#include "storage/db.h"
#include "storage/mem_cache.h"
#include "storage/write_group.h"
#include "test_util.h"

using namespace cuckood::storage;
using namespace cuckood::storage::testing;
namespace core = cuckood::core;

namespace {

CfSettings LongChains() {
  CfSettings s;
  s.max_expansions = 65535;
  return s;
}

// A filter of two-slot sub-filters (1 slot a bucket) grown to about `filters` sub-filters.
Items GrowChain(Db& db, const Scope& scope, std::string_view key, int filters) {
  REQUIRE(db.CfReserve(scope, 0, key, Reserve(2, 1, 1), LongChains()).ok());
  Items items = Items::Make("grown-", 0, filters * 2);
  auto r = db.CfInsert(scope, 0, key, items.views, InsertOptions{.no_create = true}, LongChains());
  REQUIRE(r.ok());
  return items;
}

std::vector<uint64_t> Lookup(Db& db, std::string_view key, const Items& items,
                             const Scope& scope = kAlone) {
  auto r = db.CfLookup(scope, 0, key, items.views, /*count=*/false);
  REQUIRE(r.ok());
  return *r;
}

std::shared_ptr<core::ChainIndex> SmallIndex(uint32_t filters) {
  core::FilterMeta m;
  m.base_num_buckets = 2;
  m.bucket_size = 1;
  m.expansion = 1;
  m.num_filters = filters;
  struct Zeros : core::BucketAccess {
    uint8_t zero[1] = {0};
    const uint8_t* Read(uint32_t, uint64_t) override { return zero; }
    uint8_t* Write(uint32_t, uint64_t) override { return nullptr; }
  } zeros;
  auto index = std::make_shared<core::ChainIndex>();
  REQUIRE(index->Build(m, zeros));
  return index;
}

}  // namespace

TEST_CASE("a long chain's index is built once and serves later lookups and inserts",
          "[chain_index]") {
  TestDb t;
  Db& db = t.db();
  const Items grown = GrowChain(db, kAlone, "f", 300);
  auto info = db.CfInfo(kAlone, 0, "f");
  REQUIRE(info->cuckoo.filter.num_filters >= core::ChainIndex::kMinFilters);
  // (the insert that grew the chain past the threshold built it)
  CHECK(db.chain_indexes().builds() == 1);
  CHECK(db.chain_indexes().count() == 1);
  CHECK(Lookup(db, "f", grown) == std::vector<uint64_t>(grown.owned.size(), 1));
  const Items more = Items::Make("more-", 0, 500);
  REQUIRE(db.CfInsert(kAlone, 0, "f", more.views, InsertOptions{}, LongChains()).ok());
  CHECK(Lookup(db, "f", more) == std::vector<uint64_t>(more.owned.size(), 1));
  CHECK(db.CfDelete(kAlone, 0, "f", "more-7", LongChains()).ok());
  CHECK(db.chain_indexes().builds() == 1);
  // After a restart the index is built again from the stored pages, and answers the same.
  t.Reopen();
  CHECK(t.db().chain_indexes().builds() == 0);
  CHECK(Lookup(t.db(), "f", grown) == std::vector<uint64_t>(grown.owned.size(), 1));
  CHECK(t.db().chain_indexes().builds() == 1);
}

TEST_CASE("a chain index is dropped when the cache erases one of its pages or is cleared",
          "[chain_index]") {
  TestDb t;
  Db& db = t.db();
  (void)GrowChain(db, kAlone, "f", 200);
  (void)GrowChain(db, kAlone, "g", 200);
  REQUIRE(db.chain_indexes().count() == 2);
  const std::string prefix = FilterPrefix(db, 0, "f");
  db.cache().Erase(PageCacheKey(EncodePageKey(prefix, 7, 0)));
  CHECK(db.chain_indexes().count() == 1);
  CHECK(db.chain_indexes().Find(prefix) == nullptr);
  CHECK(db.chain_indexes().Find(FilterPrefix(db, 0, "g")) != nullptr);
  db.cache().Erase(MetaCacheKey(EncodeMetaKey(0, "g")));  // (not a page: kept)
  CHECK(db.chain_indexes().count() == 1);
  db.cache().Clear();
  CHECK(db.chain_indexes().count() == 0);
}

TEST_CASE("a failed write group drops the chain index its commands changed", "[chain_index]") {
  TempDir dir;
  auto opened = Engine::Open(StallingOptions(dir.path()));
  REQUIRE(opened.ok());
  auto& engine = **opened;
  Db db(&engine, 64);
  // Sub-filters of one bucket of 4 slots, the newest holding one item: the lost items below fit
  // in it, so the chain keeps its length (an index of another length is never used).
  REQUIRE(db.CfReserve(kAlone, 0, "f", Reserve(4, 4, 1), LongChains()).ok());
  const Items grown = Items::Make("grown-", 0, 4 * 200 + 1);
  REQUIRE(db.CfInsert(kAlone, 0, "f", grown.views, InsertOptions{}, LongChains()).ok());
  const auto before = db.CfInfo(kAlone, 0, "f")->cuckoo.filter;
  REQUIRE(before.num_filters == 201);
  REQUIRE(db.chain_indexes().count() == 1);
  StallWrites(engine);
  const Items lost = Items::Make("lost-", 0, 3);
  {
    WriteGroup group(&engine, &db.cache());
    const Scope scope{.group = &group};
    auto r = db.CfInsert(scope, 0, "f", lost.views, InsertOptions{}, LongChains());
    REQUIRE(r.ok());
    CHECK(Lookup(db, "f", lost, scope) == std::vector<uint64_t>(lost.owned.size(), 1));
    CHECK(db.CfInfo(scope, 0, "f")->cuckoo.filter.num_filters == before.num_filters);
    CHECK_FALSE(group.Commit().ok());
  }
  REQUIRE(engine.db()->ContinueBackgroundWork().ok());
  // The index that had the lost items is gone; the one built again has only what is stored.
  CHECK(db.chain_indexes().Find(FilterPrefix(db, 0, "f")) == nullptr);
  // (counts: with one bucket a sub-filter, most fingerprints are in some sub-filter anyway)
  auto counted = db.CfLookup(kAlone, 0, "f", lost.views, /*count=*/true);
  auto stored = db.CfLookup(Scope{.read = ReadMode::kSnapshot}, 0, "f", lost.views, true);
  REQUIRE(counted.ok());
  REQUIRE(stored.ok());
  CHECK(*counted == *stored);
  CHECK(Lookup(db, "f", grown) == std::vector<uint64_t>(grown.owned.size(), 1));
  CHECK(db.chain_indexes().count() == 1);
  engine.Close();
}

TEST_CASE("CF.COMPACT and LOADCHUNK drop a chain's index", "[chain_index]") {
  TestDb t;
  Db& db = t.db();
  const Items grown = GrowChain(db, kAlone, "f", 200);
  for (int i = 0; i < 100; ++i) {
    REQUIRE(db.CfDelete(kAlone, 0, "f", grown.owned[static_cast<size_t>(i)], LongChains()).ok());
  }
  // (deletes compact the chain automatically: the index is dropped and built again)
  REQUIRE(Lookup(db, "f", grown).size() == grown.owned.size());
  const std::string prefix = FilterPrefix(db, 0, "f");
  REQUIRE(db.chain_indexes().Find(prefix) != nullptr);
  REQUIRE(db.CfCompact(kAlone, 0, "f", LongChains()).ok());
  CHECK(db.chain_indexes().Find(prefix) == nullptr);
  REQUIRE(Lookup(db, "f", grown).size() == grown.owned.size());
  REQUIRE(db.chain_indexes().Find(prefix) != nullptr);
  // A chunk of sub-filter 0's bytes loaded over the filter (its SCANDUMP iterator 2 ends there).
  auto header = db.CfScanDump(kAlone, 0, "f", 0);
  REQUIRE(header.ok());
  auto chunk = db.CfScanDump(kAlone, 0, "f", header->next);
  REQUIRE(chunk.ok());
  REQUIRE(chunk->data);
  REQUIRE(db.CfLoadChunk(kAlone, 0, "f", chunk->next, std::string(chunk->data->size(), '\0'),
                         LongChains())
              .ok());
  CHECK(db.chain_indexes().Find(prefix) == nullptr);
}

TEST_CASE("chain indexes stay within their budget, least recently used out", "[chain_index]") {
  const size_t one = SmallIndex(200)->memory();
  ChainIndexes kept(one * 2 + one / 2);
  kept.Keep("a", SmallIndex(200), kept.drops());
  kept.Keep("b", SmallIndex(200), kept.drops());
  CHECK(kept.count() == 2);
  REQUIRE(kept.Find("a") != nullptr);  // (b is now the least recently used)
  kept.Keep("c", SmallIndex(200), kept.drops());
  CHECK(kept.count() == 2);
  CHECK(kept.Find("b") == nullptr);
  CHECK(kept.Find("a") != nullptr);
  CHECK(kept.Find("c") != nullptr);
  CHECK(kept.bytes() <= one * 2 + one / 2);
  // An index built while a drop happened is not kept (it may describe bytes that are gone).
  const uint64_t before = kept.drops();
  kept.Drop("somewhere-else");
  kept.Keep("d", SmallIndex(200), before);
  CHECK(kept.Find("d") == nullptr);
  // One larger than the whole budget is not kept either.
  ChainIndexes tiny(16);
  tiny.Keep("a", SmallIndex(200), tiny.drops());
  CHECK(tiny.count() == 0);
  CHECK(tiny.builds() == 1);
}

TEST_CASE("chain-index-memory 0 turns the indexes off", "[chain_index]") {
  TestDb t;
  Db& db = t.db();
  db.chain_indexes().set_budget(0);
  const Items grown = GrowChain(db, kAlone, "f", 200);
  CHECK(Lookup(db, "f", grown) == std::vector<uint64_t>(grown.owned.size(), 1));
  CHECK(db.chain_indexes().builds() == 0);
}
