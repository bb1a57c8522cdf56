// The server's replication role: whether it is a primary or a replica of some other node, the
// node-local state file (replication/state.h), the senders that feed its own replicas
// (replication::Primary) and the link to its primary (replication::ReplicaLink).
//
// REPLICAOF/SLAVEOF, ROLE, WAIT, REPLSYNC and INFO replication (server/commands/replication.cc)
// call into it. Thread-safe; role changes never wait for a full sync in progress.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "replication/primary.h"
#include "replication/replica.h"
#include "replication/state.h"
#include "resp/writer.h"
#include "server/config.h"
#include "storage/status.h"

namespace cuckood::server {

class Server;

class Replication final : public replication::ReplicaLink::Host {
 public:
  explicit Replication(Server& server);
  ~Replication() override;

  // Reads the state file and starts replicating if the config (or, without a replicaof option,
  // the state file) names a primary. Start-up only; throws on a malformed state file.
  void Start(const Config& cfg);
  // Stops the link and every sender (shutdown).
  void Stop();
  // A run-time option changed (repl-timeout, repl-sync-rate, masterauth, ...).
  void ApplyConfig(const Config& cfg);

  bool is_replica() const { return replica_.load(std::memory_order_relaxed); }
  // REPLICAOF host port: replicate from it (already_connected: it was the primary already).
  storage::Status ReplicaOf(const std::string& host, int port, bool* already_connected);
  // REPLICAOF NO ONE: a primary from now on, keeping everything applied.
  storage::Status PromoteToPrimary();

  // A connection sent REPLSYNC: its socket is this module's from now on.
  void ServeReplica(int fd, replication::SyncRequest request);
  // Disconnects the node's replicas (CLIENT KILL TYPE replica / slave); returns how many.
  int KillReplicas();
  // The same, waiting until every sender thread has ended (nothing of them reads the database
  // any more): DEBUG RELOAD's reopen. The replicas reconnect and continue from their sequence.
  void StopReplicas();
  // WAIT: how many replicas acknowledged seq within timeout_ms (0 = no limit).
  int WaitForReplicas(int n, uint64_t seq, int64_t timeout_ms);

  void WriteRole(resp::Writer& out);
  // The lines of INFO's "# Replication" section (without the header).
  std::string InfoLines();
  std::string replid();

  // ---- replication::ReplicaLink::Host -----------------------------------------------------
  uint64_t LatestSequence() override;
  storage::Status ApplyBatch(std::string batch) override;
  storage::Status InstallFullSync(const std::atomic<bool>& cancel) override;
  void SetLoading(bool loading) override;
  void AdoptReplicationId(const std::string& replid) override;
  std::string ReplicationId() override { return replid(); }

 private:
  replication::ReplicaLink::Options LinkOptions(const Config& cfg, const std::string& host,
                                                int port) const;
  void SaveStateLocked();
  // Stops the link without waiting for it when called from an io thread (the link's install
  // may wait for that thread); joined later.
  void RetireLinkLocked();

  Server& server_;
  std::string dir_;
  std::atomic<bool> replica_{false};
  std::mutex mu_;  // state_, link_, reapers_
  replication::NodeState state_;
  std::unique_ptr<replication::ReplicaLink> link_;
  std::vector<std::thread> reapers_;  // each ends a retired link
  std::unique_ptr<replication::Primary> primary_;
};

}  // namespace cuckood::server
