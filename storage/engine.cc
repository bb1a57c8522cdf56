#include "storage/engine.h"

#include <rocksdb/cache.h>
#include <rocksdb/compaction_filter.h>
#include <rocksdb/convenience.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/listener.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "storage/buffer_pool.h"
#include "storage/format.h"
#include "storage/page_memtable.h"
#include "storage/page_merge.h"

namespace cuckood::storage {

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// Shared by the compaction filters: the database they consult once it is open.
struct FilterContext {
  std::atomic<rocksdb::DB*> db{nullptr};
  std::atomic<rocksdb::ColumnFamilyHandle*> metadata{nullptr};
  // Versions being written (Engine::PinVersion); pinned_count spares the lock when none is.
  std::atomic<size_t> pinned_count{0};
  std::mutex pinned_mu;
  std::multiset<uint64_t> pinned;

  bool Pinned(uint64_t version) {
    if (pinned_count.load(std::memory_order_acquire) == 0) {
      return false;
    }
    std::lock_guard lock(pinned_mu);
    return pinned.count(version) != 0;
  }
};

namespace {

constexpr uint64_t kVersionBlock = 1 << 16;

// Drops metadata records whose expiry has passed. Reads already treat them as absent.
class MetadataFilter final : public rocksdb::CompactionFilter {
 public:
  bool Filter(int, const rocksdb::Slice&, const rocksdb::Slice& value, std::string*,
              bool*) const noexcept override {
    uint64_t expire = 0;
    if (!PeekExpire(std::string_view(value.data(), value.size()), &expire)) {
      return false;  // never drop what we cannot read; the checker reports it
    }
    return expire != 0 && expire <= NowMs();
  }
  const char* Name() const noexcept override { return "cuckood.MetadataFilter"; }
};

// Drops pages whose filter version is no longer the live one: the key was deleted, expired,
// overwritten, or flushed. Keeps the last verdict, since one key's pages arrive together.
class PagesFilter final : public rocksdb::CompactionFilter {
 public:
  explicit PagesFilter(std::shared_ptr<FilterContext> ctx) : ctx_(std::move(ctx)) {}

  Decision FilterV2(int, const rocksdb::Slice& key, ValueType type, const rocksdb::Slice&,
                    std::string*, std::string*) const noexcept override {
    if (type != ValueType::kValue && type != ValueType::kMergeOperand) {
      return Decision::kKeep;
    }
    return Dead(key) ? Decision::kRemove : Decision::kKeep;
  }

  bool Dead(const rocksdb::Slice& key) const noexcept {
    PageKeyParts parts;
    std::string_view raw(key.data(), key.size());
    if (!DecodePageKey(raw, &parts)) {
      return false;
    }
    std::string_view prefix = raw.substr(0, raw.size() - 6);
    if (prefix == last_prefix_) {
      return last_drop_;
    }
    last_prefix_.assign(prefix);
    last_drop_ = !Alive(parts);
    return last_drop_;
  }
  const char* Name() const noexcept override { return "cuckood.PagesFilter"; }

 private:
  bool Alive(const PageKeyParts& parts) const noexcept {
    try {
      if (ctx_->Pinned(parts.version)) {
        return true;
      }
    } catch (...) {
      return true;
    }
    rocksdb::DB* db = ctx_->db.load();
    rocksdb::ColumnFamilyHandle* meta_cf = ctx_->metadata.load();
    if (db == nullptr || meta_cf == nullptr) {
      return true;
    }
    try {
      auto live_under = [&](std::string_view name, std::string_view owner_field) {
        std::string value;
        auto s = db->Get(rocksdb::ReadOptions(), meta_cf, EncodeMetaKey(parts.ns, name), &value);
        if (s.IsNotFound()) {
          return 0;  // dead
        }
        if (!s.ok()) {
          return 1;  // unknown: keep
        }
        auto meta = DecodeMetadata(value);
        if (!meta) {
          return 1;
        }
        if (meta->type != KeyType::kCuckoo || meta->version != parts.version ||
            meta->cuckoo.owner != owner_field || meta->Expired(NowMs())) {
          return 0;
        }
        return 1;
      };
      if (live_under(parts.owner, "") == 1) {
        return true;
      }
      std::string current;
      auto s = db->Get(rocksdb::ReadOptions(), db->DefaultColumnFamily(),
                       EncodeAliasKey(parts.ns, parts.owner, parts.version), &current);
      if (s.IsNotFound()) {
        return false;
      }
      if (!s.ok()) {
        return true;
      }
      return live_under(current, parts.owner) == 1;
    } catch (...) {
      return true;
    }
  }

  std::shared_ptr<FilterContext> ctx_;
  mutable std::string last_prefix_;
  mutable bool last_drop_ = false;
};

class PagesFilterFactory final : public rocksdb::CompactionFilterFactory {
 public:
  explicit PagesFilterFactory(std::shared_ptr<FilterContext> ctx) : ctx_(std::move(ctx)) {}
  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context&) override {
    return std::make_unique<PagesFilter>(ctx_);
  }
  const char* Name() const override { return "cuckood.PagesFilterFactory"; }

 private:
  std::shared_ptr<FilterContext> ctx_;
};

// The page key without its sub-filter and page numbers: one filter version. RocksDB keeps, per
// such prefix, where in the memtable's skiplist the last page of that filter was inserted, and
// a write's pages (in key order, see WriteGroup::Commit) are inserted from there instead of
// each searched from the top of the skiplist.
class FilterOfPage final : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "cuckood.FilterOfPage"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    return rocksdb::Slice(key.data(), key.size() - kPageKeySuffix);
  }
  bool InDomain(const rocksdb::Slice& key) const override { return key.size() > kPageKeySuffix; }
};

rocksdb::ColumnFamilyOptions DataCfOptions(const EngineOptions& o,
                                           const std::shared_ptr<rocksdb::Cache>& cache,
                                           bool compress) {
  rocksdb::ColumnFamilyOptions cf;
  cf.write_buffer_size = o.write_buffer_bytes;
  cf.max_write_buffer_number = 4;
  cf.level_compaction_dynamic_level_bytes = true;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = cache;
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10, false));
  t.cache_index_and_filter_blocks = true;
  t.pin_l0_filter_and_index_blocks_in_cache = true;
  t.whole_key_filtering = true;
  t.format_version = 5;
  if (!compress) {
    // A page is a 2 KiB run of random fingerprints: blocks of about one page each.
    t.block_size = 4096;
  }
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  cf.compression = compress ? rocksdb::kLZ4Compression : rocksdb::kNoCompression;
  cf.bottommost_compression = cf.compression;
  return cf;
}

// RocksDB's info log, handed to the server's logger (EngineOptions::log).
class CallbackLogger final : public rocksdb::Logger {
 public:
  explicit CallbackLogger(std::function<void(int, std::string_view)> fn)
      : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL), fn_(std::move(fn)) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    Logv(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
  }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (!fn_ || level < GetInfoLogLevel() || level == rocksdb::InfoLogLevel::HEADER_LEVEL) {
      return;
    }
    char buf[1024];
    va_list copy;
    va_copy(copy, ap);
    int n = std::vsnprintf(buf, sizeof(buf), format, copy);
    va_end(copy);
    if (n < 0) {
      return;
    }
    std::string_view line(buf, std::min<size_t>(static_cast<size_t>(n), sizeof(buf) - 1));
    // RocksDB's info lines (every flush and compaction) are the server's debug lines.
    const int severity = level <= rocksdb::InfoLogLevel::INFO_LEVEL   ? 0
                         : level == rocksdb::InfoLogLevel::WARN_LEVEL ? 2
                                                                      : 3;
    fn_(severity, line);
  }

 private:
  std::function<void(int, std::string_view)> fn_;
};

}  // namespace

// Learns about background errors (a flush or compaction failing on a full disk) and keeps
// RocksDB's own recovery off: Engine::TryResume() is the only caller of Resume().
class ErrorListener final : public rocksdb::EventListener {
 public:
  explicit ErrorListener(Engine* e) : engine_(e) {}
  void OnBackgroundError(rocksdb::BackgroundErrorReason, rocksdb::Status* bg_error) override {
    if (bg_error != nullptr && !bg_error->ok() &&
        bg_error->severity() >= rocksdb::Status::Severity::kHardError) {
      engine_.load()->NoteWriteError(*bg_error);
    }
  }
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status,
                            bool* auto_recovery) override {
    if (auto_recovery != nullptr) {
      *auto_recovery = false;
    }
  }

 private:
  std::atomic<Engine*> engine_;
};

void Engine::NoteWriteError(const rocksdb::Status& s) {
  if (!s.IsIOError() && !s.IsCorruption()) {
    return;  // ok, or a transient state (busy, write stall) that needs no recovery
  }
  write_errors_.fetch_add(1);
  std::lock_guard lock(failed_mu_);
  if (!failed_.load()) {
    failed_status_ = FromRocks(s);
    failed_.store(true);
  }
}

Status Engine::WriteHealth() {
  if (closed_.load()) {
    return {Code::kIoError, "storage error: database is closed"};
  }
  if (!failed_.load()) {
    return Status::Ok();
  }
  std::lock_guard lock(failed_mu_);
  return failed_status_;
}

void Engine::TryResume() {
  if (!failed_.load() || db_ == nullptr) {
    return;
  }
  std::lock_guard resume_lock(resume_mu_);
  // Resume() flushes the memtables into new SST files and starts a new WAL. Attempts that fail
  // for want of space are harmless (tested); a completely full disk is not worth an attempt.
  std::error_code ec;
  auto space = std::filesystem::space(options_.dir, ec);
  if (ec || space.available < (1ULL << 20)) {
    return;
  }
  auto s = db_->Resume();
  if (s.ok()) {
    std::lock_guard lock(failed_mu_);
    failed_status_ = Status::Ok();
    failed_.store(false);
    recoveries_.fetch_add(1);
  }
}

Status Engine::FromRocks(const rocksdb::Status& s) {
  if (s.ok()) {
    return Status::Ok();
  }
  if (s.IsNotFound()) {
    return {Code::kNotFound, "not found"};
  }
  if (s.IsCorruption()) {
    return {Code::kCorruption, "storage corruption: " + s.ToString()};
  }
  if (s.IsIncomplete() || s.IsBusy() || s.IsTryAgain() || s.IsTimedOut()) {
    return {Code::kBusy, "storage is busy (write stall), try again later"};
  }
  if (s.IsNoSpace() || s.subcode() == rocksdb::Status::kNoSpace) {
    return {Code::kIoError, "storage error: no space left on device"};
  }
  std::string state = s.getState() ? s.getState() : "";
  if (state.find("No space") != std::string::npos) {
    return {Code::kIoError, "storage error: no space left on device"};
  }
  return {Code::kIoError, "storage error: " + (state.empty() ? s.ToString() : state)};
}

StatusOr<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options) {
  std::unique_ptr<Engine> e(new Engine());
  e->options_ = options;
  e->fsync_ = options.fsync;
  std::error_code ec;
  if (!options.read_only) {
    std::filesystem::create_directories(options.dir, ec);
    if (ec) {
      return Status(Code::kIoError, "cannot create directory " + options.dir + ": " + ec.message());
    }
  }
  rocksdb::LRUCacheOptions cache_opts;
  cache_opts.capacity = options.block_cache_bytes;
  // Every data block read from an SST file (cached or not) is allocated through it.
  cache_opts.memory_allocator = NewBlockAllocator();
  e->cache_ = rocksdb::NewLRUCache(cache_opts);
  e->statistics_ = rocksdb::CreateDBStatistics();
  e->filter_context_ = std::make_shared<FilterContext>();

  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = true;
  db_opts.create_missing_column_families = true;
  db_opts.max_background_jobs = options.background_jobs;
  db_opts.bytes_per_sync = 1 << 20;
  db_opts.keep_log_file_num = 4;
  db_opts.max_total_wal_size = 512ULL << 20;
  db_opts.WAL_ttl_seconds = options.wal_ttl_seconds;
  db_opts.WAL_size_limit_MB = (options.wal_size_limit_bytes + (1 << 20) - 1) >> 20;
  db_opts.statistics = e->statistics_;
  db_opts.stats_dump_period_sec = 0;
  db_opts.enable_pipelined_write = true;
  db_opts.info_log = std::make_shared<CallbackLogger>(options.log);
  db_opts.listeners.push_back(std::make_shared<ErrorListener>(e.get()));

  rocksdb::ColumnFamilyOptions default_opts;
  auto meta_opts = DataCfOptions(options, e->cache_, true);
  static const MetadataFilter kMetadataFilter;  // stateless, shared by every open database
  meta_opts.compaction_filter = &kMetadataFilter;
  auto pages_opts = DataCfOptions(options, e->cache_, false);
  pages_opts.compaction_filter_factory = std::make_shared<PagesFilterFactory>(e->filter_context_);
  pages_opts.merge_operator = NewPageMergeOperator();
  if (options.page_memtable) {
    pages_opts.memtable_factory = NewPageMemTableFactory(options.write_buffer_bytes);
    e->pages_memtable_ = pages_opts.memtable_factory;
    // The metadata records too: every filter write rewrites its key's record (numItems), so
    // over many filters the default skiplist of every version of every record cost a quarter
    // of a CF.ADD; here a record's newest version is one hash probe away.
    meta_opts.memtable_factory = NewPageMemTableFactory(options.write_buffer_bytes);
    e->meta_memtable_ = meta_opts.memtable_factory;
    db_opts.allow_concurrent_memtable_write = false;  // (the representation has one writer)
  } else {
    pages_opts.memtable_insert_with_hint_prefix_extractor = std::make_shared<FilterOfPage>();
  }
  // No merge folding on write (it costs a memtable lookup per write): hot pages are read from
  // the in-memory cache, so RocksDB reads (which apply the operands) are rare; flushes and
  // compactions fold the operands.

  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, default_opts},
      {std::string(kMetadataCf), meta_opts},
      {std::string(kPagesCf), pages_opts},
  };
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s;
  if (options.read_only) {
    s = rocksdb::DB::OpenForReadOnly(db_opts, options.dir, cfs, &e->handles_, &raw);
  } else {
    s = rocksdb::DB::Open(db_opts, options.dir, cfs, &e->handles_, &raw);
  }
  if (!s.ok()) {
    return Status(Code::kIoError, "cannot open database in " + options.dir + ": " + s.ToString());
  }
  e->db_.reset(raw);
  e->filter_context_->metadata = e->handles_[1];
  e->filter_context_->db = raw;

  // Versions: continue after the reserved high-water mark of the last run.
  std::string v;
  s = raw->Get(rocksdb::ReadOptions(), raw->DefaultColumnFamily(), std::string(kVersionReservedKey),
               &v);
  uint64_t reserved = 0;
  if (s.ok() && v.size() == 8) {
    for (int i = 7; i >= 0; --i) {
      reserved = (reserved << 8) | static_cast<uint8_t>(v[static_cast<size_t>(i)]);
    }
  } else if (!s.ok() && !s.IsNotFound()) {
    return FromRocks(s);
  }
  e->next_version_ = reserved + 1;
  e->reserved_until_ = reserved;
  if (!options.read_only) {
    e->sync_thread_ = std::thread([p = e.get()] { p->SyncLoop(); });
  }
  return e;
}

Engine::~Engine() {
  Close();
}

void Engine::Close() {
  if (db_ != nullptr && !closed_.load()) {
    Settle();  // (what was submitted is written before the database closes)
  }
  if (closed_.exchange(true)) {
    return;
  }
  {
    std::lock_guard lock(sync_mu_);
    stopping_ = true;
  }
  sync_cv_.notify_all();
  if (sync_thread_.joinable()) {
    sync_thread_.join();
  }
  if (db_) {
    filter_context_->db = nullptr;
    if (failed_.load()) {
      // After a write error RocksDB's WAL writer must not be touched again: closing the
      // database would flush it (and RocksDB asserts on a writer that has seen an error). What
      // was acknowledged is in the WAL and is replayed at the next start, so the database is
      // left open: background work is stopped and the object is abandoned (still reachable
      // from a static, so leak checkers do not count it); the process is about to exit.
      (void)db_->SetDBOptions({{"avoid_flush_during_shutdown", "true"}});
      rocksdb::CancelAllBackgroundWork(db_.get(), /*wait=*/true);
      // (Never destroyed, so it still points at them when leak checkers look at exit.)
      static auto* abandoned =
          new std::vector<std::pair<rocksdb::DB*, std::vector<rocksdb::ColumnFamilyHandle*>>>();
      abandoned->emplace_back(db_.release(), std::move(handles_));
      handles_.clear();
      return;
    }
    if (!options_.read_only) {
      rocksdb::FlushOptions fo;
      (void)db_->Flush(fo, handles_);
      (void)db_->SyncWAL();
    }
    for (auto* h : handles_) {
      (void)db_->DestroyColumnFamilyHandle(h);
    }
    handles_.clear();
    (void)db_->Close();
    db_.reset();
  }
}

void Engine::SyncLoop() {
  std::unique_lock lock(sync_mu_);
  while (!stopping_) {
    sync_cv_.wait_for(
        lock, failed_.load() ? std::chrono::milliseconds(500) : std::chrono::milliseconds(1000));
    if (stopping_) {
      break;
    }
    if (failed_.load()) {
      lock.unlock();
      TryResume();
      lock.lock();
    } else if (fsync_.load() == FsyncMode::kEverySec) {
      lock.unlock();
      NoteWriteError(db_->SyncWAL());
      lock.lock();
    }
  }
}

void Engine::PinVersion(uint64_t version) {
  std::lock_guard lock(filter_context_->pinned_mu);
  filter_context_->pinned.insert(version);
  filter_context_->pinned_count.fetch_add(1, std::memory_order_release);
}

void Engine::UnpinVersion(uint64_t version) {
  std::lock_guard lock(filter_context_->pinned_mu);
  auto it = filter_context_->pinned.find(version);
  if (it != filter_context_->pinned.end()) {
    filter_context_->pinned.erase(it);
    filter_context_->pinned_count.fetch_sub(1, std::memory_order_release);
  }
}

StatusOr<uint64_t> Engine::NewVersion() {
  std::lock_guard lock(version_mu_);
  if (next_version_ > reserved_until_) {
    uint64_t target = reserved_until_ + kVersionBlock;
    std::string v(8, '\0');
    for (int i = 0; i < 8; ++i) {
      v[static_cast<size_t>(i)] = static_cast<char>(target >> (8 * i));
    }
    if (auto h = WriteHealth(); !h.ok()) {
      return h;
    }
    rocksdb::WriteOptions wo;
    wo.sync = true;
    auto s = db_->Put(wo, db_->DefaultColumnFamily(), std::string(kVersionReservedKey), v);
    if (!s.ok()) {
      NoteWriteError(s);
      return FromRocks(s);
    }
    reserved_until_ = target;
  }
  return next_version_++;
}

Status Engine::Write(rocksdb::WriteBatch* batch) {
  PendingWrite w;
  w.batch = batch;
  Submit(&w, generation());
  return Await(&w);
}

void Engine::Submit(PendingWrite* w, uint64_t generation) {
  std::lock_guard lock(queue_mu_);
  if (generation != generation_.load(std::memory_order_relaxed)) {
    w->ticket = 0;
    w->status = generation_failure_;  // (an earlier write's error: this one read its values)
    return;
  }
  w->ticket = ++last_ticket_;
  if (!w->marked) {
    unmarked_.store(w->ticket, std::memory_order_release);
  }
  queue_.push_back(w);
  submitted_.store(w->ticket, std::memory_order_release);
}

Status Engine::Await(PendingWrite* w) {
  if (w->ticket != 0) {
    Drain(w->ticket);
  }
  return w->status;
}

namespace {

// The batches of several writes as one: a WriteBatch's bytes are a 12-byte header (sequence
// number, then the record count as a little-endian 32-bit number) followed by its records.
rocksdb::WriteBatch Concatenate(const std::vector<Engine::PendingWrite*>& writes) {
  constexpr size_t kHeader = 12;
  size_t bytes = kHeader;
  for (const auto* w : writes) {
    bytes += w->batch->GetDataSize() - kHeader;
  }
  std::string rep;
  rep.reserve(bytes);
  rep.append(writes.front()->batch->Data(), 0, kHeader);
  uint32_t count = 0;
  for (const auto* w : writes) {
    rep.append(w->batch->Data(), kHeader);
    count += w->batch->Count();
  }
  for (int i = 0; i < 4; ++i) {
    rep[8 + static_cast<size_t>(i)] = static_cast<char>(count >> (8 * i));
  }
  return rocksdb::WriteBatch(std::move(rep));
}

}  // namespace

void Engine::Drain(uint64_t upto) {
  std::unique_lock lock(queue_mu_);
  while (completed_.load(std::memory_order_relaxed) < upto) {
    if (leading_) {
      queue_cv_.wait(lock);
      continue;
    }
    leading_ = true;
    std::vector<PendingWrite*> writes;
    writes.swap(queue_);
    lock.unlock();
    Status s;
    if (writes.size() == 1) {
      s = WriteNow(writes.front()->batch);
    } else if (!writes.empty()) {
      rocksdb::WriteBatch all = Concatenate(writes);
      s = WriteNow(&all);
    }
    lock.lock();
    uint64_t last =
        writes.empty() ? completed_.load(std::memory_order_relaxed) : writes.back()->ticket;
    if (!s.ok()) {
      // Nothing of these writes was stored. The ones queued meanwhile may have read their
      // values from the in-memory cache: they fail too, and so does every write that started
      // reading before this point (generation).
      if (!queue_.empty()) {
        last = queue_.back()->ticket;
        writes.insert(writes.end(), queue_.begin(), queue_.end());
        queue_.clear();
      }
      for (auto* w : writes) {
        w->status = s;
        if (w->on_fail != nullptr) {
          w->on_fail(w->arg);
        }
      }
      generation_failure_ = s;
      generation_.fetch_add(1, std::memory_order_acq_rel);
    }
    completed_.store(last, std::memory_order_release);
    leading_ = false;
    queue_cv_.notify_all();
    if (s.ok()) {
      NotifyWritten();
    }
  }
}

void Engine::NotifyWritten() {
  if (seq_waiters_.load(std::memory_order_acquire) > 0) {
    std::lock_guard lock(seq_mu_);
    seq_cv_.notify_all();
  }
}

bool Engine::WaitForSequenceAbove(uint64_t seq, std::chrono::milliseconds timeout) {
  if (LatestSequence() > seq) {
    return true;
  }
  seq_waiters_.fetch_add(1, std::memory_order_acq_rel);
  std::unique_lock lock(seq_mu_);
  // (Writers that do not go through Drain, e.g. NewVersion's record, are seen at the timeout.)
  const bool above = seq_cv_.wait_for(lock, timeout, [&] { return LatestSequence() > seq; });
  seq_waiters_.fetch_sub(1, std::memory_order_acq_rel);
  return above;
}

Status Engine::WriteReplicated(rocksdb::WriteBatch* batch) {
  auto s = WriteNow(batch);
  if (s.ok()) {
    NotifyWritten();
  }
  return s;
}

Status Engine::CreateCheckpoint(const std::string& dir, uint64_t* sequence) {
  rocksdb::Checkpoint* raw = nullptr;
  auto rs = rocksdb::Checkpoint::Create(db_.get(), &raw);
  if (!rs.ok()) {
    return FromRocks(rs);
  }
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  // log_size_for_flush 0: the memtables are flushed first, so the copy is SST files (hard
  // links) plus an empty WAL, whatever the size of the WAL.
  rs = checkpoint->CreateCheckpoint(dir, 0, sequence);
  if (rs.ok()) {
    last_save_unix_ = NowMs() / 1000;
  }
  return FromRocks(rs);
}

Status Engine::ReloadVersions() {
  std::string v;
  auto s = db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(),
                    std::string(kVersionReservedKey), &v);
  if (!s.ok() && !s.IsNotFound()) {
    return FromRocks(s);
  }
  uint64_t reserved = 0;
  if (s.ok() && v.size() == 8) {
    for (int i = 7; i >= 0; --i) {
      reserved = (reserved << 8) | static_cast<uint8_t>(v[static_cast<size_t>(i)]);
    }
  }
  std::lock_guard lock(version_mu_);
  if (reserved >= next_version_) {
    next_version_ = reserved + 1;
    reserved_until_ = reserved;
  }
  return Status::Ok();
}

uint64_t Engine::VersionHighWater() {
  std::lock_guard lock(version_mu_);
  return std::max(reserved_until_, next_version_ == 0 ? 0 : next_version_ - 1);
}

Status Engine::EnsureVersionsAbove(uint64_t v) {
  std::lock_guard lock(version_mu_);
  if (next_version_ > v) {
    return Status::Ok();
  }
  if (v > reserved_until_) {
    std::string raw(8, '\0');
    for (int i = 0; i < 8; ++i) {
      raw[static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
    }
    rocksdb::WriteOptions wo;
    wo.sync = true;
    auto s = db_->Put(wo, db_->DefaultColumnFamily(), std::string(kVersionReservedKey), raw);
    if (!s.ok()) {
      NoteWriteError(s);
      return FromRocks(s);
    }
    reserved_until_ = v;
  }
  next_version_ = v + 1;
  return Status::Ok();
}

Status Engine::WriteNow(rocksdb::WriteBatch* batch) {
  if (auto h = WriteHealth(); !h.ok()) {
    return h;
  }
  rocksdb::WriteOptions wo;
  wo.sync = fsync_.load() == FsyncMode::kAlways;
  // RocksDB would block a write during a stall for as long as the stall lasts; this one asks to
  // fail instead (no_slowdown) and waits in short sleeps, up to write_stall_timeout_ms.
  wo.no_slowdown = true;
  if (pages_memtable_) {
    const MemTableTarget targets[] = {{pages_memtable_.get(), pages_cf()->GetID()},
                                      {meta_memtable_.get(), metadata_cf()->GetID()}};
    PrefetchPageInserts(targets, *batch);
  }
  auto rs = db_->Write(wo, batch);
  if (rs.IsIncomplete()) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(options_.write_stall_timeout_ms);
    while (rs.IsIncomplete() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      rs = db_->Write(wo, batch);
    }
    if (rs.IsIncomplete()) {
      stall_errors_.fetch_add(1);
      return {Code::kBusy,
              "storage is busy: RocksDB write stall (flushes and compactions are "
              "behind), try again later"};
    }
  }
  if (!rs.ok()) {
    NoteWriteError(rs);
  }
  return FromRocks(rs);
}

Status Engine::Flush() {
  if (auto h = WriteHealth(); !h.ok()) {
    return h;
  }
  rocksdb::FlushOptions fo;
  auto rs = db_->Flush(fo, handles_);
  NoteWriteError(rs);
  auto s = FromRocks(rs);
  if (s.ok()) {
    last_save_unix_ = NowMs() / 1000;
  }
  return s;
}

Status Engine::CompactAll() {
  if (auto h = WriteHealth(); !h.ok()) {
    return h;
  }
  rocksdb::CompactRangeOptions o;
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  for (auto* h : {metadata_cf(), pages_cf()}) {
    auto s = db_->CompactRange(o, h, nullptr, nullptr);
    if (!s.ok()) {
      return FromRocks(s);
    }
  }
  return Status::Ok();
}

Status Engine::SyncWal() {
  if (auto h = WriteHealth(); !h.ok()) {
    return h;
  }
  auto rs = db_->SyncWAL();
  NoteWriteError(rs);
  return FromRocks(rs);
}

void Engine::SetFsync(FsyncMode mode) {
  fsync_ = mode;
}

EngineStats Engine::Stats() {
  EngineStats st;
  st.block_cache_usage = cache_->GetUsage();
  st.block_cache_capacity = cache_->GetCapacity();
  for (auto* h : handles_) {
    uint64_t v = 0;
    if (db_->GetIntProperty(h, rocksdb::DB::Properties::kCurSizeAllMemTables, &v)) {
      st.memtable_bytes += v;
    }
    if (db_->GetIntProperty(h, rocksdb::DB::Properties::kTotalSstFilesSize, &v)) {
      st.sst_bytes += v;
    }
    if (db_->GetIntProperty(h, rocksdb::DB::Properties::kEstimatePendingCompactionBytes, &v)) {
      st.pending_compaction_bytes += v;
    }
    if (db_->GetIntProperty(h, rocksdb::DB::Properties::kActualDelayedWriteRate, &v)) {
      (void)v;
    }
    if (db_->GetIntProperty(h, rocksdb::DB::Properties::kIsWriteStopped, &v) && v != 0) {
      st.write_stopped = true;
    }
  }
  uint64_t v = 0;
  if (db_->GetIntProperty(metadata_cf(), rocksdb::DB::Properties::kEstimateNumKeys, &v)) {
    st.estimated_keys_metadata = v;
  }
  if (db_->GetIntProperty(pages_cf(), rocksdb::DB::Properties::kEstimateNumKeys, &v)) {
    st.estimated_keys_pages = v;
  }
  if (db_->GetIntProperty(rocksdb::DB::Properties::kNumRunningCompactions, &v)) {
    st.num_running_compactions = v;
  }
  if (db_->GetIntProperty(rocksdb::DB::Properties::kNumRunningFlushes, &v)) {
    st.num_running_flushes = v;
  }
  st.stall_micros = statistics_->getTickerCount(rocksdb::STALL_MICROS);
  return st;
}

uint64_t Engine::ApproximateSize(rocksdb::ColumnFamilyHandle* cf, const std::string& begin,
                                 const std::string& end) {
  rocksdb::Range r(begin, end);
  uint64_t size = 0;
  rocksdb::SizeApproximationOptions o;
  o.include_memtables = true;
  o.include_files = true;
  (void)db_->GetApproximateSizes(o, cf, &r, 1, &size);
  return size;
}

}  // namespace cuckood::storage
