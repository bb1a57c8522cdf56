// MurmurHash64A as published by Austin Appleby (public domain algorithm), written from its
// description in redisbloom-cf-reference.md §2.1.
#include "core/murmur.h"

#include <bit>
#include <cstring>

namespace cuckood::core {
namespace {

constexpr uint64_t kMul = 0xc6a4a7935bd1e995ULL;
constexpr int kShift = 47;

// Blocks are read little-endian whatever the host order, so dumps are portable. (One load: g++
// 12 kept a byte-by-byte loop as written, which made hashing a large item ~4× slower.)
uint64_t LoadLe64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) {
    v = __builtin_bswap64(v);
  }
  return v;
}

}  // namespace

uint64_t MurmurHash64A(const void* data, size_t len, uint64_t seed) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t h = seed ^ (static_cast<uint64_t>(len) * kMul);

  const size_t blocks = len / 8;
  for (size_t i = 0; i < blocks; ++i) {
    uint64_t k = LoadLe64(bytes + 8 * i);
    k *= kMul;
    k ^= k >> kShift;
    k *= kMul;
    h ^= k;
    h *= kMul;
  }

  // Tail: byte j of the last partial block lands at bits 8j..8j+7.
  const unsigned char* tail = bytes + 8 * blocks;
  const size_t rest = len % 8;
  if (rest != 0) {
    for (size_t j = 0; j < rest; ++j) {
      h ^= static_cast<uint64_t>(tail[j]) << (8 * j);
    }
    h *= kMul;
  }

  h ^= h >> kShift;
  h *= kMul;
  h ^= h >> kShift;
  return h;
}

}  // namespace cuckood::core
