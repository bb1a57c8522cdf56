// Sizing: base bucket counts, sub-filter sizes and CF.INFO's Size (reference §2.3, §1.7).
#include <bit>
#include <limits>

#include "core/filter.h"

namespace cuckood::core {
namespace {

constexpr uint64_t kTopBit = 1ULL << 63;
constexpr uint16_t kMaxExpansion = 32768;

}  // namespace

uint64_t NextPow2(uint64_t x) {
  // Above 2^63 no power of two fits in 64 bits; report that as 0 (nothing can be that big).
  if (x == 0 || x > kTopBit) {
    return 0;
  }
  return std::bit_ceil(x);
}

uint16_t NormaliseExpansion(uint64_t requested) {
  if (requested == 0) {
    return 0;
  }
  // Callers validate [0, 32768] first; anything above saturates instead of wrapping to 0
  // (which would silently mean "never grow").
  if (requested >= kMaxExpansion) {
    return kMaxExpansion;
  }
  return static_cast<uint16_t>(NextPow2(requested));
}

uint64_t BaseBuckets(uint64_t capacity, uint16_t bucket_size, SizingPolicy policy,
                     const Limits& limits) {
  if (bucket_size == 0) {
    return 0;
  }
  uint64_t wanted = 0;
  if (policy == SizingPolicy::kRedisBloom) {
    // RedisBloom: floor(capacity / bucketSize), no load factor.
    wanted = capacity / bucket_size;
  } else {
    // ceil(capacity / bucket_size / 0.955), evaluated exactly as the rational
    // ceil(200 * capacity / (191 * bucket_size)) so no floating rounding can move a result
    // across a power of two. The division by bucket_size is a real one, not a floor.
    const uint64_t divisor = 191ULL * bucket_size;
    const uint64_t quotient = capacity / divisor;
    const uint64_t remainder = capacity % divisor;
    if (quotient > (std::numeric_limits<uint64_t>::max() - 200) / 200) {
      return 0;
    }
    const uint64_t scaled_rest = remainder * 200;
    wanted = quotient * 200 + scaled_rest / divisor + (scaled_rest % divisor != 0 ? 1 : 0);
  }
  if (wanted > kTopBit) {
    return 0;
  }
  uint64_t buckets = NextPow2(wanted);
  if (buckets == 0) {
    buckets = 1;  // RedisBloom's minimum (capacity 8, bucket size 32 -> 1 bucket)
  }
  if (buckets > kMaxBuckets || buckets > limits.max_filter_bytes / bucket_size) {
    return 0;
  }
  return buckets;
}

uint64_t SubFilterBuckets(const FilterMeta& meta, uint32_t i) {
  const uint64_t base = meta.base_num_buckets;
  if (base == 0 || base > kMaxBuckets) {
    return 0;
  }
  if (i == 0) {
    return base;
  }
  if (meta.expansion == 0) {
    return 0;  // a non-growing filter has only sub-filter 0
  }
  if (meta.expansion == 1) {
    return base;
  }
  // base * expansion^i. RedisBloom uses floating pow(); every result that passes the checks here
  // is below 2^56 and therefore exact in either arithmetic. Terminates after at most 56 steps
  // because the count at least doubles each time.
  uint64_t buckets = base;
  for (uint32_t k = 0; k < i; ++k) {
    if (buckets > kMaxBuckets / meta.expansion) {
      return 0;
    }
    buckets *= meta.expansion;
  }
  return buckets;
}

uint64_t SubFilterBytes(const FilterMeta& meta, uint32_t i) {
  const uint64_t buckets = SubFilterBuckets(meta, i);
  if (buckets == 0 || meta.bucket_size == 0 ||
      buckets > std::numeric_limits<uint64_t>::max() / meta.bucket_size) {
    return 0;
  }
  return buckets * meta.bucket_size;
}

uint64_t InfoSize(const FilterMeta& meta) {
  // sizeof(CuckooFilter) = 40 and sizeof(SubCF) = 16 in RedisBloom's 64-bit build.
  uint64_t size = 40 + 16 * static_cast<uint64_t>(meta.num_filters);
  for (uint32_t i = 0; i < meta.num_filters; ++i) {
    size += SubFilterBytes(meta, i);
  }
  return size;
}

}  // namespace cuckood::core
