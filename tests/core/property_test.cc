// Random operation sequences against a simple model: a multiset of inserted items. After every
// step the filter must agree with what the model guarantees (reference §2.4-§2.8):
//   - num_items equals the number of non-empty slots (also none left in dropped sub-filters) and
//     the model's total;
//   - every item inserted and not deleted exists and is counted at least as often as inserted;
//   - failed inserts change no byte; num_deletes follows the automatic-compaction rule;
//   - a dump -> load round trip reproduces the filter.
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <random>
#include <string>

#include "core/dump.h"
#include "memory_access.h"

using namespace cuckood::core;
using cuckood::core::testing::TestFilter;

namespace {

struct Config {
  uint16_t bucket_size;
  uint16_t max_iterations;
  uint16_t expansion;
};

class Runner {
 public:
  Runner(const Config& c, uint64_t seed)
      : config_(c),
        rng_(seed),
        t_(TestFilter::Reserve(static_cast<uint64_t>(c.bucket_size) * 4, c.bucket_size,
                               c.max_iterations, c.expansion)) {
    // A key pool about three times sub-filter 0's slots, so keys repeat and filters fill.
    slots_ = static_cast<int>(t_.meta.base_num_buckets * c.bucket_size);
    pool_ = slots_ * 3 + 4;
  }

  // Fills sub-filter 0 with inserts first, then runs `steps` random operations.
  void Run(int steps) {
    for (int step = 0; step < slots_ + steps; ++step) {
      INFO("step " << step);
      const std::string key = "k" + std::to_string(Pick(pool_));
      switch (step < slots_ ? 0 : Pick(10)) {
        case 0:
        case 1:
        case 2:
          DoInsert(key, false);
          break;
        case 3:
          DoInsert(key, true);
          break;
        case 4:
        case 5:
          DoDelete();
          break;
        case 6:
        case 7:
          DoLookup(key);
          break;
        case 8:
          if (Pick(4) == 0) {
            DoCompact();
          } else {
            DoInsert(key, false);
          }
          break;
        default:
          if (Pick(10) == 0) {
            DoRoundTrip();
          } else {
            DoLookup(key);
          }
          break;
      }
      CheckInvariants();
    }
    for (const auto& [key, copies] : model_) {
      INFO("final check of " << key);
      CHECK(t_.Has(key));
      CHECK(t_.CountOf(key) >= copies);
    }
  }

 private:
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  void DoInsert(const std::string& key, bool nx) {
    const auto before = t_.access.Snapshot();
    const FilterMeta meta_before = t_.meta;
    const InsertResult r = t_.Add(key, nx);
    INFO("insert " << key << (nx ? " NX" : "") << " -> " << static_cast<int>(r));
    switch (r) {
      case InsertResult::kInserted:
        REQUIRE((!nx || model_.count(key) == 0));
        ++model_[key];
        CHECK(t_.meta.num_items == meta_before.num_items + 1);
        CHECK(t_.meta.num_filters >= meta_before.num_filters);
        break;
      case InsertResult::kExists:
        REQUIRE(nx);
        CHECK(t_.Has(key));  // present, or a fingerprint collision that Exists also sees
        CHECK(t_.access.Snapshot() == before);
        break;
      case InsertResult::kFull:
        REQUIRE(config_.expansion == 0);
        REQUIRE((!nx || model_.count(key) == 0));
        CHECK(t_.access.Snapshot() == before);
        CHECK(t_.meta.num_items == meta_before.num_items);
        break;
      case InsertResult::kGrowthFailed:
        REQUIRE(config_.expansion != 0);
        CHECK(t_.access.Snapshot() == before);
        CHECK(t_.meta.num_items == meta_before.num_items);
        ++growth_failures_;
        break;
      case InsertResult::kIoError:
        FAIL("unexpected storage error");
    }
    if (nx && model_.count(key) != 0 && r != InsertResult::kInserted) {
      CHECK(r == InsertResult::kExists);
    }
  }

  void DoDelete() {
    if (model_.empty()) {
      return;
    }
    auto it = model_.begin();
    std::advance(it, Pick(static_cast<int>(model_.size())));
    const std::string key = it->first;
    const FilterMeta before = t_.meta;
    INFO("delete " << key);
    REQUIRE(t_.Del(key) == DeleteResult::kDeleted);
    if (--it->second == 0) {
      model_.erase(it);
    }
    const uint64_t items = before.num_items - 1;
    const uint64_t deletes = before.num_deletes + 1;
    const bool compacts =
        before.num_filters > 1 && static_cast<double>(deletes) > static_cast<double>(items) * 0.1;
    CHECK(t_.meta.num_items == items);
    CHECK(t_.meta.num_deletes == (compacts ? 0 : deletes));
    CHECK(t_.meta.num_filters <= before.num_filters);
    compactions_ += compacts ? 1 : 0;
  }

  void DoLookup(const std::string& key) {
    const auto it = model_.find(key);
    const uint64_t copies = it == model_.end() ? 0 : it->second;
    const uint64_t count = t_.CountOf(key);
    CHECK(count >= copies);
    const bool exists = t_.Has(key);
    CHECK(exists == (count > 0));
    if (copies > 0) {
      CHECK(exists);
    }
  }

  void DoCompact() {
    const uint32_t filters = t_.meta.num_filters;
    REQUIRE(t_.CompactAll(false));
    CHECK(t_.meta.num_deletes == 0);
    CHECK(t_.meta.num_filters <= filters);
  }

  void DoRoundTrip() {
    const auto meta = DecodeHeader(EncodeHeader(t_.meta), t_.limits);
    REQUIRE(meta.has_value());
    TestFilter copy(*meta);
    int64_t iter = 1;
    while (const auto range = DumpRange(t_.meta, iter)) {
      const auto target = LoadRange(copy.meta, range->next_iter, range->length);
      REQUIRE(target.has_value());
      // Sparse copy: sub-filters can be 4 GiB here (expansion 32768), mostly never written.
      for (const auto& [at, bytes] :
           t_.access.ReadSparse(range->filter, range->offset, range->length)) {
        copy.access.WriteBytes(target->filter, target->offset + at, bytes);
      }
      iter = range->next_iter;
    }
    CHECK(copy.access.Snapshot() == t_.access.Snapshot());
    CHECK(EncodeHeader(copy.meta) == EncodeHeader(t_.meta));
  }

  void CheckInvariants() {
    uint64_t total = 0;
    for (const auto& [key, copies] : model_) {
      total += copies;
    }
    REQUIRE(t_.meta.num_items == total);
    REQUIRE(t_.access.NonEmptySlots() == total);
    REQUIRE(t_.meta.num_filters >= 1);
    REQUIRE(SubFilterBytes(t_.meta, t_.meta.num_filters - 1) != 0);
    REQUIRE(SubFilterBytes(t_.meta, t_.meta.num_filters - 1) <= t_.limits.max_filter_bytes);
    if (config_.expansion == 0) {
      REQUIRE(t_.meta.num_filters == 1);
    }
    // A few random present items must still be found.
    for (int k = 0; k < 3 && !model_.empty(); ++k) {
      auto it = model_.begin();
      std::advance(it, Pick(static_cast<int>(model_.size())));
      INFO("present item " << it->first);
      REQUIRE(t_.Has(it->first));
    }
  }

  Config config_;
  std::mt19937_64 rng_;
  TestFilter t_;
  int slots_ = 0;
  int pool_ = 0;
  std::map<std::string, uint64_t> model_;

 public:
  int growth_failures_ = 0;
  int compactions_ = 0;
};

}  // namespace

TEST_CASE("Random operations keep the filter consistent with the multiset model", "[property]") {
  int growth_failures = 0;
  int compactions = 0;
  uint64_t seed = 1;
  for (uint16_t bucket_size : std::initializer_list<uint16_t>{1, 2, 3, 4, 7, 16, 255}) {
    for (uint16_t max_iterations : std::initializer_list<uint16_t>{1, 20, 65535}) {
      for (uint16_t expansion : std::initializer_list<uint16_t>{0, 1, 2, 32768}) {
        ++seed;
        INFO("bucket size " << bucket_size << ", max iterations " << max_iterations
                            << ", expansion " << expansion << ", seed " << seed);
        Runner runner({bucket_size, max_iterations, expansion}, seed);
        // Every failed insert at 65535 iterations walks a full kick chain and its rollback.
        runner.Run(max_iterations == 65535 ? 120 : 300);
        growth_failures += runner.growth_failures_;
        compactions += runner.compactions_;
      }
    }
  }
  // The sequences must actually reach the interesting paths.
  CHECK(growth_failures > 0);
  CHECK(compactions > 10);
}
