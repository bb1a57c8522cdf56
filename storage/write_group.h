// Group commit: one RocksDB write for the filter writes of several commands.
//
// A WriteGroup is handed to the storage calls of each command that joins it, in the command's
// scope (storage/scope.h, Scope::group). The cuckoo filter writes of such a scope (CfReserve,
// CfInsert, CfDelete) do not each write a RocksDB batch. Their changed pages and metadata are
// collected here instead: a page changed by several commands is kept once, with its stored state
// from before the group and its newest bytes. The new values go to the in-memory cache at once,
// so the next command of the group sees them, and reads of a scope with the group look here first
// (the cache may evict an entry meanwhile). Commit() then writes the whole group in one atomic
// RocksDB write: one WAL append (one sync with appendfsync always), a metadata record and a page
// written once however many commands of the group changed them.
//
// The caller's contract: it holds the stripe locks of every key a grouped command touched until
// Seal() (or Commit()) has queued the group's write (Engine::Submit: writes are stored in the
// order they are queued), and sends none of their replies before Commit() has returned. Between
// the two it may release the locks: the next writer of those keys then works on the group's
// values in the in-memory cache while the group is being written. A failed Commit() leaves
// nothing of the group in RocksDB and drops its entries from the in-memory cache; every grouped
// command must then answer that error. Other writes of a scope with the group first commit it
// (Db::Commit), and the caller commits the group before it runs any command outside the group,
// so RocksDB always receives changes in the order they were made.
#pragma once

#include <rocksdb/write_batch.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/engine.h"
#include "storage/mem_cache.h"
#include "storage/page_merge.h"
#include "storage/status.h"

namespace cuckood::storage {

class WriteGroup {
 public:
  // An empty group for the writes of one Db (its engine and in-memory cache).
  WriteGroup(Engine* engine, MemCache* mem);
  // Whatever is not committed is abandoned, as by a failed Commit().
  ~WriteGroup();
  WriteGroup(const WriteGroup&) = delete;
  WriteGroup& operator=(const WriteGroup&) = delete;

  // Writes every change collected so far in one RocksDB write and starts an empty group. After
  // a failure (of this write or an earlier one, see Fail) it returns that error until the group
  // is closed; nothing of the group is stored. Seal()s the group first unless it is sealed.
  Status Commit();
  // Queues the write of every change collected so far (see the contract above); no command may
  // join the group until Commit() has returned.
  void Seal();
  // Makes a group whose Commit() succeeded ready for the writes of a new round to this engine
  // and cache (a Db's engine may have been replaced meanwhile: Db::SwapEngine), as a new object
  // would be: it reads from now on (Engine::generation), and memory kept from a large group is
  // given back. The small buffers (the batch, the maps) are kept, so an io thread's next group
  // does not allocate them again.
  void Reuse(Engine* engine, MemCache* mem);
  // Enough is collected that the caller should commit before the next command.
  bool Full() const { return keys_.size() >= kMaxChanges; }
  bool empty() const { return keys_.size() == 0; }

  // ---- for Db and PageCache -------------------------------------------------------------------
  // The newest value of a cache key (MetaCacheKey / PageCacheKey) changed in this group; true
  // when found (*value nullptr = absent, i.e. a deleted key or an all-zero page). Always false
  // while the group is sealed.
  bool Lookup(std::string_view cache_key, MemCache::Value* value) const;
  // A page of the filter whose pages start with page_prefix changed: before = its bytes when
  // this command read it (nullptr: replaced without reading), after = its new bytes (nullptr:
  // all zeros, not stored). written (optional): every byte range in which after may differ
  // from before (a copy whose written buckets PageCache recorded); the group then writes those
  // bytes, as for AddPageInPlace, instead of comparing the two pages.
  void AddPage(std::string_view page_prefix, std::string_view cache_key, MemCache::Value before,
               MemCache::Value after, bool whole,
               const std::span<const PageRange>* written = nullptr);
  // Whether value is the newest bytes of a page this group changed, and the group is not
  // sealed: the next command of the group may then change those bytes in place (it holds the
  // page's stripe, so nobody else reads them, and the group's write is not encoded yet). The
  // page values AddPage receives must be mutable objects (made as std::string, not const).
  bool Owns(const std::string* value) const {
    return value != nullptr && !sealed_ && owned_.contains(value);
  }
  // A page of the filter whose pages start with page_prefix that a command changed in place:
  // value was the in-memory cache's value of the page, held by nobody else (PageCache, under
  // the key's stripe), and ranges are the bytes the command wrote. The group keeps the ranges
  // instead of the page's bytes from before, and writes their bytes (EncodePageRanges); value
  // becomes the group's (Owns).
  void AddPageInPlace(std::string_view page_prefix, std::string_view cache_key,
                      MemCache::Value value, std::span<const PageRange> ranges);
  // More bytes written in place in a page this group owns (Owns(value)). Needed for the pages
  // of AddPageInPlace; the others keep their bytes from before the group, and the group
  // compares them instead.
  void AddRanges(const std::string* value, std::span<const PageRange> ranges);
  // Whether AddRanges wants the ranges of this value (a page of AddPageInPlace).
  bool TakesRanges(const std::string* value) const {
    const uint32_t i = sealed_ ? kNone : owned_.find(value);
    return i != kNone && changes_[i].ranged;
  }
  // A metadata record's new value (nullptr = deleted).
  void AddMeta(std::string_view cache_key, MemCache::Value value);
  // Whether this group changed a page of that filter.
  bool HasPagesOf(std::string_view page_prefix) const {
    return prefixes_.Find(page_prefix) != kNone;
  }
  // A write that had to commit the group first failed: the group fails with it.
  void Fail(const Status& s);

 private:
  static constexpr size_t kMaxChanges = 8192;  // ~16 MiB of 2 KiB pages (before and after)
  static constexpr uint32_t kNone = UINT32_MAX;
  // Strings by index (0, 1, ... in the order added) in one array, found through an
  // open-addressing table. Clear() keeps the strings' buffers, so the next group's keys are
  // written into them: a group's changes allocate nothing once an io thread has run a few.
  class KeyTable {
   public:
    uint32_t Find(std::string_view key) const;
    // The key's index, added when new (*fresh).
    uint32_t Add(std::string_view key, bool* fresh);
    const std::string& key(uint32_t i) const { return keys_[i]; }
    size_t size() const { return used_; }
    void Clear();
    // Clear() and give back the memory of more than `keep` keys.
    void Trim(size_t keep);

   private:
    static size_t Hash(std::string_view key) { return std::hash<std::string_view>{}(key); }
    void Grow();
    std::vector<std::string> keys_;  // [0, used_): the keys; beyond: buffers for later ones
    std::vector<uint32_t> slots_;    // index + 1, 0 = empty; a power of two
    size_t used_ = 0;
  };
  struct Change {
    bool page = false;
    bool whole = false;
    // Changed in place (AddPageInPlace): ranges_ says which bytes changed, `before` is nullptr.
    bool ranged = false;
    uint32_t last_range = kNone;  // its newest entry of ranges_ (they link to the older ones)
    MemCache::Value before;       // pages: stored bytes before the group (nullptr: unknown)
    MemCache::Value after;        // nullptr: deleted / all zeros
  };
  void Abandon();
  void ClearCommitted();  // the changes, once stored
  // The change of a cache key, made (empty) when new.
  Change& ChangeOf(std::string_view cache_key, bool* fresh, uint32_t* index);
  void EraseFromCache() const;
  static void OnWriteFailed(void* group);

  Engine* engine_;
  MemCache* mem_;
  KeyTable keys_;                // the changes' cache keys
  std::vector<Change> changes_;  // changes_[i]: the change of keys_.key(i)
  KeyTable prefixes_;            // the page prefixes of the filters with changed pages
  // A map of pointers to their change in one array (open addressing, linear probing): asked for
  // every page a grouped writer reads, where a node-based set cost 8% of a CF.INSERT.
  class PointerMap {
   public:
    bool contains(const void* p) const { return find(p) != kNone; }
    uint32_t find(const void* p) const;  // the change's index
    void insert(const void* p, uint32_t change);
    void erase(const void* p);
    void clear();

   private:
    static constexpr uintptr_t kEmpty = 0;
    static constexpr uintptr_t kErased = 1;
    size_t Slot(uintptr_t p) const {
      return static_cast<size_t>((p * 0x9E3779B97F4A7C15ULL) >> shift_);
    }
    void Grow();
    std::vector<std::pair<uintptr_t, uint32_t>> slots_;
    size_t used_ = 0;  // slots not empty (live or erased)
    unsigned shift_ = 64;
  };
  PointerMap owned_;  // the pages' newest values (see Owns), with their change
  Status failed_;
  uint64_t generation_;  // Engine::generation() when the group started reading
  bool sealed_ = false;
  std::vector<uint32_t> ordered_;  // Seal's scratch: the changes in key order (ordered_writes)
  // The bytes written in the pages changed in place (Change::ranged), in one array for the
  // whole group: each entry links to the change's previous one (kNone ends the list).
  struct RangeEntry {
    PageRange range;
    uint32_t prev;
  };
  std::vector<RangeEntry> ranges_;
  std::vector<PageRange> ranges_scratch_;  // RangesOf's answer
  void AddRange(uint32_t change, const PageRange& r);
  // The ranges of a page changed in place, newest first.
  std::span<PageRange> RangesOf(uint32_t change);
  std::string operand_;  // Seal's scratch, kept between groups: a page's delta operand
  rocksdb::WriteBatch batch_;
  Engine::PendingWrite pending_;
};

// The write that turns a stored page from `before` into `after` (nullptr = all zeros, which is
// not stored): nothing when unchanged, a delete, a merge operand of the changed bytes
// (storage/page_merge.h), or the whole page when that is smaller or `before` is unknown (whole).
// Returns false when nothing was added. scratch (optional) is the operand's buffer, reused.
bool AddPageWrite(rocksdb::WriteBatch* batch, rocksdb::ColumnFamilyHandle* cf, std::string_view key,
                  const std::string* before, const std::string* after, bool whole,
                  std::string* scratch = nullptr);

}  // namespace cuckood::storage
