// MurmurHash64A, the 64-bit hash RedisBloom's cuckoo filter uses (seed 0 for CF).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuckood::core {

// Standard MurmurHash64A (m = 0xc6a4a7935bd1e995, r = 47), 8-byte blocks read little-endian.
// Pure function; thread-safe.
uint64_t MurmurHash64A(const void* data, size_t len, uint64_t seed);

}  // namespace cuckood::core
