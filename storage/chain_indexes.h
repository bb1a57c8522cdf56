// The chain indexes (core/chain_index.h) of the open filters with long chains, kept between
// commands by page prefix (a filter's identity: namespace, owner name and version), within a
// memory budget, least recently used first out.
//
// An index describes the filter's bytes as the commands that hold its key's stripe see them. It
// is changed in place only by a writer holding the stripe exclusively (Db::CfInsert, CfDelete
// through core::IndexedAccess), read by readers holding it shared, and dropped whenever the bytes
// change another way: by the owner for commands that rewrite pages (CF.COMPACT, LOADCHUNK, a
// delete that compacted), and through the in-memory cache's erase hook for a write group that
// failed, replicated batches and cache clears (FLUSHALL, a new engine, dropped slots).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/chain_index.h"

namespace cuckood::storage {

class ChainIndexes {
 public:
  explicit ChainIndexes(size_t budget_bytes = kDefaultBudget) : budget_(budget_bytes) {}

  static constexpr size_t kDefaultBudget = 64ULL << 20;
  // Memory for the kept indexes; 0 = no index is used at all. Set before the Db is shared.
  void set_budget(size_t bytes) { budget_ = bytes; }
  size_t budget() const { return budget_; }

  // The index kept for this prefix, or nullptr. Marks it most recently used.
  std::shared_ptr<core::ChainIndex> Find(std::string_view prefix);
  // A counter of drops: read it before building an index from the bytes and pass it to Keep.
  uint64_t drops() const { return drops_.load(std::memory_order_acquire); }
  // Keeps an index built from the bytes since `drops_before` was read; not kept when a drop
  // happened meanwhile (it may describe bytes that were dropped), or when it alone is larger
  // than the budget.
  void Keep(std::string_view prefix, std::shared_ptr<core::ChainIndex> index,
            uint64_t drops_before);
  void Drop(std::string_view prefix);
  void DropAll();
  // A cache key the in-memory cache erased (empty: the cache was cleared): a page's key drops
  // its filter's index.
  void OnCacheErase(std::string_view cache_key);

  size_t count() const;
  size_t bytes() const;
  // Indexes offered to Keep (built from the bytes) since the start.
  uint64_t builds() const { return builds_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::string prefix;
    std::shared_ptr<core::ChainIndex> index;
    size_t charged = 0;  // bytes counted in bytes_
  };
  using List = std::list<Entry>;
  void EvictLocked(const Entry* keep);
  void EraseLocked(List::iterator it);

  size_t budget_;
  std::atomic<uint64_t> drops_{0};
  std::atomic<uint64_t> builds_{0};
  mutable std::mutex mu_;
  List lru_;                                                        // most recently used first
  std::unordered_map<std::string_view, List::iterator> by_prefix_;  // views of Entry::prefix
  size_t bytes_ = 0;
};

}  // namespace cuckood::storage
