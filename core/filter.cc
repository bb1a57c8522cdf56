// Insert, lookup and delete on the sub-filter chain (reference §2.2, §2.4-§2.6).
#include "core/filter.h"

#include <utility>

#include "core/chain_index.h"
#include "core/murmur.h"
#include "core/slots.h"

namespace cuckood::core {
namespace {

using internal::FindSlot;
using internal::MetaUsable;
using internal::Placed;
using internal::PlaceInBucket;

enum class Step { kDone, kFailed, kIoError };

// Buckets of sub-filter f of a usable meta (MetaUsable): with expansion 1 every sub-filter has
// the base count, so a long chain's loops skip the call.
inline uint64_t Buckets(const FilterMeta& meta, uint32_t f) {
  return f == 0 || meta.expansion == 1 ? meta.base_num_buckets : SubFilterBuckets(meta, f);
}

// Scans of a long chain of resident sub-filters wait on memory, one page per sub-filter: with
// expansion 1 every sub-filter has the same candidates, so the bucket kAhead sub-filters on is
// asked for early.
constexpr uint32_t kAhead = 16;
inline void PrefetchBucket(std::span<const uint8_t* const> resident, uint32_t f, uint64_t offset) {
  if (f < resident.size() && resident[f] != nullptr) {
    __builtin_prefetch(resident[f] + offset);
  }
}

// Bucket b of sub-filter f for reading: from a resident sub-filter, else through Read(), after
// which `resident` is asked for again (the read may have loaded pages).
inline const uint8_t* ReadBucket(BucketAccess& access, std::span<const uint8_t* const>& resident,
                                 uint32_t f, uint64_t b, uint32_t bucket_size) {
  if (f < resident.size() && resident[f] != nullptr) {
    return resident[f] + b * bucket_size;
  }
  const uint8_t* bucket = access.Read(f, b);
  resident = access.Resident();
  return bucket;
}

// The free-slot pass: newest sub-filter first, primary then alternate bucket, lowest empty slot.
Step StoreInFreeSlot(const FilterMeta& meta, BucketAccess& access, const ItemHash& item) {
  if (const ChainIndex* index = access.Index(meta)) {
    // (the index names the sub-filter the scan below would stop at)
    const uint64_t n = meta.base_num_buckets;
    const uint64_t candidates[2] = {PrimaryBucket(item.hash, n), AltBucket(item.hash, item.fp, n)};
    const uint32_t f = index->NewestWithRoom(candidates[0], candidates[1]);
    if (f == ChainIndex::kNone) {
      return Step::kFailed;
    }
    for (uint64_t b : candidates) {
      const Placed placed = PlaceInBucket(access, f, b, meta.bucket_size, item.fp);
      if (placed != Placed::kNoRoom) {
        return placed == Placed::kYes ? Step::kDone : Step::kIoError;
      }
    }
    return Step::kIoError;  // (an index that disagrees with the bytes: never stored wrongly)
  }
  auto resident = access.Resident();
  const uint32_t bucket_size = meta.bucket_size;
  const bool same_size = meta.expansion == 1;
  // (with expansion 1, every sub-filter's candidates)
  const uint64_t o0 = PrimaryBucket(item.hash, meta.base_num_buckets) * bucket_size;
  const uint64_t o1 = AltBucket(item.hash, item.fp, meta.base_num_buckets) * bucket_size;
  uint32_t f = meta.num_filters;
  while (f > 0) {
    if (same_size) {
      // Resident sub-filters without a free slot are passed over in a tight loop; the first one
      // with room, or one that is not resident, takes the general step below.
      while (f > 0 && f - 1 < resident.size() && resident[f - 1] != nullptr) {
        const uint8_t* base = resident[f - 1];
        if (f - 1 >= kAhead) {
          PrefetchBucket(resident, f - 1 - kAhead, o0);
        }
        if (FindSlot(base + o0, bucket_size, 0) != bucket_size ||
            FindSlot(base + o1, bucket_size, 0) != bucket_size) {
          break;
        }
        --f;
      }
      if (f == 0) {
        break;
      }
    }
    --f;
    const uint64_t n = Buckets(meta, f);
    const uint64_t candidates[2] = {PrimaryBucket(item.hash, n), AltBucket(item.hash, item.fp, n)};
    for (uint64_t b : candidates) {
      const uint8_t* bucket = ReadBucket(access, resident, f, b, bucket_size);
      if (bucket == nullptr) {
        return Step::kIoError;
      }
      const uint32_t slot = FindSlot(bucket, bucket_size, 0);
      if (slot == bucket_size) {
        continue;
      }
      uint8_t* writable = access.Write(f, b);
      if (writable == nullptr) {
        return Step::kIoError;
      }
      writable[slot] = item.fp;
      return Step::kDone;
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
int64_t MatchesInBucket(BucketAccess& access, std::span<const uint8_t* const>& resident, uint32_t f,
                        uint64_t b, uint32_t bucket_size, uint8_t fp) {
  const uint8_t* bucket = ReadBucket(access, resident, f, b, bucket_size);
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
  if (const ChainIndex* index = access.Index(meta)) {
    const uint64_t n = meta.base_num_buckets;
    return index->Contains(PrimaryBucket(item.hash, n), AltBucket(item.hash, item.fp, n), item.fp);
  }
  auto resident = access.Resident();
  const uint32_t bucket_size = meta.bucket_size;
  const bool same_size = meta.expansion == 1;
  const uint64_t o0 = PrimaryBucket(item.hash, meta.base_num_buckets) * bucket_size;
  const uint64_t o1 = AltBucket(item.hash, item.fp, meta.base_num_buckets) * bucket_size;
  uint32_t f = 0;
  while (f < meta.num_filters) {
    if (same_size) {
      // (as in StoreInFreeSlot: resident sub-filters without the fingerprint in a tight loop)
      while (f < meta.num_filters && f < resident.size() && resident[f] != nullptr) {
        const uint8_t* base = resident[f];
        PrefetchBucket(resident, f + kAhead, o0);
        if (FindSlot(base + o0, bucket_size, item.fp) != bucket_size ||
            FindSlot(base + o1, bucket_size, item.fp) != bucket_size) {
          return true;
        }
        ++f;
      }
      if (f == meta.num_filters) {
        break;
      }
    }
    const uint64_t n = Buckets(meta, f);
    const uint64_t candidates[2] = {PrimaryBucket(item.hash, n), AltBucket(item.hash, item.fp, n)};
    for (uint64_t b : candidates) {
      const uint8_t* bucket = ReadBucket(access, resident, f, b, bucket_size);
      if (bucket == nullptr) {
        SetIoError(io_error, true);
        return false;
      }
      if (FindSlot(bucket, bucket_size, item.fp) != bucket_size) {
        return true;
      }
    }
    ++f;
  }
  return false;
}

uint64_t Count(const FilterMeta& meta, BucketAccess& access, const ItemHash& item, bool* io_error) {
  SetIoError(io_error, false);
  if (!MetaUsable(meta)) {
    SetIoError(io_error, true);
    return 0;
  }
  if (const ChainIndex* index = access.Index(meta)) {
    const uint64_t n = meta.base_num_buckets;
    return index->Count(PrimaryBucket(item.hash, n), AltBucket(item.hash, item.fp, n), item.fp);
  }
  uint64_t total = 0;
  auto resident = access.Resident();
  for (uint32_t f = 0; f < meta.num_filters; ++f) {
    const uint64_t n = Buckets(meta, f);
    // Both candidates are counted even when they are the same bucket (RedisBloom does so).
    const uint64_t candidates[2] = {PrimaryBucket(item.hash, n), AltBucket(item.hash, item.fp, n)};
    for (uint64_t b : candidates) {
      const int64_t matches = MatchesInBucket(access, resident, f, b, meta.bucket_size, item.fp);
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
  auto resident = access.Resident();  // (the loop ends at its one Write)
  for (uint32_t f = meta.num_filters; f-- > 0 && !deleted;) {
    const uint64_t n = Buckets(meta, f);
    const uint64_t candidates[2] = {PrimaryBucket(item.hash, n), AltBucket(item.hash, item.fp, n)};
    for (uint64_t b : candidates) {
      const uint8_t* bucket = ReadBucket(access, resident, f, b, meta.bucket_size);
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
