// Insert / exists / count / delete on hand-built filters whose outcome follows from the
// reference's rules (§2.4-§2.6), plus growth refusal and storage errors.
#include <catch2/catch.hpp>
#include <functional>
#include <initializer_list>
#include <string>

#include "memory_access.h"

using namespace cuckood::core;
using cuckood::core::testing::MemoryAccess;
using cuckood::core::testing::TestFilter;

namespace {

FilterMeta RawMeta(uint64_t buckets, uint16_t bucket_size, uint16_t max_iterations,
                   uint16_t expansion, uint32_t filters = 1) {
  FilterMeta m;
  m.base_num_buckets = buckets;
  m.bucket_size = bucket_size;
  m.max_iterations = max_iterations;
  m.expansion = expansion;
  m.num_filters = filters;
  return m;
}

// The first item "k<i>" whose hash satisfies `pred`.
std::string FindItem(const std::function<bool(const ItemHash&)>& pred) {
  for (int i = 0; i < 1000000; ++i) {
    std::string item = "k" + std::to_string(i);
    if (pred(HashItem(item))) {
      return item;
    }
  }
  FAIL("no item found");
  return {};
}

uint64_t AltOffset(uint8_t fp, uint64_t n) {
  return (fp * 0x5bd1e995ULL) % n;
}

}  // namespace

TEST_CASE("Basic insert, exists, unique insert and delete (upstream basicOps)", "[filter]") {
  TestFilter t(TestFilter::Reserve(50, 2, 500, 1));
  CHECK(t.Add("foo") == InsertResult::kInserted);
  CHECK(t.Add("bar") == InsertResult::kInserted);
  CHECK(t.Has("foo"));
  CHECK(t.Has("bar"));
  CHECK_FALSE(t.Has("baz"));
  CHECK(t.meta.num_items == 2);
  CHECK(t.Add("baz", true) == InsertResult::kInserted);
  CHECK(t.Add("foo", true) == InsertResult::kExists);
  CHECK(t.meta.num_items == 3);
  CHECK(t.Del("foo") == DeleteResult::kDeleted);
  CHECK(t.meta.num_items == 2);
  CHECK(t.meta.num_deletes == 1);
  CHECK_FALSE(t.Has("foo"));
  CHECK(t.Del("foo") == DeleteResult::kNotFound);
  CHECK(t.meta.num_items == 2);
  CHECK(t.meta.num_deletes == 1);
}

TEST_CASE("The first copy lands in slot 0 of the primary bucket", "[filter]") {
  TestFilter t(TestFilter::Reserve(1000));  // 512 buckets
  REQUIRE(t.Add("foo") == InsertResult::kInserted);
  CHECK(t.access.Slot(0, 257, 0) == 217);
  CHECK(t.access.NonEmptySlots() == 1);
  // Second copy: primary bucket still has slot 1 free.
  REQUIRE(t.Add("foo") == InsertResult::kInserted);
  CHECK(t.access.Slot(0, 257, 1) == 217);
  // Third copy: primary full, so the alternate bucket's slot 0.
  REQUIRE(t.Add("foo") == InsertResult::kInserted);
  CHECK(t.access.Slot(0, 76, 0) == 217);
}

TEST_CASE("CF.COUNT counts a bucket twice when both candidates coincide", "[filter]") {
  TestFilter t(TestFilter::Reserve(4));  // 2 buckets
  REQUIRE(t.meta.base_num_buckets == 2);
  const ItemHash a = HashItem("a");
  REQUIRE(a.fp == 196);
  REQUIRE(PrimaryBucket(a.hash, 2) == AltBucket(a.hash, a.fp, 2));
  CHECK(t.CountOf("a") == 0);
  REQUIRE(t.Add("a") == InsertResult::kInserted);
  CHECK(t.CountOf("a") == 2);
  REQUIRE(t.Add("a") == InsertResult::kInserted);
  CHECK(t.CountOf("a") == 4);
  REQUIRE(t.Del("a") == DeleteResult::kDeleted);
  CHECK(t.CountOf("a") == 2);
}

TEST_CASE("Kick-out evicts slot 0 of the primary bucket and moves the victim to its alternate",
          "[filter][kick]") {
  // 4 buckets of 1 slot; no growth so the kick-out is the only way in.
  TestFilter t(RawMeta(4, 1, 1, 0));
  const std::string a =
      FindItem([](const ItemHash& h) { return h.hash % 4 == 0 && AltOffset(h.fp, 4) == 2; });
  const std::string c = FindItem([](const ItemHash& h) { return h.hash % 4 == 1; });
  const std::string z =
      FindItem([](const ItemHash& h) { return h.hash % 4 == 0 && AltOffset(h.fp, 4) == 1; });
  REQUIRE(t.Add(a) == InsertResult::kInserted);  // bucket 0
  REQUIRE(t.Add(c) == InsertResult::kInserted);  // bucket 1
  REQUIRE(t.Add(z) == InsertResult::kInserted);  // evicts a from bucket 0 into bucket 2
  CHECK(t.access.Slot(0, 0, 0) == HashItem(z).fp);
  CHECK(t.access.Slot(0, 1, 0) == HashItem(c).fp);
  CHECK(t.access.Slot(0, 2, 0) == HashItem(a).fp);
  CHECK(t.access.Slot(0, 3, 0) == 0);
  CHECK(t.meta.num_items == 3);
  CHECK(t.Has(a));
  CHECK(t.Has(c));
  CHECK(t.Has(z));
}

TEST_CASE("Kick-out victims go round-robin through the slots", "[filter][kick]") {
  // 2 buckets x 2 slots. Even fingerprints have no other bucket, odd ones have the other one.
  const std::string z =
      FindItem([](const ItemHash& h) { return h.hash % 2 == 0 && h.fp % 2 == 0; });
  for (uint16_t iterations : std::initializer_list<uint16_t>{1, 2}) {
    TestFilter t(RawMeta(2, 2, iterations, 0));
    t.access.SetSlot(0, 0, 0, 2);  // even: stays in bucket 0 when evicted
    t.access.SetSlot(0, 0, 1, 3);  // odd: can move to bucket 1
    t.access.SetSlot(0, 1, 0, 9);
    const auto result = t.Add(z);
    if (iterations == 1) {
      CHECK(result == InsertResult::kFull);
      CHECK(t.access.Slot(0, 0, 0) == 2);
      CHECK(t.access.Slot(0, 0, 1) == 3);
      CHECK(t.access.Slot(0, 1, 1) == 0);
    } else {
      // Step 1 swaps z into slot 0 (2 bounces back to bucket 0, full); step 2 swaps 2 into
      // slot 1, evicting 3, which finds bucket 1's free slot.
      CHECK(result == InsertResult::kInserted);
      CHECK(t.access.Slot(0, 0, 0) == HashItem(z).fp);
      CHECK(t.access.Slot(0, 0, 1) == 2);
      CHECK(t.access.Slot(0, 1, 0) == 9);
      CHECK(t.access.Slot(0, 1, 1) == 3);
    }
  }
}

TEST_CASE("A failed kick-out is rolled back byte for byte", "[filter][kick]") {
  for (uint16_t iterations : std::initializer_list<uint16_t>{1, 2, 3, 4, 5, 20, 65535}) {
    INFO("max iterations " << iterations);
    SECTION("expansion 0: filter full, nothing changes") {
      TestFilter t(RawMeta(1, 2, iterations, 0));
      t.access.SetSlot(0, 0, 0, 11);
      t.access.SetSlot(0, 0, 1, 22);
      t.meta.num_items = 2;
      CHECK(t.Add("z") == InsertResult::kFull);
      CHECK(t.access.Slot(0, 0, 0) == 11);
      CHECK(t.access.Slot(0, 0, 1) == 22);
      CHECK(t.meta.num_items == 2);
      CHECK(t.meta.num_filters == 1);
    }
    SECTION("expansion 1: old sub-filter restored, item in slot 0 of the new one") {
      TestFilter t(RawMeta(1, 2, iterations, 1));
      t.access.SetSlot(0, 0, 0, 11);
      t.access.SetSlot(0, 0, 1, 22);
      t.meta.num_items = 2;
      CHECK(t.Add("z") == InsertResult::kInserted);
      CHECK(t.access.Slot(0, 0, 0) == 11);
      CHECK(t.access.Slot(0, 0, 1) == 22);
      CHECK(t.access.Slot(1, 0, 0) == HashItem("z").fp);
      CHECK(t.access.Slot(1, 0, 1) == 0);
      CHECK(t.meta.num_items == 3);
      CHECK(t.meta.num_filters == 2);
    }
  }
}

TEST_CASE("Inserts try the newest sub-filter first, primary before alternate", "[filter]") {
  // "1" has an odd fingerprint, so in 2 one-slot buckets its candidates are both buckets.
  TestFilter t(TestFilter::Reserve(2, 1));
  const ItemHash one = HashItem("1");
  REQUIRE(one.fp % 2 == 1);
  const uint64_t p = one.hash % 2;
  for (int i = 0; i < 3; ++i) {
    REQUIRE(t.Add("1") == InsertResult::kInserted);
  }
  REQUIRE(t.meta.num_filters == 2);
  CHECK(t.access.Slot(0, p, 0) == one.fp);
  CHECK(t.access.Slot(0, 1 - p, 0) == one.fp);
  CHECK(t.access.Slot(1, p, 0) == one.fp);
  // Free a slot in the old sub-filter: the next copy still goes to the newest one (alternate).
  t.access.SetSlot(0, p, 0, 0);
  REQUIRE(t.Add("1") == InsertResult::kInserted);
  CHECK(t.access.Slot(1, 1 - p, 0) == one.fp);
  CHECK(t.access.Slot(0, p, 0) == 0);
  // Deletes also go newest first, primary before alternate.
  t.meta.num_items = 100;  // keep automatic compaction out of the way
  REQUIRE(t.Del("1") == DeleteResult::kDeleted);
  CHECK(t.access.Slot(1, p, 0) == 0);
  CHECK(t.access.Slot(1, 1 - p, 0) == one.fp);
  REQUIRE(t.Del("1") == DeleteResult::kDeleted);
  CHECK(t.access.Slot(1, 1 - p, 0) == 0);
  CHECK(t.access.Slot(0, 1 - p, 0) == one.fp);
}

TEST_CASE("NX insert of a present item changes nothing", "[filter]") {
  TestFilter t(TestFilter::Reserve(100));
  REQUIRE(t.Add("x") == InsertResult::kInserted);
  const auto before = t.access.Snapshot();
  CHECK(t.Add("x", true) == InsertResult::kExists);
  CHECK(t.access.Snapshot() == before);
  CHECK(t.meta.num_items == 1);
}

TEST_CASE("Growth is refused at 65535 sub-filters", "[filter][growth]") {
  const ItemHash x = HashItem("x");
  for (uint32_t filters : {65534u, 65535u}) {
    TestFilter t(RawMeta(1, 1, 1, 1, filters));
    for (uint32_t f = 0; f < filters; ++f) {
      t.access.SetSlot(f, 0, 0, x.fp);
    }
    t.meta.num_items = filters;
    const auto before = t.access.Snapshot();
    if (filters == 65534) {
      CHECK(t.Add("x") == InsertResult::kInserted);
      CHECK(t.meta.num_filters == 65535);
    } else {
      CHECK(t.Add("x") == InsertResult::kGrowthFailed);
      CHECK(t.meta.num_filters == 65535);
      CHECK(t.meta.num_items == 65535);
      CHECK(t.access.Snapshot() == before);
    }
  }
}

TEST_CASE("Growth is refused past max_filter_bytes", "[filter][growth]") {
  // Base 512 buckets, expansion 32768: sub-filter 1 is 32 MiB, sub-filter 2 would be 1 TiB.
  TestFilter t(TestFilter::Reserve(1024, 2, 20, 32768));
  for (int i = 0; i < 8; ++i) {
    REQUIRE(t.Add("foo") == InsertResult::kInserted);  // 4 copies fit each sub-filter
  }
  CHECK(t.meta.num_filters == 2);
  CHECK(t.Add("foo") == InsertResult::kGrowthFailed);
  CHECK(t.meta.num_items == 8);
  t.limits.max_filter_bytes = 1ULL << 41;  // 1 TiB is allowed now
  CHECK(t.Add("foo") == InsertResult::kInserted);
  CHECK(t.meta.num_filters == 3);
}

TEST_CASE("Growth is refused when the bucket count would pass 2^56-1", "[filter][growth]") {
  TestFilter t(RawMeta(1ULL << 40, 1, 1, 32768));
  t.limits.max_filter_bytes = UINT64_MAX;
  for (int i = 0; i < 4; ++i) {
    REQUIRE(t.Add("x") == InsertResult::kInserted);  // 2 copies per sub-filter
  }
  CHECK(t.meta.num_filters == 2);  // 2^40 and 2^55 buckets
  CHECK(t.Add("x") == InsertResult::kGrowthFailed);
  CHECK(t.meta.num_items == 4);
}

TEST_CASE("A 4 GiB header filter takes ten copies of one item (upstream bucket overflow test)",
          "[filter][growth]") {
  TestFilter t(RawMeta(1ULL << 32, 1, 1, 1));
  REQUIRE(HashItem("1").fp == 221);
  for (int i = 0; i < 10; ++i) {
    CHECK(t.Add("1") == InsertResult::kInserted);
  }
  CHECK(t.meta.num_filters == 5);
  CHECK(t.CountOf("1") == 10);
  CHECK(t.access.pages() == 10);  // nothing proportional to 4 GiB was allocated
}

TEST_CASE("Duplicates of one item grow a 2-slot filter by one sub-filter per two copies",
          "[filter][growth]") {
  TestFilter t(TestFilter::Reserve(2, 1, 20, 1));
  for (int i = 1; i <= 40; ++i) {
    REQUIRE(t.Add("1") == InsertResult::kInserted);
    CHECK(t.meta.num_filters == static_cast<uint32_t>((i + 1) / 2));
    CHECK(t.CountOf("1") == static_cast<uint64_t>(i));
  }
}

TEST_CASE("Storage errors surface as kIoError / io_error and never crash", "[filter][io]") {
  for (int64_t ok_calls = 0; ok_calls < 200; ++ok_calls) {
    INFO("storage fails after " << ok_calls << " calls");
    TestFilter t(TestFilter::Reserve(8, 2, 20, 1));
    for (int i = 0; i < 40; ++i) {
      REQUIRE(t.Add("item" + std::to_string(i)) == InsertResult::kInserted);
    }
    t.access.FailAfter(ok_calls);
    const InsertResult r = Insert(t.meta, t.access, HashItem("new"), false, t.limits);
    CHECK((r == InsertResult::kIoError || r == InsertResult::kInserted));
    t.access.FailAfter(ok_calls);
    bool io_error = false;
    const bool found = Exists(t.meta, t.access, HashItem("item3"), &io_error);
    CHECK(found != io_error);  // item3 is present: either found or an error
    t.access.FailAfter(ok_calls);
    bool count_error = false;
    const uint64_t count = Count(t.meta, t.access, HashItem("item3"), &count_error);
    CHECK((count_error ? count == 0 : count >= 1));
    t.access.FailAfter(ok_calls);
    const DeleteResult d = Delete(t.meta, t.access, HashItem("item5"));
    CHECK(d != DeleteResult::kNotFound);
    if (ok_calls == 0) {
      CHECK(r == InsertResult::kIoError);
      CHECK(io_error);
      CHECK(count_error);
      CHECK(d == DeleteResult::kIoError);
    }
    if (ok_calls == 199) {
      CHECK(r == InsertResult::kInserted);
      CHECK_FALSE(io_error);
      CHECK(d == DeleteResult::kDeleted);
    }
  }
}

TEST_CASE("Unusable metadata is reported, not dereferenced", "[filter][io]") {
  MemoryAccess access(2);
  FilterMeta meta = RawMeta(4, 2, 20, 1, 0);  // no sub-filters
  CHECK(Insert(meta, access, HashItem("a"), false, Limits{}) == InsertResult::kIoError);
  bool io_error = false;
  CHECK_FALSE(Exists(meta, access, HashItem("a"), &io_error));
  CHECK(io_error);
  CHECK(Delete(meta, access, HashItem("a")) == DeleteResult::kIoError);
  meta = RawMeta(4, 2, 20, 0, 2);  // expansion 0 with two sub-filters
  CHECK(Insert(meta, access, HashItem("a"), false, Limits{}) == InsertResult::kIoError);
  meta = RawMeta(0, 2, 20, 1, 1);  // no buckets
  CHECK(Count(meta, access, HashItem("a"), &io_error) == 0);
  CHECK(io_error);
  CHECK_FALSE(Compact(meta, access, false));
}
