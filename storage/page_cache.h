// The per-command page cache that serves core/ its buckets (core::BucketAccess over RocksDB).
//
// One PageCache lives for one command on one filter. It reads each page at most once (Prefetch
// loads the candidate pages of every item in every sub-filter with one MultiGet), keeps modified
// pages dirty, and AddDirty() puts them into the command's WriteBatch next to the new metadata, so
// a command commits atomically or not at all. A missing page reads as zeros; a page of the wrong
// length is corruption: status() reports it and Read/Write return nullptr.
//
// Not thread-safe. Writers use it under the key's stripe lock without a snapshot; readers pass a
// snapshot so metadata and pages come from the same committed state.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <functional>
#include <memory>
#include <memory_resource>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/filter.h"
#include "storage/engine.h"
#include "storage/format.h"
#include "storage/mem_cache.h"
#include "storage/page_merge.h"
#include "storage/status.h"

namespace cuckood::storage {

class PageCache final : public core::BucketAccess {
 public:
  // meta must outlive the cache; core functions may grow meta.num_filters meanwhile.
  // mem (optional) is the shared in-memory cache: pages are looked up there first, and the
  // pages of committed batches are published to it (Publish). Not used with a snapshot.
  // group (optional, with mem only): the write group of the command's scope (storage/scope.h):
  // its uncommitted pages are read first, and a writer's changes go into it (AddDirty).
  PageCache(Engine* engine, const rocksdb::Snapshot* snapshot, std::string page_prefix,
            const core::FilterMeta* meta, uint32_t page_size, MemCache* mem = nullptr,
            class WriteGroup* group = nullptr);
  // The same with a page prefix that outlives the cache (not copied).
  PageCache(Engine* engine, const rocksdb::Snapshot* snapshot, const std::string* page_prefix,
            const core::FilterMeta* meta, uint32_t page_size, MemCache* mem = nullptr,
            class WriteGroup* group = nullptr);
  ~PageCache() override;

  // The caller holds the filter's key stripe (Scope::stripes_held): a page read from RocksDB
  // waits for the pending writes of that page only (Engine::SettleKey), not for every one.
  void set_stripe_held(bool held) { stripe_held_ = held; }

  // Loads the candidate pages of these items in every sub-filter, in one MultiGet (which reads
  // every key at one sequence number). Writers cap the number of pages; all = no cap, so a
  // reader sees one consistent state.
  void Prefetch(std::span<const core::ItemHash> items, bool all = false);
  // The same for inserts without NX (core::Insert), which store an item in the first bucket
  // with a free slot, the newest sub-filter's first: its primary bucket's page is loaded for
  // every item, and the other candidate pages only for the items whose primary bucket has no
  // free slot then. Below a high load, one page per item instead of two (or more with several
  // sub-filters); a page needed after all is read when it is used.
  void PrefetchForInsert(std::span<const core::ItemHash> items);

  // For a command that runs in the scope's write group (Db::CfInsert): a page the group has
  // already changed (WriteGroup::Owns) is changed in place instead of copied, with an undo
  // record of each bucket it hands out for writing; AddDirty keeps the changes, and a cache
  // destroyed without AddDirty (a failed command) restores the buckets. Not for commands that
  // Checkpoint.
  void ChangeGroupPagesInPlace() { in_place_ = group_ != nullptr; }
  // The chain has `n` sub-filters when the command starts: any sub-filter from n on is
  // appended by this command, and none of its pages is stored anywhere (a chain only shrinks by
  // compaction, which drops its newest sub-filter once every fingerprint has moved out, so that
  // the same write deletes each of its pages; a deleted key's pages are of another version).
  // Their pages are then zeros without a look at the write group, the in-memory cache or
  // RocksDB. (Without it a growing long chain asked RocksDB for each new sub-filter's page: a
  // fifth of an insert's CPU at 65,000 sub-filters, every SST's bloom filter probed.)
  void set_stored_filters(uint32_t n) { stored_filters_ = n; }
  // Loads pages the caller did not find in the in-memory cache: from the scope's write group,
  // or from RocksDB in one MultiGet (pages already held are skipped).
  void Load(std::vector<std::pair<uint32_t, uint64_t>> pages);
  // Takes a page the caller already found in the in-memory cache (value nullptr: known not
  // stored), so Prefetch does not look it up again. A page of the wrong length sets status().
  void Adopt(uint32_t f, uint64_t page, MemCache::Value value) {
    (void)Install(f, page, std::move(value));
  }

  const uint8_t* Read(uint32_t f, uint64_t b) override;
  uint8_t* Write(uint32_t f, uint64_t b) override;
  // The loaded sub-filters of one page (see first_pages_). Once many are loaded, the bytes of
  // those not changed yet are copied side by side (BuildMirror), so a scan over a long chain
  // reads one small block of memory instead of a page allocation per sub-filter.
  std::span<const uint8_t* const> Resident() override {
    if (unmirrored_ >= kMirrorMin && unmirrored_ >= mirrored_) {
      BuildMirror();
    }
    return resident_;
  }
  uint64_t NextMaybeNonEmpty(uint32_t f, uint64_t b, uint64_t num_buckets) override;
  // Commits dirty pages in their own batch once enough have piled up (compaction of big filters)
  // and empties the cache. Only for writers.
  bool Checkpoint() override;

  // Copies bytes [offset, offset + length) of sub-filter f (missing pages as zeros).
  Status ReadRange(uint32_t f, uint64_t offset, uint64_t length, std::string* out);
  // Overwrites bytes of sub-filter f starting at offset (pages become dirty).
  Status WriteRange(uint32_t f, uint64_t offset, std::string_view data);

  // Puts every dirty page into the batch: the changed bytes as a merge operand (see
  // page_merge.h), a whole page when that is smaller, a delete for an all-zero page. The new
  // contents wait for Publish().
  void AddDirty(rocksdb::WriteBatch* batch);
  // The same into a write group (storage/write_group.h), which publishes the pages at once.
  void AddDirty(class WriteGroup* group);
  // After the batch holding AddDirty's pages is committed: the pages (and any extra entries,
  // e.g. metadata) go to the in-memory cache.
  void Publish();
  // Extra cache entries to publish with the pages (key as MemCache keys them).
  void AddPublish(std::string cache_key, std::optional<std::string> value) {
    publish_.emplace_back(
        std::move(cache_key),
        value ? std::make_shared<std::string>(std::move(*value)) : MemCache::Value());
  }
  bool dirty() const { return dirty_pages_ > 0; }
  // Called with every intermediate Checkpoint batch so it also carries the current metadata
  // (a crash between checkpoints then leaves metadata that agrees with the pages); it may add
  // cache entries with AddPublish.
  void set_on_checkpoint(std::function<void(rocksdb::WriteBatch*)> fn) {
    on_checkpoint_ = std::move(fn);
  }
  const Status& status() const { return status_; }
  // Pages read from RocksDB by this cache (for tests and stats).
  uint64_t pages_loaded() const { return pages_loaded_; }

 private:
  // A page's bytes are either shared (read-only, usually with the in-memory cache: no copy) or
  // owned (bytes); MarkDirty makes them owned.
  struct Page {
    MemCache::Value shared;
    std::string bytes;
    MemCache::Value before;  // the bytes when first made dirty (to write only what changed)
    bool dirty = false;
    bool whole = false;     // replaced without reading: written in full
    bool in_group = false;  // shared is the write group's newest value, changed in place
    // shared is the in-memory cache's value, held by nobody else: changed in place too, and
    // handed to the write group with the ranges written (WriteGroup::AddPageInPlace).
    bool in_cache = false;
    // A copy (not in place) whose every write since MarkDirty went through Write(), to at most
    // kCopyRanges buckets, which it records here: the write group then writes those bytes
    // instead of comparing the page with its bytes from before.
    bool ranges_complete = false;
    uint8_t copy_ranges_used = 0;
    static constexpr size_t kCopyRanges = 4;
    PageRange copy_ranges[kCopyRanges]{};
    uint32_t last_undo = kNoUndo;  // its newest record in undo_ (written in place)
    bool in_place() const { return in_group || in_cache; }
    const char* data() const { return shared ? shared->data() : bytes.data(); }
    size_t size() const { return shared ? shared->size() : bytes.size(); }
  };
  void MarkDirty(Page* p);
  // Write's record of the bucket at offset of a copied page (Page::copy_ranges).
  void RecordCopyRange(Page* p, uint32_t offset);
  void AddDirtyTo(rocksdb::WriteBatch* batch, class WriteGroup* group);
  // A page (PageCacheKey) from the scope's write group or the in-memory cache.
  bool CacheGet(std::string_view cache_key, MemCache::Value* value);
  // PageCacheKey(EncodePageKey(prefix_, f, page)), built in a buffer reused by the next call.
  std::string_view CacheKeyOf(uint32_t f, uint64_t page);
  // Decodes a page key an iterator found, if it belongs to this filter (prefix_).
  bool OwnPage(const rocksdb::Slice& key, PageKeyParts* parts) const;
  // The all-zero page of this length (a page that is not stored), shared.
  MemCache::Value Zeros(uint64_t length);
  // Whether sub-filter f may have stored pages. For long chains (more than kSkipScanMin
  // sub-filters, e.g. from a LOADCHUNK header) one iterator pass finds the sub-filters that have
  // any stored page, with one Seek per such sub-filter, so a lookup does not probe every page
  // of thousands of empty ones. Short chains are never scanned.
  bool MayHavePages(uint32_t f);
  static uint64_t Id(uint32_t f, uint64_t page) { return (static_cast<uint64_t>(f) << 32) | page; }
  uint64_t Buckets(uint32_t f);
  Page* Fetch(uint32_t f, uint64_t page);
  // Prefetch's work: the candidates of each item (primary_of_newest: only the primary bucket's
  // page in the newest sub-filter).
  void PrefetchCandidates(std::span<const core::ItemHash> items, bool all, bool primary_of_newest);
  // Adds a page read from the cache or RocksDB to pages_ (value nullptr: not stored, all
  // zeros); nullptr (status_ set) when its length is wrong.
  Page* Install(uint32_t f, uint64_t page, MemCache::Value value);
  // For iterators: RocksDB holds every write submitted so far (Engine::Settle).
  rocksdb::ReadOptions ReadOpts() const;
  // For point reads of these keys: RocksDB holds every submitted write of them (only those when
  // the caller holds the key's stripe, set_stripe_held).
  rocksdb::ReadOptions PointReadOpts(std::span<const std::string> keys) const;

  Engine* engine_;
  bool stripe_held_ = false;
  const rocksdb::Snapshot* snapshot_;
  std::string prefix_owned_;  // (empty when the prefix is borrowed)
  std::string_view prefix_;
  const core::FilterMeta* meta_;
  PageGeometry geo_;
  // The pages' map nodes come from an arena (a buffer in this object first): a lookup of 100
  // items loads ~200 pages, and each node was a malloc and a free. Checkpoint empties both.
  alignas(std::max_align_t) std::byte arena_buf_[4096];
  std::pmr::monotonic_buffer_resource arena_{arena_buf_, sizeof(arena_buf_)};
  using PageMap = std::pmr::unordered_map<uint64_t, Page>;
  PageMap pages_{&arena_};
  // Page 0 of sub-filter f, once in pages_ (map nodes do not move), or nullptr: a lookup in a
  // long chain of small sub-filters reads one page of every sub-filter, and a hash probe each
  // was most of its cost. Emptied with pages_.
  std::vector<Page*> first_pages_;
  bool Loaded(uint32_t f, uint64_t page) const {
    if (page == 0 && f < first_pages_.size() && first_pages_[f] != nullptr) {
      return true;
    }
    return pages_.find(Id(f, page)) != pages_.end();
  }
  Page* Remember(uint32_t f, uint64_t page, Page* p) {
    // (only while the sub-filters come about in order, as a scan of the chain reads them: a
    // command that reads the newest of 65,535 sub-filters alone keeps its page in pages_ only)
    if (page == 0 && p != nullptr && f < std::max<size_t>(64, first_pages_.size() * 2)) {
      if (f >= first_pages_.size()) {
        first_pages_.resize(std::max<size_t>(f + 1, first_pages_.size() * 2), nullptr);
        resident_.resize(first_pages_.size(), nullptr);
      }
      first_pages_[f] = p;
      SetResident(f, p);
    }
    return p;
  }
  // resident_[f] after page 0 of sub-filter f moved or changed (its bytes may have moved).
  void SetResident(uint32_t f, const Page* p) {
    if (f < resident_.size() && first_pages_[f] == p) {
      const uint64_t n = Buckets(f);
      const bool one_page = n != 0 && geo_.PageOf(n - 1) == 0;
      resident_[f] = one_page ? reinterpret_cast<const uint8_t*>(p->data()) : nullptr;
      unmirrored_ += one_page && !p->dirty ? 1 : 0;
    }
  }
  // Copies the bytes of the resident sub-filters whose page is not dirty into mirror_ and points
  // resident_ there (a dirty page's entry keeps pointing at the page, which Write changes).
  void BuildMirror();
  static constexpr uint64_t kMirrorMin = 64;               // sub-filters
  static constexpr uint64_t kMirrorMaxBytes = 8ULL << 20;  // (larger: no faster than the pages)
  std::vector<uint8_t> mirror_;
  uint64_t mirrored_ = 0;    // entries of resident_ in mirror_
  uint64_t unmirrored_ = 0;  // entries set to a page's own bytes since the last BuildMirror
  // The bytes of the one-page sub-filters among first_pages_ (Resident()), by sub-filter;
  // nullptr for the others. Emptied with pages_ and when AddDirty moves the pages' bytes.
  std::vector<const uint8_t*> resident_;
  std::vector<uint64_t> buckets_;  // cached SubFilterBuckets per sub-filter
  uint64_t dirty_pages_ = 0;
  uint64_t pages_loaded_ = 0;
  Status status_;
  std::function<void(rocksdb::WriteBatch*)> on_checkpoint_;
  MemCache* mem_;
  // Whether RocksDB's block cache keeps the blocks this cache reads: not when the server has an
  // in-memory cache (it holds the pages; a second copy in the block cache cost memory and its
  // insertions and evictions, and lookups of filters larger than memory got slower); nor for a
  // snapshot reader of such a server (SCANDUMP, lookups while CF.COMPACT holds the key).
  bool fill_block_cache_;
  class WriteGroup* group_;  // the scope's write group (writers only), or nullptr
  std::vector<std::pair<std::string, MemCache::Value>> publish_;
  // CacheKeyOf's buffer: in this object for the usual key lengths, else key_buf_.
  char key_inline_[96];
  bool key_ready_ = false;  // the buffer holds the key's prefix
  std::string key_buf_;
  bool in_place_ = false;  // see ChangeGroupPagesInPlace
  // The buckets handed out for writing in the write group's pages: where, and their bytes
  // before (at undo_bytes_[offset], length bytes), in order.
  struct Undo {
    char* at;
    size_t offset;
    size_t length;
    uint32_t at_in_page;
    uint32_t prev;  // the page's previous record (kNoUndo: none)
  };
  static constexpr uint32_t kNoUndo = UINT32_MAX;
  // The byte ranges written in place in a page, from its list of undo records, newest first
  // (in a reused buffer; valid until the next call).
  std::span<const PageRange> RangesWritten(uint32_t last_undo);

  std::vector<Undo> undo_;
  std::string undo_bytes_;
  // The thread's spare undo_ buffer: a command's cache takes it on its first record and gives
  // it back (emptied) when destroyed, so the records of a write allocate nothing.
  static std::vector<Undo>& SpareUndo() {
    thread_local std::vector<Undo> spare;
    return spare;
  }
  bool scanned_ = false;
  uint32_t stored_filters_ = UINT32_MAX;  // set_stored_filters
  std::vector<bool> stored_;  // per sub-filter, after the scan: has stored pages (or dirty ones)
  // NextMaybeNonEmpty state: the stored page range last found for sub-filter scan_f_.
  std::unique_ptr<rocksdb::Iterator> scan_it_;
  uint32_t scan_f_ = UINT32_MAX;
  uint64_t scan_page_ = UINT64_MAX;
};

}  // namespace cuckood::storage
