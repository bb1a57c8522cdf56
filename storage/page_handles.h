// A thread's table of the pages its lookups found in the in-memory cache, by page number: a
// lookup that finds a candidate page here reads its bytes without building the page's cache key,
// hashing it, locking a cache shard and walking its index (the largest part of a lookup over
// many filters, whose pages do not fit the CPU caches: each step was a cache miss).
//
// An entry is the address of a value the cache held, with the key's MemCache::Stamp. It is used
// only inside a MemCache::ReadSection and only while the stamp is still valid: the cache changes
// the key's counter before it drops the value, and frees a dropped value only once every section
// open at the time has closed, so a valid entry points at the key's current value until the
// section closes. Pages are named by their filter's MetaView::id (the same page prefix: the same
// key and version, of one Db) and their sub-filter and page, so no key is compared.
//
// Direct-mapped; an entry used kMaxUses times is looked up in the cache again, so the cache's
// CLOCK still sees the page in use (a page served only from here would look idle to it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "storage/mem_cache.h"

namespace cuckood::storage {

class PageHandles {
 public:
  struct alignas(64) Entry {  // (one cache line)
    uint64_t view_id = 0;     // 0: empty
    uint64_t page = 0;
    const std::string* value = nullptr;  // nullptr: known not stored (zeros)
    // value's bytes and length, kept here: a lookup reads them without the string object's line
    const char* data = nullptr;
    MemCache::Stamp stamp;
    uint32_t size = 0;
    uint16_t f = 0;
    uint16_t uses = 0;
  };
  static constexpr uint32_t kMaxUses = 64;

  // entries is rounded down to a power of two (at least 1,024).
  explicit PageHandles(size_t entries) {
    size_t n = 1024;
    while (n * 2 <= entries) {
      n *= 2;
    }
    mask_ = n - 1;
    entries_ = std::make_unique<Entry[]>(n);
  }
  // The calling thread's table, made on first use with this many entries (see
  // Db::page_handle_entries_).
  static PageHandles& ForThread(size_t entries) {
    thread_local std::unique_ptr<PageHandles> table = std::make_unique<PageHandles>(entries);
    return *table;
  }

  // The entry of this page, if it is there and still valid (the caller is in a borrowing
  // ReadSection); counts the use.
  const Entry* Find(uint64_t view_id, uint32_t f, uint64_t page) {
    Entry& e = entries_[Slot(view_id, f, page)];
    if (e.view_id != view_id || e.page != page || e.f != f || e.uses >= kMaxUses ||
        !e.stamp.Valid()) {
      return nullptr;
    }
    ++e.uses;
    return &e;
  }
  // Asks the CPU for the entry of this page (a lookup of several pages asks for all first).
  void Prefetch(uint64_t view_id, uint32_t f, uint64_t page) const {
    __builtin_prefetch(&entries_[Slot(view_id, f, page)]);
  }
  // Keeps what the cache answered for this page (value borrowed in the caller's section).
  void Remember(uint64_t view_id, uint32_t f, uint64_t page, const std::string* value,
                const MemCache::Stamp& stamp) {
    if (view_id == 0 || stamp.counter == nullptr) {
      return;
    }
    Entry& e = entries_[Slot(view_id, f, page)];
    e.view_id = view_id;
    e.page = page;
    e.f = static_cast<uint16_t>(f);  // (sub-filters are fewer than 65,536)
    e.uses = 0;
    e.value = value;
    e.data = value != nullptr ? value->data() : nullptr;
    e.size = value != nullptr ? static_cast<uint32_t>(value->size()) : 0;
    e.stamp = stamp;
  }

 private:
  size_t Slot(uint64_t view_id, uint32_t f, uint64_t page) const {
    uint64_t x = view_id * 0x9e3779b97f4a7c15ULL ^ (page + (static_cast<uint64_t>(f) << 40));
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    return x & mask_;
  }
  size_t mask_ = 0;
  std::unique_ptr<Entry[]> entries_;
};

}  // namespace cuckood::storage
