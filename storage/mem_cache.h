// An in-memory cache of metadata records and pages in front of RocksDB, so that hot filters are
// served from memory and RocksDB is the durable store behind it.
//
// Entries are raw stored values (a metadata record, a page's bytes) or "absent" (the key is not
// in RocksDB: a missing page reads as zeros). Writers update entries after their batch is
// committed (Put); readers install what they read from RocksDB on a miss (Fill), which is
// refused when a writer changed the same shard meanwhile, so a stale value never overwrites a
// newer one. Sharded, bounded in bytes, evicted by CLOCK (see Touch). Thread-safe.
//
// Consistency across several entries (a command's pages) comes from the key stripe locks: a
// writer updates all of its entries while it holds its keys exclusively, and readers hold them
// shared (storage/locks.h).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/hash_index.h"

namespace cuckood::storage {

// Hash of string keys that also finds them by string_view (heterogeneous lookup: no copy of
// the key per lookup).
struct StringKeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class MemCache {
 public:
  explicit MemCache(uint64_t capacity_bytes, size_t shards = 64);

  // nullptr = known absent. Values are made as mutable strings (std::make_shared<std::string>):
  // a value the cache drops while it is the value's only owner gives its buffer back for reuse
  // (storage/buffer_pool.h), which writes it again.
  using Value = std::shared_ptr<const std::string>;

  // While a ReadSection is open on a thread, GetShared and GetSharedMany hand out borrowed
  // values: they point at the cache's bytes without owning them (no reference count is
  // changed; two io threads counting references to the same hot pages turned every lookup into
  // a transfer of the count's cache line between cores). A borrowed value is valid until the
  // section closes, and must not be kept beyond it: a value the cache drops meanwhile (replaced,
  // evicted, erased) is freed only once every section open at that time has closed. A thread
  // that cannot get a section slot (more than kSectionSlots threads at once) gets owned values.
  // Sections nest; borrowing is process-wide (one section covers every MemCache).
  class ReadSection {
   public:
    ReadSection();
    ~ReadSection();
    ReadSection(const ReadSection&) = delete;
    ReadSection& operator=(const ReadSection&) = delete;
  };
  static constexpr size_t kSectionSlots = 256;
  // Keys up to this long are kept in their entry's node (see Entry), longer ones beside it.
  static constexpr size_t kInlineKey = 72;

  // true on a hit; *value is the cached value, nullopt = known absent.
  bool Get(std::string_view key, std::optional<std::string>* value);
  // The same without copying the value: it is shared (immutable) with the cache. epoch (if not
  // null) receives the key's write counter read with the value (see Version).
  bool GetShared(std::string_view key, Value* value, uint64_t* epoch = nullptr);
  // A key's write counter (see Version) as a lookup saw it. While it is unchanged, the value the
  // lookup found is still the key's (every Put, Erase, eviction and Clear of the key changes it
  // before the value is dropped), so a thread may keep a borrowed value's address across its
  // read sections (storage/page_handles.h) and use it again inside a later one after Valid().
  struct Stamp {
    const std::atomic<uint64_t>* counter = nullptr;
    uint64_t seen = 0;
    bool Valid() const { return counter->load(std::memory_order_seq_cst) == seen; }
  };
  // Whether this thread is in a ReadSection that borrows values (see ReadSection).
  static bool Borrowing();
  // Counts hits of values a thread kept (Stamp) as the cache's own (hits()).
  void CountKeptHits(uint64_t n);

  // GetShared of several keys at once, taking each shard's lock once: found[i] tells whether
  // keys[i] was cached, values[i] is its value then (stamps[i] its Stamp, when stamps is given).
  void GetSharedMany(std::span<const std::string_view> keys, Value* values, bool* found,
                     Stamp* stamps = nullptr);
  // The same for a few keys (at most kFewKeys, e.g. a single-item command's candidate pages):
  // their shards' locks are taken together, in shard order, so the cache misses of the keys'
  // index slots and entries overlap instead of following one another.
  static constexpr size_t kFewKeys = 8;
  void GetSharedFew(std::span<const std::string_view> keys, Value* values, bool* found,
                    Stamp* stamps = nullptr);
  // The write counter of the key, read without the shard's lock: it changes with every Put and
  // Erase of the key and with every Clear (a counter serves the keys of one of kEpochsPerShard
  // groups of its shard, so it also changes with some other keys' writes). A value read from
  // the cache (or from RocksDB, with the counter taken before) is still the key's value while
  // the counter is unchanged; a caller that holds the key's stripe lock sees every change
  // committed before it took the stripe. (Per key rather than per shard: with many keys
  // written, a shard's counter changed too often for a caller's decoded copy of a key to last.)
  uint64_t Version(std::string_view key) { return Counter(key).load(std::memory_order_acquire); }
  // The counter Version reads (it lives as long as the cache): a caller that checks one key
  // often keeps it instead of finding it again.
  const std::atomic<uint64_t>& Counter(std::string_view key) {
    return EpochOf(ShardOf(key), Index::Hash(key));
  }
  // Tells this cache apart from any other (one made later at the same address).
  uint64_t id() const { return id_; }
  // The key's write counter (see Version), to pass to Fill after reading RocksDB.
  uint64_t Epoch(std::string_view key);
  void Fill(std::string_view key, std::optional<std::string> value, uint64_t epoch);
  void Fill(std::string_view key, Value value, uint64_t epoch);
  // A committed change (nullopt = the key was deleted). The caller holds the key's stripe
  // exclusively (storage/locks.h), so no ReadSection borrows the value it replaces.
  void Put(std::string_view key, std::optional<std::string> value);
  void Put(std::string_view key, Value value);
  // Forgets a key (its next read goes to RocksDB), e.g. a change that was not committed.
  void Erase(std::string_view key);
  void Clear();
  // Called after every Erase with its key, and after every Clear with an empty key, by the
  // thread that made it: what others keep about cached values (e.g. Db's chain indexes) follows.
  // Set before the cache is shared.
  void set_on_erase(std::function<void(std::string_view)> fn) { on_erase_ = std::move(fn); }

  uint64_t hits() const;
  uint64_t misses() const { return Sum(&Shard::misses); }
  uint64_t bytes() const;
  uint64_t capacity() const { return capacity_; }

 private:
  // An entry is the value of one list node, which is allocated on a cache line (EntryAlloc):
  // the key's length, its bytes (up to kInlineKey of them) and the reference bit sit in the node's
  // first line, the value in its second. A lookup reads the index slot, then both lines at once
  // (Find prefetches the second while it compares the key): with the key in a heap buffer of
  // its own, a lookup waited for the slot, the node and the key one after the other, each
  // usually a cache miss once the cache outgrows the CPU's.
  struct Entry {
    Entry(std::string_view k, uint64_t h, Value v);
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    std::string_view key() const {
      return {key_size <= kInlineKey ? inline_key : long_key.get(), key_size};
    }
    uint32_t key_size;
    uint32_t referenced;  // 1 when looked up or written since eviction last passed it (Touch)
    char inline_key[kInlineKey];
    Value value;
    uint64_t hash;                     // Index::Hash(key)
    std::unique_ptr<char[]> long_key;  // a key longer than kInlineKey
  };
  template <class T>
  struct EntryAlloc {
    using value_type = T;
    EntryAlloc() = default;
    template <class U>
    EntryAlloc(const EntryAlloc<U>&) {}
    T* allocate(size_t n) {
      return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}));
    }
    void deallocate(T* p, size_t) { ::operator delete (p, std::align_val_t{64}); }
    bool operator==(const EntryAlloc&) const { return true; }
  };
  using EntryList = std::list<Entry, EntryAlloc<Entry>>;
  using EntryIt = EntryList::iterator;
  struct EntryKey {
    std::string_view operator()(EntryIt it) const {
      __builtin_prefetch(&it->value);  // (the second line, loaded while the key is compared)
      return it->key();
    }
  };
  using Index = HashIndex<EntryIt, EntryKey>;
  static constexpr size_t kEpochsPerShard = 64;
  struct Shard {
    std::mutex mu;
    // Values dropped while a section may have borrowed them, with the section epoch of the drop.
    std::vector<std::pair<uint64_t, Value>> retired;
    uint64_t retired_bytes = 0;
    EntryList lru;  // front = most recent
    Index index;
    uint64_t bytes = 0;
    // The write counters of the shard's keys, by key hash (EpochOf): written under mu, read
    // also without it (Version).
    std::array<std::atomic<uint64_t>, kEpochsPerShard> epochs{};
    uint64_t hits = 0;  // (counted per shard, under mu: no counter shared by every thread)
    uint64_t misses = 0;
  };
  // A hit or a write sets the entry's reference bit; eviction takes entries from the back of the
  // list and gives one whose bit is set a second round (clears the bit, moves it to the front):
  // CLOCK. A hit writes one byte of a line it has just read, where moving the entry to the front
  // of the list wrote the list nodes of three entries (two of them cache misses).
  static void Touch(Shard& s, EntryIt it);
  // Both lines of an entry, for a lookup that follows (see Entry).
  static void PrefetchEntry(EntryIt it);
  // A lookup in shard s, whose lock the caller holds (counts the hit or miss); stamp (if not
  // null) receives the key's Stamp.
  static bool Find(Shard& s, std::string_view key, uint64_t hash, Value* value,
                   Stamp* stamp = nullptr);
  Shard& ShardOf(std::string_view key) { return *shards_[ShardIndex(key)]; }
  // (The hash's high bits: its low bits place the key in the shard's index.)
  static std::atomic<uint64_t>& EpochOf(Shard& s, uint64_t hash) {
    return s.epochs[(hash >> 40) % kEpochsPerShard];
  }
  size_t ShardIndex(std::string_view key) const;
  // Adds or (replace) replaces key's value, then evicts down to the shard's capacity.
  void Insert(Shard& s, std::string_view key, uint64_t hash, Value value, bool replace);
  static Value Share(std::optional<std::string> value) {
    return value ? std::make_shared<std::string>(std::move(*value)) : nullptr;
  }
  static uint64_t Cost(const Entry& e);
  // Takes a value the shard drops (its lock held) into s.retired, freed (Reclaim, when enough
  // have piled up) once every section that may have borrowed it has closed.
  static void Retire(Shard& s, Value value);
  static void Reclaim(Shard& s);
  uint64_t Sum(uint64_t Shard::*counter) const;  // of every shard

  std::function<void(std::string_view)> on_erase_;
  // CountKeptHits's counts, spread over cache lines by thread (no line every thread writes).
  struct alignas(64) KeptHits {
    std::atomic<uint64_t> n{0};
  };
  static constexpr size_t kKeptHitSlots = 16;
  std::array<KeptHits, kKeptHitSlots> kept_hits_{};
  uint64_t capacity_;
  uint64_t shard_capacity_;
  std::vector<std::unique_ptr<Shard>> shards_;
  uint64_t id_;
};

// Cache keys: metadata and pages live in different column families, so their keys get a prefix.
inline std::string MetaCacheKey(std::string_view meta_key) {
  std::string k;
  k.reserve(meta_key.size() + 1);
  k.push_back('m');
  k.append(meta_key);
  return k;
}
// Whether cache_key is MetaCacheKey(EncodeMetaKey(ns, key)), without computing the key's
// cluster slot (which that key holds between the namespace and the key).
inline bool IsMetaCacheKeyOf(std::string_view cache_key, uint16_t ns, std::string_view key) {
  return cache_key.size() == 5 + key.size() && cache_key[0] == 'm' &&
         static_cast<uint8_t>(cache_key[1]) == (ns >> 8) &&
         static_cast<uint8_t>(cache_key[2]) == (ns & 0xff) && cache_key.substr(5) == key;
}
inline std::string PageCacheKey(std::string_view page_key) {
  std::string k;
  k.reserve(page_key.size() + 1);
  k.push_back('p');
  k.append(page_key);
  return k;
}

}  // namespace cuckood::storage
