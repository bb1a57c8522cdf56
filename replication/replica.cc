#include "replication/replica.h"

#include <spdlog/spdlog.h>

#include "replication/fullsync.h"

namespace cuckood::replication {
namespace {

constexpr auto kRetry = std::chrono::milliseconds(1000);

}  // namespace

ReplicaLink::ReplicaLink(Host* host, Options options)
    : host_(host), options_(std::move(options)), down_since_ms_(NowMillis()) {}

ReplicaLink::~ReplicaLink() {
  Stop();
}

void ReplicaLink::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ReplicaLink::RequestStop() {
  stop_ = true;
  link_.Interrupt();
  std::lock_guard lock(wait_mu_);
  wait_cv_.notify_all();
}

void ReplicaLink::Stop() {
  RequestStop();
  if (thread_.joinable()) {
    thread_.join();
  }
}

int64_t ReplicaLink::last_io_seconds_ago() const {
  const int64_t t = last_io_ms_.load();
  return t < 0 ? -1 : (NowMillis() - t) / 1000;
}

int64_t ReplicaLink::link_down_since_seconds() const {
  return (NowMillis() - down_since_ms_.load()) / 1000;
}

std::string ReplicaLink::last_error() const {
  std::lock_guard lock(error_mu_);
  return last_error_;
}

void ReplicaLink::SetError(const std::string& e) {
  std::lock_guard lock(error_mu_);
  last_error_ = e;
}

void ReplicaLink::Run() {
  while (!stop_) {
    state_ = State::kConnecting;
    auto s = Session();
    if (state_.load() == State::kConnected || state_.load() == State::kSync) {
      down_since_ms_ = NowMillis();
    }
    state_ = State::kConnect;
    link_.Close();
    if (stop_) {
      break;
    }
    if (!s.ok()) {
      spdlog::warn("replication link to {}:{}: {}", options_.host, options_.port, s.message());
      SetError(s.message());
    }
    std::unique_lock lock(wait_mu_);
    wait_cv_.wait_for(lock, kRetry, [&] { return stop_.load(); });
  }
}

Status ReplicaLink::Handshake(Link& link, std::string* reply) {
  std::string line;
  auto ask = [&](const std::vector<std::string>& argv) -> Status {
    if (auto s = link.WriteCommand(argv); !s.ok()) {
      return s;
    }
    if (auto s = link.ReadLine(&line); !s.ok()) {
      return s;
    }
    if (!line.empty() && line[0] == '-') {
      return {Code::kInvalid, "primary refused " + argv[0] + ": " + line.substr(1)};
    }
    return Status::Ok();
  };
  if (!options_.masterauth.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!options_.masteruser.empty()) {
      auth.push_back(options_.masteruser);
    }
    auth.push_back(options_.masterauth);
    if (auto s = ask(auth); !s.ok()) {
      return s;
    }
  }
  if (auto s = ask({"REPLCONF", "listening-port", std::to_string(options_.listening_port)});
      !s.ok()) {
    return s;
  }
  if (!options_.announce_ip.empty()) {
    if (auto s = ask({"REPLCONF", "ip-address", options_.announce_ip}); !s.ok()) {
      return s;
    }
  }
  const std::string replid = force_full_ ? "?" : host_->ReplicationId();
  const std::string seq = std::to_string(host_->LatestSequence());
  if (auto s = link.WriteCommand({"REPLSYNC", std::to_string(kProtocolVersion), replid, seq});
      !s.ok()) {
    return s;
  }
  return link.ReadLine(reply);
}

Status ReplicaLink::Session() {
  if (auto s = Link::Connect(options_.host, options_.port, options_.timeout, &link_); !s.ok()) {
    return s;
  }
  if (stop_) {
    return Status::Ok();
  }
  link_.SetTimeout(options_.timeout);
  std::string reply;
  if (auto s = Handshake(link_, &reply); !s.ok()) {
    return s;
  }
  last_io_ms_ = NowMillis();
  auto words = SplitWords(reply);
  uint64_t seq = 0;
  if (words.size() == 3 && words[0] == "+CONTINUE" && ParseU64(words[2], &seq)) {
    if (seq != host_->LatestSequence()) {
      return {Code::kCorruption, "the primary continues from another sequence"};
    }
    host_->AdoptReplicationId(words[1]);
  } else if (words.size() == 3 && words[0] == "+FULLSYNC" && ParseU64(words[2], &seq)) {
    state_ = State::kSync;
    sync_bytes_ = 0;
    host_->SetLoading(true);
    struct LoadingOff {
      Host* h;
      ~LoadingOff() { h->SetLoading(false); }
    } loading_off{host_};
    spdlog::info("full sync from {}:{} (sequence {})", options_.host, options_.port, seq);
    uint64_t end_seq = 0;
    auto s = ReceiveCheckpoint(link_, options_.dir, &end_seq, &sync_bytes_);
    if (s.ok()) {
      s = host_->InstallFullSync(stop_);
    }
    if (!s.ok()) {
      return s;
    }
    force_full_ = false;
    host_->AdoptReplicationId(words[1]);
    // The checkpoint holds at least the announced sequence, and may hold more (writes that
    // reached its copy of the WAL while it was made): the stream starts after what it holds.
    seq = host_->LatestSequence();
    if (seq < end_seq) {
      force_full_ = true;
      return {Code::kCorruption, "the installed checkpoint holds sequence " + std::to_string(seq) +
                                     ", the primary announced " + std::to_string(end_seq)};
    }
    spdlog::info("full sync installed, {} bytes, sequence {}", sync_bytes_.load(), seq);
    if (auto st = link_.WriteAll("READY " + std::to_string(seq) + "\r\n"); !st.ok()) {
      return st;
    }
  } else if (!reply.empty() && reply[0] == '-') {
    return {Code::kInvalid, "primary refused REPLSYNC: " + reply.substr(1)};
  } else {
    return {Code::kCorruption, "unexpected reply to REPLSYNC: " + reply.substr(0, 80)};
  }
  state_ = State::kConnected;
  SetError("");
  spdlog::info("replicating from {}:{} at sequence {}", options_.host, options_.port, seq);
  if (auto s = link_.WriteAll("ACK " + std::to_string(seq) + "\r\n"); !s.ok()) {
    return s;
  }
  uint64_t acked = seq;
  std::string line;
  std::string data;
  while (!stop_) {
    if (auto s = link_.ReadLine(&line); !s.ok()) {
      return s;
    }
    last_io_ms_ = NowMillis();
    words = SplitWords(line);
    uint64_t n = 0;
    if (words.size() == 3 && words[0] == "+BATCH" && ParseU64(words[1], &seq) &&
        ParseU64(words[2], &n)) {
      if (n < 12 || n > (4ULL << 30)) {
        return {Code::kCorruption, "write batch of " + std::to_string(n) + " bytes"};
      }
      data.clear();
      if (auto s = link_.ReadExact(n, &data); !s.ok()) {
        return s;
      }
      const uint64_t mine = host_->LatestSequence();
      if (seq != mine + 1) {
        force_full_ = true;
        return {Code::kCorruption, "the primary sent sequence " + std::to_string(seq) + " after " +
                                       std::to_string(mine)};
      }
      if (auto s = host_->ApplyBatch(std::move(data)); !s.ok()) {
        return s;
      }
      data = std::string();
    } else if (words.size() == 2 && words[0] == "+PING" && ParseU64(words[1], &n)) {
      primary_seq_ = n;
      acked = 0;  // (answered with an ACK below, which also tells the primary the link lives)
    } else if (!line.empty() && line[0] == '-') {
      return {Code::kIoError, "primary: " + line.substr(1)};
    } else {
      return {Code::kCorruption, "unexpected line from the primary: " + line.substr(0, 80)};
    }
    // Acknowledged once what has arrived is applied (WAIT counts it).
    if (!link_.Readable()) {
      const uint64_t mine = host_->LatestSequence();
      if (mine != acked) {
        if (auto s = link_.WriteAll("ACK " + std::to_string(mine) + "\r\n"); !s.ok()) {
          return s;
        }
        acked = mine;
      }
      if (primary_seq_.load() < mine) {
        primary_seq_ = mine;
      }
    }
  }
  return Status::Ok();
}

}  // namespace cuckood::replication
