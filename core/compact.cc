// Compaction (reference §2.7): move fingerprints from newer sub-filters into older ones and drop
// emptied trailing sub-filters.
#include "core/filter.h"
#include "core/slots.h"

namespace cuckood::core {
namespace {

using internal::MetaUsable;
using internal::Placed;
using internal::PlaceInBucket;

enum class Move { kMoved, kStuck, kIoError };

// Moves fp (found in bucket b of sub-filter i) into the oldest sub-filter j < i with a free slot
// in bucket b % N_j, else (b ^ fp * kAltMultiplier) % N_j. The candidates are derived from the
// bucket index, not from the item's hash (which is gone); for power-of-two counts this is one of
// the item's own candidate pairs in j.
Move Relocate(const FilterMeta& meta, BucketAccess& access, uint32_t i, uint64_t b, uint8_t fp) {
  uint64_t n = meta.base_num_buckets;
  for (uint32_t j = 0; j < i; ++j) {
    const uint64_t candidates[2] = {PrimaryBucket(b, n), AltBucket(b, fp, n)};
    for (uint64_t target : candidates) {
      switch (PlaceInBucket(access, j, target, meta.bucket_size, fp)) {
        case Placed::kYes:
          return Move::kMoved;
        case Placed::kIoError:
          return Move::kIoError;
        case Placed::kNoRoom:
          break;
      }
    }
    n *= meta.expansion;  // N_{j+1}; no overflow since N_i is valid (MetaUsable)
  }
  return Move::kStuck;
}

enum class Pass { kAllMoved, kSomeStuck, kIoError };

// Walks every bucket of sub-filter i that may hold data, slot by slot, and relocates what it can.
// The walk always finishes the sub-filter, even after a slot got stuck; the caller decides whether
// older sub-filters are tried next.
Pass CompactOne(const FilterMeta& meta, BucketAccess& access, uint32_t i) {
  const uint64_t n = SubFilterBuckets(meta, i);
  const uint32_t bucket_size = meta.bucket_size;
  bool stuck = false;
  for (uint64_t b = access.NextMaybeNonEmpty(i, 0, n); b < n;
       b = access.NextMaybeNonEmpty(i, b + 1, n)) {
    // One read per bucket: moving slot s clears only slot s (through Write) and fills buckets
    // of older sub-filters, so the later slots of this copy stay accurate.
    const uint8_t* bucket = access.Read(i, b);
    if (bucket == nullptr) {
      return Pass::kIoError;
    }
    for (uint32_t s = 0; s < bucket_size; ++s) {
      const uint8_t fp = bucket[s];
      if (fp == 0) {
        continue;
      }
      const Move move = Relocate(meta, access, i, b, fp);
      if (move == Move::kIoError) {
        return Pass::kIoError;
      }
      if (move == Move::kStuck) {
        stuck = true;
        continue;
      }
      uint8_t* source = access.Write(i, b);
      if (source == nullptr) {
        return Pass::kIoError;
      }
      source[s] = 0;
    }
    // Between whole moves: the storage may commit and drop its cache here.
    if (!access.Checkpoint()) {
      return Pass::kIoError;
    }
  }
  return stuck ? Pass::kSomeStuck : Pass::kAllMoved;
}

}  // namespace

bool Compact(FilterMeta& meta, BucketAccess& access, bool stop_on_stuck) {
  if (!MetaUsable(meta)) {
    return false;
  }
  for (uint32_t i = meta.num_filters - 1; i >= 1; --i) {
    const Pass pass = CompactOne(meta, access, i);
    if (pass == Pass::kIoError) {
      return false;
    }
    if (pass == Pass::kAllMoved) {
      // Only the newest sub-filter can be dropped; an emptied middle one stays (all zeros).
      if (i == meta.num_filters - 1) {
        --meta.num_filters;
      }
    } else if (stop_on_stuck) {
      break;  // the automatic mode stops: older sub-filters cannot be freed after this one
    }
  }
  meta.num_deletes = 0;
  return true;
}

}  // namespace cuckood::core
