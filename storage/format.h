// The on-disk format of cuckood, in one place. Every persisted field is listed here; enum values
// are frozen (changing one breaks existing databases).
//
// Column families
//   default   server-level records (kVersionReservedKey, rename aliases, kDbMapKey)
//   metadata  one record per user key:   MetaKey  -> MetaValue
//   pages     cuckoo bucket pages:       PageKey  -> raw fingerprint bytes
//
// MetaKey  = ns (u16 BE) | slot (u16 BE) | user key
// PageKey  = ns (u16 BE) | slot (u16 BE) | keylen (u32 BE) | owner key | version (u64 BE)
//            | filter index (u16 BE) | page index (u32 BE)
//   Big-endian so that one key's pages sort together, filter by filter, page by page. The owner
//   key is the key name the filter was created under (it differs from the user key after RENAME,
//   which moves only the metadata; see AliasKey).
//   ns is the namespace of the SELECTed database (the database's own index unless SWAPDB
//   swapped it with another's, see kDbMapKey); slot is Redis Cluster's CRC16 slot of the
//   (hash-tagged) key.
//
// MetaValue (all integers little-endian):
//   u8  format version (kMetaFormatVersion)
//   u8  type (KeyType)
//   u64 expire: absolute unix time in ms, 0 = no expiry
//   u64 version: unique per creation, never reused (also across restarts)
//   u64 size: string length / cuckoo numItems
//   then by type:
//   kString: the value bytes (rest of the record)
//   kCuckoo: u64 num_deletes | u16 num_filters | u16 expansion (normalised at RESERVE; a
//            LOADCHUNK header may carry any u16) | u16 bucket_size | u16 max_iterations |
//            u64 base_num_buckets (N_0) | u64 base_capacity (as requested; 0 = bytes were loaded by
//            LOADCHUNK, so num_items is the loader's count) | u32 page_size (bytes, fixed at
//            creation) | u32 owner length | owner key bytes (empty = the pages live under the
//            metadata's own key)
//
// AliasKey (default CF) = 'A' | ns (u16 BE) | owner keylen (u32 BE) | owner key | version (u64 BE)
//   -> current user key. Written by RENAME of a filter so the pages compaction filter can tell
//   that pages under the old name are still alive.
//
// Page value: bucket bytes, one byte a slot, 0 = empty. buckets_per_page = max(1, page_size /
// bucket_size); bucket b sits in page b / buckets_per_page at byte (b % buckets_per_page) *
// bucket_size. Pages are full size except the last one of a sub-filter; a missing page reads as
// zeros; a page of any other length is corruption.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/filter.h"

namespace cuckood::storage {

inline constexpr uint8_t kMetaFormatVersion = 1;
inline constexpr std::string_view kMetadataCf = "metadata";
inline constexpr std::string_view kPagesCf = "pages";
inline constexpr std::string_view kVersionReservedKey = "V";  // default CF: u64 LE high-water mark
inline constexpr char kAliasPrefix = 'A';
// default CF: the databases SWAPDB swapped, as u16 LE pairs (database, namespace), one pair per
// database not stored under its own index; absent = every database under its own.
inline constexpr std::string_view kDbMapKey = "D";
inline constexpr uint32_t kDefaultPageSize = 2048;

enum class KeyType : uint8_t {
  kString = 1,
  kCuckoo = 2,
};

// Redis's TYPE name of a key type ("string", "MBbloomCF").
std::string_view TypeName(KeyType type);

// Redis Cluster hash slot (CRC16-XMODEM of the hash tag or the whole key, mod 16384).
uint16_t KeySlot(std::string_view key);
// The same, always computed (KeySlot remembers the calling thread's last key and its slot).
uint16_t ComputeKeySlot(std::string_view key);

struct CuckooFields {
  core::FilterMeta filter;
  uint64_t base_capacity = 0;
  uint32_t page_size = kDefaultPageSize;
  std::string owner;  // empty = own key
};

struct Metadata {
  KeyType type = KeyType::kString;
  uint64_t expire_ms = 0;
  uint64_t version = 0;
  uint64_t size = 0;
  std::string value;    // kString only
  CuckooFields cuckoo;  // kCuckoo only (cuckoo.filter.num_items mirrors size)

  bool Expired(uint64_t now_ms) const { return expire_ms != 0 && expire_ms <= now_ms; }
};

std::string EncodeMetaKey(uint16_t ns, std::string_view key);
// The same appended to *out (a reused buffer).
void AppendMetaKey(std::string* out, uint16_t ns, std::string_view key);
// Splits a metadata key; false when it is too short.
bool DecodeMetaKey(std::string_view raw, uint16_t* ns, std::string_view* key);

std::string EncodeMetadata(const Metadata& meta);
// nullopt on any malformed record (wrong version byte, unknown type, truncated).
std::optional<Metadata> DecodeMetadata(std::string_view raw);
// Only the expire field (for the compaction filter); false when malformed.
bool PeekExpire(std::string_view raw, uint64_t* expire_ms);

// Prefix of every page of one filter version: ns | slot | keylen | owner | version.
std::string EncodePagePrefix(uint16_t ns, std::string_view owner, uint64_t version);
// The same appended to *out (a reused buffer).
void AppendPagePrefix(std::string* out, uint16_t ns, std::string_view owner, uint64_t version);
std::string EncodePageKey(std::string_view prefix, uint16_t filter, uint32_t page);
// Writes the filter/page part of a page key over the last kPageKeySuffix bytes of *key (a key
// EncodePageKey built), so one buffer serves many pages of a filter.
constexpr size_t kPageKeySuffix = 6;
void SetPageKeySuffix(std::string* key, uint16_t filter, uint32_t page);
// The same suffix written to out[0, kPageKeySuffix).
void EncodePageKeySuffix(char* out, uint16_t filter, uint32_t page);

struct PageKeyParts {
  uint16_t ns = 0;
  std::string_view owner;
  uint64_t version = 0;
  uint16_t filter = 0;
  uint32_t page = 0;
};
bool DecodePageKey(std::string_view raw, PageKeyParts* out);

std::string EncodeAliasKey(uint16_t ns, std::string_view owner, uint64_t version);

// Page geometry of a filter.
struct PageGeometry {
  uint64_t buckets_per_page = 1;
  uint64_t page_bytes = 0;  // bytes of a full page

  PageGeometry(uint32_t page_size, uint16_t bucket_size);
  uint64_t PageOf(uint64_t bucket) const { return bucket / buckets_per_page; }
  // Length of page p of a sub-filter with num_buckets buckets (the last page may be short).
  uint64_t PageLength(uint64_t page, uint64_t num_buckets) const;
};

// The largest sub-filter a key may hold: the server limit, capped so that page indices fit u32.
uint64_t EffectiveMaxFilterBytes(uint64_t server_limit, uint32_t page_size, uint16_t bucket_size);

}  // namespace cuckood::storage
