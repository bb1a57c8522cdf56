// Hash, fingerprint and bucket formulas against the vectors of reference §2.1 (checked upstream
// on a live RedisBloom through SCANDUMP).
#include "core/murmur.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/filter.h"

using namespace cuckood::core;

namespace {

struct Vector {
  std::string item;
  uint64_t hash;
  unsigned fp;
  uint64_t bucket512;
  uint64_t alt512;
};

const Vector kVectors[] = {
    {"", 0x0000000000000000ULL, 1, 0, 405},
    {"foo", 0xcdde38358fd25b01ULL, 217, 257, 76},
    {"hello", 0x1e68d17c457bf117ULL, 159, 279, 156},
    {"item1", 0x7930a108c52a9032ULL, 7, 50, 289},
    {"123456789", 0x4977490251674330ULL, 57, 304, 285},
    {"12345678", 0x758f67d162b2d202ULL, 41, 2, 223},
};

}  // namespace

TEST_CASE("MurmurHash64A with seed 0 reproduces RedisBloom's hashes", "[murmur]") {
  for (const Vector& v : kVectors) {
    INFO("item '" << v.item << "'");
    CHECK(MurmurHash64A(v.item.data(), v.item.size(), 0) == v.hash);
  }
}

TEST_CASE("HashItem derives fingerprint hash % 255 + 1 and the RedisBloom buckets", "[murmur]") {
  for (const Vector& v : kVectors) {
    INFO("item '" << v.item << "'");
    const ItemHash h = HashItem(v.item);
    CHECK(h.hash == v.hash);
    CHECK(h.fp == v.fp);
    CHECK(PrimaryBucket(h.hash, 512) == v.bucket512);
    CHECK(AltBucket(h.hash, h.fp, 512) == v.alt512);
    // For power-of-two bucket counts the alternate of the alternate is the primary.
    CHECK(AltBucket(v.alt512, h.fp, 512) == v.bucket512);
  }
}

TEST_CASE("MurmurHash64A covers every tail length and depends on the seed", "[murmur]") {
  // Every length 0..16 gives a distinct hash, and changing any byte changes it.
  const std::string base = "abcdefghijklmnop";
  uint64_t previous = 1;
  for (size_t len = 0; len <= base.size(); ++len) {
    const uint64_t h = MurmurHash64A(base.data(), len, 0);
    CHECK(h != previous);
    previous = h;
    for (size_t i = 0; i < len; ++i) {
      std::string changed = base.substr(0, len);
      changed[i] = static_cast<char>(changed[i] ^ 0x01);
      CHECK(MurmurHash64A(changed.data(), len, 0) != h);
    }
  }
  CHECK(MurmurHash64A("foo", 3, 1) != MurmurHash64A("foo", 3, 0));
}

TEST_CASE("MurmurHash64A reads blocks little-endian regardless of alignment", "[murmur]") {
  alignas(8) char buffer[32] = {};
  const std::string item = "123456789";
  for (size_t shift = 0; shift < 8; ++shift) {
    std::copy(item.begin(), item.end(), buffer + shift);
    CHECK(MurmurHash64A(buffer + shift, item.size(), 0) == 0x4977490251674330ULL);
  }
}

TEST_CASE("The empty item hashes to 0 with fingerprint 1", "[murmur]") {
  const ItemHash h = HashItem(std::string_view());
  CHECK(h.hash == 0);
  CHECK(h.fp == 1);
}

TEST_CASE("MurmurHash64A of long buffers matches the algorithm written byte by byte", "[murmur]") {
  // An independent statement of the algorithm: each 8-byte block assembled from its bytes.
  auto reference = [](const unsigned char* p, size_t len) {
    const uint64_t m = 0xc6a4a7935bd1e995ULL;
    uint64_t h = len * m;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
      uint64_t k = 0;
      for (size_t b = 0; b < 8; ++b) {
        k |= static_cast<uint64_t>(p[i + b]) << (8 * b);
      }
      k *= m;
      k ^= k >> 47;
      k *= m;
      h = (h ^ k) * m;
    }
    if (i < len) {
      for (size_t b = 0; i + b < len; ++b) {
        h ^= static_cast<uint64_t>(p[i + b]) << (8 * b);
      }
      h *= m;
    }
    h ^= h >> 47;
    h *= m;
    return h ^ (h >> 47);
  };
  std::vector<unsigned char> data(70000);
  uint64_t x = 88172645463325252ULL;
  for (auto& c : data) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<unsigned char>(x);
  }
  for (size_t len : {8u, 9u, 63u, 64u, 1000u, 4097u, 69990u}) {
    for (size_t offset : {0u, 1u, 3u, 7u}) {
      INFO("length " << len << ", offset " << offset);
      CHECK(MurmurHash64A(data.data() + offset, len, 0) == reference(data.data() + offset, len));
    }
  }
}
