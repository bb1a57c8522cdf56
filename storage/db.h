// The storage facade the command handlers use: the keyspace (generic key commands and strings)
// and the cuckoo filter operations, over one Engine.
//
// Locking contract: every mutating method expects the caller to hold the stripe lock of each key
// it names (server/ takes them from the command table's key positions; MULTI/EXEC takes all of
// them; FLUSHDB/FLUSHALL take every stripe). Stripes are per database: StripeOf(db, key) for
// the key of database db, stored under namespace Namespace(db) (the ns the methods take), a
// map that changes only while SWAPDB holds every stripe. Reading methods take no lock and never see
// a partly applied write (see storage/locks.h). Methods are otherwise thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dump.h"
#include "core/filter.h"
#include "core/rdb.h"
#include "storage/chain_indexes.h"
#include "storage/engine.h"
#include "storage/format.h"
#include "storage/locks.h"
#include "storage/mem_cache.h"
#include "storage/scope.h"
#include "storage/status.h"

namespace cuckood::storage {

// Cuckoo options that are server settings (CONFIG SET may change them between commands).
struct CfSettings {
  uint64_t initial_capacity = 1024;  // cf-initial-size: capacity of auto-created filters
  uint16_t bucket_size = 2;          // cf-bucket-size
  uint16_t max_iterations = 20;      // cf-max-iterations
  uint16_t expansion = 1;            // cf-expansion-factor (normalised when used)
  uint32_t max_expansions = 32;      // cf-max-expansions: sub-filters before commands refuse
  core::SizingPolicy sizing = core::SizingPolicy::kRedisBloom;  // cf-sizing
  uint32_t page_size = kDefaultPageSize;                        // cf-page-size
  uint64_t max_filter_bytes = 1ULL << 36;                       // cf-max-filter-bytes
};

struct ReserveArgs {
  uint64_t capacity = 0;
  uint16_t bucket_size = 2;
  uint16_t max_iterations = 20;
  uint16_t expansion = 1;  // as requested (normalised inside)
};

// How CF.ADD/ADDNX/INSERT/INSERTNX insert.
struct InsertOptions {
  bool nx = false;         // ADDNX/INSERTNX: an item already present is not added again
  bool no_create = false;  // NOCREATE: kNotFound when the key is absent
  uint64_t capacity = 0;   // of an auto-created filter; 0 = settings.initial_capacity
  // The items are separate CF.ADD/ADDNX calls run as one (server: combine-commands): each is
  // refused when the chain has reached its maximum before it, as a call of its own would be, so
  // the items stop there (InsertOutcome::results is shorter; the rest answer max_expansions).
  bool separate_calls = false;
};

// Outcome of CF.ADD/ADDNX/INSERT/INSERTNX beyond a plain Status.
struct InsertOutcome {
  bool max_expansions = false;  // refused before any item: the filter may not grow further
  // One per item; with InsertOptions::separate_calls, only for the items before the one that
  // found the chain at its maximum.
  std::vector<core::InsertResult> results;
};

struct ScanDumpChunk {
  int64_t next = 0;
  std::optional<std::string> data;  // nullopt = [0, null]
};

struct ScanPage {
  uint64_t cursor = 0;
  std::vector<std::string> keys;
};

class Db {
 public:
  // cache_bytes: size of the in-memory cache of metadata and pages (0 = none).
  Db(Engine* engine, size_t lock_stripes = 4096, uint64_t cache_bytes = 256ULL << 20);

  Engine* engine() { return engine_; }
  LockManager& locks() { return locks_; }

  // ---- keyspace ------------------------------------------------------------------------------
  // Live (not expired) metadata of a key, nullopt when absent.
  StatusOr<std::optional<Metadata>> Get(const Scope& scope, uint16_t ns, std::string_view key);
  StatusOr<bool> Exists(const Scope& scope, uint16_t ns, std::string_view key);
  StatusOr<bool> Delete(uint16_t ns, std::string_view key);
  // Sets the absolute expiry (0 = persist). false when the key is absent.
  StatusOr<bool> SetExpire(uint16_t ns, std::string_view key, uint64_t expire_ms);
  // Deletes the key now (an expiry time in the past).
  StatusOr<bool> Expire(uint16_t ns, std::string_view key);
  // RENAME (nx = RENAMENX). kNotFound / kKeyNotFound: src is absent; returns false when nx and
  // dst exists.
  StatusOr<bool> Rename(uint16_t ns, std::string_view src, std::string_view dst, bool nx);
  Status FlushDb(uint16_t ns);
  Status FlushAll();
  StatusOr<uint64_t> DbSize(uint16_t ns);
  // One SCAN step. type_filter empty = any. pattern empty = all.
  StatusOr<ScanPage> Scan(uint16_t ns, uint64_t cursor, std::string_view pattern, uint64_t count,
                          std::string_view type_filter);
  StatusOr<std::vector<std::string>> Keys(uint16_t ns, std::string_view pattern);
  StatusOr<std::optional<std::string>> RandomKey(uint16_t ns);
  // Live keys of one hash slot (CLUSTER COUNTKEYSINSLOT / GETKEYSINSLOT): a range scan of the
  // metadata keys ns | slot | *, read from one snapshot. KeysInSlot returns at most `limit`
  // keys, in key order.
  StatusOr<uint64_t> CountKeysInSlot(uint16_t ns, uint16_t slot);
  StatusOr<std::vector<std::string>> KeysInSlot(uint16_t ns, uint16_t slot, uint64_t limit);
  // Bytes a key takes in the database: metadata plus pages (exact for filters of up to 4096
  // pages, RocksDB's estimate of the key range beyond that). kNotFound / kKeyNotFound: absent.
  StatusOr<uint64_t> DiskUsage(const Scope& scope, uint16_t ns, std::string_view key);

  // Strings (enough of them for WRONGTYPE checks and simple use).
  Status SetString(uint16_t ns, std::string_view key, std::string_view value, uint64_t expire_ms,
                   bool keep_ttl);

  // ---- cuckoo filters --------------------------------------------------------------------------
  // kExists / kFilterExists; kWrongType; kInvalid / kCreateTooLarge: creation impossible.
  Status CfReserve(const Scope& scope, uint16_t ns, std::string_view key, const ReserveArgs& args,
                   const CfSettings& settings);
  // See InsertOptions (no_create: kNotFound / kFilterNotFound when absent).
  StatusOr<InsertOutcome> CfInsert(const Scope& scope, uint16_t ns, std::string_view key,
                                   const std::vector<std::string_view>& items,
                                   const InsertOptions& options, const CfSettings& settings);
  // Per item: exists (0/1) or count. Missing key or another type: all zero.
  StatusOr<std::vector<uint64_t>> CfLookup(const Scope& scope, uint16_t ns, std::string_view key,
                                           const std::vector<std::string_view>& items, bool count);
  // CfLookup of one item in each of several keys (keys[i], items[i]; a key may repeat), as
  // consecutive calls would answer: (*out)[i] is call i's answer or error. The pages of every
  // call are asked of the in-memory cache together, so that their cache misses overlap. The
  // caller holds every key's stripe.
  void CfLookupKeys(const Scope& scope, uint16_t ns, std::span<const std::string_view> keys,
                    std::span<const std::string_view> items, bool count,
                    std::vector<StatusOr<uint64_t>>* out);
  // kNotFound / kDelFilterNotFound for a missing key or another type.
  StatusOr<bool> CfDelete(const Scope& scope, uint16_t ns, std::string_view key,
                          std::string_view item, const CfSettings& settings);
  // kNotFound / kCompactFilterNotFound for a missing key or another type.
  Status CfCompact(const Scope& scope, uint16_t ns, std::string_view key,
                   const CfSettings& settings);
  // Metadata of a filter: kNotFound / kFilterNotFound, kWrongType.
  StatusOr<Metadata> CfInfo(const Scope& scope, uint16_t ns, std::string_view key);
  StatusOr<ScanDumpChunk> CfScanDump(const Scope& scope, uint16_t ns, std::string_view key,
                                     int64_t iter);
  // iter == 1: header (kExists / kFilterExists, kWrongType, kInvalid / kBadHeader or
  // kCreateFailed); else a chunk (kNotFound / kFilterNotFound, kWrongType, kInvalid / kBadChunk).
  Status CfLoadChunk(const Scope& scope, uint16_t ns, std::string_view key, int64_t iter,
                     std::string_view data, const CfSettings& settings);

  // ---- DUMP / RESTORE (dump_store.cc) ----------------------------------------------------------
  // The DUMP payload of a key (nullopt when absent), read through one snapshot.
  StatusOr<std::optional<std::string>> Dump(const Scope& scope, uint16_t ns, std::string_view key);
  // Stores the value of a parsed payload (core::rdb::ParsePayload) under key, replacing what is
  // there, with expiry expire_ms (0 = none), in one write batch; a filter gets a new version.
  // An expiry already past only checks the value and deletes the old key. Returns whether the
  // key changed (false: already expired and there was no old key). kInvalid / kBadDumpFormat:
  // the bytes do not decode, or the filter is larger than the settings allow.
  StatusOr<bool> Restore(uint16_t ns, std::string_view key, const core::rdb::Payload& payload,
                         uint64_t expire_ms, const CfSettings& settings);

  // A key's live metadata, decoded, with the prefix of its page keys when it is a filter; null
  // when absent. Lookups share it: the decoding of a cached record is reused (per thread) for
  // as long as the in-memory cache holds the same record, so a hot key is not decoded again.
  struct MetaView {
    Metadata meta;
    std::string page_prefix;  // filters only
    // Names this view's pages in a thread's PageHandles (storage/page_handles.h): unique among
    // the process's views, kept by the view that replaces it in the thread's slot when the page
    // prefix is the same. 0: not to be used there (a view read in a write group or snapshot).
    uint64_t id = 0;
  };
  StatusOr<std::shared_ptr<const MetaView>> LookupMeta(const Scope& scope,
                                                       const rocksdb::ReadOptions& ro, uint16_t ns,
                                                       std::string_view key);

  // ---- COPY / MOVE (dump_store.cc) -------------------------------------------------------------
  // Copies the live key src of namespace src_ns to dst of dst_ns, with its expiry; a filter's
  // pages are copied under a new version, in bounded batches, with the metadata last (readers of
  // dst see the old value or the whole copy). The caller holds the stripes of both keys.
  // false: src is absent, or dst exists and !replace. A key copied onto itself is refused
  // (kInvalid / kSameObject).
  StatusOr<bool> Copy(uint16_t src_ns, std::string_view src, uint16_t dst_ns, std::string_view dst,
                      bool replace);
  // MOVE: the key goes from src_ns to dst_ns (a filter's pages are copied, as by Copy, and the
  // source is deleted in the batch that writes the destination's metadata). false: the key is
  // absent, or dst_ns already holds it; src_ns == dst_ns is refused (kInvalid / kSameObject). The
  // caller holds the key's stripes in both databases.
  StatusOr<bool> Move(uint16_t src_ns, uint16_t dst_ns, std::string_view key);

  // ---- databases (keyspace.cc) -----------------------------------------------------------------
  // The namespace (the ns of the on-disk keys) database `db` of SELECT is stored under: itself
  // unless SWAPDB swapped it. Lock-free; changes only while every stripe is held.
  uint16_t Namespace(uint16_t db) const { return ns_of_db_[db].load(std::memory_order_acquire); }
  // The database whose data is stored under namespace ns (the inverse of Namespace).
  uint16_t DbOfNamespace(uint16_t ns) const {
    return db_of_ns_[ns].load(std::memory_order_acquire);
  }
  // SWAPDB: databases a and b exchange namespaces, persisted in one write (kDbMapKey). O(1). The
  // caller holds every stripe.
  Status SwapDatabases(uint16_t a, uint16_t b);
  // Re-reads the database map from RocksDB (start, a new engine, a replicated SWAPDB).
  Status LoadDatabaseMap();

  // ---- replication (storage/replicated.cc) ---------------------------------------------------
  // Applies a write batch of the primary's WAL unchanged (the raw bytes of a rocksdb::WriteBatch)
  // and drops what it changes from the in-memory cache. Takes the stripes of the keys it
  // touches (every stripe for a FLUSHDB/FLUSHALL batch); the caller holds none.
  Status ApplyReplicated(std::string batch_data);
  // Serves from another database from now on (a replica's full sync). The caller makes sure no
  // command runs meanwhile; the in-memory cache is emptied.
  void SwapEngine(Engine* engine);
  // Drops every record of slots first..last (metadata and pages of every namespace, rename
  // aliases) in one write batch, with every stripe held, and empties the in-memory cache (slot
  // migration: the source after the hand-over, a destination abandoning an import).
  Status DeleteSlots(uint16_t first, uint16_t last);

  // Number of pages RocksDB served to page caches (INFO).
  uint64_t pages_loaded() const { return pages_loaded_.load(); }
  MemCache& cache() { return mem_; }
  // The kept indexes of long chains (INFO, tests).
  ChainIndexes& chain_indexes() { return chain_indexes_; }

 private:
  StatusOr<std::optional<Metadata>> GetWith(const Scope& scope, const rocksdb::ReadOptions& ro,
                                            uint16_t ns, std::string_view key);
  std::string PagePrefix(uint16_t ns, std::string_view key, const Metadata& meta) const;
  // The same into *out (a reused buffer; replaced).
  void PagePrefixTo(std::string* out, uint16_t ns, std::string_view key,
                    const Metadata& meta) const;
  // CfLookup when every candidate page is in the in-memory cache (the caller holds the key's
  // stripe shared and has a MemCache::ReadSection open): the answers go to *out without a page
  // map, and true is returned. Otherwise the pages found are handed to fallback and false is
  // returned.
  bool LookupCached(const MetaView& view, std::span<const core::ItemHash> hashes, bool count,
                    class PageCache* fallback, std::vector<uint64_t>* out);
  StatusOr<Metadata> NewFilter(uint64_t capacity, uint16_t bucket_size, uint16_t max_iterations,
                               uint16_t expansion, const CfSettings& settings);
  core::Limits LimitsFor(const Metadata& meta, const CfSettings& settings) const;
  // The chain index (core/chain_index.h) of the filter with this page prefix and metadata, the
  // kept one or one built now through `pages` (and kept); nullptr when the chain does not suit
  // one or its pages cannot be read. The caller holds the key's stripe, and reads without a
  // snapshot.
  std::shared_ptr<core::ChainIndex> ChainIndexFor(std::string_view prefix,
                                                  const core::FilterMeta& filter,
                                                  class PageCache* pages);
  // A metadata change to publish to the cache once its batch is committed (meta null = gone).
  struct MetaChange {
    const std::string& meta_key;
    const Metadata* meta;
  };
  // Writes the batch; on success publishes the pages of `pages` (may be null) and the metadata
  // changes to the in-memory cache.
  // With a write group in the scope (storage/write_group.h), that group is committed first.
  Status Commit(const Scope& scope, rocksdb::WriteBatch* batch, class PageCache* pages,
                std::initializer_list<MetaChange> metas);
  // Adds to `batch` the removal of the rename alias of `old` (a filter renamed away from the
  // name its pages are stored under), for a write that deletes or replaces that filter.
  void DropAlias(rocksdb::WriteBatch* batch, uint16_t ns, const Metadata& old);
  // Commits a filter write: the dirty pages of `cache` (may be null) and the new metadata, in
  // one batch, or into the scope's write group.
  Status CommitFilter(const Scope& scope, class PageCache* cache, const std::string& meta_key,
                      const Metadata& meta);

  // ApplyReplicated: before a batch is written, pins the versions of its pages that come without
  // their metadata (replica_pins_); once it is stored, unpins those whose metadata it wrote.
  void PinIncompleteVersions(
      const std::map<uint64_t, std::pair<uint16_t, std::string>>& page_versions,
      const std::set<uint64_t>& meta_versions);
  void UnpinCompletedVersions(const std::set<uint64_t>& meta_versions);
  // Copy and Move: writes src's value to dst (a filter's pages under a new version), deleting
  // src in the same final batch when move.
  StatusOr<bool> CopyValue(uint16_t src_ns, std::string_view src, uint16_t dst_ns,
                           std::string_view dst, bool replace, bool move);

  Engine* engine_;
  // Database <-> namespace maps (SWAPDB), indexed by u16.
  std::unique_ptr<std::atomic<uint16_t>[]> ns_of_db_;
  std::unique_ptr<std::atomic<uint16_t>[]> db_of_ns_;
  LockManager locks_;
  // (before mem_, whose erase hook it is: destroyed after it)
  ChainIndexes chain_indexes_;
  MemCache mem_;
  // Entries of each thread's PageHandles (storage/page_handles.h): the hardware threads' tables
  // together about one per page of 2 KiB the in-memory cache can hold (64 bytes each: 3% of
  // the cache's size).
  size_t page_handle_entries_;
  std::atomic<uint64_t> pages_loaded_{0};
  std::atomic<uint64_t> scan_seq_{0};
  std::mutex scan_mu_;
  std::vector<std::pair<uint64_t, std::string>> scan_cursors_;  // ring of cursor -> next key
  // A replica's pins (Engine::PinVersion) of filter versions whose pages arrived in batches
  // before their metadata (a RESTORE or COPY written in several batches): kept from the
  // compaction filter until a batch writes metadata of that version (or the engine changes).
  std::mutex replica_pins_mu_;
  std::set<uint64_t> replica_pins_;
};

// Redis glob matching (stringmatchlen semantics: * ? [a-z] [^x] \x), case-sensitive.
bool GlobMatch(std::string_view pattern, std::string_view text, bool nocase = false);

}  // namespace cuckood::storage
