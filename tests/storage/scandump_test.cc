// CF.SCANDUMP / CF.LOADCHUNK through Db: a dump loaded into another key reproduces identical bytes
// and identical answers, whatever the page size on either side; large sub-filters travel in
// several 16 MiB chunks.
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/dump.h"
#include "test_util.h"

using namespace cuckood::storage;
using namespace cuckood::storage::testing;
namespace core = cuckood::core;

namespace {

struct Dump {
  std::string header;
  std::vector<std::pair<int64_t, std::string>> chunks;  // (iterator replied, data)
};

Dump DumpAll(Db& db, uint16_t ns, std::string_view key) {
  Dump d;
  auto h = db.CfScanDump(kAlone, ns, key, 0);
  REQUIRE(h.ok());
  REQUIRE(h->next == 1);
  REQUIRE(h->data.has_value());
  d.header = *h->data;
  int64_t iter = 1;
  for (;;) {
    auto c = db.CfScanDump(kAlone, ns, key, iter);
    REQUIRE(c.ok());
    if (!c->data.has_value()) {
      CHECK(c->next == 0);
      break;
    }
    REQUIRE(c->next > iter);
    d.chunks.emplace_back(c->next, std::move(*c->data));
    iter = d.chunks.back().first;
    REQUIRE(d.chunks.size() < 10000);
  }
  return d;
}

void LoadAll(Db& db, uint16_t ns, std::string_view key, const Dump& d, const CfSettings& s) {
  REQUIRE(db.CfLoadChunk(kAlone, ns, key, 1, d.header, s).ok());
  for (const auto& [iter, data] : d.chunks) {
    auto st = db.CfLoadChunk(kAlone, ns, key, iter, data, s);
    INFO(st.message());
    REQUIRE(st.ok());
  }
}

void CheckSameFilter(Db& db, std::string_view a, std::string_view b) {
  const auto fa = db.CfInfo(kAlone, 0, a)->cuckoo.filter;
  const auto fb = db.CfInfo(kAlone, 0, b)->cuckoo.filter;
  CHECK(fa.num_items == fb.num_items);
  CHECK(fa.num_deletes == fb.num_deletes);
  CHECK(fa.num_filters == fb.num_filters);
  CHECK(fa.base_num_buckets == fb.base_num_buckets);
  CHECK(fa.bucket_size == fb.bucket_size);
  CHECK(fa.max_iterations == fb.max_iterations);
  CHECK(fa.expansion == fb.expansion);
}

}  // namespace

TEST_CASE("SCANDUMP then LOADCHUNK reproduces a filter exactly", "[scandump]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings src_settings = SmallPages(64);
  // Expansion 2 and many items: several sub-filters of different sizes.
  REQUIRE(db.CfReserve(kAlone, 0, "src", Reserve(100, 2, 2), src_settings).ok());
  const auto items = Items::Make("d-", 0, 700);
  REQUIRE(db.CfInsert(kAlone, 0, "src", items.views,
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, src_settings)
              .ok());
  REQUIRE(*db.CfDelete(kAlone, 0, "src", "d-5", src_settings));
  const auto src_meta = db.CfInfo(kAlone, 0, "src")->cuckoo.filter;
  REQUIRE(src_meta.num_filters >= 3);

  const Dump dump = DumpAll(db, 0, "src");
  CHECK(dump.header == core::EncodeHeader(src_meta));
  // Small sub-filters go whole, one chunk each.
  CHECK(dump.chunks.size() == src_meta.num_filters);
  for (uint32_t f = 0; f < src_meta.num_filters; ++f) {
    CHECK(dump.chunks[f].second.size() == core::SubFilterBytes(src_meta, f));
  }

  const uint32_t dst_page = GENERATE(64U, 100U, 2048U);
  CfSettings dst_settings = SmallPages(dst_page);
  LoadAll(db, 0, "dst", dump, dst_settings);
  auto dst_info = db.CfInfo(kAlone, 0, "dst");
  REQUIRE(dst_info.ok());
  CHECK(dst_info->cuckoo.page_size == dst_page);
  CHECK(dst_info->cuckoo.base_capacity == 0);
  CHECK(dst_info->version != db.CfInfo(kAlone, 0, "src")->version);
  CheckSameFilter(db, "src", "dst");

  const Dump again = DumpAll(db, 0, "dst");
  CHECK(again.header == dump.header);
  REQUIRE(again.chunks.size() == dump.chunks.size());
  for (size_t i = 0; i < again.chunks.size(); ++i) {
    CHECK(again.chunks[i].first == dump.chunks[i].first);
    CHECK(again.chunks[i].second == dump.chunks[i].second);
  }
  const auto probes = Items::Make("probe-", 0, 300);
  for (const auto* set : {&items, &probes}) {
    CHECK(*db.CfLookup(kAlone, 0, "dst", set->views, true) ==
          *db.CfLookup(kAlone, 0, "src", set->views, true));
    CHECK(*db.CfLookup(kAlone, 0, "dst", set->views, false) ==
          *db.CfLookup(kAlone, 0, "src", set->views, false));
  }
  // The loaded filter is a normal filter afterwards.
  REQUIRE(db.CfInsert(kAlone, 0, "dst", {"after-load"},
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, dst_settings)
              .ok());
  CHECK(*db.CfLookup(kAlone, 0, "dst", {"after-load"}, false) == std::vector<uint64_t>{1});
}

TEST_CASE("a sub-filter larger than 16 MiB dumps and loads in several chunks",
          "[scandump][large]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings;  // 2 KiB pages
  // 40,000,000 / 1 -> 2^26 one-byte buckets: a 64 MiB sub-filter.
  REQUIRE(db.CfReserve(kAlone, 0, "big", Reserve(40'000'000, 1), settings).ok());
  const auto items = Items::Make("big-", 0, 3000);
  REQUIRE(db.CfInsert(kAlone, 0, "big", items.views,
                      InsertOptions{.nx = false, .no_create = true, .capacity = 0}, settings)
              .ok());
  const auto meta = db.CfInfo(kAlone, 0, "big")->cuckoo.filter;
  REQUIRE(meta.num_filters == 1);
  REQUIRE(core::SubFilterBytes(meta, 0) == 4 * core::kMaxChunkBytes);

  Dump dump = DumpAll(db, 0, "big");
  REQUIRE(dump.chunks.size() == 4);
  int64_t expect_iter = 1;
  uint64_t non_empty = 0;
  for (const auto& [iter, data] : dump.chunks) {
    CHECK(data.size() == core::kMaxChunkBytes);
    expect_iter += static_cast<int64_t>(core::kMaxChunkBytes);
    CHECK(iter == expect_iter);
    for (char c : data) {
      non_empty += c != 0 ? 1 : 0;
    }
  }
  CHECK(non_empty == 3000);

  CfSettings dst_settings;
  dst_settings.page_size = 4096;
  LoadAll(db, 0, "copy", dump, dst_settings);
  CheckSameFilter(db, "big", "copy");
  // Only the pages holding fingerprints are stored for the copy too.
  const std::string copy_prefix = FilterPrefix(db, 0, "copy");
  CHECK(PagesWithPrefix(t.engine(), copy_prefix).size() <= 3000);

  const Dump again = DumpAll(db, 0, "copy");
  CHECK(again.header == dump.header);
  REQUIRE(again.chunks.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(again.chunks[i].first == dump.chunks[i].first);
    CHECK(again.chunks[i].second == dump.chunks[i].second);
  }
  const auto probes = Items::Make("probe-", 0, 300);
  CHECK(*db.CfLookup(kAlone, 0, "copy", items.views, false) == std::vector<uint64_t>(3000, 1));
  CHECK(*db.CfLookup(kAlone, 0, "copy", probes.views, true) ==
        *db.CfLookup(kAlone, 0, "big", probes.views, true));
}

TEST_CASE("SCANDUMP and LOADCHUNK edge cases", "[scandump]") {
  TestDb t;
  Db& db = t.db();
  const CfSettings settings = SmallPages(64);
  REQUIRE(db.SetString(0, "s", "v", 0, false).ok());
  REQUIRE(db.CfReserve(kAlone, 0, "empty", Reserve(100), settings).ok());
  REQUIRE(db.CfInsert(kAlone, 0, "f", {"a", "b"},
                      InsertOptions{.nx = false, .no_create = false, .capacity = 100}, settings)
              .ok());
  const std::string header = *db.CfScanDump(kAlone, 0, "f", 0)->data;

  SECTION("an empty filter dumps as [0, null] for any iterator") {
    for (int64_t iter : {0, 1, 5}) {
      auto c = db.CfScanDump(kAlone, 0, "empty", iter);
      REQUIRE(c.ok());
      CHECK(c->next == 0);
      CHECK_FALSE(c->data.has_value());
    }
  }
  SECTION("SCANDUMP of a missing key or another type") {
    CHECK(db.CfScanDump(kAlone, 0, "missing", 0).status().code() == Code::kNotFound);
    CHECK(db.CfScanDump(kAlone, 0, "missing", 0).status().reason() == Reason::kFilterNotFound);
    CHECK(db.CfScanDump(kAlone, 0, "s", 0).status().code() == Code::kWrongType);
  }
  SECTION("past the end is [0, null]") {
    auto c = db.CfScanDump(kAlone, 0, "f", 1'000'000);
    REQUIRE(c.ok());
    CHECK(c->next == 0);
    CHECK_FALSE(c->data.has_value());
  }
  SECTION("a header onto an existing key") {
    CHECK(db.CfLoadChunk(kAlone, 0, "f", 1, header, settings).code() == Code::kExists);
    CHECK(db.CfLoadChunk(kAlone, 0, "f", 1, header, settings).reason() == Reason::kFilterExists);
    CHECK(db.CfLoadChunk(kAlone, 0, "s", 1, header, settings).code() == Code::kWrongType);
  }
  SECTION("a malformed header") {
    auto short_header = db.CfLoadChunk(kAlone, 0, "new", 1, header.substr(1), settings);
    CHECK(short_header.code() == Code::kInvalid);
    CHECK(short_header.reason() == Reason::kBadHeader);
    std::string bad = header;
    bad[32] = 0;  // bucket size 0
    bad[33] = 0;
    auto invalid = db.CfLoadChunk(kAlone, 0, "new", 1, bad, settings);
    CHECK(invalid.code() == Code::kInvalid);
    CHECK(invalid.reason() == Reason::kCreateFailed);
    CHECK_FALSE(*db.Exists(kAlone, 0, "new"));
  }
  SECTION("a chunk for a missing key, another type, or the wrong place") {
    CHECK(db.CfLoadChunk(kAlone, 0, "missing", 65, std::string(64, 'x'), settings).code() ==
          Code::kNotFound);
    CHECK(db.CfLoadChunk(kAlone, 0, "missing", 65, std::string(64, 'x'), settings).reason() ==
          Reason::kFilterNotFound);
    CHECK(db.CfLoadChunk(kAlone, 0, "s", 65, std::string(64, 'x'), settings).code() ==
          Code::kWrongType);
    REQUIRE(db.CfLoadChunk(kAlone, 0, "new", 1, header, settings).ok());
    auto misplaced = db.CfLoadChunk(kAlone, 0, "new", 10, std::string(64, 'x'), settings);
    CHECK(misplaced.code() == Code::kInvalid);
    CHECK(misplaced.reason() == Reason::kBadChunk);
    CHECK(AllPages(t.engine()).size() ==
          PagesWithPrefix(t.engine(), FilterPrefix(db, 0, "f")).size());
  }
  SECTION("a header alone makes a filter that answers from zeros") {
    REQUIRE(db.CfLoadChunk(kAlone, 0, "new", 1, header, settings).ok());
    CHECK(db.CfInfo(kAlone, 0, "new")->size == 2);
    CHECK(*db.CfLookup(kAlone, 0, "new", {"a", "b"}, false) == std::vector<uint64_t>{0, 0});
  }
}
