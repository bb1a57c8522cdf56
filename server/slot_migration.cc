#include "server/slot_migration.h"

#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <numeric>

#include "server/server.h"
#include "storage/db.h"
#include "storage/engine.h"
#include "storage/locks.h"
#include "storage/slot_data.h"

namespace cuckood::server {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kBatchBytes = 2 << 20;                   // one APPLYBATCH at most (about)
constexpr double kMaxBytesPerSecond = 256.0 * (1 << 20);  // rate limit of the transfer
constexpr uint64_t kSmallGap = 256;                       // WAL sequences left: forbid writes now
constexpr int kMaxCatchUpRounds = 20;
constexpr int kIoTimeoutSeconds = 10;
constexpr size_t kImportSyncBytes = 8 << 20;  // the destination syncs its WAL this often

// A blocking RESP client with timeouts, enough for +OK / -ERR replies.
class Link {
 public:
  ~Link() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  bool Connect(const std::string& host, int port, std::string* err) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 ||
        res == nullptr) {
      *err = "cannot resolve " + host;
      return false;
    }
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      fd_ = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd_ < 0) {
        continue;
      }
      timeval tv{kIoTimeoutSeconds, 0};
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      if (::connect(fd_, a->ai_addr, a->ai_addrlen) == 0) {
        break;
      }
      ::close(fd_);
      fd_ = -1;
    }
    ::freeaddrinfo(res);
    if (fd_ < 0) {
      *err = "cannot connect to " + host + ":" + std::to_string(port);
      return false;
    }
    return true;
  }
  // Sends one command; true on a +reply. *err: the error reply or the I/O failure.
  bool Call(std::initializer_list<std::string_view> argv, std::string* err) {
    std::string out = "*" + std::to_string(argv.size()) + "\r\n";
    for (auto a : argv) {
      out += "$" + std::to_string(a.size()) + "\r\n";
      out.append(a);
      out += "\r\n";
    }
    for (size_t done = 0; done < out.size();) {
      const ssize_t n = ::send(fd_, out.data() + done, out.size() - done, MSG_NOSIGNAL);
      if (n <= 0) {
        *err = "connection to the destination lost (write)";
        return false;
      }
      done += static_cast<size_t>(n);
    }
    std::string line;
    while (line.size() < 2 || line.compare(line.size() - 2, 2, "\r\n") != 0) {
      char c = 0;
      if (::recv(fd_, &c, 1, 0) != 1) {
        *err = "connection to the destination lost (read)";
        return false;
      }
      line.push_back(c);
      if (line.size() > 4096) {
        *err = "reply too long";
        return false;
      }
    }
    line.resize(line.size() - 2);
    if (!line.empty() && line[0] == '+') {
      return true;
    }
    *err = line.empty() ? "empty reply" : line.substr(1);
    return false;
  }

 private:
  int fd_ = -1;
};

bool Owns(const cluster::View& view, const cluster::SlotRange& range, const std::string& id) {
  for (int s = range.start; s <= range.end; ++s) {
    const cluster::Node* owner = view.topology->OwnerOf(s);
    if (owner == nullptr || owner->id != id) {
      return false;
    }
  }
  return true;
}

bool OwnsAny(const cluster::View& view, const cluster::SlotRange& range, const std::string& id) {
  for (int s = range.start; s <= range.end; ++s) {
    const cluster::Node* owner = view.topology->OwnerOf(s);
    if (owner != nullptr && owner->id == id) {
      return true;
    }
  }
  return false;
}

storage::SlotSpan Span(const cluster::SlotRange& r) {
  return {static_cast<uint16_t>(r.start), static_cast<uint16_t>(r.end)};
}

}  // namespace

SlotMigrator::SlotMigrator(Server& server) : server_(server) {}

SlotMigrator::~SlotMigrator() {
  Stop();
}

void SlotMigrator::Stop() {
  stop_ = true;
  std::thread t;
  std::thread w;
  {
    std::lock_guard lock(mu_);
    t = std::move(thread_);
    w = std::move(watchdog_);
  }
  if (t.joinable()) {
    t.join();  // (outside mu_: the thread takes it when it succeeds)
  }
  {
    std::lock_guard lock(watch_mu_);
    watch_stop_ = true;
  }
  watch_cv_.notify_all();
  if (w.joinable()) {
    w.join();  // (outside mu_: it takes mu_ to fail an import)
  }
}

int64_t SlotMigrator::NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
      .count();
}

void SlotMigrator::Watch() {
  std::unique_lock wl(watch_mu_);
  while (!watch_stop_) {
    watch_cv_.wait_for(wl, std::chrono::milliseconds(200));
    if (watch_stop_) {
      break;
    }
    const auto current = server_.cluster()->Importing();
    if (current.state != cluster::MigrationState::kStart) {
      continue;
    }
    const int64_t limit_ms = server_.live_config().Get().cluster_import_timeout * 1000;
    if (NowMs() - import_activity_ms_.load() < limit_ms) {
      continue;
    }
    wl.unlock();
    {
      std::lock_guard lock(mu_);
      const auto again = server_.cluster()->Importing();
      // (the source may have ended it, or started another, meanwhile)
      if (again.state == cluster::MigrationState::kStart && again.range == current.range &&
          NowMs() - import_activity_ms_.load() >= limit_ms) {
        FailImportLocked(current.range,
                         "no batch from the source for " +
                             std::to_string(server_.live_config().Get().cluster_import_timeout) +
                             " s");
      }
    }
    wl.lock();
  }
}

bool SlotMigrator::Busy() const {
  auto* state = server_.cluster();
  return running_ || state->Importing().state == cluster::MigrationState::kStart;
}

std::optional<std::string> SlotMigrator::Start(const cluster::SlotRange& range,
                                               const std::string& dst_id) {
  auto* state = server_.cluster();
  const auto view = state->Snapshot();
  if (!view->topology || view->myself() == nullptr) {
    return "CLUSTERDOWN " + std::string(cluster::kErrNotInitialized);
  }
  std::lock_guard lock(mu_);
  if (running_ || state->Importing().state == cluster::MigrationState::kStart) {
    return "ERR There is already a migrating job";
  }
  if (view->myself()->role != cluster::Role::kMaster) {
    return "ERR Slave can't migrate slot";
  }
  if (!Owns(*view, range, view->myid)) {
    return "ERR Can't migrate slot which doesn't belong to me";
  }
  const cluster::Node* dst = view->topology->Find(dst_id);
  if (dst == nullptr) {
    return "ERR Can't find the destination node id";
  }
  if (dst->id == view->myid) {
    return "ERR Can't migrate slot to myself";
  }
  if (dst->role != cluster::Role::kMaster) {
    return "ERR Can't migrate slot to a slave";
  }
  if (thread_.joinable()) {
    thread_.join();
  }
  cluster::MigrationStatus m;
  m.state = cluster::MigrationState::kStart;
  m.range = range;
  m.node_id = dst_id;
  state->SetMigrating(m);
  running_ = true;
  cleaned_ = true;
  stop_ = false;
  thread_ = std::thread(&SlotMigrator::Run, this, range, dst_id, dst->host, dst->port);
  return std::nullopt;
}

void SlotMigrator::Run(cluster::SlotRange range, std::string dst_id, std::string host, int port) {
  auto* state = server_.cluster();
  auto& db = server_.db();
  storage::Engine* engine = db.engine();
  const auto span = Span(range);
  const std::string range_text = cluster::FormatSlotRange(range);
  const auto began = Clock::now();
  uint64_t bytes = 0;
  uint64_t keys = 0;
  double forbidden_ms = 0;
  std::string err;
  Link link;
  auto fail = [&](const std::string& why) {
    spdlog::error("slot migration of {} to {} failed: {}", range_text, dst_id, why);
    std::string ignored;
    link.Call({"CLUSTERX", "IMPORT", range_text, "fail"}, &ignored);
    cluster::MigrationStatus m;
    m.state = cluster::MigrationState::kFail;
    m.range = range;
    m.node_id = dst_id;
    state->SetMigrating(m);
    running_ = false;
  };
  // Sends one batch, keeping under the rate limit.
  auto send = [&](const rocksdb::WriteBatch& batch) {
    if (stop_) {
      err = "the server is shutting down";
      return false;
    }
    const auto& data = batch.Data();
    if (!link.Call({"CLUSTERX", "APPLYBATCH", data}, &err)) {
      return false;
    }
    bytes += data.size();
    const double due = static_cast<double>(bytes) / kMaxBytesPerSecond;
    const double spent = std::chrono::duration<double>(Clock::now() - began).count();
    if (due > spent) {
      std::this_thread::sleep_for(std::chrono::duration<double>(due - spent));
    }
    return true;
  };
  const auto cfg = server_.live_config().Get();
  const std::string& password = cfg.masterauth.empty() ? cfg.requirepass : cfg.masterauth;
  if (!link.Connect(host, port, &err) ||
      (!password.empty() && !link.Call({"AUTH", password}, &err)) ||
      !link.Call({"CLUSTERX", "IMPORT", range_text, "start"}, &err)) {
    fail(err);
    return;
  }
  // 1. The snapshot, after a flush: the catch-up rounds below read the WAL from the snapshot's
  // sequence on, and RocksDB reads a WAL file from its beginning, so the WAL files they read
  // should begin about there (not hold the whole memtable's history). The flush also leaves
  // less to the snapshot's memtable reads.
  engine->Settle();
  {
    rocksdb::FlushOptions fo;
    auto fs =
        engine->db()->Flush(fo, {engine->default_cf(), engine->metadata_cf(), engine->pages_cf()});
    if (!fs.ok()) {
      spdlog::warn("slot migration of {}: flush before the snapshot: {}", range_text,
                   fs.ToString());
    }
  }
  engine->Settle();
  const rocksdb::Snapshot* snap = engine->db()->GetSnapshot();
  uint64_t next_seq = snap->GetSequenceNumber() + 1;
  {
    storage::SlotScanner scanner(engine, snap, span);
    rocksdb::WriteBatch batch;
    size_t n = 0;
    storage::Status s;
    bool ok = true;
    while (ok && scanner.Next(&batch, kBatchBytes, &n, &s)) {
      keys += n;
      ok = send(batch);
    }
    engine->db()->ReleaseSnapshot(snap);
    if (!ok || !s.ok()) {
      fail(ok ? s.message() : err);
      return;
    }
  }
  // 2. The WAL since, up to `upto`.
  // One pass over the WAL from next_seq; the caller repeats it until upto is reached.
  auto ship_wal_once = [&](uint64_t upto) {
    std::unique_ptr<rocksdb::TransactionLogIterator> it;
    auto rs = engine->db()->GetUpdatesSince(next_seq, &it);
    if (!rs.ok()) {
      err = "reading the WAL: " + rs.ToString();
      return false;
    }
    rocksdb::WriteBatch out;
    for (; it->Valid() && next_seq <= upto; it->Next()) {
      auto res = it->GetBatch();
      const uint64_t first = res.sequence;
      const uint64_t count = res.writeBatchPtr->Count();
      if (first + count <= next_seq) {
        continue;
      }
      if (first > next_seq) {
        err = "the WAL has a gap";
        return false;
      }
      if (auto s = storage::FilterBatchBySlots(engine, *res.writeBatchPtr, span, &out); !s.ok()) {
        err = s.message();
        return false;
      }
      next_seq = first + std::max<uint64_t>(count, 1);
      if (out.GetDataSize() >= kBatchBytes) {
        if (!send(out)) {
          return false;
        }
        out.Clear();
      }
    }
    if (!it->status().ok() && next_seq <= upto) {
      err = "reading the WAL: " + it->status().ToString();
      return false;
    }
    if (out.Count() > 0 && !send(out)) {
      return false;
    }
    return true;
  };
  // Every entry up to upto must be shipped: an iterator that ends early (the WAL file was being
  // written or switched) is opened again from where it stopped.
  auto ship_wal = [&](uint64_t upto) {
    for (int attempt = 0; next_seq <= upto; ++attempt) {
      if (attempt == 100) {
        err = "the WAL ends before sequence " + std::to_string(upto);
        return false;
      }
      if (attempt > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (!ship_wal_once(upto)) {
        return false;
      }
    }
    return true;
  };
  for (int round = 0; round < kMaxCatchUpRounds; ++round) {
    engine->Settle();
    const uint64_t latest = engine->LatestSequence();
    if (latest < next_seq || latest - next_seq < kSmallGap) {
      break;
    }
    if (!ship_wal(latest)) {
      fail(err);
      return;
    }
  }
  // 3. The write-forbidden window: no new write to the range passes routing; the writes that
  // passed it already hold their stripes, and are stored once every stripe was taken and the
  // queue settled.
  const auto forbid_at = Clock::now();
  {
    auto m = state->Migrating();
    m.forbidden = true;
    state->SetMigrating(m);
  }
  {
    std::vector<size_t> all(db.locks().stripes());
    std::iota(all.begin(), all.end(), size_t{0});
    storage::LockGuard guard(&db.locks(), all);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  {
    std::vector<size_t> all(db.locks().stripes());
    std::iota(all.begin(), all.end(), size_t{0});
    storage::LockGuard guard(&db.locks(), all);
    engine->Settle();
  }
  const auto drained_at = Clock::now();
  const uint64_t tail_from = next_seq;
  if (!ship_wal(engine->LatestSequence())) {
    fail(err);
    return;
  }
  const auto shipped_at = Clock::now();
  if (!link.Call(
          {"CLUSTERX", "IMPORT", range_text, "success", std::to_string(engine->VersionHighWater())},
          &err)) {
    fail(err);
    return;
  }
  {
    cluster::MigrationStatus m;
    m.state = cluster::MigrationState::kSuccess;
    m.range = range;
    m.node_id = dst_id;
    std::lock_guard lock(mu_);
    cleaned_ = false;
    state->SetMigrating(m);
  }
  const auto done_at = Clock::now();
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  forbidden_ms = ms(forbid_at, done_at);
  const double secs = std::chrono::duration<double>(done_at - began).count();
  spdlog::info(
      "slot migration of {} to {} succeeded: {} keys, {} bytes in {:.3f} s ({:.1f} MiB/s, {:.0f} "
      "keys/s), writes forbidden for {:.1f} ms (writes in flight {:.1f} ms, last {} WAL entries "
      "{:.1f} ms, handover {:.1f} ms)",
      range_text, dst_id, keys, bytes, secs, static_cast<double>(bytes) / (1 << 20) / secs,
      static_cast<double>(keys) / secs, forbidden_ms, ms(forbid_at, drained_at),
      next_seq - tail_from, ms(drained_at, shipped_at), ms(shipped_at, done_at));
  running_ = false;
}

void SlotMigrator::OnTopology() {
  auto* state = server_.cluster();
  const auto m = state->Migrating();
  if (m.state != cluster::MigrationState::kSuccess) {
    return;
  }
  const auto view = state->Snapshot();
  {
    std::lock_guard lock(mu_);
    if (cleaned_ || view->version <= m.done_version || !view->topology ||
        OwnsAny(*view, m.range, view->myid)) {
      return;
    }
    cleaned_ = true;
  }
  auto s = server_.db().DeleteSlots(static_cast<uint16_t>(m.range.start),
                                    static_cast<uint16_t>(m.range.end));
  if (s.ok()) {
    spdlog::info("slot migration: deleted the migrated slots {}", FormatSlotRange(m.range));
  } else {
    spdlog::error("slot migration: deleting the migrated slots {} failed: {}",
                  FormatSlotRange(m.range), s.message());
  }
}

std::optional<std::string> SlotMigrator::Import(const cluster::SlotRange& range,
                                                std::string_view what, uint64_t min_version) {
  auto* state = server_.cluster();
  const auto view = state->Snapshot();
  if (!view->topology || view->myself() == nullptr) {
    return "CLUSTERDOWN " + std::string(cluster::kErrNotInitialized);
  }
  std::lock_guard lock(mu_);
  auto current = state->Importing();
  auto& db = server_.db();
  cluster::MigrationStatus m;
  m.range = range;
  if (what == "start") {
    if (view->myself()->role != cluster::Role::kMaster) {
      return "ERR Slave can't import slot";
    }
    if (running_) {
      return "ERR There is already a migrating job";
    }
    if (current.state == cluster::MigrationState::kStart) {
      // The source of that import went away without a word (killed, cut off): its records are
      // not served (the slots are not this node's) and are dropped below with the new start.
      spdlog::warn("slot migration: the import of slots {} was abandoned by its source",
                   cluster::FormatSlotRange(current.range));
    }
    if (OwnsAny(*view, range, view->myid)) {
      return "ERR Can't import slot which belongs to me";
    }
    // A clean start: whatever an earlier, broken import left of the range goes.
    if (auto s =
            db.DeleteSlots(static_cast<uint16_t>(range.start), static_cast<uint16_t>(range.end));
        !s.ok()) {
      return "ERR " + s.message();
    }
    m.state = cluster::MigrationState::kStart;
    import_activity_ms_ = NowMs();
    state->SetImporting(m);
    if (!watchdog_.joinable()) {
      watchdog_ = std::thread(&SlotMigrator::Watch, this);
    }
    spdlog::info("slot migration: importing slots {}", cluster::FormatSlotRange(range));
    return std::nullopt;
  }
  if (current.state != cluster::MigrationState::kStart || !(current.range == range)) {
    return "ERR No import of these slots is in progress";
  }
  if (what == "success") {
    if (auto s = db.engine()->EnsureVersionsAbove(min_version); !s.ok()) {
      return "ERR " + s.message();
    }
    m.state = cluster::MigrationState::kSuccess;
    state->SetImporting(m);
    spdlog::info("slot migration: imported slots {}", cluster::FormatSlotRange(range));
    return std::nullopt;
  }
  return FailImportLocked(range, "the source ended it");
}

std::optional<std::string> SlotMigrator::FailImportLocked(const cluster::SlotRange& range,
                                                          std::string_view why) {
  // Nothing half-imported stays. The range is dropped before the failure shows (CLUSTER INFO
  // import_state), so whoever sees it fail finds nothing of it; no batch comes meanwhile (mu_
  // is held). Dropped again once the failure is set: a write an ASKING client made in between
  // goes too.
  const auto drop = [&] {
    return server_.db().DeleteSlots(static_cast<uint16_t>(range.start),
                                    static_cast<uint16_t>(range.end));
  };
  auto s = drop();
  cluster::MigrationStatus m;
  m.range = range;
  m.state = cluster::MigrationState::kFail;
  server_.cluster()->SetImporting(m);
  if (s.ok()) {
    s = drop();
  }
  spdlog::warn("slot migration: the import of slots {} failed ({}); dropped what arrived",
               cluster::FormatSlotRange(range), why);
  if (!s.ok()) {
    return "ERR " + s.message();
  }
  return std::nullopt;
}

std::optional<std::string> SlotMigrator::ApplyBatch(std::string data) {
  // (under mu_: a batch is never applied after the import failed and dropped the range)
  std::lock_guard lock(mu_);
  const auto current = server_.cluster()->Importing();
  if (current.state != cluster::MigrationState::kStart) {
    return "ERR No import is in progress";
  }
  if (data.size() < 12) {
    return "ERR Invalid write batch";
  }
  auto& db = server_.db();
  rocksdb::WriteBatch in(std::move(data));
  rocksdb::WriteBatch kept;
  size_t seen = 0;
  if (auto s = storage::FilterBatchBySlots(db.engine(), in, Span(current.range), &kept, &seen);
      !s.ok()) {
    return "ERR Invalid write batch: " + s.message();
  }
  if (seen != kept.Count()) {
    return "ERR The write batch holds keys outside the importing slots";
  }
  if (auto s = db.ApplyReplicated(kept.Data()); !s.ok()) {
    return "ERR " + s.message();
  }
  import_activity_ms_ = NowMs();
  // The WAL synced as the import goes: the synced write of the handover (IMPORT success, in the
  // source's write-forbidden window) then has little left to sync.
  import_unsynced_bytes_ += kept.GetDataSize();
  if (import_unsynced_bytes_ >= kImportSyncBytes) {
    import_unsynced_bytes_ = 0;
    if (auto rs = db.engine()->db()->SyncWAL(); !rs.ok()) {
      return "ERR syncing the WAL: " + rs.ToString();
    }
  }
  return std::nullopt;
}

}  // namespace cuckood::server
