// Sizing (reference §2.3), sub-filter sizes and CF.INFO's Size (§1.7).
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>

#include "core/filter.h"

using namespace cuckood::core;

namespace {

uint64_t RedisBloomBuckets(uint64_t capacity, uint16_t bucket_size, Limits limits = {}) {
  return BaseBuckets(capacity, bucket_size, SizingPolicy::kRedisBloom, limits);
}
uint64_t LoadFactorBuckets(uint64_t capacity, uint16_t bucket_size, Limits limits = {}) {
  return BaseBuckets(capacity, bucket_size, SizingPolicy::kLoadFactor, limits);
}

FilterMeta SizingMeta(uint64_t base, uint16_t expansion, uint32_t filters = 1,
                      uint16_t bucket_size = 2) {
  FilterMeta m;
  m.base_num_buckets = base;
  m.expansion = expansion;
  m.num_filters = filters;
  m.bucket_size = bucket_size;
  return m;
}

}  // namespace

TEST_CASE("NextPow2 rounds up to a power of two and maps 0 and > 2^63 to 0", "[sizing]") {
  CHECK(NextPow2(0) == 0);
  CHECK(NextPow2(1) == 1);
  CHECK(NextPow2(2) == 2);
  CHECK(NextPow2(3) == 4);
  CHECK(NextPow2(500) == 512);
  CHECK(NextPow2(512) == 512);
  CHECK(NextPow2(513) == 1024);
  CHECK(NextPow2(1ULL << 63) == 1ULL << 63);
  CHECK(NextPow2((1ULL << 63) + 1) == 0);
  CHECK(NextPow2(std::numeric_limits<uint64_t>::max()) == 0);
}

TEST_CASE("NormaliseExpansion keeps 0 and rounds up to a power of two", "[sizing]") {
  CHECK(NormaliseExpansion(0) == 0);
  CHECK(NormaliseExpansion(1) == 1);
  CHECK(NormaliseExpansion(2) == 2);
  CHECK(NormaliseExpansion(3) == 4);
  CHECK(NormaliseExpansion(5) == 8);
  CHECK(NormaliseExpansion(30000) == 32768);
  CHECK(NormaliseExpansion(32768) == 32768);
}

TEST_CASE("RedisBloom sizing is next_pow2(floor(capacity / bucket size)), at least 1", "[sizing]") {
  CHECK(RedisBloomBuckets(1000, 2) == 512);
  CHECK(RedisBloomBuckets(1024, 2) == 512);
  CHECK(RedisBloomBuckets(1025, 2) == 512);  // floor(512.5) = 512
  CHECK(RedisBloomBuckets(1026, 2) == 1024);
  CHECK(RedisBloomBuckets(10000, 2) == 8192);
  CHECK(RedisBloomBuckets(10, 2) == 8);
  CHECK(RedisBloomBuckets(9, 2) == 4);
  CHECK(RedisBloomBuckets(4, 2) == 2);
  CHECK(RedisBloomBuckets(8, 32) == 1);
  CHECK(RedisBloomBuckets(0, 2) == 1);
  CHECK(RedisBloomBuckets(64, 1) == 64);
  CHECK(RedisBloomBuckets(256, 4) == 64);
  CHECK(RedisBloomBuckets(67108864, 255) == 524288);
  CHECK(RedisBloomBuckets(67108864, 2) == 33554432);
}

TEST_CASE("Sizing refuses more than 2^56-1 buckets", "[sizing]") {
  const Limits unlimited{std::numeric_limits<uint64_t>::max()};
  CHECK(RedisBloomBuckets(72057594037927937ULL, 1, unlimited) == 0);   // -> 2^57
  CHECK(RedisBloomBuckets(144115188075855872ULL, 2, unlimited) == 0);  // -> 2^56
  CHECK(RedisBloomBuckets((1ULL << 56) - 1, 1, unlimited) == 0);       // rounds up to 2^56
  CHECK(RedisBloomBuckets(1ULL << 55, 1, unlimited) == 1ULL << 55);    // largest allowed
  CHECK(RedisBloomBuckets(std::numeric_limits<uint64_t>::max(), 1, unlimited) == 0);
}

TEST_CASE("Sizing refuses filters over max_filter_bytes (the limit itself is allowed)",
          "[sizing]") {
  const Limits limits{1024};
  CHECK(RedisBloomBuckets(1024, 2, limits) == 512);  // 1024 bytes: allowed
  CHECK(RedisBloomBuckets(2048, 2, limits) == 0);    // 2048 bytes
  CHECK(RedisBloomBuckets(1024, 1, limits) == 1024);
  CHECK(RedisBloomBuckets(1025, 1, limits) == 0);
  // The upstream "Insufficient memory to create filter" cases with the default limit.
  CHECK(RedisBloomBuckets(100000000000000000ULL, 2) == 0);
  CHECK(RedisBloomBuckets(1844674407370955165ULL, 2) == 0);
  CHECK(RedisBloomBuckets(100000000000000000ULL, 255) == 0);
}

TEST_CASE("Load-factor sizing is next_pow2(ceil(capacity / bucket size / 0.955))", "[sizing]") {
  CHECK(LoadFactorBuckets(1000, 2) == 1024);  // 523.6 -> 524 -> 1024
  CHECK(LoadFactorBuckets(955, 1) == 1024);   // exactly 1000
  CHECK(LoadFactorBuckets(488, 1) == 512);    // 510.99 -> 511
  CHECK(LoadFactorBuckets(489, 1) == 1024);   // 512.04 -> 513
  CHECK(LoadFactorBuckets(1, 2) == 1);
  CHECK(LoadFactorBuckets(0, 2) == 1);
  // Exactly a power of two in exact arithmetic: 97792 / 200 / 0.955 = 512.
  CHECK(LoadFactorBuckets(97792, 200) == 512);
  CHECK(LoadFactorBuckets(97793, 200) == 1024);
  CHECK(LoadFactorBuckets(std::numeric_limits<uint64_t>::max(), 1) == 0);
}

TEST_CASE("SubFilterBuckets is base * expansion^i with overflow giving 0", "[sizing]") {
  CHECK(SubFilterBuckets(SizingMeta(512, 2), 0) == 512);
  CHECK(SubFilterBuckets(SizingMeta(512, 2), 1) == 1024);
  CHECK(SubFilterBuckets(SizingMeta(512, 2), 3) == 4096);
  CHECK(SubFilterBuckets(SizingMeta(512, 1), 65534) == 512);
  CHECK(SubFilterBuckets(SizingMeta(512, 0), 0) == 512);
  CHECK(SubFilterBuckets(SizingMeta(512, 0), 1) == 0);
  CHECK(SubFilterBuckets(SizingMeta(512, 32768), 1) == 1ULL << 24);
  CHECK(SubFilterBuckets(SizingMeta(512, 32768), 2) == 1ULL << 39);
  CHECK(SubFilterBuckets(SizingMeta(512, 32768), 3) == 1ULL << 54);
  CHECK(SubFilterBuckets(SizingMeta(512, 32768), 4) == 0);
  CHECK(SubFilterBuckets(SizingMeta(512, 32768), 65534) == 0);
  CHECK(SubFilterBuckets(SizingMeta(1ULL << 40, 32768), 1) == 1ULL << 55);
  CHECK(SubFilterBuckets(SizingMeta(1ULL << 41, 32768), 1) == 0);  // 2^56 > 2^56 - 1
  // A LOADCHUNK header may carry a non-power-of-two expansion: counts are kept as they are.
  CHECK(SubFilterBuckets(SizingMeta(4, 3), 1) == 12);
  CHECK(SubFilterBuckets(SizingMeta(4, 3), 2) == 36);
  CHECK(SubFilterBuckets(SizingMeta(0, 1), 0) == 0);
}

TEST_CASE("SubFilterBytes multiplies by the bucket size and reports overflow as 0", "[sizing]") {
  CHECK(SubFilterBytes(SizingMeta(512, 2, 1, 2), 0) == 1024);
  CHECK(SubFilterBytes(SizingMeta(512, 2, 1, 255), 1) == 1024 * 255);
  CHECK(SubFilterBytes(SizingMeta(1ULL << 55, 1, 1, 255), 0) == (1ULL << 55) * 255);
  CHECK(SubFilterBytes(SizingMeta(1ULL << 55, 1, 1, 1024), 0) == 0);
  CHECK(SubFilterBytes(SizingMeta(512, 0, 1, 2), 1) == 0);
}

TEST_CASE("InfoSize is 40 + 16 per sub-filter + every sub-filter's bytes", "[sizing]") {
  CHECK(InfoSize(SizingMeta(512, 1, 1, 2)) == 1080);  // CF.RESERVE a 1000
  CHECK(InfoSize(SizingMeta(4, 0, 1, 2)) == 64);      // CF.RESERVE a 9 EXPANSION 0
  // Issue #533: 19 sub-filters, base 8192 buckets, expansion 2.
  CHECK(InfoSize(SizingMeta(8192, 2, 19, 2)) == 8589918552ULL);
  // Upstream counter-overflow test: 65535 sub-filters of 2 one-slot buckets.
  CHECK(InfoSize(SizingMeta(2, 1, 65535, 1)) == 1179670);
}
