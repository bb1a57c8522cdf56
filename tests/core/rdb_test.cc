// DUMP payloads (core/rdb.h): payloads recorded from Redis 7.0.15 + RedisBloom 2.8.20 decode to
// their fields and re-encode to the same bytes; every field's checks; truncated, corrupted and
// newer-version payloads are refused as Redis 7.0 refuses them.
#include "core/rdb.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/crc64.h"

using namespace cuckood::core;
using rdb::ParseResult;

namespace {

std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// DUMP of a filter with 3 sub-filters of 8 buckets of 2 (expansion 1), every string raw.
const std::string kThreeFilters = FromHex(
    "07813016e5a2898214040203020802260202020202140201020805105b00c7cabf3d70f04e8c678e198c66a5"
    "020805100000724e4805dd7d1b1e043dba00ea7e02080510b561d30010e4f900be006600f600ae00000a0041"
    "5468c8bd342f36");
// DUMP of a filter with 2 sub-filters (32 and 64 buckets of 2, expansion 2); the second is LZF.
const std::string kTwoFilters = FromHex(
    "07813016e5a2898214040202022002406b0209020202140202022005404035029be1ea003d8b402508e33658"
    "47195c3fb717a03ea50058b2067fbad0e4bd00b938af631ee9153400005cabd4c94700d4edc6c561fd84f397"
    "195aa3521ab802404005c3406c4080012e00c00002d6000f400a013a794005e0020002530020800d00b28006"
    "0100ae2003020000a1200305006e900aac84200704af0000788f20070c0000d9006d7ee30014002ffe3a200d"
    "04939edf003420070d2251197fe693c10063d600008eb9202c0800dc5303ed9500efea000a00b078ca236798"
    "50bd");

Limits NoLimit() {
  Limits l;
  l.max_filter_bytes = UINT64_MAX;
  return l;
}

ParseResult Parse(std::string_view payload, rdb::Payload* out = nullptr) {
  rdb::Payload p;
  return rdb::ParsePayload(payload, NoLimit(), out ? out : &p);
}

// A payload with this body and a correct footer of `version`.
std::string WithFooter(std::string body, uint16_t version = rdb::kRdbVersion) {
  body.push_back(static_cast<char>(version & 0xff));
  body.push_back(static_cast<char>(version >> 8));
  const uint64_t crc = Crc64(0, body);
  for (int i = 0; i < 8; ++i) {
    body.push_back(static_cast<char>(static_cast<uint8_t>(crc >> (8 * i))));
  }
  return body;
}

std::string Body(std::string_view payload) {
  return std::string(payload.substr(0, payload.size() - rdb::kFooterSize));
}

// A cuckoo filter body from its fields, written op by op (so single fields can be damaged).
struct Fields {
  uint64_t id = rdb::ModuleTypeId(rdb::kCuckooTypeName, 4);
  std::vector<uint64_t> head = {1, 4, 3, 0, 2, 20, 1};  // filters, buckets, items, ... expansion
  std::vector<uint64_t> buckets = {4};
  std::vector<std::string> data = {std::string(8, '\0')};
  uint64_t eof = 0;
};
std::string Build(const Fields& f) {
  std::string b(1, static_cast<char>(rdb::kTypeModule2));
  rdb::AppendLength(&b, f.id);
  for (uint64_t v : f.head) {
    rdb::AppendLength(&b, 2);
    rdb::AppendLength(&b, v);
  }
  for (size_t i = 0; i < f.data.size(); ++i) {
    if (i < f.buckets.size()) {
      rdb::AppendLength(&b, 2);
      rdb::AppendLength(&b, f.buckets[i]);
    }
    rdb::AppendLength(&b, 5);
    rdb::AppendString(&b, f.data[i]);
  }
  rdb::AppendLength(&b, f.eof);
  return WithFooter(b);
}

std::string DecodeAll(const rdb::EncodedString& s) {
  std::string out;
  REQUIRE(rdb::DecodeToString(s, &out));
  return out;
}

// Encodes a parsed filter again, as DUMP writes it.
std::string Reencode(const rdb::Payload& p) {
  std::string out;
  rdb::BeginCuckoo(&out, p.filter);
  for (uint32_t i = 0; i < p.filter.num_filters; ++i) {
    rdb::AppendSubFilter(&out, SubFilterBuckets(p.filter, i), DecodeAll(p.sub_filters[i]));
  }
  rdb::EndCuckoo(&out);
  return out;
}

}  // namespace

TEST_CASE("ModuleTypeId packs MBbloomCF and version 4 as RedisBloom's type id") {
  const uint64_t id = rdb::ModuleTypeId("MBbloomCF", 4);
  CHECK(id == 0x3016e5a289821404ULL);
  CHECK((id & 1023) == 4);
  CHECK(rdb::ModuleTypeId("MBbloom--", 4) != id);
  CHECK(rdb::ModuleTypeId("short", 4) == 0);
  CHECK(rdb::ModuleTypeId("MBbloom!F", 4) == 0);
}

TEST_CASE("Recorded filter payloads decode to their fields and re-encode byte for byte") {
  rdb::Payload p;
  SECTION("three raw sub-filters") {
    REQUIRE(Parse(kThreeFilters, &p) == ParseResult::kOk);
    CHECK(p.type == rdb::kTypeModule2);
    CHECK(p.filter.num_filters == 3);
    CHECK(p.filter.base_num_buckets == 8);
    CHECK(p.filter.num_items == 38);
    CHECK(p.filter.num_deletes == 2);
    CHECK(p.filter.bucket_size == 2);
    CHECK(p.filter.max_iterations == 20);
    CHECK(p.filter.expansion == 1);
    REQUIRE(p.sub_filters.size() == 3);
    for (const auto& s : p.sub_filters) {
      CHECK(s.kind == rdb::EncodedString::Kind::kRaw);
      CHECK(s.length == 16);
    }
    CHECK(DecodeAll(p.sub_filters[0]).substr(0, 4) == FromHex("5b00c7ca"));
    CHECK(Reencode(p) == kThreeFilters);
  }
  SECTION("two sub-filters, expansion 2, one compressed") {
    REQUIRE(Parse(kTwoFilters, &p) == ParseResult::kOk);
    CHECK(p.filter.num_filters == 2);
    CHECK(p.filter.base_num_buckets == 32);
    CHECK(p.filter.num_items == 107);
    CHECK(p.filter.num_deletes == 9);
    CHECK(p.filter.expansion == 2);
    CHECK(p.sub_filters[0].kind == rdb::EncodedString::Kind::kRaw);
    CHECK(p.sub_filters[1].kind == rdb::EncodedString::Kind::kLzf);
    CHECK(DecodeAll(p.sub_filters[1]).size() == 128);
    CHECK(Reencode(p) == kTwoFilters);
  }
}

TEST_CASE("String payloads use Redis's int, raw and LZF encodings") {
  auto string_of = [](std::string_view payload) {
    rdb::Payload p;
    REQUIRE(Parse(payload, &p) == ParseResult::kOk);
    REQUIRE(p.type == rdb::kTypeString);
    return DecodeAll(p.string);
  };
  // Recorded: DUMP of "plain value".
  const std::string plain = FromHex("000b706c61696e2076616c75650a00214cb864d20ec2ff");
  CHECK(rdb::DumpString("plain value") == plain);
  CHECK(string_of(plain) == "plain value");
  // Int encodings (bytes as Redis 7.0 dumps them).
  CHECK(rdb::DumpString("12").substr(0, 3) == FromHex("00c00c"));
  CHECK(rdb::DumpString("-5").substr(0, 3) == FromHex("00c0fb"));
  CHECK(rdb::DumpString("300").substr(0, 4) == FromHex("00c12c01"));
  CHECK(rdb::DumpString("70000").substr(0, 6) == FromHex("00c270110100"));
  CHECK(rdb::DumpString("-2147483648").substr(0, 6) == FromHex("00c200000080"));
  // Not canonical or beyond 32 bits: raw.
  for (std::string v : {"2147483648", "0012", "-0", "+1", " 1", ""}) {
    CHECK(rdb::DumpString(v).substr(1, 1 + v.size()) ==
          std::string(1, static_cast<char>(v.size())) + v);
    CHECK(string_of(rdb::DumpString(v)) == v);
  }
  for (std::string v : {"0", "127", "-128", "128", "-32769", "2147483647", "-2147483648"}) {
    CHECK(string_of(rdb::DumpString(v)) == v);
  }
  // Long strings: LZF when it saves 4 bytes, raw otherwise.
  CHECK(static_cast<uint8_t>(rdb::DumpString(std::string(21, 'a'))[1]) == 0xc3);
  CHECK(rdb::DumpString(std::string(20, 'a'))[1] == 20);
  CHECK(string_of(rdb::DumpString(std::string(1000, 'q'))) == std::string(1000, 'q'));
}

TEST_CASE("Payload footer: RDB versions newer than 10 and bad checksums are refused") {
  const std::string body = Body(kThreeFilters);
  CHECK(Parse(WithFooter(body, 10)) == ParseResult::kOk);
  CHECK(Parse(WithFooter(body, 9)) == ParseResult::kOk);  // older versions are read
  CHECK(Parse(WithFooter(body, 11)) == ParseResult::kVersionOrChecksum);
  CHECK(Parse(WithFooter(body, 0xffff)) == ParseResult::kVersionOrChecksum);
  CHECK(Parse("") == ParseResult::kVersionOrChecksum);
  CHECK(Parse("short") == ParseResult::kVersionOrChecksum);
  for (size_t i = 0; i < kTwoFilters.size(); ++i) {
    std::string bad = kTwoFilters;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    CHECK(Parse(bad) == ParseResult::kVersionOrChecksum);
  }
}

TEST_CASE("Truncated payloads are refused, with or without a matching checksum") {
  for (const std::string& full : {kThreeFilters, kTwoFilters}) {
    const std::string body = Body(full);
    for (size_t cut = 0; cut < body.size(); ++cut) {
      CAPTURE(cut);
      CHECK(Parse(full.substr(0, cut + rdb::kFooterSize)) == ParseResult::kVersionOrChecksum);
      // Redis reads the value from the whole payload, footer included: a body short by at most
      // the footer's length may still read (e.g. a last bucket byte 0x0a, version 10's low byte,
      // then EOF = its high byte 0). Shorter ones cannot.
      const ParseResult r = Parse(WithFooter(body.substr(0, cut)));
      if (cut + rdb::kFooterSize < body.size()) {
        CHECK(r == ParseResult::kBadFormat);
      } else {
        CHECK(r != ParseResult::kVersionOrChecksum);
      }
    }
    // The three-filter body ends in a zero bucket byte and EOF: both come from the footer.
    if (full == kThreeFilters) {
      CHECK(Parse(WithFooter(body.substr(0, body.size() - 2))) == ParseResult::kOk);
    }
  }
}

TEST_CASE("Every filter field is checked") {
  CHECK(Parse(Build(Fields{})) == ParseResult::kOk);
  auto with = [](auto change) {
    Fields f;
    change(f);
    return Parse(Build(f));
  };
  SECTION("module type and encoding version") {
    CHECK(with([](Fields& f) { f.id = rdb::ModuleTypeId("MBbloom--", 4); }) ==
          ParseResult::kBadFormat);
    CHECK(with([](Fields& f) { f.id = rdb::ModuleTypeId("MBbloomCF", 5); }) ==
          ParseResult::kBadFormat);
    CHECK(Parse(WithFooter("\x06" + Body(Build(Fields{})).substr(1))) == ParseResult::kBadFormat);
    CHECK(Parse(WithFooter("\x01\x00")) == ParseResult::kBadFormat);  // a list: not supported
  }
  SECTION("counts") {
    CHECK(with([](Fields& f) { f.head[0] = 0; }) == ParseResult::kBadFormat);
    CHECK(with([](Fields& f) { f.head[1] = 0; }) == ParseResult::kBadFormat);
    CHECK(with([](Fields& f) { f.head[1] = 3; }) == ParseResult::kBadFormat);  // not 2^k
    CHECK(with([](Fields& f) { f.head[4] = 0; }) == ParseResult::kBadFormat);
    CHECK(with([](Fields& f) { f.head[4] = 256; }) == ParseResult::kBadFormat);
    CHECK(with([](Fields& f) { f.head[5] = 0; }) == ParseResult::kBadFormat);
    // numFilters is 16 bits upstream: 65537 reads as 1.
    CHECK(with([](Fields& f) { f.head[0] = 65537; }) == ParseResult::kOk);
  }
  SECTION("sub-filters") {
    CHECK(with([](Fields& f) { f.buckets[0] = 8; }) == ParseResult::kBadFormat);
    CHECK(with([](Fields& f) { f.data[0] = std::string(7, '\0'); }) == ParseResult::kBadFormat);
    CHECK(with([](Fields& f) { f.data[0] = std::string(9, '\0'); }) == ParseResult::kBadFormat);
    CHECK(with([](Fields& f) {
            f.head[0] = 2;
            f.buckets = {4, 4};
            f.data = {std::string(8, '\0'), std::string(8, '\0')};
          }) == ParseResult::kOk);
    CHECK(with([](Fields& f) {
            f.head[0] = 2;
            f.head[6] = 2;  // expansion 2: the second has 8 buckets
            f.buckets = {4, 4};
            f.data = {std::string(8, '\0'), std::string(8, '\0')};
          }) == ParseResult::kBadFormat);
    CHECK(with([](Fields& f) { f.eof = 2; }) == ParseResult::kBadFormat);
  }
  SECTION("opcodes") {
    std::string b = Body(Build(Fields{}));
    // The first opcode (after the type byte and the 9-byte id) says "string" instead of "unsigned".
    b[10] = 5;
    CHECK(Parse(WithFooter(b)) == ParseResult::kBadFormat);
  }
  SECTION("limits") {
    rdb::Payload p;
    Limits small;
    small.max_filter_bytes = 4;
    CHECK(rdb::ParsePayload(Build(Fields{}), small, &p) == ParseResult::kBadFormat);
  }
  SECTION("int-encoded bucket bytes are read as their decimal text") {
    Fields f;
    f.head = {1, 1, 1, 0, 1, 20, 1};
    f.buckets = {1};
    f.data = {"7"};  // AppendString writes it as an int
    rdb::Payload p;
    REQUIRE(Parse(Build(f), &p) == ParseResult::kOk);
    CHECK(p.sub_filters[0].kind == rdb::EncodedString::Kind::kInt);
    CHECK(DecodeAll(p.sub_filters[0]) == "7");
  }
}

TEST_CASE("Encoding version 3 payloads take RedisBloom's defaults") {
  std::string b(1, static_cast<char>(rdb::kTypeModule2));
  rdb::AppendLength(&b, rdb::ModuleTypeId(rdb::kCuckooTypeName, 3));
  for (uint64_t v : {2, 4, 5}) {  // filters, buckets, items
    rdb::AppendLength(&b, 2);
    rdb::AppendLength(&b, v);
  }
  for (int i = 0; i < 2; ++i) {
    rdb::AppendLength(&b, 5);
    rdb::AppendString(&b, std::string(8, '\1'));
  }
  rdb::AppendLength(&b, 0);
  rdb::Payload p;
  REQUIRE(Parse(WithFooter(b), &p) == ParseResult::kOk);
  CHECK(p.filter.num_filters == 2);
  CHECK(p.filter.bucket_size == 2);
  CHECK(p.filter.max_iterations == 20);
  CHECK(p.filter.expansion == 1);
  CHECK(p.filter.num_deletes == 0);
}

TEST_CASE("Damaged LZF bytes inside a well-formed payload fail when decoded") {
  rdb::Payload p;
  REQUIRE(Parse(kTwoFilters, &p) == ParseResult::kOk);
  rdb::EncodedString s = p.sub_filters[1];
  std::string bytes(s.bytes);
  bytes.resize(bytes.size() - 3);
  s.bytes = bytes;
  std::string out;
  CHECK_FALSE(rdb::DecodeToString(s, &out));
  CHECK_FALSE(rdb::Decode(s, [](std::string_view) { return true; }));
}

TEST_CASE("An LZF string claiming more than its bytes can expand to is refused, not allocated") {
  rdb::EncodedString s;
  s.kind = rdb::EncodedString::Kind::kLzf;
  const std::string compressed =
      "\x02"
      "abc";  // a literal run of three bytes
  s.bytes = compressed;
  std::string out;
  SECTION("a length far beyond 88 bytes per compressed byte") {
    s.length = uint64_t{0x3016e5a289821405};
    CHECK_FALSE(rdb::DecodeToString(s, &out));
  }
  SECTION("the true length decodes") {
    s.length = 3;
    REQUIRE(rdb::DecodeToString(s, &out));
    CHECK(out == "abc");
  }
}
