// The chain index (core/chain_index.h) against the plain scan: two copies of one filter take the
// same random commands, one through IndexedAccess once its chain is long enough. Every reply,
// every byte and the metadata must stay the same, and the index kept current must equal one
// built afresh from the bytes.
#include "core/chain_index.h"

#include <catch2/catch.hpp>
#include <optional>
#include <random>
#include <string>

#include "memory_access.h"

using namespace cuckood::core;
using cuckood::core::testing::TestFilter;

namespace {

// The indexed copy: builds its index when the chain suits, follows every command with it, and
// drops it when it cannot follow (as storage/ does).
struct Indexed {
  TestFilter t;
  std::optional<ChainIndex> index;
  int builds = 0;
  int drops = 0;

  explicit Indexed(const FilterMeta& m) : t(m) {}

  template <typename Fn>
  auto Run(Fn fn) {
    if (!index && ChainIndex::Suits(t.meta)) {
      index.emplace();
      REQUIRE(index->Build(t.meta, t.access));
      t.access.EndCommand();
      ++builds;
    }
    if (!index) {
      auto r = fn(t.access);
      t.access.EndCommand();
      return r;
    }
    IndexedAccess access(t.access, *index);
    auto r = fn(access);
    if (!access.Settle(t.meta)) {
      index.reset();
      ++drops;
    }
    t.access.EndCommand();
    return r;
  }
};

struct Shape {
  uint64_t capacity;
  uint16_t bucket_size;
  uint16_t max_iterations;
};

void RunAgainstScan(const Shape& shape, uint64_t seed, int steps) {
  const FilterMeta meta =
      TestFilter::Reserve(shape.capacity, shape.bucket_size, shape.max_iterations, 1);
  TestFilter plain(meta);
  Indexed indexed(meta);
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
  // Enough distinct items that the chain passes the index's threshold; a share of them repeat.
  const uint64_t pool = meta.base_num_buckets * shape.bucket_size * ChainIndex::kMinFilters * 3;
  for (int step = 0; step < steps; ++step) {
    const std::string item = "i" + std::to_string(pick(pool));
    const ItemHash h = HashItem(item);
    const uint64_t op = step < steps / 2 ? 0 : pick(10);
    INFO("step " << step << " op " << op << " item " << item << " filters "
                 << plain.meta.num_filters);
    if (op <= 4 || op == 5) {
      const bool nx = op == 5;
      const auto a = Insert(plain.meta, plain.access, h, nx, plain.limits);
      plain.access.EndCommand();
      const auto b = indexed.Run([&](BucketAccess& access) {
        return Insert(indexed.t.meta, access, h, nx, plain.limits);
      });
      REQUIRE(a == b);
    } else if (op == 6) {
      const auto a = Delete(plain.meta, plain.access, h);
      plain.access.EndCommand();
      const auto b =
          indexed.Run([&](BucketAccess& access) { return Delete(indexed.t.meta, access, h); });
      REQUIRE(a == b);
    } else if (op == 7 && pick(20) == 0) {
      REQUIRE(Compact(plain.meta, plain.access, false));
      plain.access.EndCommand();
      REQUIRE(indexed.Run(
          [&](BucketAccess& access) { return Compact(indexed.t.meta, access, false); }));
    } else {
      bool e1 = true, e2 = true;
      const bool a = Exists(plain.meta, plain.access, h, &e1);
      const uint64_t ca = Count(plain.meta, plain.access, h, &e1);
      plain.access.EndCommand();
      const bool b =
          indexed.Run([&](BucketAccess& access) { return Exists(indexed.t.meta, access, h, &e2); });
      const uint64_t cb =
          indexed.Run([&](BucketAccess& access) { return Count(indexed.t.meta, access, h, &e2); });
      REQUIRE_FALSE(e1);
      REQUIRE_FALSE(e2);
      REQUIRE(a == b);
      REQUIRE(ca == cb);
    }
    REQUIRE(plain.meta.num_items == indexed.t.meta.num_items);
    REQUIRE(plain.meta.num_filters == indexed.t.meta.num_filters);
    REQUIRE(plain.meta.num_deletes == indexed.t.meta.num_deletes);
    if (step % 97 == 0 || step + 1 == steps) {
      REQUIRE(plain.access.Snapshot() == indexed.t.access.Snapshot());
      if (indexed.index) {
        ChainIndex fresh;
        REQUIRE(fresh.Build(indexed.t.meta, indexed.t.access));
        indexed.t.access.EndCommand();
        REQUIRE(fresh.SameAs(*indexed.index));
      }
    }
  }
  // The index served most of the run (a dropped one is built again).
  CHECK(indexed.builds >= 1);
  CHECK(plain.meta.num_filters >= ChainIndex::kMinFilters);
}

}  // namespace

TEST_CASE("The chain index answers every command as the scan does", "[chain_index]") {
  const Shape shapes[] = {{2, 1, 20}, {4, 2, 20}, {16, 4, 5}, {2, 1, 1}, {32, 2, 500}};
  uint64_t seed = 7;
  for (const auto& shape : shapes) {
    INFO("capacity " << shape.capacity << " bucket size " << shape.bucket_size);
    const int steps = static_cast<int>(shape.capacity * ChainIndex::kMinFilters * 2 + 2000);
    RunAgainstScan(shape, seed++, steps);
  }
}

TEST_CASE("The chain index suits only long chains of small equal sub-filters", "[chain_index]") {
  FilterMeta m = TestFilter::Reserve(2, 1, 20, 1);
  m.num_filters = ChainIndex::kMinFilters - 1;
  CHECK_FALSE(ChainIndex::Suits(m));
  m.num_filters = ChainIndex::kMinFilters;
  CHECK(ChainIndex::Suits(m));
  m.expansion = 2;
  CHECK_FALSE(ChainIndex::Suits(m));
  m.expansion = 1;
  m.base_num_buckets = ChainIndex::kMaxBuckets * 2;
  CHECK_FALSE(ChainIndex::Suits(m));
  m.base_num_buckets = ChainIndex::kMaxBuckets;
  m.num_filters = static_cast<uint32_t>(ChainIndex::kMaxChainBuckets / ChainIndex::kMaxBuckets);
  CHECK(ChainIndex::Suits(m));
  m.num_filters += 1;
  CHECK_FALSE(ChainIndex::Suits(m));
}

TEST_CASE("An indexed insert finds the newest sub-filter with room without reading the others",
          "[chain_index]") {
  Indexed f(TestFilter::Reserve(2, 1, 20, 1));
  int i = 0;
  while (f.t.meta.num_filters < ChainIndex::kMinFilters + 10) {
    REQUIRE(f.Run([&](BucketAccess& a) {
      return Insert(f.t.meta, a, HashItem("x" + std::to_string(i++)), false, f.t.limits);
    }) == InsertResult::kInserted);
  }
  REQUIRE(f.index);
  const uint64_t reads = f.t.access.reads();
  const ItemHash h = HashItem("absent-item");
  bool io_error = true;
  const bool found = f.Run([&](BucketAccess& a) { return Exists(f.t.meta, a, h, &io_error); });
  CHECK_FALSE(io_error);
  (void)found;
  CHECK(f.t.access.reads() == reads);  // a lookup reads no bucket
  REQUIRE(f.Run([&](BucketAccess& a) { return Insert(f.t.meta, a, h, false, f.t.limits); }) ==
          InsertResult::kInserted);
  // Free slot, or the kick-out chain in the newest sub-filter (max_iterations 20), or a growth:
  // a bounded number of reads, far below the chain's length.
  CHECK(f.t.access.reads() - reads < 100);
}
