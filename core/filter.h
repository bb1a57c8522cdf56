// The cuckoo filter chain, bit-exact with RedisBloom 2.8 (see redisbloom-cf-reference.md §2).
//
// A filter is its metadata (FilterMeta) plus the bucket bytes of each sub-filter, reached through a
// BucketAccess. The core never owns bucket memory and knows nothing of RocksDB: storage/ gives it
// a page cache, the tests give it a vector. All functions are reentrant; callers serialise writers
// to one filter (storage/ does it with striped key locks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace cuckood::core {

class ChainIndex;  // (core/chain_index.h)

inline constexpr uint64_t kAltMultiplier = 0x5bd1e995ULL;
// RedisBloom stores the sub-filter count in a u16; growth past it fails.
inline constexpr uint32_t kMaxSubFilters = 65535;
// Buckets per sub-filter live in a 56-bit field upstream.
inline constexpr uint64_t kMaxBuckets = (1ULL << 56) - 1;

struct FilterMeta {
  uint64_t num_items = 0;         // RedisBloom numItems: +1 per stored fingerprint, -1 per delete
  uint64_t num_deletes = 0;       // deletes since the last compaction
  uint64_t base_num_buckets = 1;  // N_0, buckets of sub-filter 0
  uint32_t num_filters = 1;       // sub-filters in the chain, 1..65535
  uint16_t bucket_size = 2;       // slots per bucket, 1..255
  uint16_t max_iterations = 20;   // kick-out steps, >= 1
  uint16_t expansion = 1;         // growth factor; 0 = never grow (a LOADCHUNK header may carry
                                  // a non-power-of-two value, which is kept as it is)
};

// Limits that are server options rather than RedisBloom constants.
struct Limits {
  // Largest sub-filter in bytes (buckets x bucket_size). Creating or growing past it fails the way
  // a failed allocation fails in RedisBloom. Must keep page indices within u32 for storage.
  uint64_t max_filter_bytes = 1ULL << 36;
};

// Hash of one item and the values derived from it.
struct ItemHash {
  uint64_t hash = 0;
  uint8_t fp = 1;  // (hash % 255) + 1
};
ItemHash HashItem(std::string_view item);

// x % n; a mask when n is a power of two (every sub-filter but those of a LOADCHUNK header with
// an odd expansion): the same value without a 64-bit division.
inline uint64_t ModBuckets(uint64_t x, uint64_t n) {
  return (n & (n - 1)) == 0 ? x & (n - 1) : x % n;
}

// Bucket index arithmetic for a sub-filter with `num_buckets` buckets.
inline uint64_t PrimaryBucket(uint64_t hash, uint64_t num_buckets) {
  return ModBuckets(hash, num_buckets);
}
inline uint64_t AltBucket(uint64_t index_or_hash, uint8_t fp, uint64_t num_buckets) {
  return ModBuckets(index_or_hash ^ (static_cast<uint64_t>(fp) * kAltMultiplier), num_buckets);
}

// Buckets of sub-filter i: base_num_buckets * expansion^i (0 when it overflows or is unbounded).
uint64_t SubFilterBuckets(const FilterMeta& meta, uint32_t i);
// Bytes of sub-filter i (buckets x bucket_size); 0 on overflow.
uint64_t SubFilterBytes(const FilterMeta& meta, uint32_t i);
// CF.INFO "Size": 40 + 16 * num_filters + sum of sub-filter bytes.
uint64_t InfoSize(const FilterMeta& meta);

// The storage a filter's buckets live in. Pointers returned by Read/Write stay valid until
// Checkpoint() is called or the accessor is destroyed; a slot value of 0 means empty.
class BucketAccess {
 public:
  virtual ~BucketAccess() = default;
  // bucket_size bytes of bucket b in sub-filter f, or nullptr on a storage error.
  virtual const uint8_t* Read(uint32_t f, uint64_t b) = 0;
  // The same bytes, writable; marks them dirty. nullptr on a storage error.
  virtual uint8_t* Write(uint32_t f, uint64_t b) = 0;
  // The lowest bucket index >= b of sub-filter f (which has num_buckets buckets) that may hold a
  // non-zero slot, or num_buckets if none can. Lets compaction skip storage that was never written.
  virtual uint64_t NextMaybeNonEmpty(uint32_t f, uint64_t b, uint64_t num_buckets) {
    (void)f;
    (void)num_buckets;
    return b;
  }
  // Sub-filters whose bytes the storage holds in one piece: entry f is the first byte of
  // sub-filter f, or nullptr when its buckets must be read with Read(). The span and its entries
  // stay valid until the next Read, Write or Checkpoint. A chain of many small sub-filters is then
  // scanned without a call per bucket.
  virtual std::span<const uint8_t* const> Resident() { return {}; }
  // Called by long operations (compaction) between whole fingerprint moves; the storage may commit
  // what is dirty and drop its cache. false = storage error (the operation stops).
  virtual bool Checkpoint() { return true; }
  // The index of a long chain of equal sub-filters that describes these bytes (grown to
  // meta.num_filters), or nullptr: insert and lookup then ask it instead of scanning the chain
  // (core/chain_index.h).
  virtual ChainIndex* Index(const FilterMeta& meta) {
    (void)meta;
    return nullptr;
  }
};

enum class InsertResult {
  kInserted,      // stored (num_items + 1; may have grown the chain)
  kExists,        // NX only: the fingerprint is already in a candidate bucket
  kFull,          // expansion 0 and no room: nothing changed
  kGrowthFailed,  // growth refused (65535 sub-filters, overflow, max_filter_bytes): nothing stored
  kIoError,       // the accessor failed
};

enum class DeleteResult { kDeleted, kNotFound, kIoError };

// Sizing policies for new filters (server option cf-sizing).
enum class SizingPolicy { kRedisBloom, kLoadFactor };

// next_pow2(x) (x itself when it is a power of two), with next_pow2(0) = 0.
uint64_t NextPow2(uint64_t x);
// Normalised expansion: 0 stays 0, otherwise next power of two.
uint16_t NormaliseExpansion(uint64_t requested);
// N_0 for a new filter, or 0 when it cannot be created (too many buckets, over
// limits.max_filter_bytes): the caller answers "Insufficient memory to create filter".
uint64_t BaseBuckets(uint64_t capacity, uint16_t bucket_size, SizingPolicy policy,
                     const Limits& limits);

// Insert (CF.ADD/INSERT; nx = ADDNX/INSERTNX). RedisBloom order: free slot newest sub-filter first
// (primary then alternate bucket, lowest slot), else kick-out in the newest sub-filter with
// round-robin victims and exact rollback, else grow (expansion > 0) and retry.
InsertResult Insert(FilterMeta& meta, BucketAccess& access, const ItemHash& item, bool nx,
                    const Limits& limits);

// true if the fingerprint is in either candidate bucket of any sub-filter (oldest first).
// Returns false and sets *io_error on a storage error.
bool Exists(const FilterMeta& meta, BucketAccess& access, const ItemHash& item, bool* io_error);

// Matches of the fingerprint in both candidate buckets of every sub-filter (a bucket that is both
// candidates counts twice, as RedisBloom does).
uint64_t Count(const FilterMeta& meta, BucketAccess& access, const ItemHash& item, bool* io_error);

// Deletes one copy, newest sub-filter first. On success num_items - 1, num_deletes + 1, then the
// automatic compaction (num_filters > 1 and num_deletes > 0.1 * num_items, "stop" mode).
DeleteResult Delete(FilterMeta& meta, BucketAccess& access, const ItemHash& item);

// Compaction: moves fingerprints from newer sub-filters into older ones and frees emptied trailing
// sub-filters; resets num_deletes. stop_on_stuck = the automatic ("stop") mode, false = CF.COMPACT.
// Returns false on a storage error (what was already committed through Checkpoint stays, and is
// consistent: every move is whole).
bool Compact(FilterMeta& meta, BucketAccess& access, bool stop_on_stuck);

}  // namespace cuckood::core
