// An index over a long chain of equal sub-filters (expansion 1), kept next to the filter between
// commands, that answers the chain-wide questions of insert and lookup without visiting every
// sub-filter:
//   - does any sub-filter hold fingerprint fp in bucket b (CF.EXISTS), and how many times
//     (CF.COUNT): a count per (bucket, fingerprint) over the whole chain;
//   - which is the newest sub-filter with an empty slot in bucket b0 or b1 (where CF.ADD stores
//     an item): per bucket, the ascending list of sub-filters with an empty slot there.
// With expansion 1 every sub-filter has the same number of buckets, so an item's two candidate
// buckets are the same in all of them. The answers are exactly those of a scan; what the index
// changes is only the cost, which no longer grows with the number of sub-filters.
//
// The index follows the bytes through IndexedAccess, which records the buckets a core function
// writes and applies their before/after to the index once the function returns (Settle). The
// owner (storage/) drops the index whenever the bytes change in any other way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/filter.h"

namespace cuckood::core {

class ChainIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  // Chains shorter than this are scanned (a scan of a few dozen small sub-filters is as fast).
  static constexpr uint32_t kMinFilters = 128;
  // Larger sub-filters are not indexed: the counts take 1 KiB per bucket.
  static constexpr uint64_t kMaxBuckets = 1024;
  // Nor chains of more buckets in all (sub-filters x buckets): building the index reads every
  // bucket, and its lists of sub-filters with room may take 4 bytes each.
  static constexpr uint64_t kMaxChainBuckets = 1ULL << 22;

  // Whether a filter of this shape is indexed.
  static bool Suits(const FilterMeta& meta);

  // Reads every bucket of every sub-filter of meta. false on a storage error (or a meta that does
  // not suit); the index is then empty.
  bool Build(const FilterMeta& meta, BucketAccess& access);

  uint32_t num_filters() const { return num_filters_; }
  uint64_t num_buckets() const { return num_buckets_; }
  uint16_t bucket_size() const { return bucket_size_; }
  // Whether this index describes a filter of meta's shape (its sub-filter count may have grown
  // since: see Grow).
  bool Matches(const FilterMeta& meta) const {
    return meta.expansion == 1 && meta.base_num_buckets == num_buckets_ &&
           meta.bucket_size == bucket_size_ && meta.num_filters >= num_filters_ &&
           num_filters_ != 0;
  }

  // The item's fingerprint is in bucket b0 or b1 of some sub-filter (core::Exists).
  bool Contains(uint64_t b0, uint64_t b1, uint8_t fp) const {
    return counts_[b0 * 256 + fp] != 0 || counts_[b1 * 256 + fp] != 0;
  }
  // Its copies in both buckets of every sub-filter, a bucket that is both counted twice
  // (core::Count).
  uint64_t Count(uint64_t b0, uint64_t b1, uint8_t fp) const {
    return static_cast<uint64_t>(counts_[b0 * 256 + fp]) + counts_[b1 * 256 + fp];
  }
  // The newest sub-filter with an empty slot in bucket b0 or b1, or kNone.
  uint32_t NewestWithRoom(uint64_t b0, uint64_t b1) const;

  // Sub-filters appended up to num_filters (all slots empty).
  void Grow(uint32_t num_filters);
  // Bucket b of sub-filter f changed from `before` to `after` (bucket_size bytes each).
  void Change(uint32_t f, uint64_t b, const uint8_t* before, const uint8_t* after);

  // Same contents (for tests: an index kept current against one built afresh).
  bool SameAs(const ChainIndex& other) const {
    return num_buckets_ == other.num_buckets_ && bucket_size_ == other.bucket_size_ &&
           num_filters_ == other.num_filters_ && counts_ == other.counts_ && room_ == other.room_;
  }

  // Bytes held (for the owner's budget).
  size_t memory() const { return memory_; }

 private:
  void AddRoom(uint64_t b, uint32_t f);
  void RemoveRoom(uint64_t b, uint32_t f);

  uint64_t num_buckets_ = 0;
  uint16_t bucket_size_ = 0;
  uint32_t num_filters_ = 0;
  std::vector<uint32_t> counts_;             // [bucket * 256 + fp], fp 1..255 (0: unused)
  std::vector<std::vector<uint32_t>> room_;  // per bucket: ascending sub-filters with room
  size_t memory_ = 0;
};

// A BucketAccess over another one that keeps a ChainIndex current: core functions ask it for the
// index (Index), it records the buckets they write, and Settle() applies the changes.
class IndexedAccess final : public BucketAccess {
 public:
  IndexedAccess(BucketAccess& inner, ChainIndex& index) : inner_(inner), index_(index) {}

  const uint8_t* Read(uint32_t f, uint64_t b) override { return inner_.Read(f, b); }
  uint8_t* Write(uint32_t f, uint64_t b) override;
  uint64_t NextMaybeNonEmpty(uint32_t f, uint64_t b, uint64_t num_buckets) override {
    return inner_.NextMaybeNonEmpty(f, b, num_buckets);
  }
  std::span<const uint8_t* const> Resident() override { return inner_.Resident(); }
  // Pointers to written buckets do not survive a checkpoint: the index can no longer follow.
  bool Checkpoint() override {
    broken_ = true;
    return inner_.Checkpoint();
  }
  ChainIndex* Index(const FilterMeta& meta) override;

  // Applies the recorded writes to the index (after each core call). false when the index could
  // not follow (a checkpoint, a chain that shrank, a storage error): the owner must drop it.
  bool Settle(const FilterMeta& meta);

 private:
  struct Written {
    uint32_t f;
    uint64_t b;
    size_t at;  // bucket_size bytes in before_
  };
  BucketAccess& inner_;
  ChainIndex& index_;
  std::vector<Written> written_;
  std::vector<uint8_t> before_;
  bool broken_ = false;
};

}  // namespace cuckood::core
