// The persisted records of storage/format.h on arbitrary bytes: every decoder runs on every input
// (a metadata value, a page key, a metadata key), so the seed corpus holds real records of each.
//
// Invariants:
// - no crash, no sanitizer report;
// - DecodeMetadata accepts only canonical records: EncodeMetadata of the result gives the input
//   back byte for byte, and decodes to the same fields;
// - PeekExpire agrees with DecodeMetadata on every record DecodeMetadata accepts;
// - DecodePageKey / DecodeMetaKey: re-encoding the parts gives the key back (the slot bytes are
//   derived from the key, so they are compared only when the input carries the right slot);
// - the page geometry of a decoded filter tiles each sub-filter exactly.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/filter.h"
#include "fuzz/fuzz_check.h"
#include "storage/format.h"

namespace {

using namespace cuckood;
using storage::Metadata;

bool SameMetadata(const Metadata& a, const Metadata& b) {
  if (a.type != b.type || a.expire_ms != b.expire_ms || a.version != b.version ||
      a.size != b.size) {
    return false;
  }
  if (a.type == storage::KeyType::kString) {
    return a.value == b.value;
  }
  const auto& x = a.cuckoo;
  const auto& y = b.cuckoo;
  return x.filter.num_items == y.filter.num_items && x.filter.num_deletes == y.filter.num_deletes &&
         x.filter.base_num_buckets == y.filter.base_num_buckets &&
         x.filter.num_filters == y.filter.num_filters &&
         x.filter.bucket_size == y.filter.bucket_size &&
         x.filter.max_iterations == y.filter.max_iterations &&
         x.filter.expansion == y.filter.expansion && x.base_capacity == y.base_capacity &&
         x.page_size == y.page_size && x.owner == y.owner;
}

void CheckGeometry(const storage::CuckooFields& c) {
  const storage::PageGeometry g(c.page_size, c.filter.bucket_size);
  FUZZ_CHECK(g.buckets_per_page >= 1);
  FUZZ_CHECK(g.page_bytes == g.buckets_per_page * c.filter.bucket_size);
  FUZZ_CHECK(g.page_bytes <= std::max<uint64_t>(c.page_size, c.filter.bucket_size));
  // Pages of sub-filter 0 (when it has few pages): full ones, then a shorter last one.
  const uint64_t n = c.filter.base_num_buckets;
  const uint64_t pages =
      n <= core::kMaxBuckets ? (n + g.buckets_per_page - 1) / g.buckets_per_page : UINT64_MAX;
  if (pages <= 4096) {
    uint64_t bytes = 0;
    for (uint64_t p = 0; p < pages; ++p) {
      const uint64_t len = g.PageLength(p, n);
      FUZZ_CHECK(len > 0 && len <= g.page_bytes);
      FUZZ_CHECK(len == g.page_bytes || p + 1 == pages);
      FUZZ_CHECK(g.PageOf(p * g.buckets_per_page) == p);
      bytes += len;
    }
    FUZZ_CHECK(g.PageLength(pages, n) == 0);
    FUZZ_CHECK(bytes == n * c.filter.bucket_size);
  }
  const uint64_t limit =
      storage::EffectiveMaxFilterBytes(1ULL << 40, c.page_size, c.filter.bucket_size);
  FUZZ_CHECK(limit <= 1ULL << 40);
  // Any sub-filter within the limit has page indices that fit u32.
  FUZZ_CHECK(limit / g.page_bytes <= (1ULL << 32));
}

void CheckMetadata(std::string_view raw) {
  uint64_t peeked = 0;
  const bool peek_ok = storage::PeekExpire(raw, &peeked);
  const auto meta = storage::DecodeMetadata(raw);
  if (!meta) {
    return;
  }
  FUZZ_CHECK(peek_ok && peeked == meta->expire_ms);
  const std::string encoded = storage::EncodeMetadata(*meta);
  FUZZ_CHECK(encoded == raw);
  const auto again = storage::DecodeMetadata(encoded);
  FUZZ_CHECK(again.has_value() && SameMetadata(*again, *meta));
  FUZZ_CHECK(!storage::TypeName(meta->type).empty());
  if (meta->type == storage::KeyType::kCuckoo) {
    FUZZ_CHECK(meta->cuckoo.filter.num_items == meta->size);
    CheckGeometry(meta->cuckoo);
    // Whatever the record says, the sizing helpers must not trip (core treats a meta that is not
    // usable as corrupt; these are the functions storage calls before that).
    (void)core::SubFilterBytes(meta->cuckoo.filter, meta->cuckoo.filter.num_filters - 1);
    (void)core::InfoSize(meta->cuckoo.filter);
  }
  (void)meta->Expired(peeked);
}

void CheckPageKey(std::string_view raw) {
  storage::PageKeyParts parts;
  if (!storage::DecodePageKey(raw, &parts)) {
    return;
  }
  const std::string prefix = storage::EncodePagePrefix(parts.ns, parts.owner, parts.version);
  std::string encoded = storage::EncodePageKey(prefix, parts.filter, parts.page);
  FUZZ_CHECK(encoded.size() == raw.size());
  // Bytes 2-3 hold KeySlot(owner), which the decoder does not verify.
  encoded[2] = raw[2];
  encoded[3] = raw[3];
  FUZZ_CHECK(encoded == raw);
  FUZZ_CHECK(storage::KeySlot(parts.owner) < 16384);
}

void CheckMetaKey(std::string_view raw) {
  uint16_t ns = 0;
  std::string_view key;
  if (!storage::DecodeMetaKey(raw, &ns, &key)) {
    FUZZ_CHECK(raw.size() < 4);
    return;
  }
  const std::string encoded = storage::EncodeMetaKey(ns, key);
  FUZZ_CHECK(encoded.size() == raw.size());
  FUZZ_CHECK(encoded.substr(0, 2) == raw.substr(0, 2) && encoded.substr(4) == raw.substr(4));
  uint16_t ns2 = 0;
  std::string_view key2;
  FUZZ_CHECK(storage::DecodeMetaKey(encoded, &ns2, &key2) && ns2 == ns && key2 == key);
  // The alias key is only ever encoded; it must at least hold the owner verbatim.
  const std::string alias = storage::EncodeAliasKey(ns, key, 7);
  FUZZ_CHECK(alias.size() == 1 + 2 + 4 + key.size() + 8 && alias.find(key) != std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string_view raw(reinterpret_cast<const char*>(bytes), size);
  CheckMetadata(raw);
  CheckPageKey(raw);
  CheckMetaKey(raw);
  return 0;
}
