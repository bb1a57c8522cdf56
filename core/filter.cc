// Insert, lookup and delete on the sub-filter chain (reference §2.2, §2.4-§2.6).
#include "core/filter.h"

#include <utility>

#include "core/murmur.h"
#include "core/slots.h"

namespace cuckood::core {
namespace {

using internal::FindSlot;
using internal::MetaUsable;
using internal::Placed;
using internal::PlaceInBucket;

enum class Step { kDone, kFailed, kIoError };

// The free-slot pass: newest sub-filter first, primary then alternate bucket, lowest empty slot.
Step StoreInFreeSlot(const FilterMeta& meta, BucketAccess& access, const ItemHash& item) {
  for (uint32_t f = meta.num_filters; f-- > 0;) {
    const uint64_t n = SubFilterBuckets(meta, f);
    const uint64_t candidates[2] = {PrimaryBucket(item.hash, n), AltBucket(item.hash, item.fp, n)};
    for (uint64_t b : candidates) {
      switch (PlaceInBucket(access, f, b, meta.bucket_size, item.fp)) {
        case Placed::kYes:
          return Step::kDone;
        case Placed::kIoError:
          return Step::kIoError;
        case Placed::kNoRoom:
          break;
      }
    }
  }
  return Step::kFailed;
}

// The kick-out chain in the newest sub-filter. Victims are taken round-robin starting at slot 0
// of the primary bucket; the next bucket is the evicted fingerprint's alternate computed from the
// bucket it was evicted from. On failure every swap is undone in reverse order. Both directions
// use `% n` literally, as RedisBloom does, so a non-power-of-two n (possible only through a
// LOADCHUNK header with an odd expansion) behaves exactly as it does there.
Step KickOut(const FilterMeta& meta, BucketAccess& access, const ItemHash& item) {
  const uint32_t f = meta.num_filters - 1;
  const uint64_t n = SubFilterBuckets(meta, f);
  const uint32_t bucket_size = meta.bucket_size;
  uint8_t cur = item.fp;
  uint32_t victim = 0;
  uint64_t b = PrimaryBucket(item.hash, n);

  for (uint32_t step = 0; step < meta.max_iterations; ++step) {
    uint8_t* bucket = access.Write(f, b);
    if (bucket == nullptr) {
      return Step::kIoError;
    }
    std::swap(cur, bucket[victim]);
    b = AltBucket(b, cur, n);
    switch (PlaceInBucket(access, f, b, bucket_size, cur)) {
      case Placed::kYes:
        return Step::kDone;
      case Placed::kIoError:
        return Step::kIoError;
      case Placed::kNoRoom:
        break;
    }
    victim = (victim + 1) % bucket_size;
  }

  for (uint32_t step = 0; step < meta.max_iterations; ++step) {
    victim = (victim + bucket_size - 1) % bucket_size;
    b = AltBucket(b, cur, n);
    uint8_t* bucket = access.Write(f, b);
    if (bucket == nullptr) {
      return Step::kIoError;
    }
    std::swap(cur, bucket[victim]);
  }
  return Step::kFailed;
}

// Whether one more sub-filter may be appended. Storage is lazy, so "growing" allocates nothing;
// the refusals stand in for RedisBloom's failed allocation and its u16 / 56-bit limits.
bool CanGrow(const FilterMeta& meta, const Limits& limits) {
  if (meta.num_filters >= kMaxSubFilters) {
    return false;
  }
  const uint64_t bytes = SubFilterBytes(meta, meta.num_filters);
  return bytes != 0 && bytes <= limits.max_filter_bytes;
}

// Matches of fp in bucket b of sub-filter f, or -1 on a storage error.
int64_t MatchesInBucket(BucketAccess& access, uint32_t f, uint64_t b, uint32_t bucket_size,
                        uint8_t fp) {
  const uint8_t* bucket = access.Read(f, b);
  if (bucket == nullptr) {
    return -1;
  }
  int64_t matches = 0;
  for (uint32_t s = 0; s < bucket_size; ++s) {
    matches += bucket[s] == fp ? 1 : 0;
  }
  return matches;
}

void SetIoError(bool* io_error, bool value) {
  if (io_error != nullptr) {
    *io_error = value;
  }
}

}  // namespace

ItemHash HashItem(std::string_view item) {
  ItemHash out;
  out.hash = MurmurHash64A(item.data(), item.size(), 0);
  out.fp = static_cast<uint8_t>(out.hash % 255 + 1);
  return out;
}

InsertResult Insert(FilterMeta& meta, BucketAccess& access, const ItemHash& item, bool nx,
                    const Limits& limits) {
  if (!MetaUsable(meta)) {
    return InsertResult::kIoError;  // corrupt metadata: treated like unreadable storage
  }
  if (nx) {
    bool io_error = false;
    const bool found = Exists(meta, access, item, &io_error);
    if (io_error) {
      return InsertResult::kIoError;
    }
    if (found) {
      return InsertResult::kExists;
    }
  }
  // Each round either stores the item or appends a sub-filter; growth is bounded by CanGrow, and
  // a fresh sub-filter reads as zeros, so the round after a growth stores the item.
  for (;;) {
    Step step = StoreInFreeSlot(meta, access, item);
    if (step == Step::kFailed) {
      step = KickOut(meta, access, item);
    }
    if (step == Step::kIoError) {
      return InsertResult::kIoError;
    }
    if (step == Step::kDone) {
      ++meta.num_items;
      return InsertResult::kInserted;
    }
    if (meta.expansion == 0) {
      return InsertResult::kFull;
    }
    if (!CanGrow(meta, limits)) {
      return InsertResult::kGrowthFailed;
    }
    ++meta.num_filters;
  }
}

bool Exists(const FilterMeta& meta, BucketAccess& access, const ItemHash& item, bool* io_error) {
  SetIoError(io_error, false);
  if (!MetaUsable(meta)) {
    SetIoError(io_error, true);
    return false;
  }
  for (uint32_t f = 0; f < meta.num_filters; ++f) {
    const uint64_t n = SubFilterBuckets(meta, f);
    const uint64_t candidates[2] = {PrimaryBucket(item.hash, n), AltBucket(item.hash, item.fp, n)};
    for (uint64_t b : candidates) {
      const uint8_t* bucket = access.Read(f, b);
      if (bucket == nullptr) {
        SetIoError(io_error, true);
        return false;
      }
      if (FindSlot(bucket, meta.bucket_size, item.fp) != meta.bucket_size) {
        return true;
      }
    }
  }
  return false;
}

uint64_t Count(const FilterMeta& meta, BucketAccess& access, const ItemHash& item, bool* io_error) {
  SetIoError(io_error, false);
  if (!MetaUsable(meta)) {
    SetIoError(io_error, true);
    return 0;
  }
  uint64_t total = 0;
  for (uint32_t f = 0; f < meta.num_filters; ++f) {
    const uint64_t n = SubFilterBuckets(meta, f);
    // Both candidates are counted even when they are the same bucket (RedisBloom does so).
    const uint64_t candidates[2] = {PrimaryBucket(item.hash, n), AltBucket(item.hash, item.fp, n)};
    for (uint64_t b : candidates) {
      const int64_t matches = MatchesInBucket(access, f, b, meta.bucket_size, item.fp);
      if (matches < 0) {
        SetIoError(io_error, true);
        return 0;
      }
      total += static_cast<uint64_t>(matches);
    }
  }
  return total;
}

DeleteResult Delete(FilterMeta& meta, BucketAccess& access, const ItemHash& item) {
  if (!MetaUsable(meta)) {
    return DeleteResult::kIoError;
  }
  bool deleted = false;
  for (uint32_t f = meta.num_filters; f-- > 0 && !deleted;) {
    const uint64_t n = SubFilterBuckets(meta, f);
    const uint64_t candidates[2] = {PrimaryBucket(item.hash, n), AltBucket(item.hash, item.fp, n)};
    for (uint64_t b : candidates) {
      const uint8_t* bucket = access.Read(f, b);
      if (bucket == nullptr) {
        return DeleteResult::kIoError;
      }
      const uint32_t slot = FindSlot(bucket, meta.bucket_size, item.fp);
      if (slot == meta.bucket_size) {
        continue;
      }
      uint8_t* writable = access.Write(f, b);
      if (writable == nullptr) {
        return DeleteResult::kIoError;
      }
      writable[slot] = 0;
      deleted = true;
      break;
    }
  }
  if (!deleted) {
    return DeleteResult::kNotFound;
  }
  --meta.num_items;  // unsigned, wraps like RedisBloom's after a LOADCHUNK with a low numItems
  ++meta.num_deletes;
  if (meta.num_filters > 1 &&
      static_cast<double>(meta.num_deletes) > static_cast<double>(meta.num_items) * 0.1) {
    if (!Compact(meta, access, /*stop_on_stuck=*/true)) {
      return DeleteResult::kIoError;
    }
  }
  return DeleteResult::kDeleted;
}

}  // namespace cuckood::core
