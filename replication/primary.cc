#include "replication/primary.h"

#include <rocksdb/transaction_log.h>
#include <spdlog/spdlog.h>

#include "replication/fullsync.h"

namespace cuckood::replication {
namespace {

constexpr auto kHeartbeat = std::chrono::milliseconds(1000);

}  // namespace

Primary::Primary(std::function<storage::Engine&()> engine, std::function<NodeState()> state,
                 Options options)
    : engine_(std::move(engine)), state_(std::move(state)), options_(std::move(options)) {}

Primary::~Primary() {
  StopAll();
}

void Primary::SetOptions(Options options) {
  std::lock_guard lock(mu_);
  options_ = std::move(options);
}

void Primary::Serve(int fd, SyncRequest request) {
  Reap();
  auto sender = std::make_unique<Sender>();
  sender->link.Reset(fd);
  sender->request = std::move(request);
  sender->last_ack_ms = NowMillis();
  Sender* s = sender.get();
  std::lock_guard lock(mu_);
  s->link.SetTimeout(options_.timeout);
  senders_.push_back(std::move(sender));
  s->thread = std::thread([this, s] { Run(s); });
}

void Primary::StopAll() {
  std::list<std::unique_ptr<Sender>> all;
  {
    std::lock_guard lock(mu_);
    all.swap(senders_);
  }
  for (auto& s : all) {
    s->stop = true;
    s->link.Interrupt();
  }
  for (auto& s : all) {
    if (s->thread.joinable()) {
      s->thread.join();
    }
  }
  ack_cv_.notify_all();
}

void Primary::KillAllAsync() {
  std::lock_guard lock(mu_);
  for (auto& s : senders_) {
    s->stop = true;
    s->link.Interrupt();
  }
}

void Primary::Reap() {
  std::list<std::unique_ptr<Sender>> ended;
  {
    std::lock_guard lock(mu_);
    for (auto it = senders_.begin(); it != senders_.end();) {
      if ((*it)->done) {
        ended.push_back(std::move(*it));
        it = senders_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& s : ended) {
    s->thread.join();
  }
}

void Primary::Run(Sender* s) {
  storage::Engine& engine = engine_();
  const NodeState st = state_();
  const SyncRequest& req = s->request;
  const uint64_t latest = engine.LatestSequence();
  Status status;
  if (req.version != kProtocolVersion) {
    status = Status(Code::kInvalid, "replication protocol version " + std::to_string(req.version) +
                                        " is not supported (this "
                                        "primary speaks " +
                                        std::to_string(kProtocolVersion) + ")");
  } else {
    // The replica's history continues here when it is a prefix of this node's.
    bool same_history = (req.replid == st.replid && req.seq <= latest) ||
                        (!st.replid2.empty() && req.replid == st.replid2 &&
                         req.seq <= st.replid2_seq && req.seq <= latest);
    if (same_history && req.seq < latest) {
      // ... and the WAL still holds what follows it.
      std::unique_ptr<rocksdb::TransactionLogIterator> it;
      auto rs = engine.db()->GetUpdatesSince(req.seq + 1, &it);
      same_history = rs.ok() && it->Valid() && it->GetBatch().sequence == req.seq + 1;
    }
    uint64_t next = req.seq + 1;
    if (same_history) {
      spdlog::info("replica {}:{} continues from sequence {}", req.ip, req.port, req.seq);
      status = s->link.WriteAll("+CONTINUE " + st.replid + " " + std::to_string(req.seq) + "\r\n");
      Ack(s, req.seq);
    } else {
      spdlog::info("replica {}:{} gets a full sync (it has {} at {}, this node {} at {})", req.ip,
                   req.port, req.replid, req.seq, st.replid, latest);
      s->state = 1;
      Options opts;
      {
        std::lock_guard lock(mu_);
        opts = options_;
      }
      uint64_t seq = 0;
      status = SendCheckpoint(s->link, engine, opts.dir, st.replid, opts.sync_rate_bytes, &seq);
      std::string line;
      if (status.ok()) {
        // The replica installs the checkpoint, then says so.
        status = s->link.ReadLine(&line);
      }
      // The replica says where its copy ends: at the checkpoint's sequence or after it.
      auto words = SplitWords(line);
      uint64_t ready = 0;
      if (status.ok() && (words.size() != 2 || words[0] != "READY" || !ParseU64(words[1], &ready) ||
                          ready < seq || ready > engine.LatestSequence())) {
        status =
            Status(Code::kCorruption, "unexpected reply to a full sync: " + line.substr(0, 80));
      }
      seq = ready;
      next = seq + 1;
      if (status.ok()) {
        Ack(s, seq);
      }
    }
    if (status.ok()) {
      s->state = 2;
      status = Stream(s, next);
    }
  }
  if (!status.ok() && !s->stop) {
    spdlog::warn("replica {}:{} disconnected: {}", req.ip, req.port, status.message());
    (void)s->link.WriteAll("-ERR " + status.message() + "\r\n");
  }
  s->link.Close();
  s->done = true;
  ack_cv_.notify_all();
}

Status Primary::Stream(Sender* s, uint64_t next) {
  storage::Engine& engine = engine_();
  auto last_send = std::chrono::steady_clock::now();
  std::string frame;
  while (!s->stop) {
    if (engine.LatestSequence() >= next) {
      std::unique_ptr<rocksdb::TransactionLogIterator> it;
      auto rs = engine.db()->GetUpdatesSince(next, &it);
      if (!rs.ok()) {
        return {Code::kIoError, "the WAL no longer holds sequence " + std::to_string(next) + " (" +
                                    rs.ToString() + ")"};
      }
      for (; it->Valid() && !s->stop; it->Next()) {
        rocksdb::BatchResult b = it->GetBatch();
        if (b.sequence != next) {
          return {Code::kIoError, "the WAL has no batch at sequence " + std::to_string(next)};
        }
        const std::string& data = b.writeBatchPtr->Data();
        frame = "+BATCH " + std::to_string(b.sequence) + " " + std::to_string(data.size()) + "\r\n";
        if (auto st = s->link.WriteAll(frame); !st.ok()) {
          return st;
        }
        if (auto st = s->link.WriteAll(data); !st.ok()) {
          return st;
        }
        next += b.writeBatchPtr->Count();
        last_send = std::chrono::steady_clock::now();
        if (auto st = ReadAcks(s); !st.ok()) {
          return st;
        }
      }
      if (!it->status().ok() && !it->status().IsNotFound()) {
        return {Code::kIoError, "reading the WAL: " + it->status().ToString()};
      }
    } else {
      (void)engine.WaitForSequenceAbove(next - 1, std::chrono::milliseconds(100));
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - last_send >= kHeartbeat) {
      if (auto st = s->link.WriteAll("+PING " + std::to_string(engine.LatestSequence()) + "\r\n");
          !st.ok()) {
        return st;
      }
      last_send = now;
    }
    if (auto st = ReadAcks(s); !st.ok()) {
      return st;
    }
    std::chrono::milliseconds timeout;
    {
      std::lock_guard lock(mu_);
      timeout = options_.timeout;
    }
    if (NowMillis() - s->last_ack_ms.load() > timeout.count()) {
      return {Code::kIoError, "no ACK within the replication timeout"};
    }
  }
  return Status::Ok();
}

Status Primary::ReadAcks(Sender* s) {
  std::string line;
  while (s->link.Readable()) {
    if (auto st = s->link.ReadLine(&line); !st.ok()) {
      return st;
    }
    auto words = SplitWords(line);
    uint64_t seq = 0;
    if (words.size() == 2 && words[0] == "ACK" && ParseU64(words[1], &seq)) {
      Ack(s, seq);
    } else {
      return {Code::kCorruption, "unexpected line from the replica: " + line.substr(0, 80)};
    }
  }
  return Status::Ok();
}

void Primary::Ack(Sender* s, uint64_t seq) {
  s->last_ack_ms = NowMillis();
  if (seq > s->ack_seq.load()) {
    {
      std::lock_guard lock(mu_);
      s->ack_seq = seq;
    }
    ack_cv_.notify_all();
  }
}

std::vector<ReplicaInfo> Primary::Replicas() {
  std::vector<ReplicaInfo> out;
  std::lock_guard lock(mu_);
  const int64_t now = NowMillis();
  for (const auto& s : senders_) {
    if (s->done) {
      continue;
    }
    ReplicaInfo r;
    r.ip = s->request.ip;
    r.port = s->request.port;
    static const char* kStates[] = {"wait_bgsave", "send_bulk", "online"};
    r.state = kStates[s->state.load()];
    r.ack_seq = s->ack_seq.load();
    r.lag_seconds = (now - s->last_ack_ms.load()) / 1000;
    out.push_back(std::move(r));
  }
  return out;
}

int Primary::CountAcked(uint64_t seq) {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& s : senders_) {
    if (!s->done && s->state.load() == 2 && s->ack_seq.load() >= seq) {
      ++n;
    }
  }
  return n;
}

int Primary::WaitForAcks(int n, uint64_t seq, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto count = [&] {
    int c = 0;
    for (const auto& s : senders_) {
      if (!s->done && s->state.load() == 2 && s->ack_seq.load() >= seq) {
        ++c;
      }
    }
    return c;
  };
  std::unique_lock lock(mu_);
  while (count() < n) {
    if (timeout.count() == 0) {
      ack_cv_.wait_for(lock, std::chrono::milliseconds(100));
    } else if (ack_cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      break;
    }
  }
  return count();
}

}  // namespace cuckood::replication
