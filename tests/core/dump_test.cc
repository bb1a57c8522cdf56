// SCANDUMP / LOADCHUNK codec (reference §3): header bytes and validation, iterator arithmetic,
// and dump -> load round trips through the in-memory storage.
#include "core/dump.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>

#include "memory_access.h"

using namespace cuckood::core;
using cuckood::core::testing::TestFilter;

namespace {

constexpr uint64_t kMiB = 1024 * 1024;

std::string Bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) {
    out.push_back(static_cast<char>(v));
  }
  return out;
}

// A 38-byte header from its fields.
std::string Header(uint64_t items, uint64_t buckets, uint64_t deletes, uint64_t filters,
                   uint16_t bucket_size, uint16_t max_iterations, uint16_t expansion) {
  FilterMeta m;
  m.num_items = items;
  m.base_num_buckets = buckets;
  m.num_deletes = deletes;
  m.num_filters = 1;
  m.bucket_size = bucket_size;
  m.max_iterations = max_iterations;
  m.expansion = expansion;
  std::string h = EncodeHeader(m);
  for (int i = 0; i < 8; ++i) {  // numFilters is a u64 on the wire
    h[24 + static_cast<size_t>(i)] = static_cast<char>(static_cast<uint8_t>(filters >> (8 * i)));
  }
  return h;
}

FilterMeta Meta(uint64_t buckets, uint16_t bucket_size, uint16_t expansion, uint32_t filters) {
  FilterMeta m;
  m.base_num_buckets = buckets;
  m.bucket_size = bucket_size;
  m.expansion = expansion;
  m.num_filters = filters;
  return m;
}

// Dumps `src` chunk by chunk (as SCANDUMP would) and loads every chunk into a new filter (as
// LOADCHUNK would). Also checks that re-dumping the copy gives the same iterators and bytes.
TestFilter RoundTrip(TestFilter& src) {
  const std::string header = EncodeHeader(src.meta);
  REQUIRE(header.size() == kHeaderSize);
  const auto meta = DecodeHeader(header, src.limits);
  REQUIRE(meta.has_value());
  TestFilter dst(*meta);
  int64_t iter = 1;
  while (const auto range = DumpRange(src.meta, iter)) {
    const std::string data = src.access.ReadBytes(range->filter, range->offset, range->length);
    const auto target = LoadRange(dst.meta, range->next_iter, data.size());
    REQUIRE(target.has_value());
    CHECK(target->filter == range->filter);
    CHECK(target->offset == range->offset);
    dst.access.WriteBytes(target->filter, target->offset, data);
    iter = range->next_iter;
  }
  // Same header and same chunks when dumped again.
  CHECK(EncodeHeader(dst.meta) == header);
  iter = 1;
  while (const auto range = DumpRange(src.meta, iter)) {
    const auto again = DumpRange(dst.meta, iter);
    REQUIRE(again.has_value());
    CHECK(again->next_iter == range->next_iter);
    CHECK(dst.access.ReadBytes(again->filter, again->offset, again->length) ==
          src.access.ReadBytes(range->filter, range->offset, range->length));
    iter = range->next_iter;
  }
  CHECK_FALSE(DumpRange(dst.meta, iter).has_value());
  return dst;
}

}  // namespace

TEST_CASE("SCANDUMP example: CF.RESERVE cf 8 then CF.ADD cf item1", "[dump]") {
  TestFilter t(TestFilter::Reserve(8));
  REQUIRE(t.Add("item1") == InsertResult::kInserted);
  CHECK(EncodeHeader(t.meta) == Bytes({1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0,
                                       0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 20, 0, 1, 0}));
  const auto chunk = DumpRange(t.meta, 1);
  REQUIRE(chunk.has_value());
  CHECK(chunk->filter == 0);
  CHECK(chunk->offset == 0);
  CHECK(chunk->length == 8);
  CHECK(chunk->next_iter == 9);
  CHECK(t.access.ReadBytes(0, chunk->offset, chunk->length) == Bytes({0, 0, 0, 0, 7, 0, 0, 0}));
  CHECK_FALSE(DumpRange(t.meta, 9).has_value());
}

TEST_CASE("DumpRange answers a position inside a small sub-filter with the whole sub-filter",
          "[dump]") {
  const FilterMeta m = Meta(4, 2, 1, 1);  // one 8-byte sub-filter
  for (int64_t iter = 1; iter <= 8; ++iter) {
    const auto r = DumpRange(m, iter);
    REQUIRE(r.has_value());
    CHECK(r->offset == 0);
    CHECK(r->length == 8);
    CHECK(r->next_iter == iter + 8);
  }
  CHECK_FALSE(DumpRange(m, 9).has_value());
  CHECK_FALSE(DumpRange(m, 0).has_value());
  CHECK_FALSE(DumpRange(m, -1).has_value());
  CHECK_FALSE(DumpRange(m, std::numeric_limits<int64_t>::min()).has_value());
  CHECK_FALSE(DumpRange(m, std::numeric_limits<int64_t>::max()).has_value());
}

TEST_CASE("DumpRange walks sub-filters in order, one chunk never spanning two", "[dump]") {
  const FilterMeta m = Meta(4, 2, 2, 3);  // 8, 16 and 32 bytes
  auto r = DumpRange(m, 1);
  REQUIRE(r.has_value());
  CHECK((r->filter == 0 && r->length == 8 && r->next_iter == 9));
  r = DumpRange(m, 9);
  REQUIRE(r.has_value());
  CHECK((r->filter == 1 && r->offset == 0 && r->length == 16 && r->next_iter == 25));
  r = DumpRange(m, 25);
  REQUIRE(r.has_value());
  CHECK((r->filter == 2 && r->length == 32 && r->next_iter == 57));
  CHECK_FALSE(DumpRange(m, 57).has_value());
  r = DumpRange(m, 12);  // inside sub-filter 1: the whole of it, next counted from 12
  REQUIRE(r.has_value());
  CHECK((r->filter == 1 && r->offset == 0 && r->length == 16 && r->next_iter == 28));
}

TEST_CASE("A 64 MiB filter is dumped in 16 MiB pieces (upstream scandump_huge)", "[dump]") {
  TestFilter t(TestFilter::Reserve(67108864));
  REQUIRE(SubFilterBytes(t.meta, 0) == 64 * kMiB);
  for (int i = 0; i < 6; ++i) {
    REQUIRE(t.Add("foo") == InsertResult::kInserted);
  }
  REQUIRE(t.meta.num_filters == 2);
  const int64_t expected[] = {16777217, 33554433,  50331649,  67108865,
                              83886081, 100663297, 117440513, 134217729};
  int64_t iter = 1;
  for (size_t k = 0; k < 8; ++k) {
    const auto r = DumpRange(t.meta, iter);
    REQUIRE(r.has_value());
    CHECK(r->filter == k / 4);
    CHECK(r->offset == (k % 4) * 16 * kMiB);
    CHECK(r->length == 16 * kMiB);
    CHECK(r->next_iter == expected[k]);
    iter = r->next_iter;
  }
  CHECK_FALSE(DumpRange(t.meta, iter).has_value());

  TestFilter copy = RoundTrip(t);
  CHECK(copy.Has("foo"));
  CHECK(copy.CountOf("foo") == 6);
}

TEST_CASE("DumpRange inside a large sub-filter starts at the position", "[dump]") {
  const FilterMeta m = Meta(1ULL << 25, 2, 1, 1);  // 64 MiB
  auto r = DumpRange(m, 5);
  REQUIRE(r.has_value());
  CHECK(r->offset == 4);
  CHECK(r->length == 16 * kMiB);
  CHECK(r->next_iter == 5 + static_cast<int64_t>(16 * kMiB));
  r = DumpRange(m, static_cast<int64_t>(64 * kMiB) - 9);  // last 10 bytes
  REQUIRE(r.has_value());
  CHECK(r->offset == 64 * kMiB - 10);
  CHECK(r->length == 10);
  CHECK(r->next_iter == static_cast<int64_t>(64 * kMiB) + 1);
  // 16 MiB exactly still goes whole.
  const FilterMeta exact = Meta(8 * kMiB, 2, 1, 1);
  r = DumpRange(exact, 100);
  REQUIRE(r.has_value());
  CHECK((r->offset == 0 && r->length == 16 * kMiB));
}

TEST_CASE("DumpRange near INT64_MAX ends the scan instead of overflowing", "[dump]") {
  const FilterMeta m = Meta(1ULL << 55, 255, 1, 2);  // two sub-filters of ~2^63 bytes
  const int64_t max = std::numeric_limits<int64_t>::max();
  CHECK_FALSE(DumpRange(m, max).has_value());
  const auto r = DumpRange(m, max - static_cast<int64_t>(16 * kMiB));
  REQUIRE(r.has_value());
  CHECK(r->next_iter == max);
}

TEST_CASE("LoadRange rejects empty chunks, positions <= 0 and positions before the chunk",
          "[dump]") {
  const FilterMeta m = Meta(4, 2, 1, 1);
  CHECK_FALSE(LoadRange(m, 9, 0).has_value());
  CHECK_FALSE(LoadRange(m, 0, 1).has_value());
  CHECK_FALSE(LoadRange(m, -1, 1).has_value());
  CHECK_FALSE(LoadRange(m, std::numeric_limits<int64_t>::min(), 1).has_value());
  CHECK_FALSE(LoadRange(m, 1, 1).has_value());  // p - 1 < n
  CHECK_FALSE(LoadRange(m, 8, 8).has_value());  // p - 1 = 7 < 8
  const auto r = LoadRange(m, 9, 8);            // p - 1 = n: start 0
  REQUIRE(r.has_value());
  CHECK((r->filter == 0 && r->offset == 0 && r->length == 8));
  CHECK_FALSE(LoadRange(m, 10, 8).has_value());  // start 1: does not fit
  CHECK_FALSE(
      LoadRange(m, std::numeric_limits<int64_t>::max(), std::numeric_limits<uint64_t>::max())
          .has_value());
}

TEST_CASE("LoadRange places the chunk ending just before the iterator", "[dump]") {
  const FilterMeta m = Meta(4, 2, 2, 2);  // 8 + 16 bytes
  auto r = LoadRange(m, 25, 16);
  REQUIRE(r.has_value());
  CHECK((r->filter == 1 && r->offset == 0 && r->length == 16));
  r = LoadRange(m, 7, 3);  // bytes 3..5 of sub-filter 0
  REQUIRE(r.has_value());
  CHECK((r->filter == 0 && r->offset == 3));
  CHECK_FALSE(LoadRange(m, 13, 8).has_value());  // would span sub-filters 0 and 1
  r = LoadRange(m, 13, 3);                       // start 9: sub-filter 1, offset 1
  REQUIRE(r.has_value());
  CHECK((r->filter == 1 && r->offset == 1));
}

TEST_CASE("LoadRange applies a start beyond the end to the last sub-filter", "[dump]") {
  SECTION("one 8-byte sub-filter: iterator 17 with 1 byte writes byte 7") {
    const FilterMeta m = Meta(4, 2, 1, 1);
    const auto r = LoadRange(m, 17, 1);
    REQUIRE(r.has_value());
    CHECK((r->filter == 0 && r->offset == 7 && r->length == 1));
    CHECK_FALSE(LoadRange(m, 18, 1).has_value());  // reduced start 8 does not fit
    const auto two = LoadRange(m, 17, 2);          // start 14 -> 6: bytes 6..7
    REQUIRE(two.has_value());
    CHECK((two->filter == 0 && two->offset == 6));
  }
  SECTION("several sub-filters: reduced by every size") {
    const FilterMeta m = Meta(4, 2, 2, 2);  // 8 + 16
    const auto r = LoadRange(m, 32, 1);     // start 30 -> 22 -> 6 in the last sub-filter
    REQUIRE(r.has_value());
    CHECK((r->filter == 1 && r->offset == 6));
  }
}

TEST_CASE("LoadRange near INT64_MAX in huge sub-filters does not overflow", "[dump]") {
  const FilterMeta m = Meta(1ULL << 55, 255, 1, 2);
  const int64_t max = std::numeric_limits<int64_t>::max();
  const auto r = LoadRange(m, max, 1);
  REQUIRE(r.has_value());
  CHECK(r->filter == 1);
  CHECK(r->offset == static_cast<uint64_t>(max) - 2 - SubFilterBytes(m, 0));
}

TEST_CASE("Headers round-trip every field", "[dump][header]") {
  FilterMeta m;
  m.num_items = 0x0102030405060708ULL;
  m.base_num_buckets = 1ULL << 20;
  m.num_deletes = 0xfffffffffffffff0ULL;
  m.num_filters = 3;
  m.bucket_size = 255;
  m.max_iterations = 65535;
  m.expansion = 4;
  const std::string h = EncodeHeader(m);
  REQUIRE(h.size() == kHeaderSize);
  CHECK(h.substr(0, 8) == Bytes({8, 7, 6, 5, 4, 3, 2, 1}));
  CHECK(h.substr(32, 6) == Bytes({255, 0, 255, 255, 4, 0}));
  Limits big;
  big.max_filter_bytes = UINT64_MAX;
  const auto back = DecodeHeader(h, big);
  REQUIRE(back.has_value());
  CHECK(back->num_items == m.num_items);
  CHECK(back->base_num_buckets == m.base_num_buckets);
  CHECK(back->num_deletes == m.num_deletes);
  CHECK(back->num_filters == m.num_filters);
  CHECK(back->bucket_size == m.bucket_size);
  CHECK(back->max_iterations == m.max_iterations);
  CHECK(back->expansion == m.expansion);
}

TEST_CASE("Header validation follows RedisBloom 2.8", "[dump][header]") {
  const Limits limits;
  auto ok = [&](const std::string& h) { return DecodeHeader(h, limits).has_value(); };
  // Upstream unit test "validation".
  CHECK(ok(Header(0, 16, 0, 2, 2, 20, 1)));
  CHECK(ok(Header(0, 16, 0, 1, 2, 20, 0)));
  for (uint64_t filters = 2; filters <= 5; ++filters) {
    CHECK_FALSE(ok(Header(0, 16, 0, filters, 2, 20, 0)));
  }
  CHECK_FALSE(ok(Header(0, 0, 0, 1, 2, 20, 1)));   // numBuckets 0 (upstream invalid_header)
  CHECK_FALSE(ok(Header(0, 15, 0, 1, 2, 20, 1)));  // not a power of two
  // Bucket size 1..255.
  CHECK_FALSE(ok(Header(1, 16, 0, 1, 0, 20, 1)));
  CHECK(ok(Header(1, 16, 0, 1, 1, 20, 1)));
  CHECK(ok(Header(1, 16, 0, 1, 255, 20, 1)));
  CHECK_FALSE(ok(Header(1, 16, 0, 1, 256, 20, 1)));
  // Max iterations must not be 0; any u16 otherwise.
  CHECK_FALSE(ok(Header(1, 16, 0, 1, 2, 0, 1)));
  CHECK(ok(Header(1, 16, 0, 1, 2, 65535, 1)));
  // numFilters is truncated to u16 before the 1..65535 check.
  CHECK_FALSE(ok(Header(1, 16, 0, 0, 2, 20, 1)));
  CHECK(ok(Header(1, 16, 0, 65535, 2, 20, 1)));
  CHECK_FALSE(ok(Header(1, 16, 0, 65536, 2, 20, 1)));
  const auto wrapped = DecodeHeader(Header(1, 16, 0, 65537, 2, 20, 1), limits);
  REQUIRE(wrapped.has_value());
  CHECK(wrapped->num_filters == 1);
  // No upper bound on expansion and no power-of-two requirement.
  const auto odd = DecodeHeader(Header(1, 4, 0, 2, 2, 20, 3), limits);
  REQUIRE(odd.has_value());
  CHECK(odd->expansion == 3);
  CHECK(SubFilterBuckets(*odd, 1) == 12);
  CHECK(ok(Header(1, 4, 0, 2, 2, 20, 65535)));
  CHECK_FALSE(ok(Header(1, 512, 0, 5, 2, 20, 32768)));  // sub-filter 4 overflows
  // Counters are not checked.
  CHECK(ok(Header(UINT64_MAX, 16, UINT64_MAX, 1, 2, 20, 1)));
  // Wrong sizes never decode.
  CHECK_FALSE(DecodeHeader(Header(0, 16, 0, 1, 2, 20, 1).substr(0, 37), limits).has_value());
  CHECK_FALSE(DecodeHeader(Header(0, 16, 0, 1, 2, 20, 1) + "x", limits).has_value());
}

TEST_CASE("Header validation caps bucket counts and sub-filter bytes", "[dump][header]") {
  Limits unlimited;
  unlimited.max_filter_bytes = UINT64_MAX;
  CHECK_FALSE(DecodeHeader(Header(0, 1ULL << 56, 0, 1, 1, 1, 1), unlimited).has_value());
  CHECK(DecodeHeader(Header(0, 1ULL << 55, 0, 1, 1, 1, 1), unlimited).has_value());
  CHECK_FALSE(DecodeHeader(Header(0, 1ULL << 41, 0, 2, 1, 1, 32768), unlimited).has_value());
  const Limits defaults;
  CHECK(DecodeHeader(Header(0, 1ULL << 32, 0, 1, 1, 1, 1), defaults).has_value());  // 4 GiB
  CHECK_FALSE(DecodeHeader(Header(0, 1ULL << 48, 0, 1, 2, 20, 1), defaults).has_value());
  Limits small;
  small.max_filter_bytes = 2048;
  CHECK(DecodeHeader(Header(0, 1024, 0, 1, 2, 20, 1), small).has_value());  // 2048 bytes
  CHECK_FALSE(DecodeHeader(Header(0, 2048, 0, 1, 2, 20, 1), small).has_value());
  CHECK(DecodeHeader(Header(0, 512, 0, 2, 2, 20, 2), small).has_value());  // 1024 + 2048
  CHECK_FALSE(DecodeHeader(Header(0, 512, 0, 3, 2, 20, 2), small).has_value());
}

TEST_CASE("Dump and load reproduce filters byte for byte", "[dump][roundtrip]") {
  struct Case {
    uint64_t capacity;
    uint16_t bucket_size;
    uint16_t expansion;
    int items;
  };
  for (const Case& c : {Case{62, 2, 1, 500}, Case{62, 2, 2, 500}, Case{100, 1, 4, 300},
                        Case{1000, 7, 1, 2000}, Case{8, 255, 1, 600}, Case{4, 2, 0, 3}}) {
    INFO("capacity " << c.capacity << " bucket size " << c.bucket_size);
    TestFilter t(TestFilter::Reserve(c.capacity, c.bucket_size, 20, c.expansion));
    for (int i = 0; i < c.items; ++i) {
      const auto r = t.Add("x" + std::to_string(i));
      REQUIRE((r == InsertResult::kInserted || r == InsertResult::kFull));
    }
    for (int i = 0; i < c.items; i += 7) {
      t.Del("x" + std::to_string(i));
    }
    TestFilter copy = RoundTrip(t);
    CHECK(copy.access.NonEmptySlots() == t.access.NonEmptySlots());
    CHECK(copy.meta.num_items == t.meta.num_items);
    CHECK(copy.meta.num_deletes == t.meta.num_deletes);
    for (int i = 1; i < c.items; i += 7) {
      CHECK(copy.Has("x" + std::to_string(i)) == t.Has("x" + std::to_string(i)));
    }
  }
}

TEST_CASE("A header with an odd expansion round-trips its uneven sub-filters",
          "[dump][roundtrip]") {
  const auto meta = DecodeHeader(Header(5, 4, 0, 3, 2, 20, 3), Limits{});
  REQUIRE(meta.has_value());
  TestFilter t(*meta);
  for (uint32_t f = 0; f < 3; ++f) {
    t.access.SetSlot(f, SubFilterBuckets(*meta, f) - 1, 1, static_cast<uint8_t>(f + 1));
  }
  TestFilter copy = RoundTrip(t);
  CHECK(copy.access.Slot(2, 35, 1) == 3);
  CHECK(copy.access.NonEmptySlots() == 3);
}
