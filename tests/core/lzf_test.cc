// LZF: the compressor gives Redis 7.0's bytes (sizes and checksums of DUMPs taken from Redis
// 7.0.15), round trips, the "does not fit" limit, and decompression of damaged input.
#include "core/lzf.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "core/crc64.h"
#include "core/rdb.h"

using namespace cuckood::core;

namespace {

// Deterministic bytes drawn from `alphabet` (a 64-bit LCG; the same generator made the inputs
// whose DUMPs were taken from Redis).
std::string Generate(size_t n, const std::string& alphabet) {
  uint64_t x = 12345;
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    out.push_back(alphabet[(x >> 33) % alphabet.size()]);
  }
  return out;
}

std::string Hex(std::string_view s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string Decompressed(std::string_view packed, size_t n) {
  std::string out(n, '\0');
  REQUIRE(LzfDecompress(packed, &out));
  return out;
}

}  // namespace

TEST_CASE("LzfCompress gives the bytes of Redis 7.0's DUMP of long strings") {
  SECTION("60 bytes of 'ab'") {
    std::string v;
    for (int i = 0; i < 30; ++i) {
      v += "ab";
    }
    CHECK(Hex(rdb::DumpString(v)) == "00c30a3c02616261e02e010161620a00bb16d3ebae6fc574");
  }
  SECTION("40 bytes of 'x'") {
    CHECK(Hex(rdb::DumpString(std::string(40, 'x'))) ==
          "00c30928017878e01b000178780a007a1d6ccea5401333");
  }
  struct Case {
    size_t n;
    std::string alphabet;
    size_t dump_size;
    std::string head, tail;
  };
  std::string bytes256;
  for (int i = 0; i < 256; ++i) {
    bytes256.push_back(static_cast<char>(i));
  }
  const Case cases[] = {
      // beyond the 2^16 hash slots and the 8 KiB window
      {70000, std::string("\0\0\0\1\5\7", 6), 39898, "00c38000009bc48000011170",
       "0a001ac0ad0784906d88"},
      {300000, std::string(100, '\0') + "ABCDEFGHIJKLMNOPQRSTUVWXYZ", 141172,
       "00c3800002275e80000493e0", "0a0076adea5728fe0bd8"},
      // incompressible: stored raw
      {5000, bytes256, 5013, "005388f837828554d61ba612", "0a00ac15716230f1c9d4"},
  };
  for (const auto& c : cases) {
    const std::string v = Generate(c.n, c.alphabet);
    const std::string d = rdb::DumpString(v);
    CHECK(d.size() == c.dump_size);
    CHECK(Hex(d.substr(0, 12)) == c.head);
    CHECK(Hex(d.substr(d.size() - 10)) == c.tail);
  }
}

TEST_CASE("LZF round trips, whole and streamed in pieces") {
  for (size_t n : {1, 2, 3, 4, 5, 19, 33, 64, 1000, 8193, 70000, 600000}) {
    for (const std::string& alphabet : {std::string("a"), std::string("\0\1", 2),
                                        std::string("abcdefghijklmnopqrstuvwxyz0123456789")}) {
      const std::string v = Generate(n, alphabet);
      std::string packed;
      if (!LzfCompress(v, v.size() + 64, &packed)) {
        FAIL("compression into a larger buffer failed, n = " << n);
      }
      CHECK(Decompressed(packed, v.size()) == v);
      std::string streamed;
      size_t pieces = 0;
      REQUIRE(LzfDecompressTo(packed, v.size(), [&](std::string_view piece) {
        streamed.append(piece);
        ++pieces;
        return true;
      }));
      CHECK(streamed == v);
      CHECK(pieces >= v.size() / (300 * 1024));
    }
  }
}

TEST_CASE("LzfCompress refuses when the output would pass the limit") {
  const std::string v(1000, 'z');
  std::string packed;
  REQUIRE(LzfCompress(v, 1000, &packed));
  const size_t size = packed.size();
  std::string again;
  CHECK(LzfCompress(v, size + 3, &again));  // the final test keeps 3 bytes of slack
  CHECK_FALSE(LzfCompress(v, size - 1, &again));
  CHECK_FALSE(LzfCompress("", 10, &again));
  CHECK_FALSE(LzfCompress(v, 0, &again));
}

TEST_CASE("LzfDecompress rejects damaged input without reading or writing out of bounds") {
  const std::string v = Generate(5000, "abcab");
  std::string packed;
  REQUIRE(LzfCompress(v, v.size(), &packed));
  SECTION("every truncation") {
    for (size_t cut = 0; cut < packed.size(); ++cut) {
      std::string out(v.size(), '\0');
      CHECK_FALSE(LzfDecompress(std::string_view(packed).substr(0, cut), &out));
    }
  }
  SECTION("a declared size other than the real one") {
    std::string shorter(v.size() - 1, '\0');
    CHECK_FALSE(LzfDecompress(packed, &shorter));
    std::string longer(v.size() + 1, '\0');
    CHECK_FALSE(LzfDecompress(packed, &longer));
    CHECK_FALSE(LzfDecompressTo(packed, v.size() + 1, [](std::string_view) { return true; }));
  }
  SECTION("a copy from before the start") {
    std::string out(10, '\0');
    CHECK_FALSE(LzfDecompress(std::string("\x00"
                                          "a"
                                          "\x20\x05",
                                          4),
                              &out));                          // 6 back, 1 made
    CHECK_FALSE(LzfDecompress(std::string("\xe0", 1), &out));  // long copy, length byte missing
    CHECK_FALSE(LzfDecompress(std::string("\x05"
                                          "ab",
                                          3),
                              &out));  // literal run past the end
  }
  SECTION("every single-byte corruption fails or gives the right size") {
    for (size_t i = 0; i < packed.size(); i += 7) {
      std::string bad = packed;
      bad[i] = static_cast<char>(bad[i] ^ 0x5a);
      std::string out(v.size(), '\0');
      (void)LzfDecompress(bad, &out);  // either answer; it must not crash (ASan runs check)
      CHECK(out.size() == v.size());
    }
  }
  SECTION("a sink that refuses stops the decompression") {
    const std::string big = Generate(700000, "ab");
    std::string p;
    REQUIRE(LzfCompress(big, big.size(), &p));
    CHECK_FALSE(LzfDecompressTo(p, big.size(), [](std::string_view) { return false; }));
  }
}
