#include "cluster/cluster.h"

#include <algorithm>

#include "cluster/nodes_file.h"

namespace cuckood::cluster {

ClusterState::ClusterState(ClusterOptions options)
    : options_(std::move(options)), view_(std::make_shared<View>()) {}

storage::Status ClusterState::Load() {
  auto content = ReadNodesFile(options_.nodes_file);
  if (!content.ok()) {
    return content.status();
  }
  if (!content->has_value()) {
    return storage::Status::Ok();
  }
  const NodesFileContent& c = **content;
  auto next = std::make_shared<View>();
  if (!c.myid.empty() && !ValidNodeId(c.myid)) {
    return {storage::Code::kCorruption,
            "nodes file '" + options_.nodes_file + "': " + std::string(kErrInvalidNodeId)};
  }
  next->myid = c.myid;
  if (c.version >= 0) {
    auto topology = Topology::Parse(c.topology);
    if (!topology.ok()) {
      return {storage::Code::kCorruption,
              "nodes file '" + options_.nodes_file + "': " + topology.status().message()};
    }
    next->version = c.version;
    next->topology = std::make_shared<const Topology>(std::move(*topology));
  }
  std::lock_guard lock(update_mu_);
  return Commit(std::move(next));
}

void ClusterState::SetReplicationHook(ReplicationHook hook) {
  std::lock_guard lock(update_mu_);
  hook_ = std::move(hook);
  if (hook_ && last_role_) {
    hook_(*last_role_);
  }
}

std::shared_ptr<const View> ClusterState::Snapshot() const {
  std::lock_guard lock(view_mu_);
  return view_;
}

storage::Status ClusterState::SetNodeId(std::string_view id) {
  if (!ValidNodeId(id)) {
    return Invalid(kErrInvalidNodeId);
  }
  std::lock_guard lock(update_mu_);
  auto current = Snapshot();
  if (current->myid == id) {
    return storage::Status::Ok();
  }
  auto next = std::make_shared<View>(*current);
  next->myid = std::string(id);
  return Commit(std::move(next));
}

storage::Status ClusterState::SetNodes(std::string_view text, int64_t version, bool force) {
  if (version < 0) {
    return Invalid(kErrInvalidVersion);
  }
  std::lock_guard lock(update_mu_);
  auto current = Snapshot();
  if (!force && current->version > version) {
    return Invalid(kErrInvalidVersion);
  }
  if (!force && current->version == version) {
    return storage::Status::Ok();  // the controller re-sends the version it already pushed
  }
  auto topology = Topology::Parse(text);
  if (!topology.ok()) {
    return topology.status();
  }
  auto next = std::make_shared<View>(*current);
  next->version = version;
  if (next->myid.empty() || force) {
    if (auto found = FindMyself(*topology); !found.empty()) {
      next->myid = found;
    }
  }
  next->topology = std::make_shared<const Topology>(std::move(*topology));
  return Commit(std::move(next));
}

storage::Status ClusterState::SetSlot(const std::vector<SlotRange>& ranges,
                                      std::string_view node_id, int64_t version) {
  std::lock_guard lock(update_mu_);
  auto current = Snapshot();
  if (version <= 0 || version != current->version + 1 || !current->topology) {
    return Invalid(kErrInvalidVersion);
  }
  if (!ValidNodeId(node_id)) {
    return Invalid(kErrInvalidNodeId);
  }
  Topology topology = *current->topology;
  if (auto s = topology.AssignSlots(ranges, node_id); !s.ok()) {
    return s;
  }
  auto next = std::make_shared<View>(*current);
  next->version = version;
  next->topology = std::make_shared<const Topology>(std::move(topology));
  return Commit(std::move(next));
}

storage::Status ClusterState::Reset(bool hard) {
  std::lock_guard lock(update_mu_);
  auto next = std::make_shared<View>();
  if (!hard) {
    next->myid = Snapshot()->myid;
  }
  if (auto s = Commit(std::move(next)); !s.ok()) {
    return s;
  }
  // As Redis: a replica that is reset becomes a master.
  if (last_role_ && last_role_->has_value()) {
    last_role_.emplace(std::nullopt);
    if (hook_) {
      hook_(std::nullopt);
    }
  }
  return storage::Status::Ok();
}

RouteResult ClusterState::Route(const RouteQuery& query) const {
  if (query.keys.empty()) {
    return {};
  }
  const auto view = Snapshot();
  auto result = cluster::Route(view->topology.get(), view->myself(), query);
  if (result.slot < 0 || result.kind == RouteKind::kCrossSlot) {
    return result;
  }
  std::lock_guard lock(migration_mu_);
  auto in = [&](const MigrationStatus& m) {
    return result.slot >= m.range.start && result.slot <= m.range.end &&
           (m.done_version < 0 || m.done_version >= view->version);
  };
  if (result.kind == RouteKind::kHere && migrating_.state != MigrationState::kNone &&
      in(migrating_)) {
    if (migrating_.state == MigrationState::kStart && migrating_.forbidden && query.write) {
      result.kind = RouteKind::kTryAgain;
      result.error = std::string(kErrTryAgainForbidden);
    } else if (migrating_.state == MigrationState::kSuccess && view->topology) {
      // Handed over: the destination owns the slots from this node's point of view.
      if (const Node* dst = view->topology->Find(migrating_.node_id)) {
        result.kind = RouteKind::kMoved;
        result.error = "MOVED " + std::to_string(result.slot) + " " + dst->host + ":" +
                       std::to_string(dst->port);
      }
    }
  } else if (result.kind == RouteKind::kMoved && importing_.state == MigrationState::kSuccess &&
             in(importing_) && view->myself() != nullptr && view->myself()->role == Role::kMaster) {
    result.kind = RouteKind::kHere;
    result.error.clear();
  }
  return result;
}

void ClusterState::SetMigrating(MigrationStatus status) {
  if (status.state == MigrationState::kSuccess) {
    status.done_version = Snapshot()->version;
  }
  std::lock_guard lock(migration_mu_);
  migrating_ = std::move(status);
}

void ClusterState::SetImporting(MigrationStatus status) {
  if (status.state == MigrationState::kSuccess) {
    status.done_version = Snapshot()->version;
  }
  std::lock_guard lock(migration_mu_);
  importing_ = std::move(status);
}

MigrationStatus ClusterState::Migrating() const {
  std::lock_guard lock(migration_mu_);
  return migrating_;
}

MigrationStatus ClusterState::Importing() const {
  std::lock_guard lock(migration_mu_);
  return importing_;
}

namespace {
std::string_view StateName(MigrationState s, bool import) {
  switch (s) {
    case MigrationState::kStart:
      return "start";
    case MigrationState::kSuccess:
      return "success";
    case MigrationState::kFail:
      return import ? "error" : "fail";
    case MigrationState::kNone:
      break;
  }
  return "none";
}
}  // namespace

std::string ClusterState::MigrationInfo() const {
  std::lock_guard lock(migration_mu_);
  std::string out;
  // Kvrocks' lines: a space after the colon.
  if (migrating_.state != MigrationState::kNone) {
    out += "migrating_slot(s): " + FormatSlotRange(migrating_.range) + "\r\n";
    out += "destination_node: " + migrating_.node_id + "\r\n";
    out += "migrating_state: " + std::string(StateName(migrating_.state, false)) + "\r\n";
  }
  if (importing_.state != MigrationState::kNone) {
    out += "importing_slot(s): " + FormatSlotRange(importing_.range) + "\r\n";
    out += "import_state: " + std::string(StateName(importing_.state, true)) + "\r\n";
  }
  return out;
}

storage::Status ClusterState::Commit(std::shared_ptr<View> next) {
  NodesFileContent content;
  content.myid = next->myid;
  content.version = next->topology ? next->version : -1;
  if (next->topology) {
    content.topology = next->topology->Serialize();
  }
  if (auto s = WriteNodesFile(options_.nodes_file, content); !s.ok()) {
    return {storage::Code::kIoError,
            "failed to save the cluster nodes file, nothing changed: " + s.message()};
  }
  const Node* me = next->myself();
  std::optional<std::optional<std::pair<std::string, int>>> role;
  if (me != nullptr && me->role == Role::kMaster) {
    role.emplace(std::nullopt);
  } else if (me != nullptr) {
    if (const Node* master = next->topology->Find(me->master_id); master != nullptr) {
      role.emplace(std::make_pair(master->host, master->port));
    }
  }
  {
    std::lock_guard lock(view_mu_);
    view_ = std::move(next);
  }
  if (role && role != last_role_) {
    last_role_ = role;
    if (hook_) {
      hook_(*role);
    }
  }
  return storage::Status::Ok();
}

std::string ClusterState::FindMyself(const Topology& topology) const {
  for (const auto& n : topology.nodes()) {
    if (n.port != options_.port) {
      continue;
    }
    for (const auto& bind : options_.bind_addresses) {
      if (bind == n.host || bind == "*" || bind == "0.0.0.0" || bind == "::") {
        return n.id;
      }
    }
  }
  return {};
}

}  // namespace cuckood::cluster
