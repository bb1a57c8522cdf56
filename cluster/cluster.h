// A node's cluster state: its id, the topology version and the topology the controller pushed,
// kept in memory as an immutable View and in the nodes file. CLUSTERX commands change it; every
// command with keys reads it through Route.
//
// Threading: readers (Snapshot, Route) copy a shared_ptr under a short mutex and never wait for
// a writer's file I/O. Mutators are serialised among themselves; each writes the nodes file
// first and publishes the new View only when the file is safely written, so a failed write
// changes nothing.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster/render.h"
#include "cluster/routing.h"
#include "cluster/topology.h"
#include "storage/status.h"

namespace cuckood::cluster {

// Called when an adopted topology (or node id) gives this node a new role: nullopt = master,
// else (host, port) of the master to replicate from. Replication implements it; it runs on the
// thread of the CLUSTERX command (or of Load at start-up), after the new state is published,
// and must not call ClusterState's mutators.
using ReplicationHook = std::function<void(std::optional<std::pair<std::string, int>> master)>;

// A slot migration this node takes part in (CLUSTER INFO's migration lines; routing of the
// slots while they move).
enum class MigrationState { kNone, kStart, kSuccess, kFail };
struct MigrationStatus {
  MigrationState state = MigrationState::kNone;
  SlotRange range;
  std::string node_id;        // migrating: the destination
  bool forbidden = false;     // migrating: writes to the range answer TRYAGAIN
  int64_t done_version = -1;  // the topology version when it succeeded
};
inline constexpr std::string_view kErrTryAgainForbidden =
    "TRYAGAIN Can't write to slot being migrated which is in write forbidden phase";

struct ClusterOptions {
  std::string nodes_file;                   // path of the nodes file
  std::vector<std::string> bind_addresses;  // to find this node in a topology when no id is set
  int port = 0;
};

class ClusterState {
 public:
  explicit ClusterState(ClusterOptions options);

  // Reads the nodes file, if there is one, and adopts what it holds. Errors name the file.
  storage::Status Load();
  // Installs the hook; when a role is already known (from Load or an earlier SETNODES), the new
  // hook is called with it at once, so a hook installed after start-up misses nothing.
  void SetReplicationHook(ReplicationHook hook);

  std::shared_ptr<const View> Snapshot() const;

  // CLUSTERX SETNODEID. kInvalid "ERR Invalid cluster node id".
  storage::Status SetNodeId(std::string_view id);
  // CLUSTERX SETNODES. A lower version than the current one is refused (unless force); the
  // same version is accepted and changes nothing; a higher one is parsed, persisted, adopted.
  storage::Status SetNodes(std::string_view text, int64_t version, bool force);
  // CLUSTERX SETSLOT: version must be the current one + 1.
  storage::Status SetSlot(const std::vector<SlotRange>& ranges, std::string_view node_id,
                          int64_t version);
  // CLUSTER RESET: forgets the topology (version -1); hard also forgets the node id. A replica
  // becomes a master (the hook hears it).
  storage::Status Reset(bool hard);

  RouteResult Route(const RouteQuery& query) const;

  // Slot migration, source side: while state is kStart and forbidden, writes to the range
  // answer TRYAGAIN; once kSuccess, commands on the range answer MOVED to the destination until
  // a newer topology arrives. Destination side: an import in kSuccess is served here until a
  // newer topology arrives.
  void SetMigrating(MigrationStatus status);
  void SetImporting(MigrationStatus status);
  MigrationStatus Migrating() const;
  MigrationStatus Importing() const;
  // CLUSTER INFO's migration lines (CRLF), empty when this node never took part in one.
  std::string MigrationInfo() const;

 private:
  // Persists next, publishes it, then tells the hook if this node's role changed. Needs
  // update_mu_.
  storage::Status Commit(std::shared_ptr<View> next);
  // Finds this node by port and bind address (a topology pushed before SETNODEID).
  std::string FindMyself(const Topology& topology) const;

  const ClusterOptions options_;
  mutable std::mutex migration_mu_;
  MigrationStatus migrating_;
  MigrationStatus importing_;
  std::mutex update_mu_;  // one mutator at a time
  mutable std::mutex view_mu_;
  std::shared_ptr<const View> view_;
  ReplicationHook hook_;
  // The role last handed to the hook: unset = never; nullopt inside = master.
  std::optional<std::optional<std::pair<std::string, int>>> last_role_;
};

}  // namespace cuckood::cluster
