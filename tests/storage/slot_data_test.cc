// The raw records of a slot range (storage/slot_data.h): which raw keys a slot holds, write
// batches filtered down to a range, the snapshot scan of a range, and dropping a range.
#include "storage/slot_data.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "storage/format.h"
#include "test_util.h"

using namespace cuckood::storage;
using namespace cuckood::storage::testing;

namespace {

std::string KeyOfSlotAbove(uint16_t last, int* i) {
  for (;; ++*i) {
    std::string k = "k" + std::to_string(*i);
    if (KeySlot(k) > last) {
      ++*i;
      return k;
    }
  }
}

std::string KeyOfSlotIn(SlotSpan span, int* i) {
  for (;; ++*i) {
    std::string k = "k" + std::to_string(*i);
    if (span.Contains(KeySlot(k))) {
      ++*i;
      return k;
    }
  }
}

}  // namespace

TEST_CASE("RawKeySlot reads the slot of metadata, page and alias keys", "[slots]") {
  const std::string key = "{user1000}.following";  // slot 3443
  CHECK(RawKeySlot(RawCf::kMetadata, EncodeMetaKey(7, key)) == 3443);
  const auto page = EncodePageKey(EncodePagePrefix(7, key, 42), 1, 2);
  CHECK(RawKeySlot(RawCf::kPages, page) == 3443);
  CHECK(RawKeySlot(RawCf::kDefault, EncodeAliasKey(7, key, 42)) == 3443);
  CHECK_FALSE(RawKeySlot(RawCf::kDefault, std::string(kVersionReservedKey)).has_value());
  CHECK_FALSE(RawKeySlot(RawCf::kMetadata, "ab").has_value());
}

TEST_CASE("SlotSpan bounds are inclusive on both sides", "[slots]") {
  const SlotSpan span{10, 20};
  CHECK_FALSE(span.Contains(9));
  CHECK(span.Contains(10));
  CHECK(span.Contains(20));
  CHECK_FALSE(span.Contains(21));
}

TEST_CASE("A migration moves exactly the records of its slots", "[slots]") {
  TestDb t;
  Db& db = t.db();
  Engine* engine = db.engine();
  const SlotSpan span{0, 2000};
  int i = 0;
  std::set<std::string> inside;
  std::set<std::string> outside;
  for (int n = 0; n < 20; ++n) {
    inside.insert(KeyOfSlotIn(span, &i));
    outside.insert(KeyOfSlotAbove(span.last, &i));
  }
  for (const auto& k : inside) {
    REQUIRE(db.CfReserve(kAlone, 0, k, Reserve(100), CfSettings()).ok());
    REQUIRE(db.CfInsert(kAlone, 0, k, {"a"},
                        InsertOptions{.nx = false, .no_create = false, .capacity = 0}, CfSettings())
                .ok());
  }
  for (const auto& k : outside) {
    REQUIRE(db.CfInsert(kAlone, 0, k, {"a"},
                        InsertOptions{.nx = false, .no_create = false, .capacity = 0}, CfSettings())
                .ok());
  }
  REQUIRE(db.CfInsert(kAlone, 3, *inside.begin(), {"a"},
                      InsertOptions{.nx = false, .no_create = false, .capacity = 0}, CfSettings())
              .ok());
  engine->Settle();

  SECTION("the snapshot scan yields metadata and pages of the span only, every namespace") {
    const rocksdb::Snapshot* snap = engine->db()->GetSnapshot();
    SlotScanner scanner(engine, snap, span);
    rocksdb::WriteBatch batch;
    size_t n = 0;
    size_t total = 0;
    Status s;
    while (scanner.Next(&batch, 256, &n, &s)) {
      total += n;
      rocksdb::WriteBatch kept;
      size_t seen = 0;
      REQUIRE(FilterBatchBySlots(engine, batch, span, &kept, &seen).ok());
      CHECK(seen == kept.Count());  // nothing outside the span
    }
    engine->db()->ReleaseSnapshot(snap);
    REQUIRE(s.ok());
    CHECK(total == 2 * (inside.size() + 1));  // one metadata record and one page a filter
  }

  SECTION("a batch is filtered down to the span") {
    rocksdb::WriteBatch in;
    REQUIRE(in.Put(engine->metadata_cf(), EncodeMetaKey(0, *inside.begin()), "x").ok());
    REQUIRE(in.Put(engine->metadata_cf(), EncodeMetaKey(0, *outside.begin()), "x").ok());
    REQUIRE(
        in.Delete(engine->pages_cf(), EncodePageKey(EncodePagePrefix(0, *inside.begin(), 1), 0, 0))
            .ok());
    REQUIRE(in.Put(engine->default_cf(), std::string(kVersionReservedKey), "x").ok());
    rocksdb::WriteBatch out;
    size_t seen = 0;
    REQUIRE(FilterBatchBySlots(engine, in, span, &out, &seen).ok());
    CHECK(seen == 4);
    CHECK(out.Count() == 2);
    rocksdb::WriteBatch flush;
    REQUIRE(flush.DeleteRange(engine->metadata_cf(), "", "\xff").ok());
    CHECK(FilterBatchBySlots(engine, flush, span, &out).code() == Code::kInvalid);
  }

  SECTION("DeleteSlots drops the span in every namespace and keeps the rest") {
    REQUIRE(db.DeleteSlots(span.first, span.last).ok());
    for (const auto& k : inside) {
      CHECK_FALSE(*db.Exists(kAlone, 0, k));
    }
    CHECK_FALSE(*db.Exists(kAlone, 3, *inside.begin()));
    for (const auto& k : outside) {
      CHECK(*db.Exists(kAlone, 0, k));
    }
  }
}
