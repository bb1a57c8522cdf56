// Live slot migration (CLUSTERX MIGRATE), both sides.
//
// Source: a background thread takes a RocksDB snapshot, ships the raw records of the slot range
// (storage/slot_data.h) to the destination in bounded, rate-limited write batches, then the WAL
// entries of the range written since, round after round until the gap is small, then forbids
// writes to the range (TRYAGAIN through ClusterState::Route), ships the rest and hands the range
// over (MOVED to the destination until the controller pushes the new topology, after which the
// range is deleted here).
//
// The channel is an ordinary client connection to the destination (AUTH with masterauth, else
// requirepass): CLUSTERX IMPORT <range> start, then CLUSTERX APPLYBATCH <raw write batch> per
// batch, then CLUSTERX IMPORT <range> success <version> (or fail). The destination applies
// each batch as a replica applies its primary's (Db::ApplyReplicated: cache invalidation, and
// its own replicas receive it through its WAL), refuses records outside the range, and drops
// the range when an import fails. An import that hears nothing from its source for
// cluster-import-timeout seconds (the source died or the network was cut) fails the same way.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "cluster/cluster.h"
#include "storage/status.h"

namespace cuckood::server {

class Server;

class SlotMigrator {
 public:
  explicit SlotMigrator(Server& server);
  ~SlotMigrator();

  // CLUSTERX MIGRATE: checks the request (error text without '-' when refused) and starts the
  // background thread.
  std::optional<std::string> Start(const cluster::SlotRange& range, const std::string& dst_id);
  // CLUSTERX IMPORT <range> start|success|fail [version] on the destination.
  std::optional<std::string> Import(const cluster::SlotRange& range, std::string_view state,
                                    uint64_t min_version);
  // CLUSTERX APPLYBATCH: a raw batch of an import in progress.
  std::optional<std::string> ApplyBatch(std::string data);
  // A migration or an import is in progress (FLUSHDB / FLUSHALL are refused meanwhile).
  bool Busy() const;
  // After a topology change: a source whose range the new topology gives to the destination
  // deletes it.
  void OnTopology();
  // Stops the thread (shutdown); a migration in progress ends in fail.
  void Stop();

 private:
  void Run(cluster::SlotRange range, std::string dst_id, std::string host, int port);
  // The import's end in fail: the state, and the range dropped. Under mu_.
  std::optional<std::string> FailImportLocked(const cluster::SlotRange& range,
                                              std::string_view why);
  // The destination's watchdog: fails an import whose source went quiet.
  void Watch();
  static int64_t NowMs();

  Server& server_;
  std::mutex mu_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_{false};
  bool cleaned_ = true;  // the source deleted the range of its last successful migration
  std::atomic<int64_t> import_activity_ms_{0};  // steady clock of the import's last message
  size_t import_unsynced_bytes_ = 0;            // applied since the last WAL sync (under mu_)
  std::thread watchdog_;                        // started with the first import
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool watch_stop_ = false;  // under watch_mu_
};

}  // namespace cuckood::server
