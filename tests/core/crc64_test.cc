// CRC-64 (Jones polynomial, reflected, as Redis's crc64): known values and incremental use.
#include "core/crc64.h"

#include <catch2/catch.hpp>
#include <string>

using cuckood::core::Crc64;

TEST_CASE("Crc64 gives Redis's check value and 0 for no bytes") {
  CHECK(Crc64(0, "123456789") == 0xe9c6d914c4b8d9caULL);
  CHECK(Crc64(0, "") == 0);
}

TEST_CASE("Crc64 matches the footer of a DUMP payload recorded from Redis 7.0") {
  // DUMP of the string "plain value" (from the recording): body, version 10, CRC-64 LE.
  const std::string body("\x00\x0bplain value\x0a\x00", 15);
  CHECK(Crc64(0, body) == 0xffc20ed264b84c21ULL);
}

TEST_CASE("Crc64 continues over pieces as over the whole, at every split point") {
  std::string data;
  for (int i = 0; i < 100; ++i) {
    data.push_back(static_cast<char>(i * 37 + 11));
  }
  const uint64_t whole = Crc64(0, data);
  for (size_t cut = 0; cut <= data.size(); ++cut) {
    const std::string_view v(data);
    CHECK(Crc64(Crc64(0, v.substr(0, cut)), v.substr(cut)) == whole);
  }
  data[50] ^= 1;
  CHECK(Crc64(0, data) != whole);
}
