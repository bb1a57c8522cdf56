#include "server/replication.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <sstream>

#include "replication/fullsync.h"
#include "server/server.h"

namespace cuckood::server {

namespace {

bool SplitHostPort(const std::string& replicaof, std::string* host, int* port) {
  std::istringstream in(replicaof);
  return static_cast<bool>(in >> *host >> *port) && *port > 0 && *port < 65536;
}

}  // namespace

Replication::Replication(Server& server) : server_(server) {}

Replication::~Replication() {
  Stop();
}

void Replication::Start(const Config& cfg) {
  dir_ = cfg.dir;
  auto st = replication::LoadState(dir_);
  if (!st.ok()) {
    throw std::runtime_error(st.status().message());
  }
  std::lock_guard lock(mu_);
  state_ = std::move(*st);
  std::string host;
  int port = 0;
  if (!cfg.replicaof.empty()) {
    if (!SplitHostPort(cfg.replicaof, &host, &port)) {
      throw std::runtime_error("replicaof: expected 'host port', got '" + cfg.replicaof + "'");
    }
  } else {
    host = state_.master_host;
    port = state_.master_port;
  }
  state_.master_host = host;
  state_.master_port = host.empty() ? 0 : port;
  SaveStateLocked();
  replication::Primary::Options po;
  po.dir = dir_;
  po.sync_rate_bytes = cfg.repl_sync_rate;
  po.timeout = std::chrono::seconds(cfg.repl_timeout);
  primary_ = std::make_unique<replication::Primary>(
      [this]() -> storage::Engine& { return server_.engine(); },
      [this] {
        std::lock_guard l(mu_);
        return state_;
      },
      po);
  if (!host.empty()) {
    replica_ = true;
    link_ = std::make_unique<replication::ReplicaLink>(this, LinkOptions(cfg, host, port));
    link_->Start();
    spdlog::info("replica of {}:{}", host, port);
  }
}

void Replication::Stop() {
  std::unique_ptr<replication::ReplicaLink> link;
  std::vector<std::thread> reapers;
  {
    std::lock_guard lock(mu_);
    link = std::move(link_);
    reapers.swap(reapers_);
  }
  link.reset();
  for (auto& t : reapers) {
    t.join();
  }
  if (primary_) {
    primary_->StopAll();
  }
}

void Replication::ApplyConfig(const Config& cfg) {
  if (primary_) {
    replication::Primary::Options po;
    po.dir = dir_;
    po.sync_rate_bytes = cfg.repl_sync_rate;
    po.timeout = std::chrono::seconds(cfg.repl_timeout);
    primary_->SetOptions(po);
  }
}

replication::ReplicaLink::Options Replication::LinkOptions(const Config& cfg,
                                                           const std::string& host,
                                                           int port) const {
  replication::ReplicaLink::Options o;
  o.host = host;
  o.port = port;
  o.masterauth = cfg.masterauth;
  o.masteruser = cfg.masteruser;
  o.announce_ip = cfg.replica_announce_ip;
  o.listening_port =
      cfg.replica_announce_port != 0 ? cfg.replica_announce_port : server_.process().port;
  o.dir = cfg.dir;
  o.timeout = std::chrono::seconds(cfg.repl_timeout);
  return o;
}

void Replication::SaveStateLocked() {
  if (auto s = replication::SaveState(dir_, state_); !s.ok()) {
    spdlog::error("{}", s.message());
  }
}

void Replication::RetireLinkLocked() {
  if (!link_) {
    return;
  }
  link_->RequestStop();
  reapers_.emplace_back([l = std::move(link_)]() mutable { l.reset(); });
}

storage::Status Replication::ReplicaOf(const std::string& host, int port, bool* already) {
  const Config cfg = server_.live_config().Get();
  std::lock_guard lock(mu_);
  *already = link_ != nullptr && state_.master_host == host && state_.master_port == port;
  if (*already) {
    return storage::Status::Ok();
  }
  RetireLinkLocked();
  server_.dispatcher().SetLoading(false);
  // This node's own replicas follow another history from now on: they ask again.
  primary_->KillAllAsync();
  state_.master_host = host;
  state_.master_port = port;
  SaveStateLocked();
  replica_ = true;
  link_ = std::make_unique<replication::ReplicaLink>(this, LinkOptions(cfg, host, port));
  link_->Start();
  spdlog::info("replica of {}:{} (REPLICAOF)", host, port);
  return storage::Status::Ok();
}

storage::Status Replication::PromoteToPrimary() {
  std::lock_guard lock(mu_);
  if (!replica_) {
    return storage::Status::Ok();
  }
  RetireLinkLocked();
  replica_ = false;
  server_.dispatcher().SetLoading(
      false);  // (a full sync under way is abandoned: the data stays as it was)
  // Versions the old primary reserved are never handed out again.
  if (auto s = server_.engine().ReloadVersions(); !s.ok()) {
    return s;
  }
  // A new history that continues the old one up to here: replicas of the old primary that are
  // not ahead of this node continue from it.
  state_.replid2 = state_.replid;
  state_.replid2_seq = server_.engine().LatestSequence();
  state_.replid = replication::NewReplicationId();
  state_.master_host.clear();
  state_.master_port = 0;
  SaveStateLocked();
  spdlog::info("a primary now (REPLICAOF NO ONE), replid {} continues {} up to {}", state_.replid,
               state_.replid2, state_.replid2_seq);
  return storage::Status::Ok();
}

void Replication::ServeReplica(int fd, replication::SyncRequest request) {
  primary_->Serve(fd, std::move(request));
}

int Replication::KillReplicas() {
  const int n = static_cast<int>(primary_->Replicas().size());
  primary_->KillAllAsync();
  return n;
}

void Replication::StopReplicas() {
  primary_->StopAll();
}

int Replication::WaitForReplicas(int n, uint64_t seq, int64_t timeout_ms) {
  return primary_->WaitForAcks(n, seq, std::chrono::milliseconds(timeout_ms));
}

std::string Replication::replid() {
  std::lock_guard lock(mu_);
  return state_.replid;
}

void Replication::WriteRole(resp::Writer& out) {
  std::lock_guard lock(mu_);
  const uint64_t seq = server_.engine().LatestSequence();
  if (link_) {
    static const char* kStates[] = {"connect", "connecting", "sync", "connected"};
    out.ArrayHeader(5);
    out.Bulk("slave");
    out.Bulk(state_.master_host);
    out.Integer(state_.master_port);
    out.Bulk(kStates[static_cast<int>(link_->state())]);
    out.Integer(link_->link_up() ? static_cast<int64_t>(seq) : -1);
    return;
  }
  auto replicas = primary_->Replicas();
  out.ArrayHeader(3);
  out.Bulk("master");
  out.Integer(static_cast<int64_t>(seq));
  out.ArrayHeader(replicas.size());
  for (const auto& r : replicas) {
    out.ArrayHeader(3);
    out.Bulk(r.ip);
    out.Bulk(std::to_string(r.port));
    out.Bulk(std::to_string(r.ack_seq));
  }
}

std::string Replication::InfoLines() {
  const Config cfg = server_.live_config().Get();
  std::lock_guard lock(mu_);
  const uint64_t seq = server_.engine().LatestSequence();
  std::string s;
  auto add = [&](std::string_view k, const std::string& v) {
    s.append(k);
    s += ':';
    s += v;
    s += "\r\n";
  };
  if (link_) {
    add("role", "slave");
    add("master_host", state_.master_host);
    add("master_port", std::to_string(state_.master_port));
    add("master_link_status", link_->link_up() ? "up" : "down");
    add("master_last_io_seconds_ago", std::to_string(link_->last_io_seconds_ago()));
    add("master_sync_in_progress", link_->sync_in_progress() ? "1" : "0");
    if (link_->sync_in_progress()) {
      add("master_sync_read_bytes", std::to_string(link_->sync_bytes()));
    }
    add("slave_read_repl_offset", std::to_string(seq));
    add("slave_repl_offset", std::to_string(seq));
    if (!link_->link_up()) {
      add("master_link_down_since_seconds", std::to_string(link_->link_down_since_seconds()));
    }
    add("slave_priority", std::to_string(cfg.replica_priority));
    add("slave_read_only", cfg.replica_read_only ? "1" : "0");
    add("replica_announced", cfg.replica_announced ? "1" : "0");
    // How far behind the primary's last heartbeat this replica is, in sequence numbers.
    const uint64_t pseq = link_->primary_sequence();
    add("slave_lag_sequences", std::to_string(pseq > seq ? pseq - seq : 0));
  } else {
    add("role", "master");
  }
  auto replicas = primary_->Replicas();
  add("connected_slaves", std::to_string(replicas.size()));
  for (size_t i = 0; i < replicas.size(); ++i) {
    const auto& r = replicas[i];
    add("slave" + std::to_string(i),
        "ip=" + r.ip + ",port=" + std::to_string(r.port) + ",state=" + r.state +
            ",offset=" + std::to_string(r.ack_seq) + ",lag=" + std::to_string(r.lag_seconds));
  }
  add("master_failover_state", "no-failover");
  add("master_replid", state_.replid);
  add("master_replid2", state_.replid2.empty() ? std::string(40, '0') : state_.replid2);
  add("master_repl_offset", std::to_string(seq));
  add("second_repl_offset", state_.replid2.empty() ? "-1" : std::to_string(state_.replid2_seq + 1));
  add("repl_backlog_active", "1");
  add("repl_backlog_size", std::to_string(cfg.repl_backlog_size));
  add("repl_backlog_first_byte_offset", "1");
  add("repl_backlog_histlen", std::to_string(seq));
  add("sequence", std::to_string(seq));
  return s;
}

uint64_t Replication::LatestSequence() {
  return server_.engine().LatestSequence();
}

storage::Status Replication::ApplyBatch(std::string batch) {
  return server_.db().ApplyReplicated(std::move(batch));
}

storage::Status Replication::InstallFullSync(const std::atomic<bool>& cancel) {
  // Replicas of this node hold the old history: they ask again after the swap.
  primary_->StopAll();
  auto s = server_.ReopenDatabase(
      [this] {
        auto st = replication::InstallStaged(dir_);
        if (!st.ok()) {
          spdlog::error("installing the full sync failed: {}", st.message());
        }
        return st;
      },
      cancel);
  if (!s.ok()) {
    // Abandoned or failed: what was staged is not installed later either.
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::path(dir_) / replication::kStagedDirName, ec);
  }
  return s;
}

void Replication::SetLoading(bool loading) {
  // (A link being retired may still report; a primary never loads.)
  server_.dispatcher().SetLoading(loading && replica_.load());
}

void Replication::AdoptReplicationId(const std::string& id) {
  std::lock_guard lock(mu_);
  if (state_.replid != id) {
    state_.replid = id;
    state_.replid2.clear();
    state_.replid2_seq = 0;
    SaveStateLocked();
  }
}

}  // namespace cuckood::server
