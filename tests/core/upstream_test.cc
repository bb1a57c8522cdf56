// RedisBloom's own expectations (reference §5) that depend only on the algorithm: sub-filter
// counts, full/duplicate outcomes and the unit tests of tests/unit/test-cuckoo.c.
#include <catch2/catch.hpp>
#include <string>

#include "memory_access.h"

using namespace cuckood::core;
using cuckood::core::testing::IntItem;
using cuckood::core::testing::TestFilter;

namespace {

void AddDecimal(TestFilter& t, int count) {
  for (int i = 0; i < count; ++i) {
    INFO("item " << i);
    REQUIRE(t.Add(std::to_string(i)) == InsertResult::kInserted);
  }
}

void CheckDecimalExist(TestFilter& t, int count) {
  for (int i = 0; i < count; ++i) {
    INFO("item " << i);
    CHECK(t.Has(std::to_string(i)));
  }
}

}  // namespace

TEST_CASE("Upstream max_iterations: capacity 10 gives 8 buckets", "[upstream]") {
  FilterMeta m = TestFilter::Reserve(10, 2, 10, 1);
  CHECK(m.base_num_buckets == 8);
  CHECK(m.num_filters == 1);
}

TEST_CASE("Upstream compact: 100 items in capacity 8 make 13 sub-filters, compaction keeps them",
          "[upstream]") {
  TestFilter t(TestFilter::Reserve(8, 2, 50, 1));
  AddDecimal(t, 100);
  CheckDecimalExist(t, 100);
  CHECK(t.meta.base_num_buckets == 4);
  CHECK(t.meta.num_items == 100);
  CHECK(t.meta.num_filters == 13);
  REQUIRE(t.CompactAll());
  CHECK(t.meta.num_filters == 13);
  CHECK(t.meta.num_items == 100);
  CHECK(t.meta.num_deletes == 0);
  CheckDecimalExist(t, 100);
}

TEST_CASE("Upstream max_expansions: 124 adds into capacity 4 make 32 sub-filters", "[upstream]") {
  TestFilter t(TestFilter::Reserve(4));
  AddDecimal(t, 124);
  CHECK(t.meta.num_filters == 32);
}

TEST_CASE("Upstream bucket_size: 1000 items give 18 / 17 / 4 sub-filters", "[upstream]") {
  struct Case {
    uint64_t capacity;
    uint16_t bucket_size;
    uint16_t max_iterations;
    uint64_t buckets;
    uint32_t filters;
  };
  for (const Case& c :
       {Case{64, 1, 20, 64, 18}, Case{64, 2, 20, 32, 17}, Case{256, 4, 500, 64, 4}}) {
    INFO("bucket size " << c.bucket_size);
    TestFilter t(TestFilter::Reserve(c.capacity, c.bucket_size, c.max_iterations, 1));
    AddDecimal(t, 1000);
    CheckDecimalExist(t, 1000);
    CHECK(t.meta.base_num_buckets == c.buckets);
    CHECK(t.meta.num_items == 1000);
    CHECK(t.meta.num_filters == c.filters);
  }
}

TEST_CASE("Upstream expansion: 1000 items give 17 / 5 / 3 sub-filters", "[upstream]") {
  struct Case {
    uint16_t expansion;
    uint16_t max_iterations;
    uint32_t filters;
  };
  for (const Case& c : {Case{1, 20, 17}, Case{2, 20, 5}, Case{4, 500, 3}}) {
    INFO("expansion " << c.expansion);
    TestFilter t(TestFilter::Reserve(64, 2, c.max_iterations, c.expansion));
    AddDecimal(t, 1000);
    CheckDecimalExist(t, 1000);
    CHECK(t.meta.base_num_buckets == 32);
    CHECK(t.meta.num_filters == c.filters);
  }
}

TEST_CASE("Upstream expansion_0: a capacity-4 non-scaling filter takes 4 items", "[upstream]") {
  TestFilter t(TestFilter::Reserve(4, 2, 20, 0));
  for (const char* item : {"1", "2", "3", "4"}) {
    CHECK(t.Add(item) == InsertResult::kInserted);
  }
  CHECK(t.Add("5") == InsertResult::kFull);
  CHECK(t.Add("6") == InsertResult::kFull);
  CHECK(t.meta.num_items == 4);
  CHECK(t.meta.num_filters == 1);
}

TEST_CASE("Upstream docs: 2 one-slot buckets without expansion take 2 copies of \"1\"",
          "[upstream]") {
  TestFilter t(TestFilter::Reserve(2, 1, 20, 0));
  CHECK(t.Add("1") == InsertResult::kInserted);
  CHECK(t.Add("1") == InsertResult::kInserted);
  CHECK(t.Add("1") == InsertResult::kFull);
  CHECK(t.Add("1") == InsertResult::kFull);
}

TEST_CASE("Upstream RESP3 sequence on CF.RESERVE a 9 EXPANSION 0", "[upstream]") {
  TestFilter t(TestFilter::Reserve(9, 2, 20, 0));
  REQUIRE(t.meta.base_num_buckets == 4);
  CHECK(t.Add("3") == InsertResult::kInserted);
  CHECK(t.Add("4") == InsertResult::kInserted);
  CHECK(t.Add("4", true) == InsertResult::kExists);
  CHECK(t.Add("9", true) == InsertResult::kInserted);
  CHECK(t.Add("4") == InsertResult::kInserted);
  CHECK(t.Add("5") == InsertResult::kInserted);
  CHECK(t.Add("4", true) == InsertResult::kExists);
  CHECK(t.Add("6", true) == InsertResult::kInserted);
  CHECK(t.Del("3") == DeleteResult::kDeleted);
  CHECK(t.Del("3") == DeleteResult::kNotFound);
  CHECK_FALSE(t.Has("3"));
  CHECK(t.Has("4"));
  CHECK(t.CountOf("3") == 0);
  CHECK(t.CountOf("4") == 2);
  CHECK(t.meta.num_items == 5);
  CHECK(t.meta.num_deletes == 1);
  CHECK(InfoSize(t.meta) == 64);
  // Continued on the live server:
  CHECK(t.Add("7") == InsertResult::kInserted);
  CHECK(t.Add("8") == InsertResult::kInserted);
  CHECK(t.Add("11") == InsertResult::kInserted);
  CHECK(t.Add("4") == InsertResult::kFull);
  CHECK(t.Add("12", true) == InsertResult::kFull);
  CHECK(t.Add("4", true) == InsertResult::kExists);
}

TEST_CASE("Upstream unit count: ten copies in capacity 10 are counted 1..10", "[upstream]") {
  TestFilter t(TestFilter::Reserve(10));
  CHECK(t.CountOf("foo") == 0);
  for (uint64_t i = 1; i <= 10; ++i) {
    REQUIRE(t.Add("foo") == InsertResult::kInserted);
    CHECK(t.CountOf("foo") == i);
  }
  CHECK(t.meta.num_items == 10);
}

TEST_CASE("Upstream unit relocations: capacity 5000, bucket size 4, 5 iterations", "[upstream]") {
  TestFilter t(TestFilter::Reserve(5000, 4, 5, 1));
  for (uint64_t i = 0; i < 10000; ++i) {
    REQUIRE(t.Add(IntItem(i)) == InsertResult::kInserted);
    if (i % 997 == 0) {
      for (uint64_t j = 0; j <= i; ++j) {
        INFO("after " << i << " inserts, item " << j);
        REQUIRE(t.Has(IntItem(j)));
      }
    }
  }
  for (uint64_t i = 0; i < 10000; ++i) {
    REQUIRE(t.Has(IntItem(i)));
    REQUIRE(t.Add(IntItem(i), true) == InsertResult::kExists);
  }
  for (uint64_t i = 0; i < 10000; ++i) {
    REQUIRE(t.Add(IntItem(i)) == InsertResult::kInserted);
  }
  CHECK(t.meta.num_items == 20000);
}

TEST_CASE("Upstream unit FPR: duplicates-by-collision stay below the upstream bounds",
          "[upstream]") {
  struct Case {
    uint64_t capacity;
    double bound;
  };
  for (const Case& c : {Case{10000, 0.015}, Case{5000, 0.03}, Case{2500, 0.06}, Case{1250, 0.08}}) {
    INFO("capacity " << c.capacity);
    TestFilter t(TestFilter::Reserve(c.capacity));
    if (c.capacity == 10000) {
      CHECK(t.meta.base_num_buckets * t.meta.bucket_size == 16384);
    }
    for (uint64_t i = 0; i < c.capacity; ++i) {
      REQUIRE(t.Add(IntItem(i)) == InsertResult::kInserted);
    }
    if (c.capacity == 10000) {
      CHECK(t.meta.num_filters == 1);
    }
    uint64_t over = 0;
    for (uint64_t i = 0; i < c.capacity; ++i) {
      over += t.CountOf(IntItem(i)) > 1 ? 1 : 0;
    }
    CHECK(static_cast<double>(over) / static_cast<double>(c.capacity) <= c.bound);
  }
}

TEST_CASE("Upstream unit bulkDel: every inserted item can be deleted again", "[upstream]") {
  for (uint16_t expansion : std::initializer_list<uint16_t>{1, 2}) {
    INFO("expansion " << expansion);
    TestFilter t(TestFilter::Reserve(1250, 2, 20, expansion));
    for (uint64_t i = 0; i < 10000; ++i) {
      REQUIRE(t.Add(IntItem(i)) == InsertResult::kInserted);
    }
    for (uint64_t i = 0; i < 10000; ++i) {
      INFO("delete " << i);
      REQUIRE(t.Del(IntItem(i)) == DeleteResult::kDeleted);
    }
    CHECK(t.meta.num_items == 0);
    CHECK(t.access.NonEmptySlots() == 0);
  }
}

TEST_CASE("Upstream unit bucketSize: 10000 integers in capacity 1000 give 12 / 11 / 10",
          "[upstream]") {
  struct Case {
    uint16_t bucket_size;
    uint32_t filters;
  };
  for (const Case& c : {Case{1, 12}, Case{2, 11}, Case{4, 10}}) {
    INFO("bucket size " << c.bucket_size);
    TestFilter t(TestFilter::Reserve(1000, c.bucket_size, 50, 1));
    for (uint64_t i = 0; i < 10000; ++i) {
      REQUIRE(t.Add(IntItem(i)) == InsertResult::kInserted);
    }
    CHECK(t.meta.num_filters == c.filters);
  }
}

TEST_CASE("Upstream counter overflow (scaled down): one-slot pairs hold two copies each",
          "[upstream]") {
  TestFilter t(TestFilter::Reserve(2, 1, 20, 1));
  for (int i = 0; i < 200; ++i) {
    REQUIRE(t.Add("1") == InsertResult::kInserted);
  }
  CHECK(t.meta.num_filters == 100);
  CHECK(t.meta.num_items == 200);
  CHECK(InfoSize(t.meta) == 40 + 16 * 100 + 2 * 100);
}
