// The RocksDB database of a cuckood server: opening it with its column families and options,
// compaction filters, version allocation, durability (appendfsync) and statistics.
//
// Thread safety: every method may be called from any thread once Open() has returned.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/statistics.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "storage/status.h"

namespace cuckood::storage {

enum class FsyncMode { kAlways, kEverySec, kNo };

struct EngineOptions {
  std::string dir = "./data";
  FsyncMode fsync = FsyncMode::kEverySec;
  uint64_t block_cache_bytes = 256ULL << 20;  // shared LRU cache for both column families
  uint64_t write_buffer_bytes = 64ULL << 20;  // memtable size per column family
  // The pages' memtable groups entries by page (storage/page_memtable.h); false = RocksDB's
  // skiplist of all entries.
  bool page_memtable = true;
  int background_jobs = 2;
  bool read_only = false;  // for the offline checker
  // How long a write waits out a RocksDB write stall (too many memtables or L0 files while
  // flushes and compactions catch up) before it fails with a "write stall" error instead of
  // holding its client (and its io thread) indefinitely.
  uint64_t write_stall_timeout_ms = 2000;
  // Receives RocksDB's own log lines (level: 0 debug, 1 info, 2 warning, 3 error) instead of a
  // LOG file in dir: a log file on the data disk fails, and RocksDB then aborts, once that disk
  // is full. Unset = RocksDB's lines are dropped.
  std::function<void(int level, std::string_view line)> log;
  // WAL kept for replicas that fall behind (repl-backlog-ttl / repl-backlog-size): WAL files
  // RocksDB no longer needs stay in its archive for this long, up to this many bytes in all.
  // 0 and 0: deleted as soon as they are obsolete.
  uint64_t wal_ttl_seconds = 0;
  uint64_t wal_size_limit_bytes = 0;
};

struct EngineStats {
  uint64_t block_cache_usage = 0;
  uint64_t block_cache_capacity = 0;
  uint64_t memtable_bytes = 0;
  uint64_t sst_bytes = 0;
  uint64_t pending_compaction_bytes = 0;
  uint64_t num_running_compactions = 0;
  uint64_t num_running_flushes = 0;
  uint64_t stall_micros = 0;
  uint64_t estimated_keys_metadata = 0;
  uint64_t estimated_keys_pages = 0;
  bool write_stopped = false;
};

class Engine {
 public:
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  static StatusOr<std::unique_ptr<Engine>> Open(const EngineOptions& options);

  rocksdb::DB* db() { return db_.get(); }
  rocksdb::ColumnFamilyHandle* default_cf() { return db_->DefaultColumnFamily(); }
  rocksdb::ColumnFamilyHandle* metadata_cf() { return handles_[1]; }
  rocksdb::ColumnFamilyHandle* pages_cf() { return handles_[2]; }
  // Whether a write's memtable inserts are cheaper in key order: RocksDB's own skiplist
  // (memtable skiplist) starts each insert from where the last one of the filter ended; the
  // page memtable finds a page by a hash of its key, whatever the order.
  bool ordered_writes() const { return pages_memtable_ == nullptr; }

  // A version number never handed out before, in this run or an earlier one.
  StatusOr<uint64_t> NewVersion();
  // While a version is pinned, the pages compaction filter keeps all of its pages even though
  // no metadata names it yet: for a filter written in several batches before its metadata
  // (RESTORE). Unpin after the metadata is committed, or to abandon the pages (they are dropped
  // like any dead version's). Thread-safe; pins nest.
  void PinVersion(uint64_t version);
  void UnpinVersion(uint64_t version);

  // Commits a batch with the configured durability (Submit, then Await). Errors are converted
  // for clients.
  Status Write(rocksdb::WriteBatch* batch);

  // ---- ordered commits ------------------------------------------------------------------------
  // Every write reaches RocksDB in the order it was submitted. A writer submits its batch while
  // it holds the stripe locks of the keys the batch changes, so two writes of one key are
  // submitted (and stored) in the order they were made; it may then release the locks and wait
  // for the write outside them, while the next writer of those keys already runs. Whoever waits
  // first writes everything queued so far, in one RocksDB write.
  //
  // Until a submitted write is stored, the in-memory cache may be the only place that holds its
  // values: whatever reads RocksDB on behalf of a command that may have read the cache calls
  // Settle() first (a point read under the key's stripe: SettleKey(), which waits for that key's
  // writes only), and replies that may depend on such values are sent after Settle() too.
  struct PendingWrite {
    rocksdb::WriteBatch* batch = nullptr;
    // Called (by whichever thread writes) when the write fails, before Await returns: the
    // submitter drops the values it published to the in-memory cache.
    void (*on_fail)(void* arg) = nullptr;
    void* arg = nullptr;
    Status status;
    uint64_t ticket = 0;  // 0: refused at submission (status says why)
    // The submitter names every key the batch changes (MarkPending, before it releases their
    // stripes); otherwise SettleKey waits for this write whatever the key.
    bool marked = false;
  };
  // Queues *w (which must stay alive until Await(w) returns). `generation` is the value of
  // generation() when the writer started reading what it now writes: after a write failed, the
  // writes that may have read its values (cache entries of a batch that was never stored) fail
  // too.
  void Submit(PendingWrite* w, uint64_t generation);
  Status Await(PendingWrite* w);
  // Returns once every write submitted before the call is stored (or failed).
  void Settle() {
    const uint64_t t = submitted_.load(std::memory_order_acquire);
    if (completed_.load(std::memory_order_acquire) < t) {
      Drain(t);
    }
  }
  // Records that the write of `ticket` changes this RocksDB key (its submitter calls it for each
  // key of a `marked` write, before it gives their stripes back).
  void MarkPending(std::string_view key, uint64_t ticket) {
    auto& slot = pending_marks_[PendingSlot(key)];
    uint64_t seen = slot.load(std::memory_order_relaxed);
    while (seen < ticket && !slot.compare_exchange_weak(seen, ticket, std::memory_order_release,
                                                        std::memory_order_relaxed)) {
    }
  }
  // Settle() narrowed to one key, for a point read by a command that holds the key's stripe:
  // returns once every submitted write that may change this key is stored (the writes marked
  // with its slot, and every unmarked one), not the writes of other keys.
  void SettleKey(std::string_view key) {
    const uint64_t t = std::max(pending_marks_[PendingSlot(key)].load(std::memory_order_acquire),
                                unmarked_.load(std::memory_order_acquire));
    if (completed_.load(std::memory_order_acquire) < t) {
      Drain(t);
    }
  }
  // Changes each time a write fails.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // ---- replication -----------------------------------------------------------------------------
  // The sequence number of the newest write RocksDB holds.
  uint64_t LatestSequence() const { return db_->GetLatestSequenceNumber(); }
  // Waits until LatestSequence() > seq or the timeout passes; true when it is above.
  bool WaitForSequenceAbove(uint64_t seq, std::chrono::milliseconds timeout);
  // Writes a batch a primary wrote, unchanged (a replica's only writes): RocksDB gives it the
  // next sequence numbers, which are the primary's when the replica holds the primary's history.
  Status WriteReplicated(rocksdb::WriteBatch* batch);
  // A consistent copy of the database in dir (which must not exist): hard links to the SST
  // files, copies of the rest. *sequence: the sequence number the copy holds.
  Status CreateCheckpoint(const std::string& dir, uint64_t* sequence);
  // Re-reads the version high-water mark from the database: a replica about to write on its own
  // (promoted) continues after the versions its primary reserved.
  Status ReloadVersions();
  // The version high-water mark: every version handed out so far is at most this.
  uint64_t VersionHighWater();
  // Makes every later NewVersion() return more than v (a destination of slot migration, which
  // received filters of the source's versions).
  Status EnsureVersionsAbove(uint64_t v);

  // Flushes memtables to SST files (SAVE / BGSAVE / shutdown).
  Status Flush();
  // Full manual compaction of both data column families (runs the compaction filters).
  Status CompactAll();
  // Syncs the WAL now.
  Status SyncWal();

  void SetFsync(FsyncMode mode);
  FsyncMode fsync() const { return fsync_.load(); }

  EngineStats Stats();
  // Seconds since the epoch of the last SAVE/BGSAVE of this run; 0 before the first one.
  uint64_t last_save_unix() const { return last_save_unix_.load(); }
  // Approximate bytes on disk and in memtables of a key range in one column family.
  uint64_t ApproximateSize(rocksdb::ColumnFamilyHandle* cf, const std::string& begin,
                           const std::string& end);

  // Closes the database cleanly (flushes, syncs); later calls fail. Idempotent. After a write
  // error it closes without flushing: what was acknowledged is in the WAL.
  void Close();

  // Ok while writes are accepted. After a write or background error that stops RocksDB's writes
  // (ENOSPC, EIO), the error: writes are refused with it, without calling into RocksDB again,
  // until the sync thread's DB::Resume() succeeds (it retries once free space is back).
  Status WriteHealth();
  uint64_t write_errors() const { return write_errors_.load(); }
  uint64_t recoveries() const { return recoveries_.load(); }
  uint64_t stall_errors() const { return stall_errors_.load(); }

  static Status FromRocks(const rocksdb::Status& s);

 private:
  Engine() = default;
  void SyncLoop();
  // Writes the queue until ticket `upto` is stored.
  void Drain(uint64_t upto);
  // One RocksDB write of a batch, waiting out stalls up to write_stall_timeout_ms.
  Status WriteNow(rocksdb::WriteBatch* batch);
  // Records a failed write/sync status; stops further writes if it is an I/O error.
  void NoteWriteError(const rocksdb::Status& s);
  void TryResume();
  friend class ErrorListener;

  EngineOptions options_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::shared_ptr<rocksdb::Cache> cache_;
  // The pages' memtable representation (storage/page_memtable.h), or null (RocksDB's own):
  // WriteNow prefetches what its inserts read.
  std::shared_ptr<rocksdb::MemTableRepFactory> pages_memtable_;
  std::shared_ptr<rocksdb::MemTableRepFactory> meta_memtable_;  // (the same representation)
  std::shared_ptr<rocksdb::Statistics> statistics_;
  std::shared_ptr<struct FilterContext> filter_context_;

  std::mutex version_mu_;
  uint64_t next_version_ = 0;
  uint64_t reserved_until_ = 0;

  std::atomic<FsyncMode> fsync_{FsyncMode::kEverySec};
  std::atomic<uint64_t> last_save_unix_{0};
  std::mutex sync_mu_;
  std::condition_variable sync_cv_;
  bool stopping_ = false;
  std::thread sync_thread_;
  std::atomic<bool> closed_{false};

  std::atomic<bool> failed_{false};
  std::mutex failed_mu_;
  Status failed_status_;  // guarded by failed_mu_
  std::atomic<uint64_t> write_errors_{0};
  std::atomic<uint64_t> recoveries_{0};
  std::atomic<uint64_t> stall_errors_{0};
  std::mutex resume_mu_;  // one Resume() at a time

  // Notified after writes, for WaitForSequenceAbove (only while someone waits).
  void NotifyWritten();
  std::mutex seq_mu_;
  std::condition_variable seq_cv_;
  std::atomic<int> seq_waiters_{0};

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::vector<PendingWrite*> queue_;  // guarded by queue_mu_
  uint64_t last_ticket_ = 0;          // guarded by queue_mu_
  bool leading_ = false;              // a thread is writing (guarded by queue_mu_)
  Status generation_failure_;         // the failure that began this generation (queue_mu_)
  std::atomic<uint64_t> submitted_{0};
  std::atomic<uint64_t> completed_{0};
  // The newest ticket of a write marked with a key of each slot (MarkPending; only raised, by
  // writers holding the key's stripe), and of a write that named no keys.
  static constexpr size_t kPendingSlots = 1 << 14;
  static size_t PendingSlot(std::string_view key) {
    return std::hash<std::string_view>()(key) & (kPendingSlots - 1);
  }
  std::array<std::atomic<uint64_t>, kPendingSlots> pending_marks_{};
  std::atomic<uint64_t> unmarked_{0};
  std::atomic<uint64_t> generation_{0};
};

// A RocksDB snapshot held for the lifetime of the object.
class SnapshotHolder {
 public:
  explicit SnapshotHolder(rocksdb::DB* db) : db_(db), snap_(db->GetSnapshot()) {}
  // After Engine::Settle(): the snapshot holds every write submitted before.
  explicit SnapshotHolder(Engine* engine) : SnapshotHolder((engine->Settle(), engine->db())) {}
  ~SnapshotHolder() { db_->ReleaseSnapshot(snap_); }
  SnapshotHolder(const SnapshotHolder&) = delete;
  SnapshotHolder& operator=(const SnapshotHolder&) = delete;
  const rocksdb::Snapshot* get() const { return snap_; }

 private:
  rocksdb::DB* db_;
  const rocksdb::Snapshot* snap_;
};

// Milliseconds since the unix epoch.
uint64_t NowMs();

}  // namespace cuckood::storage
