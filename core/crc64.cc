// Table-driven reflected CRC-64, eight bytes a step ("slicing by 8"): a restore or a dump of a
// large filter checksums every byte, so the byte-at-a-time loop is kept for the tail only.
#include "core/crc64.h"

#include <array>
#include <cstddef>

namespace cuckood::core {
namespace {

// The polynomial with its bits reversed (the reflected form the right-shifting loop needs).
constexpr uint64_t kReflectedPoly = 0x95ac9329ac4bc9b5ULL;

using Tables = std::array<std::array<uint64_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint64_t b = 0; b < 256; ++b) {
    uint64_t crc = b;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1) != 0 ? (crc >> 1) ^ kReflectedPoly : crc >> 1;
    }
    t[0][b] = crc;
  }
  // t[k][b]: the CRC of byte b followed by k zero bytes.
  for (size_t k = 1; k < 8; ++k) {
    for (size_t b = 0; b < 256; ++b) {
      const uint64_t prev = t[k - 1][b];
      t[k][b] = t[0][prev & 0xff] ^ (prev >> 8);
    }
  }
  return t;
}

constexpr Tables kTables = MakeTables();

}  // namespace

uint64_t Crc64(uint64_t crc, std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  while (n >= 8) {
    uint64_t word = 0;
    for (int i = 7; i >= 0; --i) {
      word = (word << 8) | p[i];
    }
    crc ^= word;
    crc = kTables[7][crc & 0xff] ^ kTables[6][(crc >> 8) & 0xff] ^ kTables[5][(crc >> 16) & 0xff] ^
          kTables[4][(crc >> 24) & 0xff] ^ kTables[3][(crc >> 32) & 0xff] ^
          kTables[2][(crc >> 40) & 0xff] ^ kTables[1][(crc >> 48) & 0xff] ^ kTables[0][crc >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) {
    crc = kTables[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  }
  return crc;
}

}  // namespace cuckood::core
