// DUMP / RESTORE in Db (storage/dump_store.cc): the payload of a filter and of a string, restores
// into a new version with only the pages that hold fingerprints, page sizes other than the
// source's, REPLACE, expiries, large restores in several batches under a pinned version, and
// payloads that fail half-way creating no key; COPY and MOVE of filters and strings.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/rdb.h"
#include "test_util.h"

using namespace cuckood::storage;
using namespace cuckood::storage::testing;
namespace core = cuckood::core;
namespace rdb = cuckood::core::rdb;

namespace {

std::vector<std::string_view> ItemList(std::vector<std::string>& owned, int n, const char* prefix) {
  owned.clear();
  for (int i = 0; i < n; ++i) {
    owned.push_back(std::string(prefix) + std::to_string(i));
  }
  return {owned.begin(), owned.end()};
}

rdb::Payload Parse(const std::string& payload) {
  rdb::Payload p;
  core::Limits any;
  any.max_filter_bytes = UINT64_MAX;
  REQUIRE(rdb::ParsePayload(payload, any, &p) == rdb::ParseResult::kOk);
  return p;
}

std::string DumpOf(Db& db, std::string_view key) {
  auto d = db.Dump(kAlone, 0, key);
  REQUIRE(d.ok());
  REQUIRE(d->has_value());
  return **d;
}

// Every SCANDUMP chunk of a filter.
std::vector<std::string> Chunks(Db& db, std::string_view key) {
  std::vector<std::string> out;
  int64_t it = 0;
  while (true) {
    auto c = db.CfScanDump(kAlone, 0, key, it);
    REQUIRE(c.ok());
    if (c->next == 0) {
      return out;
    }
    out.push_back(*c->data);
    it = c->next;
  }
}

}  // namespace

TEST_CASE("Restore of a dumped filter is byte-identical, under a new version", "[dump]") {
  TestDb t;
  const CfSettings src_settings = SmallPages(64);
  REQUIRE(t.db().CfReserve(kAlone, 0, "src", Reserve(400, 4, 2), src_settings).ok());
  std::vector<std::string> owned;
  REQUIRE(t.db()
              .CfInsert(kAlone, 0, "src", ItemList(owned, 1500, "x"),
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, src_settings)
              .ok());
  const std::string payload = DumpOf(t.db(), "src");
  const auto p = Parse(payload);
  CHECK(p.filter.num_filters > 1);

  // Another page size on the target: the bytes are the same, the pages differ.
  const CfSettings dst_settings = SmallPages(100);
  auto r = t.db().Restore(0, "dst", p, 0, dst_settings);
  REQUIRE(r.ok());
  CHECK(*r);
  CHECK(DumpOf(t.db(), "dst") == payload);
  CHECK(Chunks(t.db(), "dst") == Chunks(t.db(), "src"));
  auto src = t.db().CfInfo(kAlone, 0, "src");
  auto dst = t.db().CfInfo(kAlone, 0, "dst");
  REQUIRE(src.ok());
  REQUIRE(dst.ok());
  CHECK(dst->version != src->version);
  CHECK(dst->cuckoo.page_size == 100);
  CHECK(dst->cuckoo.filter.num_items == src->cuckoo.filter.num_items);
  CHECK(dst->cuckoo.base_capacity == 0);  // the item count is the payload's word
  auto found = t.db().CfLookup(kAlone, 0, "dst", ItemList(owned, 1500, "x"), false);
  REQUIRE(found.ok());
  for (uint64_t f : *found) {
    CHECK(f == 1);
  }
}

TEST_CASE("Restore writes only pages that hold a fingerprint", "[dump]") {
  TestDb t;
  const CfSettings s = SmallPages(64);
  REQUIRE(t.db().CfReserve(kAlone, 0, "sparse", Reserve(4096, 2), s).ok());
  std::vector<std::string> owned;
  REQUIRE(t.db()
              .CfInsert(kAlone, 0, "sparse", ItemList(owned, 3, "y"),
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, s)
              .ok());
  REQUIRE(t.db().Restore(0, "copy", Parse(DumpOf(t.db(), "sparse")), 0, s).ok());
  auto meta = t.db().CfInfo(kAlone, 0, "copy");
  REQUIRE(meta.ok());
  const auto pages = PagesWithPrefix(t.engine(), EncodePagePrefix(0, "copy", meta->version));
  CHECK(pages.size() >= 1);
  CHECK(pages.size() <= 3);
  CHECK(Chunks(t.db(), "copy") == Chunks(t.db(), "sparse"));
}

TEST_CASE("Restore replaces, expires, and writes nothing when the bytes do not decode", "[dump]") {
  TestDb t;
  const CfSettings s = SmallPages(64);
  REQUIRE(t.db().SetString(0, "str", std::string(300, 'a'), 0, false).ok());
  const std::string string_payload = DumpOf(t.db(), "str");
  REQUIRE(static_cast<uint8_t>(string_payload[1]) == 0xc3);  // LZF

  SECTION("a filter over a string, with an expiry") {
    REQUIRE(t.db().CfReserve(kAlone, 0, "f", Reserve(1000, 2), s).ok());
    std::vector<std::string> owned;
    REQUIRE(t.db()
                .CfInsert(kAlone, 0, "f", ItemList(owned, 100, "z"),
                          InsertOptions{.nx = false, .no_create = true, .capacity = 0}, s)
                .ok());
    const uint64_t at = NowMs() + 3600 * 1000;
    REQUIRE(t.db().Restore(0, "str", Parse(DumpOf(t.db(), "f")), at, s).ok());
    auto m = t.db().Get(kAlone, 0, "str");
    REQUIRE(m.ok());
    REQUIRE(m->has_value());
    CHECK((*m)->type == KeyType::kCuckoo);
    CHECK((*m)->expire_ms == at);
  }
  SECTION("an expiry in the past deletes the old key and creates nothing") {
    auto r = t.db().Restore(0, "str", Parse(string_payload), 1, s);
    REQUIRE(r.ok());
    CHECK(*r);
    CHECK_FALSE(RawMeta(t.engine(), 0, "str").has_value());
    r = t.db().Restore(0, "none", Parse(string_payload), 1, s);
    REQUIRE(r.ok());
    CHECK_FALSE(*r);
  }
  SECTION("damaged LZF bytes: the old key kept, no new page (a small filter: one batch)") {
    REQUIRE(t.db().CfReserve(kAlone, 0, "big", Reserve(8192, 2), s).ok());
    std::vector<std::string> owned;
    REQUIRE(t.db()
                .CfInsert(kAlone, 0, "big", ItemList(owned, 2000, "w"),
                          InsertOptions{.nx = false, .no_create = true, .capacity = 0}, s)
                .ok());
    const std::string dump = DumpOf(t.db(), "big");  // (the payload's strings point into it)
    auto p = Parse(dump);
    REQUIRE(p.sub_filters[0].kind == rdb::EncodedString::Kind::kLzf);
    const size_t pages_before = AllPages(t.engine()).size();
    // Cut the compressed bytes short: the first pages decode, then the data runs out.
    p.sub_filters[0].bytes = p.sub_filters[0].bytes.substr(0, p.sub_filters[0].bytes.size() / 2);
    auto r = t.db().Restore(0, "str", p, 0, s);
    CHECK(r.status().code() == Code::kInvalid);
    CHECK(r.status().reason() == Reason::kBadDumpFormat);
    CHECK(AllPages(t.engine()).size() == pages_before);
    auto m = t.db().Get(kAlone, 0, "str");
    REQUIRE(m.ok());
    REQUIRE(m->has_value());
    CHECK((*m)->value == std::string(300, 'a'));
  }
  SECTION("a filter larger than cf-max-filter-bytes") {
    REQUIRE(t.db().CfReserve(kAlone, 0, "wide", Reserve(1 << 16, 1), s).ok());
    const std::string dump = DumpOf(t.db(), "wide");
    auto p = Parse(dump);
    CfSettings small = s;
    small.max_filter_bytes = 1 << 10;
    auto r = t.db().Restore(0, "wide2", p, 0, small);
    CHECK(r.status().reason() == Reason::kBadDumpFormat);
    CHECK_FALSE(RawMeta(t.engine(), 0, "wide2").has_value());
  }
}

TEST_CASE("A large restore is written in several batches under a pinned version", "[dump]") {
  TestDb t;
  // 32 MiB of non-zero bucket bytes that LZF packs into well under 1 MiB: the restore holds the
  // payload and one batch of pages at a time, and the key appears only with the last batch.
  core::FilterMeta meta;
  meta.base_num_buckets = 1 << 20;
  meta.bucket_size = 32;
  meta.num_items = 1;
  std::string payload;
  rdb::BeginCuckoo(&payload, meta);
  rdb::AppendSubFilter(&payload, meta.base_num_buckets, std::string(32 << 20, '\x01'));
  rdb::EndCuckoo(&payload);
  REQUIRE(payload.size() < (1 << 20));
  const CfSettings settings;
  SECTION("complete") {
    auto r = t.db().Restore(0, "big", Parse(payload), 0, settings);
    REQUIRE(r.ok());
    CHECK(DumpOf(t.db(), "big") == payload);
    // Once the metadata names the version, compaction keeps its pages.
    REQUIRE(
        t.engine()
            .db()
            ->CompactRange(rocksdb::CompactRangeOptions(), t.engine().pages_cf(), nullptr, nullptr)
            .ok());
    CHECK(DumpOf(t.db(), "big") == payload);
  }
  SECTION("cut short after some batches: no key, and compaction drops the pages") {
    auto p = Parse(payload);
    p.sub_filters[0].bytes =
        p.sub_filters[0].bytes.substr(0, p.sub_filters[0].bytes.size() * 3 / 4);
    auto r = t.db().Restore(0, "big", p, 0, settings);
    CHECK(r.status().reason() == Reason::kBadDumpFormat);
    CHECK_FALSE(RawMeta(t.engine(), 0, "big").has_value());
    CHECK_FALSE(AllPages(t.engine()).empty());  // some batches went out
    REQUIRE(
        t.engine()
            .db()
            ->CompactRange(rocksdb::CompactRangeOptions(), t.engine().pages_cf(), nullptr, nullptr)
            .ok());
    CHECK(AllPages(t.engine()).empty());
  }
}

TEST_CASE("A pinned version's pages survive compaction without metadata", "[dump]") {
  TestDb t;
  auto v = t.engine().NewVersion();
  REQUIRE(v.ok());
  const std::string key = EncodePageKey(EncodePagePrefix(0, "pinned", *v), 0, 0);
  auto compact = [&] {
    REQUIRE(
        t.engine()
            .db()
            ->CompactRange(rocksdb::CompactRangeOptions(), t.engine().pages_cf(), nullptr, nullptr)
            .ok());
  };
  t.engine().PinVersion(*v);
  t.engine().PinVersion(*v);  // pins nest
  REQUIRE(t.engine().db()->Put(rocksdb::WriteOptions(), t.engine().pages_cf(), key, "x").ok());
  compact();
  CHECK(AllPages(t.engine()).size() == 1);
  t.engine().UnpinVersion(*v);
  compact();
  CHECK(AllPages(t.engine()).size() == 1);
  t.engine().UnpinVersion(*v);
  compact();
  CHECK(AllPages(t.engine()).empty());
}

TEST_CASE("Copy of a filter: the same bytes under a new version, independent afterwards",
          "[dump][copy]") {
  TestDb t;
  const CfSettings s = SmallPages(64);
  REQUIRE(t.db().CfReserve(kAlone, 0, "src", Reserve(400, 4, 2), s).ok());
  std::vector<std::string> owned;
  REQUIRE(t.db()
              .CfInsert(kAlone, 0, "src", ItemList(owned, 1500, "x"),
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, s)
              .ok());
  REQUIRE(t.db().SetExpire(0, "src", NowMs() + 100000).ok());

  auto r = t.db().Copy(0, "src", 3, "dst", false);
  REQUIRE(r.ok());
  CHECK(*r);
  auto src = t.db().CfInfo(kAlone, 0, "src");
  auto dst = t.db().CfInfo(kAlone, 3, "dst");
  REQUIRE(src.ok());
  REQUIRE(dst.ok());
  CHECK(dst->version != src->version);
  CHECK(dst->expire_ms == src->expire_ms);
  CHECK(dst->cuckoo.owner.empty());
  CHECK(dst->size == src->size);
  const auto src_pages = PagesWithPrefix(t.engine(), EncodePagePrefix(0, "src", src->version));
  const auto dst_pages = PagesWithPrefix(t.engine(), EncodePagePrefix(3, "dst", dst->version));
  REQUIRE(src_pages.size() == dst_pages.size());
  for (size_t i = 0; i < src_pages.size(); ++i) {
    CHECK(src_pages[i].value == dst_pages[i].value);
  }
  auto found = t.db().CfLookup(kAlone, 3, "dst", ItemList(owned, 1500, "x"), false);
  REQUIRE(found.ok());
  CHECK(std::count(found->begin(), found->end(), 1) == 1500);

  // Independent: adding to the copy leaves the source as it was.
  std::vector<std::string> more;
  REQUIRE(t.db()
              .CfInsert(kAlone, 3, "dst", ItemList(more, 50, "new"),
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, s)
              .ok());
  auto src_after = t.db().CfInfo(kAlone, 0, "src");
  REQUIRE(src_after.ok());
  CHECK(src_after->size == src->size);
  CHECK(PagesWithPrefix(t.engine(), EncodePagePrefix(0, "src", src->version)).size() ==
        src_pages.size());

  // Compaction keeps both (each is named by its metadata).
  REQUIRE(t.engine().CompactAll().ok());
  auto again = t.db().CfLookup(kAlone, 0, "src", ItemList(owned, 1500, "x"), false);
  REQUIRE(again.ok());
  CHECK(std::count(again->begin(), again->end(), 1) == 1500);
  again = t.db().CfLookup(kAlone, 3, "dst", ItemList(owned, 1500, "x"), false);
  REQUIRE(again.ok());
  CHECK(std::count(again->begin(), again->end(), 1) == 1500);
}

TEST_CASE("Copy refuses an existing destination without replace, and a key onto itself",
          "[dump][copy]") {
  TestDb t;
  const CfSettings s = SmallPages(64);
  REQUIRE(t.db().SetString(0, "a", "va", 0, false).ok());
  REQUIRE(t.db().SetString(0, "b", "vb", 0, false).ok());
  auto r = t.db().Copy(0, "a", 0, "b", false);
  REQUIRE(r.ok());
  CHECK_FALSE(*r);
  CHECK(t.db().Get(kAlone, 0, "b").value()->value == "vb");
  r = t.db().Copy(0, "missing", 0, "c", true);
  REQUIRE(r.ok());
  CHECK_FALSE(*r);
  CHECK_FALSE(t.db().Exists(kAlone, 0, "c").value());
  CHECK(t.db().Copy(0, "a", 0, "a", true).status().code() == Code::kInvalid);
  CHECK(t.db().Copy(0, "a", 0, "a", true).status().reason() == Reason::kSameObject);
  CHECK(t.db().Copy(0, "a", 1, "a", false).value());  // another namespace: not the same

  // REPLACE over a renamed filter drops its alias; the copy of a renamed filter owns its pages.
  REQUIRE(t.db().CfReserve(kAlone, 0, "f", Reserve(100), s).ok());
  std::vector<std::string> owned;
  REQUIRE(t.db()
              .CfInsert(kAlone, 0, "f", ItemList(owned, 20, "i"),
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, s)
              .ok());
  REQUIRE(t.db().Rename(0, "f", "g", false).ok());
  r = t.db().Copy(0, "g", 0, "b", true);
  REQUIRE(r.ok());
  CHECK(*r);
  auto b = t.db().CfInfo(kAlone, 0, "b");
  REQUIRE(b.ok());
  CHECK(b->cuckoo.owner.empty());
  REQUIRE(t.db().Copy(0, "a", 0, "g", true).value());  // g (renamed filter) replaced by a string
  bool alias_left = false;
  for (const auto& rec : AllRecords(t.engine(), t.engine().default_cf())) {
    alias_left = alias_left || rec.key[0] == kAliasPrefix;
  }
  CHECK_FALSE(alias_left);
  REQUIRE(t.engine().CompactAll().ok());
  auto found = t.db().CfLookup(kAlone, 0, "b", ItemList(owned, 20, "i"), false);
  REQUIRE(found.ok());
  CHECK(std::count(found->begin(), found->end(), 1) == 20);
}

TEST_CASE("A large copy is written in several batches", "[dump][copy]") {
  TestDb t;
  // 32 MiB of bucket bytes (restored from a small payload): several batches of pages.
  core::FilterMeta meta;
  meta.base_num_buckets = 1 << 20;
  meta.bucket_size = 32;
  meta.num_items = 1;
  std::string payload;
  rdb::BeginCuckoo(&payload, meta);
  rdb::AppendSubFilter(&payload, meta.base_num_buckets, std::string(32 << 20, '\x01'));
  rdb::EndCuckoo(&payload);
  const CfSettings settings;
  REQUIRE(t.db().Restore(0, "big", Parse(payload), 0, settings).value());
  REQUIRE(t.db().Copy(0, "big", 0, "big2", false).value());
  CHECK(DumpOf(t.db(), "big2") == payload);
  REQUIRE(t.engine().CompactAll().ok());
  CHECK(DumpOf(t.db(), "big2") == payload);
  CHECK(DumpOf(t.db(), "big") == payload);
}

TEST_CASE("Move takes a key to another namespace, or refuses", "[dump][copy]") {
  TestDb t;
  const CfSettings s = SmallPages(64);
  REQUIRE(t.db().CfReserve(kAlone, 0, "f", Reserve(400, 4), s).ok());
  std::vector<std::string> owned;
  REQUIRE(t.db()
              .CfInsert(kAlone, 0, "f", ItemList(owned, 300, "m"),
                        InsertOptions{.nx = false, .no_create = true, .capacity = 0}, s)
              .ok());
  REQUIRE(t.db().SetString(2, "f", "taken", 0, false).ok());
  auto r = t.db().Move(0, 2, "f");
  REQUIRE(r.ok());
  CHECK_FALSE(*r);  // the target holds the key
  CHECK(t.db().Exists(kAlone, 0, "f").value());
  REQUIRE(t.db().Delete(2, "f").value());
  r = t.db().Move(0, 2, "f");
  REQUIRE(r.ok());
  CHECK(*r);
  CHECK_FALSE(t.db().Exists(kAlone, 0, "f").value());
  auto found = t.db().CfLookup(kAlone, 2, "f", ItemList(owned, 300, "m"), false);
  REQUIRE(found.ok());
  CHECK(std::count(found->begin(), found->end(), 1) == 300);
  // The source's pages are dead: compaction drops them.
  REQUIRE(t.engine().CompactAll().ok());
  for (const auto& p : AllPages(t.engine())) {
    CHECK(p.key.substr(0, 2) == std::string("\0\x02", 2));
  }
  CHECK_FALSE(t.db().Move(0, 2, "missing").value());
  CHECK(t.db().Move(2, 2, "f").status().code() == Code::kInvalid);
  CHECK(t.db().Move(2, 2, "f").status().reason() == Reason::kSameObject);
  REQUIRE(t.db().SetString(0, "s", "v", NowMs() + 50000, false).ok());
  REQUIRE(t.db().Move(0, 1, "s").value());
  auto moved = t.db().Get(kAlone, 1, "s");
  REQUIRE(moved.ok());
  REQUIRE(moved->has_value());
  CHECK((*moved)->value == "v");
  CHECK((*moved)->expire_ms > NowMs());
}
