// Compaction (reference §2.7) and the automatic compaction after a delete (§2.6).
#include <catch2/catch.hpp>
#include <string>

#include "memory_access.h"

using namespace cuckood::core;
using cuckood::core::testing::IntItem;
using cuckood::core::testing::TestFilter;

namespace {

FilterMeta RawChainMeta(uint64_t buckets, uint16_t bucket_size, uint16_t expansion,
                        uint32_t filters) {
  FilterMeta m;
  m.base_num_buckets = buckets;
  m.bucket_size = bucket_size;
  m.max_iterations = 20;
  m.expansion = expansion;
  m.num_filters = filters;
  return m;
}

// Three sub-filters of 2 buckets x 2 slots. Even fingerprints have a single candidate bucket
// (their alternate is the same bucket when there are 2 buckets).
//   sub-filter 0: b0 = [2, 12]  b1 = [ , ]
//   sub-filter 1: b0 = [4, 14]  b1 = [6, ]
//   sub-filter 2: b0 = [8, ]    b1 = [10, ]
// 8 cannot move (bucket 0 is full everywhere); 10 and 6 can move to sub-filter 0's bucket 1.
TestFilter StuckLayout() {
  TestFilter t(RawChainMeta(2, 2, 1, 3));
  t.access.SetSlot(0, 0, 0, 2);
  t.access.SetSlot(0, 0, 1, 12);
  t.access.SetSlot(1, 0, 0, 4);
  t.access.SetSlot(1, 0, 1, 14);
  t.access.SetSlot(1, 1, 0, 6);
  t.access.SetSlot(2, 0, 0, 8);
  t.access.SetSlot(2, 1, 0, 10);
  t.meta.num_items = 7;
  t.meta.num_deletes = 5;
  return t;
}

}  // namespace

TEST_CASE("Compaction moves into bucket b % N_j first, then the alternate, oldest sub-filter first",
          "[compact]") {
  // Sub-filter 0 has 2 buckets, 1 has 4, 2 has 8 (expansion 2), one slot each.
  SECTION("primary target") {
    TestFilter t(RawChainMeta(2, 1, 2, 2));
    t.access.SetSlot(1, 3, 0, 5);
    REQUIRE(t.CompactAll());
    CHECK(t.access.Slot(0, 1, 0) == 5);  // 3 % 2
    CHECK(t.access.Slot(1, 3, 0) == 0);
    CHECK(t.meta.num_filters == 1);
  }
  SECTION("alternate target when the primary is full") {
    TestFilter t(RawChainMeta(2, 1, 2, 2));
    t.access.SetSlot(0, 1, 0, 7);
    t.access.SetSlot(1, 3, 0, 5);  // odd fingerprint: alternate of 3 is even
    REQUIRE(t.CompactAll());
    CHECK(t.access.Slot(0, 0, 0) == 5);
    CHECK(t.meta.num_filters == 1);
  }
  SECTION("oldest sub-filter with room wins") {
    TestFilter t(RawChainMeta(2, 1, 2, 3));
    t.access.SetSlot(2, 5, 0, 9);
    REQUIRE(t.CompactAll());
    CHECK(t.access.Slot(0, 1, 0) == 9);  // 5 % 2, not 5 % 4 in sub-filter 1
    CHECK(t.access.NonEmptySlots(1) == 0);
    CHECK(t.meta.num_filters == 1);
  }
  SECTION("the bucket of the larger sub-filter decides the targets") {
    // Bucket 6 of sub-filter 2 (8 buckets) maps to bucket 2 of sub-filter 1 (4 buckets).
    TestFilter t(RawChainMeta(2, 1, 2, 3));
    t.access.SetSlot(0, 0, 0, 1);
    t.access.SetSlot(0, 1, 0, 1);
    t.access.SetSlot(2, 6, 0, 9);
    REQUIRE(t.CompactAll());
    CHECK(t.access.Slot(1, 2, 0) == 9);
    CHECK(t.meta.num_filters == 2);
  }
}

TEST_CASE("Stop mode finishes the stuck sub-filter's walk, then stops the pass", "[compact]") {
  TestFilter t = StuckLayout();
  REQUIRE(t.CompactAll(/*stop_on_stuck=*/true));
  CHECK(t.access.Slot(2, 0, 0) == 8);   // stuck
  CHECK(t.access.Slot(0, 1, 0) == 10);  // moved after the stuck slot
  CHECK(t.access.Slot(2, 1, 0) == 0);
  CHECK(t.access.Slot(1, 1, 0) == 6);  // sub-filter 1 was not visited
  CHECK(t.access.Slot(0, 1, 1) == 0);
  CHECK(t.meta.num_filters == 3);
  CHECK(t.meta.num_deletes == 0);
  CHECK(t.meta.num_items == 7);
}

TEST_CASE("Continue mode goes on with older sub-filters after a stuck one", "[compact]") {
  TestFilter t = StuckLayout();
  REQUIRE(t.CompactAll(/*stop_on_stuck=*/false));
  CHECK(t.access.Slot(2, 0, 0) == 8);
  CHECK(t.access.Slot(0, 1, 0) == 10);
  CHECK(t.access.Slot(0, 1, 1) == 6);  // sub-filter 1 was compacted too
  CHECK(t.access.Slot(1, 1, 0) == 0);
  CHECK(t.access.Slot(1, 0, 0) == 4);  // no room for bucket 0 anywhere older
  CHECK(t.meta.num_filters == 3);
  CHECK(t.meta.num_deletes == 0);
  CHECK(t.access.NonEmptySlots() == 7);
}

TEST_CASE("Only trailing emptied sub-filters are dropped", "[compact]") {
  SECTION("all newer sub-filters empty out") {
    TestFilter t(RawChainMeta(2, 2, 1, 3));
    t.access.SetSlot(1, 0, 0, 4);
    t.access.SetSlot(2, 1, 0, 10);
    t.meta.num_items = 2;
    REQUIRE(t.CompactAll(true));
    CHECK(t.meta.num_filters == 1);
    CHECK(t.access.NonEmptySlots(0) == 2);
  }
  SECTION("an emptied middle sub-filter stays") {
    // One-slot buckets, 2 per sub-filter. 8 (even) only fits bucket 0, full in 0 and 1 while
    // sub-filter 2 is walked; 5 (odd) then moves to bucket 1 of sub-filter 0.
    TestFilter t(RawChainMeta(2, 1, 1, 3));
    t.access.SetSlot(0, 0, 0, 2);
    t.access.SetSlot(1, 0, 0, 5);
    t.access.SetSlot(2, 0, 0, 8);
    t.meta.num_items = 3;
    REQUIRE(t.CompactAll(false));
    CHECK(t.access.Slot(2, 0, 0) == 8);
    CHECK(t.access.Slot(0, 1, 0) == 5);
    CHECK(t.access.NonEmptySlots(1) == 0);
    CHECK(t.meta.num_filters == 3);
  }
}

TEST_CASE("Compaction resets num_deletes even with a single sub-filter", "[compact]") {
  TestFilter t(TestFilter::Reserve(100));
  REQUIRE(t.Add("a") == InsertResult::kInserted);
  REQUIRE(t.Del("a") == DeleteResult::kDeleted);
  REQUIRE(t.Add("b") == InsertResult::kInserted);
  REQUIRE(t.Del("b") == DeleteResult::kDeleted);
  CHECK(t.meta.num_deletes == 2);  // single sub-filter: no automatic compaction
  REQUIRE(t.CompactAll());
  CHECK(t.meta.num_deletes == 0);
  CHECK(t.meta.num_filters == 1);
}

TEST_CASE("A delete compacts once num_deletes exceeds 10% of num_items with 2+ sub-filters",
          "[compact]") {
  // 2 sub-filters of 64 buckets; 20 items with the two newest in sub-filter 1.
  TestFilter t(RawChainMeta(64, 2, 1, 2));
  for (uint64_t i = 0; i < 20; ++i) {
    t.access.SetSlot(0, i, 0, static_cast<uint8_t>(i + 1));
  }
  t.meta.num_items = 20;
  const ItemHash a = HashItem("a");
  // Put "a" where a delete finds it, in sub-filter 1, plus two more copies in sub-filter 0.
  t.access.SetSlot(1, PrimaryBucket(a.hash, 64), 1, a.fp);
  t.access.SetSlot(0, PrimaryBucket(a.hash, 64), 1, a.fp);
  t.access.SetSlot(0, AltBucket(a.hash, a.fp, 64), 1, a.fp);
  t.meta.num_items = 23;
  REQUIRE(t.Del("a") == DeleteResult::kDeleted);  // 1 > 2.2? no
  CHECK(t.meta.num_deletes == 1);
  CHECK(t.meta.num_filters == 2);
  REQUIRE(t.Del("a") == DeleteResult::kDeleted);  // 2 > 2.1? no
  CHECK(t.meta.num_deletes == 2);
  REQUIRE(t.Del("a") == DeleteResult::kDeleted);  // 3 > 2.0: compaction
  CHECK(t.meta.num_deletes == 0);
  CHECK(t.meta.num_filters == 1);  // sub-filter 1 was empty and last
  CHECK(t.meta.num_items == 20);
}

TEST_CASE("The delete threshold compares against num_items after the decrement", "[compact]") {
  // 10 items, 2 sub-filters: the first delete leaves 9 items and 1 delete (1 > 0.9: compact).
  TestFilter t(RawChainMeta(64, 2, 1, 2));
  const ItemHash a = HashItem("a");
  t.access.SetSlot(1, PrimaryBucket(a.hash, 64), 0, a.fp);
  for (uint64_t i = 0; i < 9; ++i) {
    t.access.SetSlot(0, 30 + i, 0, 3);
  }
  t.meta.num_items = 10;
  REQUIRE(t.Del("a") == DeleteResult::kDeleted);
  CHECK(t.meta.num_deletes == 0);
  CHECK(t.meta.num_filters == 1);
}

TEST_CASE("Compaction skips storage that was never written", "[compact]") {
  // Two sub-filters of 2^32 one-slot buckets, one fingerprint far inside the second.
  TestFilter t(RawChainMeta(1ULL << 32, 1, 1, 2), 1024);
  t.access.SetSlot(1, (1ULL << 31) + 5, 0, 77);
  t.meta.num_items = 1;
  REQUIRE(t.CompactAll());
  CHECK(t.access.Slot(0, (1ULL << 31) + 5, 0) == 77);
  CHECK(t.meta.num_filters == 1);
  // Only the one written page (1024 buckets) is walked, not 2^32 buckets.
  CHECK(t.access.reads() <= 2 * 1024);
  CHECK(t.access.next_calls() <= 1025);
}

TEST_CASE("Compaction checkpoints between moves and stops when a checkpoint fails", "[compact]") {
  TestFilter t(TestFilter::Reserve(8, 2, 20, 1));
  for (int i = 0; i < 60; ++i) {
    REQUIRE(t.Add("x" + std::to_string(i)) == InsertResult::kInserted);
  }
  REQUIRE(t.meta.num_filters > 3);
  for (int i = 0; i < 60; i += 2) {
    t.meta.num_items = 1000;  // no automatic compaction
    REQUIRE(t.Del("x" + std::to_string(i)) == DeleteResult::kDeleted);
  }
  SECTION("checkpoints happen") {
    REQUIRE(t.CompactAll());
    CHECK(t.access.checkpoints() > 0);
  }
  SECTION("a failed checkpoint fails the compaction without losing fingerprints") {
    const uint64_t slots = t.access.NonEmptySlots();
    const uint32_t filters = t.meta.num_filters;
    t.access.FailCheckpoint(true);
    CHECK_FALSE(t.CompactAll());
    CHECK(t.access.checkpoints() == 1);
    CHECK(t.access.NonEmptySlots() == slots);
    CHECK(t.meta.num_filters == filters);
  }
}

TEST_CASE("Storage errors during compaction are reported", "[compact]") {
  for (int64_t ok_calls = 0; ok_calls < 60; ++ok_calls) {
    TestFilter t(TestFilter::Reserve(8, 2, 20, 1));
    for (uint64_t i = 0; i < 40; ++i) {
      REQUIRE(t.Add(IntItem(i)) == InsertResult::kInserted);
    }
    for (uint64_t i = 0; i < 40; i += 3) {
      t.meta.num_items = 1000;
      REQUIRE(t.Del(IntItem(i)) == DeleteResult::kDeleted);
    }
    t.access.FailAfter(ok_calls);
    CHECK_FALSE(t.CompactAll());
  }
}

TEST_CASE("Items stay findable through compaction after bulk deletes", "[compact]") {
  for (uint16_t expansion : std::initializer_list<uint16_t>{1, 2, 4}) {
    INFO("expansion " << expansion);
    TestFilter t(TestFilter::Reserve(256, 2, 20, expansion));
    for (uint64_t i = 0; i < 3000; ++i) {
      REQUIRE(t.Add(IntItem(i)) == InsertResult::kInserted);
    }
    const uint32_t before = t.meta.num_filters;
    for (uint64_t i = 0; i < 3000; i += 2) {
      REQUIRE(t.Del(IntItem(i)) == DeleteResult::kDeleted);
    }
    REQUIRE(t.CompactAll());
    CHECK(t.meta.num_filters <= before);
    if (expansion == 1) {
      CHECK(t.meta.num_filters < before);
    }
    CHECK(t.access.NonEmptySlots() == t.meta.num_items);
    for (uint64_t i = 1; i < 3000; i += 2) {
      REQUIRE(t.Has(IntItem(i)));
    }
  }
}
