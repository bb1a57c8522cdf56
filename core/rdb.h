// DUMP / RESTORE payloads: a value as Redis 7.0 writes it in an RDB file, followed by the RDB
// version (2 bytes LE) and a CRC-64 of everything before it (8 bytes LE).
//
// Two value types are known:
//   string (RDB type 0): one RDB string (int encodings for canonical integers that fit 32 bits,
//     LZF for strings longer than 20 bytes when that saves 4 bytes or more, else raw bytes)
//   cuckoo filter (RDB type 7, module second format): the module type id of "MBbloomCF" with
//     encoding version 4 as a 64-bit RDB length, then, each behind its opcode (2 = unsigned,
//     5 = string): numFilters, numBuckets, numItems, numDeletes, bucketSize, maxIterations,
//     expansion, and for each sub-filter its numBuckets and its bucket bytes; then opcode 0 (EOF).
//     Encoding versions below 4 (RedisBloom before 2.2) carry only the first three numbers and
//     the bucket bytes; the rest takes RedisBloom's defaults.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/filter.h"
#include "core/lzf.h"

namespace cuckood::core::rdb {

inline constexpr uint16_t kRdbVersion = 10;  // Redis 7.0's RDB_VERSION
inline constexpr size_t kFooterSize = 10;
inline constexpr uint8_t kTypeString = 0;
inline constexpr uint8_t kTypeModule2 = 7;
inline constexpr std::string_view kCuckooTypeName = "MBbloomCF";
inline constexpr uint64_t kCuckooEncodingVersion = 4;

// Redis's module type id: the 9-character name, 6 bits a character in the alphabet
// A-Z a-z 0-9 - _, then the 10-bit encoding version. 0 when the name cannot be encoded.
uint64_t ModuleTypeId(std::string_view name, uint64_t encoding_version);

// ---- writing ------------------------------------------------------------------------------
// An RDB length: 1, 2, 5 or 9 bytes.
void AppendLength(std::string* out, uint64_t len);
// An RDB string as rdbSaveRawString writes it (with compression on, Redis's default).
void AppendString(std::string* out, std::string_view s);
// The RDB version and the CRC-64 of *out.
void AppendFooter(std::string* out);

// The whole DUMP payload of a string value.
std::string DumpString(std::string_view value);

// A cuckoo filter's payload, written sub-filter by sub-filter:
//   BeginCuckoo(&p, meta); for each sub-filter AppendSubFilter(&p, buckets, bytes); EndCuckoo(&p);
void BeginCuckoo(std::string* out, const FilterMeta& meta);
void AppendSubFilter(std::string* out, uint64_t num_buckets, std::string_view bytes);
void EndCuckoo(std::string* out);  // EOF opcode and footer

// ---- reading ------------------------------------------------------------------------------
// An RDB string as found in a payload, not yet decoded (it points into the payload).
struct EncodedString {
  enum class Kind { kRaw, kLzf, kInt };
  Kind kind = Kind::kRaw;
  std::string_view bytes;  // kRaw: the value; kLzf: the compressed bytes
  uint64_t length = 0;     // decoded length (kInt: of the decimal text)
  int64_t value = 0;       // kInt only
};

// Hands the decoded bytes of `s` to `sink` in order (false: malformed LZF or the sink refused).
bool Decode(const EncodedString& s, const ByteSink& sink);
// The decoded bytes in one string (false: malformed LZF).
bool DecodeToString(const EncodedString& s, std::string* out);

enum class ParseResult {
  kOk,
  kVersionOrChecksum,  // "ERR DUMP payload version or checksum are wrong"
  kBadFormat,          // "ERR Bad data format"
};

struct Payload {
  uint8_t type = kTypeString;
  EncodedString string;                    // kTypeString
  FilterMeta filter;                       // kTypeModule2 (a cuckoo filter)
  std::vector<EncodedString> sub_filters;  // its bucket bytes, one per sub-filter
};

// Checks the footer (RDB version at most 10, CRC-64), then reads the value. A cuckoo filter must
// be one RedisBloom 2.8 loads and one cuckood can hold: its header passes the CF.LOADCHUNK
// checks under `limits`, each sub-filter has the number of buckets the expansion rule gives and
// exactly numBuckets x bucketSize bytes. The LZF bytes themselves are checked when decoded.
// Out points into `payload`, which must outlive it.
ParseResult ParsePayload(std::string_view payload, const Limits& limits, Payload* out);

}  // namespace cuckood::core::rdb
