// RESTORE payloads (core/rdb.h) and LZF (core/lzf.h) on arbitrary bytes.
//
// Input: a payload as RESTORE receives it. Since almost no random input has a valid CRC-64, the
// target also parses the input with a correct footer appended (the fuzzer then explores the
// value's structure), and compresses the input with LZF.
//
// Invariants:
// - parsing never reads outside the input (ASan) and answers kOk, kVersionOrChecksum or
//   kBadFormat; an input shorter than the footer is always kVersionOrChecksum;
// - a parsed filter's header passes the CF.LOADCHUNK checks and each sub-filter's declared
//   length is its numBuckets x bucketSize; decoding gives exactly that many bytes or fails, the
//   streamed and the whole-buffer decoders agree;
// - a payload that decodes re-encodes (as DUMP writes it) to a payload that parses to the same
//   fields and bytes;
// - LZF: what compresses within a limit fits in it and decompresses to the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/crc64.h"
#include "core/dump.h"
#include "core/lzf.h"
#include "core/rdb.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace cuckood::core;

// Decoded bytes one input may produce (a header may declare sub-filters of many GiB).
constexpr uint64_t kMaxDecodedBytes = 1 << 22;

std::string WithFooter(std::string_view body) {
  std::string out(body);
  out.push_back(static_cast<char>(rdb::kRdbVersion & 0xff));
  out.push_back(static_cast<char>(rdb::kRdbVersion >> 8));
  const uint64_t crc = Crc64(0, out);
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>(static_cast<uint8_t>(crc >> (8 * i))));
  }
  return out;
}

bool DecodeStreamed(const rdb::EncodedString& s, std::string* out) {
  out->clear();
  return rdb::Decode(s, [out](std::string_view piece) {
    out->append(piece);
    return true;
  });
}

void CheckParsed(std::string_view payload) {
  rdb::Payload p;
  Limits limits;
  limits.max_filter_bytes = kMaxDecodedBytes;
  const auto r = rdb::ParsePayload(payload, limits, &p);
  if (payload.size() < rdb::kFooterSize) {
    FUZZ_CHECK(r == rdb::ParseResult::kVersionOrChecksum);
  }
  if (r != rdb::ParseResult::kOk) {
    return;
  }
  std::string whole, streamed;
  if (p.type == rdb::kTypeString) {
    const bool ok = rdb::DecodeToString(p.string, &whole);
    FUZZ_CHECK(ok == DecodeStreamed(p.string, &streamed));
    if (ok) {
      FUZZ_CHECK(whole == streamed && whole.size() == p.string.length);
      rdb::Payload again;
      const std::string dumped = rdb::DumpString(whole);  // (again points into it)
      FUZZ_CHECK(rdb::ParsePayload(dumped, limits, &again) == rdb::ParseResult::kOk);
      std::string back;
      FUZZ_CHECK(rdb::DecodeToString(again.string, &back) && back == whole);
    }
    return;
  }
  FUZZ_CHECK(p.type == rdb::kTypeModule2);
  FUZZ_CHECK(DecodeHeader(EncodeHeader(p.filter), limits).has_value());
  FUZZ_CHECK(p.sub_filters.size() == p.filter.num_filters);
  uint64_t total = 0;
  std::vector<std::string> bytes;
  for (uint32_t i = 0; i < p.filter.num_filters; ++i) {
    FUZZ_CHECK(p.sub_filters[i].length == SubFilterBytes(p.filter, i));
    total += p.sub_filters[i].length;
    if (total > kMaxDecodedBytes) {
      return;
    }
    const bool ok = rdb::DecodeToString(p.sub_filters[i], &whole);
    FUZZ_CHECK(ok == DecodeStreamed(p.sub_filters[i], &streamed));
    if (!ok) {
      return;
    }
    FUZZ_CHECK(whole == streamed && whole.size() == p.sub_filters[i].length);
    bytes.push_back(whole);
  }
  std::string re;
  rdb::BeginCuckoo(&re, p.filter);
  for (uint32_t i = 0; i < p.filter.num_filters; ++i) {
    rdb::AppendSubFilter(&re, SubFilterBuckets(p.filter, i), bytes[i]);
  }
  rdb::EndCuckoo(&re);
  rdb::Payload again;
  FUZZ_CHECK(rdb::ParsePayload(re, limits, &again) == rdb::ParseResult::kOk);
  FUZZ_CHECK(EncodeHeader(again.filter) == EncodeHeader(p.filter));
  for (uint32_t i = 0; i < p.filter.num_filters; ++i) {
    FUZZ_CHECK(rdb::DecodeToString(again.sub_filters[i], &whole) && whole == bytes[i]);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckParsed(input);
  CheckParsed(WithFooter(input));
  if (!input.empty()) {
    const size_t limit = size / 2 + 1;
    std::string packed;
    if (LzfCompress(input, limit, &packed)) {
      FUZZ_CHECK(packed.size() <= limit);
      std::string back(size, '\0');
      FUZZ_CHECK(LzfDecompress(packed, &back) && back == input);
    }
  }
  return 0;
}
