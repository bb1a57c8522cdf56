// The on-disk format (storage/format.h): metadata records, key encodings, hash slots and page
// geometry. Pure functions, no database.
#include "storage/format.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace cuckood::storage;

namespace {

Metadata SampleFilter() {
  Metadata m;
  m.type = KeyType::kCuckoo;
  m.expire_ms = 0x0102030405060708ULL;
  m.version = 0x1122334455667788ULL;
  m.size = 123456789;
  auto& c = m.cuckoo;
  c.filter.num_items = 123456789;
  c.filter.num_deletes = 987654321;
  c.filter.num_filters = 65535;
  c.filter.expansion = 32768;
  c.filter.bucket_size = 255;
  c.filter.max_iterations = 500;
  c.filter.base_num_buckets = 1ULL << 40;
  c.base_capacity = 2'000'000'000'000ULL;
  c.page_size = 65536;
  c.owner = std::string("old\0name", 8);
  return m;
}

Metadata SampleString() {
  Metadata m;
  m.type = KeyType::kString;
  m.expire_ms = 1700000000000ULL;
  m.version = 42;
  m.value = std::string("va\0lue\xff", 7);
  m.size = m.value.size();
  return m;
}

std::string Bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) {
    out.push_back(static_cast<char>(v));
  }
  return out;
}

}  // namespace

TEST_CASE("metadata records round-trip through encode and decode", "[format]") {
  SECTION("a filter keeps every field, including the owner") {
    const Metadata m = SampleFilter();
    auto d = DecodeMetadata(EncodeMetadata(m));
    REQUIRE(d.has_value());
    CHECK(d->type == KeyType::kCuckoo);
    CHECK(d->expire_ms == m.expire_ms);
    CHECK(d->version == m.version);
    CHECK(d->size == 123456789);
    const auto& c = d->cuckoo;
    CHECK(c.filter.num_items == 123456789);
    CHECK(c.filter.num_deletes == 987654321);
    CHECK(c.filter.num_filters == 65535);
    CHECK(c.filter.expansion == 32768);
    CHECK(c.filter.bucket_size == 255);
    CHECK(c.filter.max_iterations == 500);
    CHECK(c.filter.base_num_buckets == (1ULL << 40));
    CHECK(c.base_capacity == 2'000'000'000'000ULL);
    CHECK(c.page_size == 65536);
    CHECK(c.owner == std::string("old\0name", 8));
  }
  SECTION("a filter without an owner decodes with an empty owner") {
    Metadata m = SampleFilter();
    m.cuckoo.owner.clear();
    auto d = DecodeMetadata(EncodeMetadata(m));
    REQUIRE(d.has_value());
    CHECK(d->cuckoo.owner.empty());
    CHECK(d->cuckoo.page_size == 65536);
  }
  SECTION("a string keeps its binary value, expiry and version") {
    const Metadata m = SampleString();
    auto d = DecodeMetadata(EncodeMetadata(m));
    REQUIRE(d.has_value());
    CHECK(d->type == KeyType::kString);
    CHECK(d->expire_ms == m.expire_ms);
    CHECK(d->version == 42);
    CHECK(d->size == 7);
    CHECK(d->value == m.value);
  }
  SECTION("an empty string value") {
    Metadata m = SampleString();
    m.value.clear();
    m.size = 0;
    auto d = DecodeMetadata(EncodeMetadata(m));
    REQUIRE(d.has_value());
    CHECK(d->value.empty());
    CHECK(d->size == 0);
  }
  SECTION("the layout is the documented one: version, type, then little-endian fields") {
    const std::string raw = EncodeMetadata(SampleString());
    REQUIRE(raw.size() == 1 + 1 + 8 + 8 + 8 + 7);
    CHECK(static_cast<uint8_t>(raw[0]) == kMetaFormatVersion);
    CHECK(static_cast<uint8_t>(raw[1]) == static_cast<uint8_t>(KeyType::kString));
    CHECK(raw.substr(2, 8) == Bytes({0x00, 0x68, 0xe5, 0xcf, 0x8b, 0x01, 0x00, 0x00}));
    CHECK(raw.substr(10, 8) == Bytes({42, 0, 0, 0, 0, 0, 0, 0}));
    CHECK(raw.substr(18, 8) == Bytes({7, 0, 0, 0, 0, 0, 0, 0}));
    const std::string filter = EncodeMetadata(SampleFilter());
    // 26 common bytes + 40 cuckoo bytes + the owner.
    CHECK(filter.size() == 26 + 40 + 8);
  }
}

TEST_CASE("malformed metadata records decode to nullopt", "[format]") {
  SECTION("every truncation of a filter record") {
    const std::string raw = EncodeMetadata(SampleFilter());
    for (size_t n = 0; n < raw.size(); ++n) {
      INFO("prefix length " << n);
      CHECK_FALSE(DecodeMetadata(raw.substr(0, n)).has_value());
    }
  }
  SECTION("every truncation of a string record") {
    const std::string raw = EncodeMetadata(SampleString());
    for (size_t n = 0; n < raw.size(); ++n) {
      INFO("prefix length " << n);
      CHECK_FALSE(DecodeMetadata(raw.substr(0, n)).has_value());
    }
  }
  SECTION("trailing bytes after a filter or string record") {
    CHECK_FALSE(DecodeMetadata(EncodeMetadata(SampleFilter()) + "x").has_value());
    CHECK_FALSE(DecodeMetadata(EncodeMetadata(SampleString()) + "x").has_value());
  }
  SECTION("a wrong format version") {
    for (int version : {0, 2, 255}) {
      std::string raw = EncodeMetadata(SampleFilter());
      raw[0] = static_cast<char>(version);
      CHECK_FALSE(DecodeMetadata(raw).has_value());
    }
  }
  SECTION("an unknown type") {
    for (int type : {0, 3, 255}) {
      std::string raw = EncodeMetadata(SampleString());
      raw[1] = static_cast<char>(type);
      CHECK_FALSE(DecodeMetadata(raw).has_value());
    }
  }
  SECTION("a filter with a zero field that must be positive") {
    Metadata m = SampleFilter();
    SECTION("num_filters") {
      m.cuckoo.filter.num_filters = 0;
    }
    SECTION("bucket_size") {
      m.cuckoo.filter.bucket_size = 0;
    }
    SECTION("base_num_buckets") {
      m.cuckoo.filter.base_num_buckets = 0;
    }
    SECTION("page_size") {
      m.cuckoo.page_size = 0;
    }
    CHECK_FALSE(DecodeMetadata(EncodeMetadata(m)).has_value());
  }
  SECTION("an owner length that runs past the end") {
    std::string raw = EncodeMetadata(SampleFilter());
    // The owner length field sits just before the 8 owner bytes.
    raw[raw.size() - 8 - 4] = 9;
    CHECK_FALSE(DecodeMetadata(raw).has_value());
  }
}

TEST_CASE("PeekExpire reads only the expiry field", "[format]") {
  uint64_t expire = 7;
  SECTION("of a filter and of a string") {
    REQUIRE(PeekExpire(EncodeMetadata(SampleFilter()), &expire));
    CHECK(expire == 0x0102030405060708ULL);
    REQUIRE(PeekExpire(EncodeMetadata(SampleString()), &expire));
    CHECK(expire == 1700000000000ULL);
  }
  SECTION("no expiry reads as 0") {
    Metadata m = SampleString();
    m.expire_ms = 0;
    REQUIRE(PeekExpire(EncodeMetadata(m), &expire));
    CHECK(expire == 0);
  }
  SECTION("a record cut right after the expiry is still readable; one byte less is not") {
    const std::string raw = EncodeMetadata(SampleString());
    CHECK(PeekExpire(raw.substr(0, 10), &expire));
    CHECK(expire == 1700000000000ULL);
    CHECK_FALSE(PeekExpire(raw.substr(0, 9), &expire));
    CHECK_FALSE(PeekExpire("", &expire));
  }
  SECTION("a wrong format version") {
    std::string raw = EncodeMetadata(SampleString());
    raw[0] = 2;
    CHECK_FALSE(PeekExpire(raw, &expire));
  }
}

TEST_CASE("Metadata::Expired treats 0 as never and the expiry instant as expired", "[format]") {
  Metadata m;
  CHECK_FALSE(m.Expired(std::numeric_limits<uint64_t>::max()));
  m.expire_ms = 1000;
  CHECK_FALSE(m.Expired(999));
  CHECK(m.Expired(1000));
  CHECK(m.Expired(1001));
}

TEST_CASE("TypeName gives Redis's TYPE names", "[format]") {
  CHECK(TypeName(KeyType::kString) == "string");
  CHECK(TypeName(KeyType::kCuckoo) == "MBbloomCF");
}

TEST_CASE("KeySlot matches Redis Cluster's hash slots", "[format]") {
  SECTION("known values") {
    CHECK(KeySlot("foo") == 12182);
    CHECK(KeySlot("bar") == 5061);
    CHECK(KeySlot("123456789") == 12739);  // CRC16-XMODEM check value 0x31C3
    CHECK(KeySlot("") == 0);
  }
  SECTION("a non-empty hash tag picks the slot") {
    CHECK(KeySlot("{user1000}.following") == KeySlot("{user1000}.followers"));
    CHECK(KeySlot("{user1000}.following") == KeySlot("user1000"));
    CHECK(KeySlot("{user1000}.following") == 3443);
    CHECK(KeySlot("foo{bar}{zap}") == KeySlot("bar"));
    CHECK(KeySlot("foo{{bar}}zap") == KeySlot("{bar"));
    CHECK(KeySlot("}{a}") == KeySlot("a"));
  }
  SECTION("an empty or unterminated hash tag hashes the whole key") {
    CHECK(KeySlot("{}") == 15257);
    CHECK(KeySlot("foo{}{bar}") == 8363);
    CHECK(KeySlot("a{") == 14311);
    CHECK(KeySlot("foo{}{bar}") != KeySlot("bar"));
  }
  SECTION("the slot remembered for the thread's last key is that key's") {
    // Repeats, keys that differ in one byte, in length only, keys with a zero byte and keys too
    // long to be remembered, in turn.
    const std::string long_a(100, 'a');
    std::string long_b = long_a;
    long_b[99] = 'b';
    const std::vector<std::string> keys = {"mk:1",
                                           "mk:1",
                                           "mk:2",
                                           "mk:1",
                                           "mk:10",
                                           "mk:1",
                                           "",
                                           "",
                                           long_a,
                                           long_b,
                                           long_a,
                                           "a",
                                           "a",
                                           "{mk}1",
                                           "{mk}2",
                                           std::string("z\0y", 3),
                                           std::string("z\0x", 3)};
    for (int round = 0; round < 2; ++round) {
      for (const auto& k : keys) {
        CHECK(KeySlot(k) == ComputeKeySlot(k));
      }
    }
    CHECK(KeySlot(std::string("z\0y", 3)) != KeySlot(std::string("z\0x", 3)));
  }
  SECTION("slots are below 16384") {
    for (int i = 0; i < 2000; ++i) {
      CHECK(KeySlot("key:" + std::to_string(i)) < 16384);
    }
  }
}

TEST_CASE("metadata keys are ns, slot (both big-endian) and the user key", "[format]") {
  const std::string k = EncodeMetaKey(0x0102, "foo");
  CHECK(k == Bytes({0x01, 0x02, 12182 >> 8, 12182 & 0xff}) + "foo");
  uint16_t ns = 0;
  std::string_view key;
  REQUIRE(DecodeMetaKey(k, &ns, &key));
  CHECK(ns == 0x0102);
  CHECK(key == "foo");

  SECTION("the empty key") {
    REQUIRE(DecodeMetaKey(EncodeMetaKey(7, ""), &ns, &key));
    CHECK(ns == 7);
    CHECK(key.empty());
  }
  SECTION("too short") {
    CHECK_FALSE(DecodeMetaKey(std::string(3, '\0'), &ns, &key));
  }
  SECTION("namespaces sort apart, lower first") {
    CHECK(EncodeMetaKey(0, "zzz") < EncodeMetaKey(1, "a"));
    CHECK(EncodeMetaKey(255, "zzz") < EncodeMetaKey(256, "a"));
  }
}

TEST_CASE("page keys sort one key's pages together, filter by filter, page by page", "[format]") {
  SECTION("the layout is the documented one") {
    const std::string prefix = EncodePagePrefix(0x0102, "foo", 0x0a0b0c0d0e0f1011ULL);
    CHECK(prefix == Bytes({0x01, 0x02, 12182 >> 8, 12182 & 0xff, 0, 0, 0, 3}) + "foo" +
                        Bytes({0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11}));
    CHECK(EncodePageKey(prefix, 0x0203, 0x04050607) ==
          prefix + Bytes({0x02, 0x03, 0x04, 0x05, 0x06, 0x07}));
  }
  SECTION("big-endian order of (filter, page)") {
    const std::string prefix = EncodePagePrefix(0, "k", 5);
    const std::vector<std::pair<uint16_t, uint32_t>> order = {
        {0, 0}, {0, 1}, {0, 255}, {0, 256}, {0, 65535}, {0, 65536}, {0, 0xffffffff},
        {1, 0}, {1, 7}, {255, 0}, {256, 0}, {256, 1},   {65535, 0}, {65535, 0xffffffff}};
    std::vector<std::string> keys;
    for (auto [f, p] : order) {
      keys.push_back(EncodePageKey(prefix, f, p));
    }
    CHECK(std::is_sorted(keys.begin(), keys.end()));
    CHECK(std::adjacent_find(keys.begin(), keys.end()) == keys.end());
  }
  SECTION("versions of one key sort in version order and do not interleave") {
    const std::string v1 = EncodePagePrefix(0, "k", 255);
    const std::string v2 = EncodePagePrefix(0, "k", 256);
    CHECK(EncodePageKey(v1, 65535, 0xffffffff) < EncodePageKey(v2, 0, 0));
  }
  SECTION("keys of different lengths in one slot do not interleave") {
    // Same hash tag, so same slot: only the length field keeps them apart.
    REQUIRE(KeySlot("{t}a") == KeySlot("{t}ab"));
    const std::string short_key = EncodePagePrefix(0, "{t}a", UINT64_MAX);
    const std::string long_key = EncodePagePrefix(0, "{t}ab", 0);
    CHECK(EncodePageKey(short_key, 65535, 0xffffffff) < EncodePageKey(long_key, 0, 0));
    // And neither prefix is a prefix of the other's pages.
    const std::string short_v0 = EncodePagePrefix(0, "{t}a", 0);
    CHECK(EncodePageKey(long_key, 0, 0).compare(0, short_v0.size(), short_v0) != 0);
    // Without the length field "{t}a" + version bytes starting with 'b' would sit inside
    // "{t}ab"'s range; with it, every version of "{t}a" stays below.
    const std::string tricky = EncodePagePrefix(0, "{t}a", 0x6200000000000000ULL);
    CHECK(EncodePageKey(tricky, 0, 0) < EncodePageKey(long_key, 0, 0));
  }
  SECTION("pages of one key sit inside their namespace") {
    CHECK(EncodePageKey(EncodePagePrefix(0, "zzz", UINT64_MAX), 65535, 0xffffffff) <
          EncodePageKey(EncodePagePrefix(1, "", 0), 0, 0));
  }
}

TEST_CASE("DecodePageKey inverts EncodePageKey", "[format]") {
  const std::string owner("own\0er{x}", 9);
  const std::string key =
      EncodePageKey(EncodePagePrefix(0xfffe, owner, 0xdeadbeefcafeULL), 65534, 0xfffffffe);
  PageKeyParts parts;
  REQUIRE(DecodePageKey(key, &parts));
  CHECK(parts.ns == 0xfffe);
  CHECK(parts.owner == owner);
  CHECK(parts.version == 0xdeadbeefcafeULL);
  CHECK(parts.filter == 65534);
  CHECK(parts.page == 0xfffffffe);

  SECTION("an empty owner") {
    REQUIRE(DecodePageKey(EncodePageKey(EncodePagePrefix(3, "", 9), 1, 2), &parts));
    CHECK(parts.ns == 3);
    CHECK(parts.owner.empty());
    CHECK(parts.version == 9);
    CHECK(parts.filter == 1);
    CHECK(parts.page == 2);
  }
  SECTION("a length that disagrees with the key") {
    CHECK_FALSE(DecodePageKey(key.substr(0, key.size() - 1), &parts));
    CHECK_FALSE(DecodePageKey(key + "x", &parts));
    CHECK_FALSE(DecodePageKey(key.substr(0, 7), &parts));
    CHECK_FALSE(DecodePageKey("", &parts));
  }
}

TEST_CASE("alias keys are distinct per namespace, owner and version", "[format]") {
  const std::string a = EncodeAliasKey(0, "k", 1);
  CHECK(a[0] == kAliasPrefix);
  CHECK(a != EncodeAliasKey(1, "k", 1));
  CHECK(a != EncodeAliasKey(0, "k", 2));
  CHECK(a != EncodeAliasKey(0, "kk", 1));
  // Never collides with the version high-water mark record.
  CHECK(a.substr(0, kVersionReservedKey.size()) != kVersionReservedKey);
}

TEST_CASE("PageGeometry places buckets in pages", "[format]") {
  SECTION("the default: 2048-byte pages of 2-slot buckets") {
    PageGeometry g(2048, 2);
    CHECK(g.buckets_per_page == 1024);
    CHECK(g.page_bytes == 2048);
    CHECK(g.PageOf(0) == 0);
    CHECK(g.PageOf(1023) == 0);
    CHECK(g.PageOf(1024) == 1);
    CHECK(g.PageLength(0, 4096) == 2048);
    CHECK(g.PageLength(3, 4096) == 2048);
    CHECK(g.PageLength(4, 4096) == 0);
  }
  SECTION("a page size that is not a multiple of the bucket size rounds down") {
    PageGeometry g(64, 3);
    CHECK(g.buckets_per_page == 21);
    CHECK(g.page_bytes == 63);
    CHECK(g.PageOf(20) == 0);
    CHECK(g.PageOf(21) == 1);
  }
  SECTION("the last page of a sub-filter is short") {
    PageGeometry g(64, 3);
    // 64 buckets: pages 0-2 hold 21 buckets each, page 3 holds bucket 63 alone.
    CHECK(g.PageLength(0, 64) == 63);
    CHECK(g.PageLength(2, 64) == 63);
    CHECK(g.PageLength(3, 64) == 3);
    CHECK(g.PageLength(4, 64) == 0);
    CHECK(g.PageOf(63) == 3);
  }
  SECTION("a sub-filter smaller than one page is one short page") {
    PageGeometry g(2048, 4);
    CHECK(g.PageLength(0, 8) == 32);
    CHECK(g.PageLength(1, 8) == 0);
  }
  SECTION("a bucket larger than the page takes a page of its own") {
    PageGeometry g(64, 200);
    CHECK(g.buckets_per_page == 1);
    CHECK(g.page_bytes == 200);
    CHECK(g.PageOf(5) == 5);
    CHECK(g.PageLength(5, 6) == 200);
    CHECK(g.PageLength(6, 6) == 0);
  }
  SECTION("bucket size equal to the page size") {
    PageGeometry g(64, 64);
    CHECK(g.buckets_per_page == 1);
    CHECK(g.page_bytes == 64);
  }
}

TEST_CASE("EffectiveMaxFilterBytes keeps page indices within u32", "[format]") {
  SECTION("the server limit wins when it is lower") {
    CHECK(EffectiveMaxFilterBytes(1ULL << 36, 2048, 2) == (1ULL << 36));
    CHECK(EffectiveMaxFilterBytes(1000, 64, 1) == 1000);
  }
  SECTION("the page-index cap wins when it is lower") {
    // 64-byte pages of 1-byte buckets: at most 2^32 pages of 64 bytes.
    CHECK(EffectiveMaxFilterBytes(UINT64_MAX, 64, 1) == (64ULL << 32));
    CHECK(EffectiveMaxFilterBytes(1ULL << 40, 64, 3) == (63ULL << 32));
  }
  SECTION("the largest allowed sub-filter's last bucket is on page 2^32 - 1 at most") {
    // cf-page-size ranges over [64, 1 MiB]; bucket sizes over [1, 255].
    for (uint32_t page_size : {64U, 100U, 2048U, 4096U, 65536U, 1U << 20}) {
      for (uint16_t bucket_size : {1, 2, 3, 4, 7, 64, 100, 255}) {
        INFO("page_size " << page_size << " bucket_size " << bucket_size);
        PageGeometry g(page_size, bucket_size);
        const uint64_t bytes = EffectiveMaxFilterBytes(UINT64_MAX, page_size, bucket_size);
        const uint64_t buckets = bytes / bucket_size;
        REQUIRE(buckets > 0);
        CHECK(g.PageOf(buckets - 1) <= 0xffffffffULL);
        // And the cap is tight: one more page of buckets would overflow the index.
        CHECK(g.PageOf(buckets - 1 + g.buckets_per_page) > 0xffffffffULL);
      }
    }
  }
}

TEST_CASE("SetPageKeySuffix rewrites a page key as EncodePageKey builds it", "[format]") {
  const std::string prefix = EncodePagePrefix(3, "some filter", 77);
  std::string key = EncodePageKey(prefix, 0, 0);
  for (auto [f, page] : {std::pair<uint16_t, uint32_t>{0, 1},
                         {1, 0},
                         {258, 0x01020304},
                         {65535, 0xffffffff},
                         {7, 300}}) {
    SetPageKeySuffix(&key, f, page);
    CHECK(key == EncodePageKey(prefix, f, page));
  }
}
