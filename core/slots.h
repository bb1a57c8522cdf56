// Internal helpers shared by filter.cc and compact.cc: slot search inside one bucket. Not part of
// the public contract.
#pragma once

#include <cstdint>

#include "core/filter.h"

namespace cuckood::core::internal {

// Index of the lowest slot of `bucket` equal to `value`, or bucket_size when there is none.
inline uint32_t FindSlot(const uint8_t* bucket, uint32_t bucket_size, uint8_t value) {
  for (uint32_t s = 0; s < bucket_size; ++s) {
    if (bucket[s] == value) {
      return s;
    }
  }
  return bucket_size;
}

enum class Placed { kYes, kNoRoom, kIoError };

// Stores fp in the lowest empty slot of bucket b of sub-filter f, if it has one.
inline Placed PlaceInBucket(BucketAccess& access, uint32_t f, uint64_t b, uint32_t bucket_size,
                            uint8_t fp) {
  const uint8_t* bucket = access.Read(f, b);
  if (bucket == nullptr) {
    return Placed::kIoError;
  }
  const uint32_t slot = FindSlot(bucket, bucket_size, 0);
  if (slot == bucket_size) {
    return Placed::kNoRoom;
  }
  uint8_t* writable = access.Write(f, b);
  if (writable == nullptr) {
    return Placed::kIoError;
  }
  writable[slot] = fp;
  return Placed::kYes;
}

// A meta the algorithms can run on: at least one sub-filter, non-empty buckets, and every
// sub-filter's bucket count representable (SubFilterBuckets never 0). With expansion >= 1 the
// counts grow with i, so checking the newest one covers all; expansion 0 allows one sub-filter.
inline bool MetaUsable(const FilterMeta& meta) {
  if (meta.num_filters == 0 || meta.bucket_size == 0) {
    return false;
  }
  if (meta.expansion == 0 && meta.num_filters > 1) {
    return false;
  }
  return SubFilterBuckets(meta, meta.num_filters - 1) != 0;
}

}  // namespace cuckood::core::internal
