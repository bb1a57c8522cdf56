// CRC-64 as Redis computes it for DUMP payloads and RDB files: the Jones polynomial
// (0xad93d23594c935a9), reflected input and output, initial value 0, no final xor.
// Check value: Crc64(0, "123456789") == 0xe9c6d914c4b8d9ca.
#pragma once

#include <cstdint>
#include <string_view>

namespace cuckood::core {

// Continues the checksum `crc` over `data` (start with 0). Thread-safe.
uint64_t Crc64(uint64_t crc, std::string_view data);

}  // namespace cuckood::core
